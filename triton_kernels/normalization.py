"""Fused layer_norm and rms_norm on the `cuda` device, forward and backward; batch_norm
and group_norm forward through the same forward kernel, whose rows are laid out three
ways (see norm_kernel).

Both normalize each row of the trailing `normalized_shape` dims (the input read as
[rows, N], contiguous). The forward kernel keeps one row per program; it saves the
statistics the backward reads (mean and rstd = 1 / sqrt(var + eps); rms_norm has no
mean and rstd = 1 / sqrt(mean(x^2) + eps)).

The backward needs two kinds of results (Triton tutorial 05, the layer-norm backward):

    per row:      xhat = (x - mean) * rstd,  g = grad * weight
                  grad_input = rstd * (g - mean(g) - xhat * mean(g * xhat))
                  (rms_norm: no mean(g) term)
    per column:   grad_weight = sum over rows of grad * xhat,  grad_bias = sum of grad

The first kernel gives each program a run of rows: it writes their grad_input and adds
their grad * xhat and grad into the program's own row of a [programs, N] partial-sum
buffer (no two programs touch one row, so no atomics). The column sums are then the
reduction kernel over that buffer's dim 0. A row that fits in one block is read once
(x, grad and weight in registers) and its partial sums stay in registers across rows;
a longer row is walked in blocks twice (statistics, then the write).
"""
from __future__ import annotations

import math

import triton
import triton.language as tl

from tensorplay import _dtype as dt
from tensorplay._memory_format import is_channels_last
from tensorplay.kernel_support.arguments import machine_eps
from tensorplay.kernel_support.ops import call_below_autograd, shape_rule
from tensorplay.kernel_support.results import factory, numel_of
from tensorplay.library import Library, ShapeRule, kernel
from triton_kernels import _math, _rows
from triton_kernels._launch import INTERPRETED, launch, new_tensor, operands, pointer
from triton_kernels.reduction import welford_rows
from triton_kernels.softmax import acc_dtype

# NCHW kernels: a channels_last call reaches them through the layout-conversion
# fallback of kernel selection, which lays their 4-D results out channels_last again.
NCHW = "contiguous_format"

# Programs of the backward's row kernel: each owns rows / PROGRAMS rows and a row of the
# partial sums, so the column sums read PROGRAMS x N values. The interpreter pays per
# program, so it gets a few long-running ones.
PROGRAMS = 8 if INTERPRETED else 512
# The longest row the backward keeps in registers. Five row vectors live at once there
# (x, grad, weight and the two partial sums), so it is shorter than the forward's.
BACKWARD_ONE_PASS = _rows.MAX_ONE_PASS // 4


@triton.jit
def load_acc(ptr, mask, ACC: tl.constexpr):
    """Masked elements of a row block in the accumulation dtype (0 where masked)."""
    return _math.convert(tl.load(ptr, mask=mask, other=0.0), ACC)


@triton.jit
def _norm_offset(i, inner, seg_stride, SEGMENTED: tl.constexpr):
    """Element i of a row, relative to the row's start."""
    if SEGMENTED:
        offset = (i // inner).to(tl.int64) * seg_stride + i % inner   # runs lie far apart
    else:
        offset = i
    return offset


@triton.jit
def norm_kernel(
    x_ptr, w_ptr, b_ptr,  # input, contiguous; weight, bias (HAS_W, HAS_B), see PARAM
    y_ptr, mean_ptr, rstd_ptr,  # output, like the input; per-row statistics [rows]
    run_mean_ptr, run_var_ptr,  # running statistics [rows] (RUNNING, or read when STATS_GIVEN)
    N, eps, momentum,  # elements per row; momentum of the running statistics
    inner, seg_stride,  # SEGMENTED rows: N // inner runs of `inner`, seg_stride apart
    groups, group_channels, pixels,  # PARAM == "group": the weight index of an element
    RMS: tl.constexpr,  # rms_norm: no mean; x * rstd with rstd = 1 / sqrt(mean(x^2) + eps)
    SEGMENTED: tl.constexpr,  # row r starts at r * inner (else r * N) and is split in runs
    PARAM: tl.constexpr,  # weight/bias index: "feature" (i: layer norm), "row" (r: batch
    #                       norm), "group" ((r % groups) * group_channels + i // pixels)
    STATS_GIVEN: tl.constexpr,  # mean, var read from run_mean, run_var (batch norm eval)
    RUNNING: tl.constexpr,  # run_* <- (1 - momentum) * run_* + momentum * (mean, unbiased var)
    HAS_W: tl.constexpr, HAS_B: tl.constexpr,
    ACC: tl.constexpr,
    BLOCK: tl.constexpr,
):
    # One program per row. The rows of each norm:
    #   layer/rms norm  [rows, N] contiguous                     PARAM "feature"
    #   group norm      (n, g): C/G * HxW contiguous elements    PARAM "group"
    #   batch norm      channel c: N runs of HxW, C * HxW apart   PARAM "row", SEGMENTED
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    if SEGMENTED:
        base = x_ptr + row * inner
        out_base = y_ptr + row * inner
    else:
        base = x_ptr + row * N
        out_base = y_ptr + row * N
    if STATS_GIVEN:
        mean = _math.convert(tl.load(run_mean_ptr + row), ACC)
        var = _math.convert(tl.load(run_var_ptr + row), ACC)
    else:
        # Two passes over the row, as the CPU backend: the mean, then the mean squared
        # deviation.
        if RMS:
            mean = 0.0
        else:
            acc = tl.zeros([BLOCK], ACC)
            for start in range(0, N, BLOCK):
                i = start + cols
                mask = i < N
                acc += _math.convert(tl.load(base + _norm_offset(i, inner, seg_stride,
                                                                 SEGMENTED),
                                             mask=mask, other=0.0), ACC)
            mean = tl.sum(acc, axis=0) / N
        acc = tl.zeros([BLOCK], ACC)
        for start in range(0, N, BLOCK):
            i = start + cols
            mask = i < N
            x = _math.convert(tl.load(base + _norm_offset(i, inner, seg_stride, SEGMENTED),
                                      mask=mask, other=0.0), ACC)
            d = tl.where(mask, x - mean, 0.0)
            acc += d * d
        var = tl.sum(acc, axis=0) / N
    rstd = 1.0 / tl.sqrt(var + eps)
    if PARAM == "row":       # one weight and bias for the whole row
        if HAS_W:
            w_row = _math.convert(tl.load(w_ptr + row), ACC)
        if HAS_B:
            b_row = _math.convert(tl.load(b_ptr + row), ACC)
    for start in range(0, N, BLOCK):
        i = start + cols
        mask = i < N
        offset = _norm_offset(i, inner, seg_stride, SEGMENTED)
        x = _math.convert(tl.load(base + offset, mask=mask, other=0.0), ACC)
        y = (x - mean) * rstd
        if PARAM == "group":
            p = (row % groups) * group_channels + i // pixels
        else:
            p = i
        if HAS_W:
            if PARAM == "row":
                y = y * w_row
            else:
                y = y * _math.convert(tl.load(w_ptr + p, mask=mask, other=0.0), ACC)
        if HAS_B:
            if PARAM == "row":
                y = y + b_row
            else:
                y = y + _math.convert(tl.load(b_ptr + p, mask=mask, other=0.0), ACC)
        tl.store(out_base + offset, _math.convert(y, y_ptr.dtype.element_ty), mask=mask)
    if not RMS:
        tl.store(mean_ptr + row, _math.convert(mean, mean_ptr.dtype.element_ty))
    tl.store(rstd_ptr + row, _math.convert(rstd, rstd_ptr.dtype.element_ty))
    if RUNNING:
        old_mean = _math.convert(tl.load(run_mean_ptr + row), ACC)
        old_var = _math.convert(tl.load(run_var_ptr + row), ACC)
        unbiased = var * N / (N - 1)
        tl.store(run_mean_ptr + row, _math.convert((1 - momentum) * old_mean + momentum * mean,
                                                   run_mean_ptr.dtype.element_ty))
        tl.store(run_var_ptr + row, _math.convert((1 - momentum) * old_var + momentum * unbiased,
                                                  run_var_ptr.dtype.element_ty))


@triton.jit
def layer_norm_kernel(
    x_ptr, w_ptr, b_ptr,  # input rows (strided, below); weight, bias [N] (HAS_W, HAS_B)
    y_ptr, mean_ptr, rstd_ptr,  # output [R, N] contiguous; statistics [R] (no mean: RMS)
    R, N, tiles,  # rows, elements per row, ROWS-row tiles
    stride_r, stride_n,  # the input's strides: between rows, along a row
    eps,
    RMS: tl.constexpr,  # rms_norm: no mean; rstd = 1 / sqrt(mean(x^2) + eps)
    HAS_W: tl.constexpr, HAS_B: tl.constexpr,
    ONE_PASS: tl.constexpr,  # a row fits in BLOCK: read once, normalised in registers
    ACC: tl.constexpr,
    ROWS: tl.constexpr, BLOCK: tl.constexpr,
):
    # layer_norm and rms_norm: ROWS rows per tile (several short rows share a program),
    # persistent programs over the tiles (_rows.py). A row that fits is read once and
    # written once; a longer one is read twice: Welford's one-pass statistics (lanes
    # merged as in reduction.py), then the normalising write.
    lanes = tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK).to(tl.int64)
    if ONE_PASS:
        col_mask = cols < N
        # the weight and bias are the same for every tile: loaded once per program
        if HAS_W:
            w = _math.convert(tl.load(w_ptr + cols, mask=col_mask, other=0.0), ACC)
        if HAS_B:
            b = _math.convert(tl.load(b_ptr + cols, mask=col_mask, other=0.0), ACC)
    for tile in range(tl.program_id(0), tiles, tl.num_programs(0)):
        r = tile * ROWS + lanes
        row_mask = r < R
        r = r.to(tl.int64)
        x_rows = x_ptr + r * stride_r
        y_rows = y_ptr + r * N
        if ONE_PASS:
            mask = row_mask[:, None] & col_mask[None, :]
            x = _math.convert(tl.load(x_rows[:, None] + cols[None, :] * stride_n, mask=mask,
                                      other=0.0), ACC)
            if RMS:
                mean = tl.zeros([ROWS], ACC)
                var = tl.sum(x * x, axis=1) / N
            else:
                mean = tl.sum(x, axis=1) / N
                d = tl.where(mask, x - mean[:, None], 0.0)
                var = tl.sum(d * d, axis=1) / N
            rstd = 1.0 / tl.sqrt(var + eps)
            y = (x - mean[:, None]) * rstd[:, None]
            if HAS_W:
                y = y * w[None, :]
            if HAS_B:
                y = y + b[None, :]
            tl.store(y_rows[:, None] + cols[None, :],
                     _math.convert(y, y_ptr.dtype.element_ty), mask=mask)
        else:
            m = tl.zeros([ROWS, BLOCK], ACC)    # Welford per lane: mean, m2, count
            m2 = tl.zeros([ROWS, BLOCK], ACC)
            count = tl.zeros([ROWS, BLOCK], ACC)
            for start in range(0, N, BLOCK):
                c = start + cols
                mask = row_mask[:, None] & (c[None, :] < N)
                x = _math.convert(tl.load(x_rows[:, None] + c[None, :] * stride_n,
                                          mask=mask, other=0.0), ACC)
                if RMS:
                    m2 += x * x
                else:
                    count_new = count + mask.to(ACC)
                    delta = x - m
                    m = m + tl.where(mask, delta / tl.where(mask, count_new, 1.0), 0.0)
                    m2 = m2 + tl.where(mask, delta * (x - m), 0.0)
                    count = count_new
            if RMS:
                mean = tl.zeros([ROWS], ACC)
                var = tl.sum(m2, axis=1) / N
            else:
                mean, m2_row, _ = welford_rows(m, m2, count)
                var = m2_row / N
            rstd = 1.0 / tl.sqrt(var + eps)
            for start in range(0, N, BLOCK):
                c = start + cols
                c_mask = c < N
                mask = row_mask[:, None] & c_mask[None, :]
                x = _math.convert(tl.load(x_rows[:, None] + c[None, :] * stride_n,
                                          mask=mask, other=0.0), ACC)
                y = (x - mean[:, None]) * rstd[:, None]
                if HAS_W:
                    y = y * _math.convert(tl.load(w_ptr + c, mask=c_mask, other=0.0),
                                          ACC)[None, :]
                if HAS_B:
                    y = y + _math.convert(tl.load(b_ptr + c, mask=c_mask, other=0.0),
                                          ACC)[None, :]
                tl.store(y_rows[:, None] + c[None, :],
                         _math.convert(y, y_ptr.dtype.element_ty), mask=mask)
        if not RMS:
            tl.store(mean_ptr + r, _math.convert(mean, mean_ptr.dtype.element_ty),
                     mask=row_mask)
        tl.store(rstd_ptr + r, _math.convert(rstd, rstd_ptr.dtype.element_ty), mask=row_mask)


@triton.jit
def norm_backward_kernel(
    grad_ptr, x_ptr, w_ptr,  # grad_out and input [rows, N] contiguous; weight [N] (HAS_W)
    mean_ptr, rstd_ptr,  # the forward's statistics [rows] (no mean with RMS)
    dx_ptr,  # grad_input [rows, N]
    dw_ptr, db_ptr,  # [programs, N] in ACC, zeroed: column sums of grad * xhat and grad
    rows, N, rows_per_program,
    RMS: tl.constexpr,  # rms_norm: xhat = x * rstd, no mean(g) term
    HAS_W: tl.constexpr,
    PARTIALS: tl.constexpr,  # write the partial column sums (grad_weight or grad_bias wanted)
    ONE_PASS: tl.constexpr,  # a row fits in BLOCK
    ACC: tl.constexpr,
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    first = pid.to(tl.int64) * rows_per_program  # int64 bounds: the loop's row is int64
    last = tl.minimum(first + rows_per_program, rows)
    part = pid.to(tl.int64) * N
    if ONE_PASS:
        # Memory: 2N reads + N writes per row; weight and the partial sums stay in registers.
        mask = cols < N
        if HAS_W:
            w = load_acc(w_ptr + cols, mask, ACC)
        else:
            w = 1.0
        dw = tl.zeros([BLOCK], ACC)
        db = tl.zeros([BLOCK], ACC)
        for row in range(first, last):
            rstd = _math.convert(tl.load(rstd_ptr + row), ACC)
            if RMS:
                mean = 0.0
            else:
                mean = _math.convert(tl.load(mean_ptr + row), ACC)
            x = load_acc(x_ptr + row * N + cols, mask, ACC)
            dy = load_acc(grad_ptr + row * N + cols, mask, ACC)
            xhat = tl.where(mask, (x - mean) * rstd, 0.0)
            g = dy * w
            dx = g - xhat * (tl.sum(g * xhat, axis=0) / N)
            if not RMS:
                dx = dx - tl.sum(g, axis=0) / N
            tl.store(dx_ptr + row * N + cols, _math.convert(dx * rstd, dx_ptr.dtype.element_ty),
                     mask=mask)
            dw += dy * xhat
            db += dy
        if PARTIALS:
            tl.store(dw_ptr + part + cols, dw, mask=mask)
            tl.store(db_ptr + part + cols, db, mask=mask)
    else:
        for row in range(first, last):
            rstd = _math.convert(tl.load(rstd_ptr + row), ACC)
            if RMS:
                mean = 0.0
            else:
                mean = _math.convert(tl.load(mean_ptr + row), ACC)
            # Pass 1: mean(g * xhat) and mean(g).
            acc_gx = tl.zeros([BLOCK], ACC)
            acc_g = tl.zeros([BLOCK], ACC)
            for start in range(0, N, BLOCK):
                mask = start + cols < N
                x = load_acc(x_ptr + row * N + start + cols, mask, ACC)
                g = load_acc(grad_ptr + row * N + start + cols, mask, ACC)
                if HAS_W:
                    g = g * load_acc(w_ptr + start + cols, mask, ACC)
                acc_gx += g * tl.where(mask, (x - mean) * rstd, 0.0)
                acc_g += g
            c_gx = tl.sum(acc_gx, axis=0) / N
            if RMS:
                c_g = 0.0
            else:
                c_g = tl.sum(acc_g, axis=0) / N
            # Pass 2: grad_input, and this row's share of the column sums.
            for start in range(0, N, BLOCK):
                mask = start + cols < N
                x = load_acc(x_ptr + row * N + start + cols, mask, ACC)
                dy = load_acc(grad_ptr + row * N + start + cols, mask, ACC)
                xhat = tl.where(mask, (x - mean) * rstd, 0.0)
                g = dy
                if HAS_W:
                    g = g * load_acc(w_ptr + start + cols, mask, ACC)
                dx = (g - xhat * c_gx - c_g) * rstd
                tl.store(dx_ptr + row * N + start + cols,
                         _math.convert(dx, dx_ptr.dtype.element_ty), mask=mask)
                if PARTIALS:
                    offs = part + start + cols
                    tl.store(dw_ptr + offs, tl.load(dw_ptr + offs, mask=mask) + dy * xhat,
                             mask=mask)
                    tl.store(db_ptr + offs, tl.load(db_ptr + offs, mask=mask) + dy,
                             mask=mask)


# ---- launchers ---------------------------------------------------------------------------
def _row_length(normalized_shape):
    n = 1
    for s in normalized_shape:
        n *= s
    return n


def launch_norm(op, x, w, b, y, mean, rstd, rows, n, eps, rms=False, segments=None,
                param="feature", group=(1, 1, 1), running=(None, None), momentum=0.0,
                stats_given=False):
    """norm_kernel over `rows` rows of `n` elements of the contiguous `x` (see the kernel
    for the layouts): `segments` = (inner, seg_stride) of a row made of runs; `group` =
    (groups, channels per group, pixels) for PARAM "group"; `running` = the running
    statistics, updated (training) or read (stats_given). y, mean, rstd are written."""
    inner, seg_stride = segments if segments is not None else (n, 0)
    run_mean, run_var = running
    updating = run_mean is not None and not stats_given
    block = min(triton.next_power_of_2(max(n, 1)), _rows.MAX_ONE_PASS)
    # A pointer that a variant never reads is given as some other tensor's.
    launch(op, norm_kernel, (rows,), pointer(x), pointer(w if w is not None else x),
           pointer(b if b is not None else x), pointer(y), pointer(mean), pointer(rstd),
           pointer(run_mean if run_mean is not None else mean),
           pointer(run_var if run_var is not None else rstd), n, eps, momentum, inner,
           seg_stride, *group, RMS=rms, SEGMENTED=segments is not None, PARAM=param,
           STATS_GIVEN=stats_given, RUNNING=updating, HAS_W=w is not None,
           HAS_B=b is not None, ACC=acc_dtype(x._impl.dtype),
           BLOCK=block, num_warps=_rows.num_warps_for(block))


def _rows_of(x, k):
    """(x, stride between rows, stride along a row): x read as rows of its trailing k
    dims where it lies, when the leading dims and the trailing ones each walk memory with
    one stride (a strided batch, every other row); copied contiguous otherwise."""
    d = len(x._impl.sizes) - k
    view = _row_strides(x, d)
    if view is None:
        x = x.contiguous()
        view = _row_strides(x, d)
    return (x, *view)


def _row_strides(x, d):
    """(stride_r, stride_n) of x's dims [:d] (the rows) and [d:] (a row's elements), when
    each group walks memory with one stride."""
    sizes, strides = x._impl.sizes, x._impl.strides
    before = _rows._collapse(sizes[:d], strides[:d])
    after = _rows._collapse(sizes[d:], strides[d:])
    if before is None or after is None:
        return None
    return before, after


def _norm(op, rms, input, normalized_shape, weight, bias, eps, specs):
    device, (x, w, b) = operands(op, input=input, weight=weight, bias=bias)
    n = _row_length(normalized_shape)
    y = new_tensor(specs[0].sizes, specs[0].dtype, device)
    stats = [new_tensor(s.sizes, s.dtype, device) for s in specs[1:]]
    rows = y._impl.numel() // n if n else 0
    if rows and n:
        x, stride_r, stride_n = _rows_of(x, len(normalized_shape))
        w = None if w is None else w.contiguous()
        b = None if b is None else b.contiguous()
        plan = _rows.RowPlan(n, rows, coalesce_rows=False)
        tiles = plan.tiles_per_outer
        launch(op, layer_norm_kernel, (_rows.persistent_grid(tiles),), pointer(x),
               pointer(w if w is not None else x), pointer(b if b is not None else x),
               pointer(y), pointer(stats[0]), pointer(stats[-1]), rows, n, tiles, stride_r,
               stride_n, eps, RMS=rms, HAS_W=w is not None, HAS_B=b is not None,
               ONE_PASS=plan.one_pass, ACC=acc_dtype(x._impl.dtype), ROWS=plan.rows,
               BLOCK=plan.block, num_warps=plan.num_warps)
    elif not n:
        _stats_of_empty_rows(None if rms else stats[0], stats[-1])
    return (y, *stats)


def _stats_of_empty_rows(mean, rstd):
    """The statistics of rows without elements, as PyTorch's: mean 0 (a sum of none over
    the count), rstd NaN (1 / sqrt(0 / 0 + eps)); the kernel never runs for them."""
    if mean is not None:
        call_below_autograd("fill_.Scalar", mean, 0)
    call_below_autograd("fill_.Scalar", rstd, math.nan)


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """(out, mean, rstd), the statistics over the trailing `normalized_shape` dims."""
    specs = shape_rule("normalization.native_layer_norm")(
        "native_layer_norm", (input, normalized_shape, weight, bias, eps))
    return _norm("native_layer_norm", False, input, normalized_shape, weight, bias, eps,
                 specs)


def fused_rms_norm(input, normalized_shape, weight, eps):
    """(out, rstd): out = input * rstd * weight, rstd = 1 / sqrt(mean(input**2) + eps);
    eps None is the dtype's machine epsilon (PyTorch's default)."""
    specs = shape_rule("normalization.fused_rms_norm")(
        "_fused_rms_norm", (input, normalized_shape, weight, eps))
    if eps is None:
        eps = machine_eps(input._impl.dtype)
    return _norm("_fused_rms_norm", True, input, normalized_shape, weight, None, eps, specs)


# ---- batch norm and group norm: the same kernel over other rows ---------------------------
def _dense(t):
    return t if t is None or t.is_contiguous() else t.contiguous()


@kernel(layout=NCHW)
def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum,
                      eps):
    """(out, mean, rstd): one row per channel, the N runs of HxW elements it owns.

        training:  the row's mean and biased variance normalise it; the running
                   statistics are updated in the same program (variance unbiased)
        eval:      mean, var = running_mean, running_var
    The statistics used are returned in both modes, as the CPU kernel does."""
    return _batch_norm(input, weight, bias, running_mean, running_var, training, momentum,
                       eps, nhwc=False)


def native_batch_norm_nhwc(input, weight, bias, running_mean, running_var, training,
                           momentum, eps):
    """native_batch_norm of a channels_last input, with no layout copies: in NHWC memory
    channel c's row is every C-th element from c on (N * H * W runs of one element, C
    apart), and the result is written in the same layout."""
    return _batch_norm(input, weight, bias, running_mean, running_var, training, momentum,
                       eps, nhwc=True)


def _batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
                nhwc):
    op = "native_batch_norm"
    specs = shape_rule("normalization.native_batch_norm")(
        op, (input, weight, bias, running_mean, running_var, training, momentum, eps))
    device, (x, w, b, rm, rv) = operands(op, input=input, weight=weight, bias=bias,
                                         running_mean=running_mean, running_var=running_var)
    mean, rstd = (new_tensor(s.sizes, s.dtype, device) for s in specs[1:])
    sizes = x._impl.sizes
    n, c = sizes[0], sizes[1]
    pixels = numel_of(sizes[2:])
    if nhwc:    # the output in the input's NHWC layout
        h, w_ = sizes[2], sizes[3]
        y = factory.empty_strided(sizes, (h * w_ * c, 1, w_ * c, c), dtype=specs[0].dtype,
                                  device=device)
    else:
        y = new_tensor(specs[0].sizes, specs[0].dtype, device)
    if training and (rm is None) != (rv is None):      # the kernel updates both or neither
        rm = rm if rm is not None else factory.zeros_like(rv)
        rv = rv if rv is not None else factory.ones_like(rm)
    stats = (_dense(rm), _dense(rv))
    if c and nhwc:
        launch_norm(op, x, _dense(w), _dense(b), y, mean, rstd, c, n * pixels, eps,
                    segments=(1, c), param="row", running=stats, momentum=momentum,
                    stats_given=not training)
    elif c:
        launch_norm(op, _dense(x), _dense(w), _dense(b), y, mean, rstd, c, n * pixels, eps,
                    segments=(pixels, c * pixels) if n > 1 else None, param="row",
                    running=stats, momentum=momentum, stats_given=not training)
    if training:
        # NOTE: no version bump, as in PyTorch (see cpu_kernels/normalization._update_running):
        # copy_ of a non-contiguous running statistic bumps, so its count is put back.
        for given, updated in zip((running_mean, running_var), stats):
            if given is not None and updated is not given:
                version = given._impl.version.value
                call_below_autograd("copy_", given, updated, False)
                given._impl.version.value = version
    return y, mean, rstd


def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    """(out, mean, rstd): one row per (sample, group), its C / group * HxW contiguous
    elements; the weight of element i of row (n, g) is channel g * C / group + i // HxW."""
    op = "native_group_norm"
    specs = shape_rule("normalization.native_group_norm")(
        op, (input, weight, bias, N, C, HxW, group, eps))
    device, (x, w, b) = operands(op, input=input, weight=weight, bias=bias)
    y, mean, rstd = (new_tensor(s.sizes, s.dtype, device) for s in specs)
    n = C // group * HxW
    if N * group and n:
        launch_norm(op, _dense(x), _dense(w), _dense(b), y, mean, rstd, N * group, n, eps,
                    param="group", group=(group, C // group, HxW))
    elif not n:
        _stats_of_empty_rows(mean, rstd)
    return y, mean, rstd


def _zeros(sizes, dtype, device):
    return call_below_autograd("fill_.Scalar", new_tensor(sizes, dtype, device), 0)


def _norm_backward(op, rms, grad_out, input, normalized_shape, mean, rstd, weight, specs):
    """(grad_input, grad_weight, grad_bias) as `specs` asks (None where it says None)."""
    device, (g, x, m, r, w) = operands(op, grad_out=grad_out, input=input, mean=mean,
                                       rstd=rstd, weight=weight)
    n = _row_length(normalized_shape)
    rows = x._impl.numel() // n if n else 0
    g, x, r = (t if t.is_contiguous() else t.contiguous() for t in (g, x, r))
    m = None if m is None else m.contiguous()
    dx = new_tensor(x._impl.sizes, x._impl.dtype, device)
    partials = any(s is not None for s in specs[1:])
    acc = dt.float64 if x._impl.dtype is dt.float64 else dt.float32
    per_program = triton.cdiv(rows, PROGRAMS) if rows else 1
    programs = triton.cdiv(rows, per_program)
    dw = _zeros((max(programs, 1), n), acc, device) if partials else dx
    db = _zeros((max(programs, 1), n), acc, device) if partials else dx
    if rows and n:
        block = triton.next_power_of_2(n)
        one_pass = block <= BACKWARD_ONE_PASS
        if not one_pass:
            block = min(BACKWARD_ONE_PASS, 4096 if INTERPRETED else 2048)
        launch(op, norm_backward_kernel, (programs,), pointer(g), pointer(x),
               pointer(w if w is not None else x), pointer(m if m is not None else r),
               pointer(r), pointer(dx), pointer(dw), pointer(db), rows, n, per_program,
               RMS=rms, HAS_W=w is not None, PARTIALS=partials, ONE_PASS=one_pass,
               ACC=acc_dtype(x._impl.dtype), BLOCK=block, num_warps=_rows.num_warps_for(block))
    # The column sums: the reduction kernel over the programs' partial sums.
    columns = [dx, dw, db]
    for i in (1, 2):
        if specs[i] is not None:
            columns[i] = columns[i].sum(0).to(specs[i].dtype).view(specs[i].sizes)
    return tuple(c if s is not None else None for c, s in zip(columns, specs))


def native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias,
                               output_mask):
    """(grad_input, grad_weight, grad_bias) of native_layer_norm from its saved mean and
    rstd; an output output_mask leaves out is None."""
    op = "native_layer_norm_backward"
    specs = shape_rule("normalization.native_layer_norm_backward")(
        op, (grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask))
    return _norm_backward(op, False, grad_out, input, normalized_shape, mean, rstd, weight,
                          specs)


def fused_rms_norm_backward(grad_out, input, normalized_shape, rstd, weight, output_mask):
    """(grad_input, grad_weight) of _fused_rms_norm from its saved rstd."""
    op = "_fused_rms_norm_backward"
    specs = shape_rule("normalization.fused_rms_norm_backward")(
        op, (grad_out, input, normalized_shape, rstd, weight, output_mask))
    return _norm_backward(op, True, grad_out, input, normalized_shape, None, rstd, weight,
                          (*specs, None))[:2]


# The NHWC batch norm serves dense channels_last 4-D inputs; others take the NCHW kernel
# through the layout-conversion fallback.
NHWC_INPUT = ShapeRule("4-D input stored NHWC", lambda input, *rest: is_channels_last(
    input._impl.sizes, input._impl.strides))
nhwc = Library("CUDA", "triton_kernels.normalization (NHWC)")
nhwc.impl("native_batch_norm", native_batch_norm_nhwc, priority=10, layout="channels_last",
          shape=NHWC_INPUT)
