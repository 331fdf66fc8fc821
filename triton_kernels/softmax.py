"""Fused row kernels on the `cuda` device: softmax / log_softmax forward and backward,
cross-entropy forward and backward, nll_loss, dropout. (layer_norm and rms_norm:
norm_fused.py.)

Each program owns one row (the reduced dim moved last and made contiguous when it is
not already). When a row fits in one block it is read once, kept in registers, and
written once (Triton tutorial 02, the fused softmax):

    softmax:  m = max(x);  e = exp(x - m);  out = e / sum(e)
    memory:   N reads + N writes per row, against 3N + 2N for the unfused
              max / sub / exp / sum / div chain

A longer row is walked in blocks twice: once for the statistics (an online max and
sum for softmax), once to write. Half types compute in float32 and round once.
"""
from __future__ import annotations

import triton
import triton.language as tl

from tensorplay import _dtype as dt
from tensorplay import cuda
from tensorplay._generated import functional as F
from tensorplay.errors import DimError
from tensorplay.library import kernel
from tensorplay.meta import nn_layers as rules
from triton_kernels import _math
from triton_kernels._launch import INTERPRETED, launch, new_tensor, operands, pointer
from triton_kernels.pointwise import run, run_expression

# The longest row kept in registers (one program, one pass); longer rows loop.
MAX_ONE_PASS = 16384


@triton.jit
def row_max_and_sum(
    row_ptr,  # one row of N elements, contiguous
    N,
    ACC: tl.constexpr,
    BLOCK: tl.constexpr,
):
    """(max(x), sum(exp(x - max(x)))) of a row walked in blocks, in one read: an online
    max and sum that rescales the running sum whenever the max grows (a row of -inf
    gives (-inf, 0))."""
    cols = tl.arange(0, BLOCK)
    m = tl.zeros([BLOCK], ACC) + float("-inf")
    s = tl.zeros([BLOCK], ACC)
    for start in range(0, N, BLOCK):
        mask = start + cols < N
        x = _math.convert(tl.load(row_ptr + start + cols, mask=mask, other=float("-inf")), ACC)
        m_new = tl.maximum(m, x)
        s = s * tl.exp(m - m_new) + tl.where(x == float("-inf"), 0.0, tl.exp(x - m_new))
        s = tl.where(m_new == float("-inf"), 0.0, s)
        m = m_new
    row_max = tl.max(m, axis=0)
    return row_max, tl.sum(s * tl.exp(m - row_max), axis=0)


@triton.jit
def softmax_kernel(
    in_ptr, out_ptr,  # [rows, N], contiguous
    N,  # the row length
    LOG: tl.constexpr,  # log_softmax
    ONE_PASS: tl.constexpr,  # the row fits in BLOCK
    ACC: tl.constexpr,  # float32 (float64 for float64 rows)
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    base_in = in_ptr + row * N
    base_out = out_ptr + row * N
    if ONE_PASS:
        mask = cols < N
        x = _math.convert(tl.load(base_in + cols, mask=mask, other=float("-inf")), ACC)
        m = tl.max(x, axis=0)
        e = tl.exp(x - m)
        s = tl.sum(e, axis=0)
        if LOG:
            y = x - m - tl.log(s)
        else:
            y = e / s
        tl.store(base_out + cols, _math.convert(y, out_ptr.dtype.element_ty), mask=mask)
    else:
        row_max, total = row_max_and_sum(base_in, N, ACC, BLOCK)
        for start in range(0, N, BLOCK):
            mask = start + cols < N
            x = _math.convert(tl.load(base_in + start + cols, mask=mask), ACC)
            if LOG:
                y = x - row_max - tl.log(total)
            else:
                y = tl.exp(x - row_max) / total
            tl.store(base_out + start + cols, _math.convert(y, out_ptr.dtype.element_ty),
                     mask=mask)


@triton.jit
def softmax_backward_kernel(
    grad_ptr, out_ptr, result_ptr,  # [rows, N] contiguous: grad_output, forward output
    N,
    LOG: tl.constexpr,  # log_softmax: g - exp(o) * sum(g);  softmax: o * (g - sum(g * o))
    ACC: tl.constexpr,
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], ACC)
    for start in range(0, N, BLOCK):
        mask = start + cols < N
        g = _math.convert(tl.load(grad_ptr + row * N + start + cols, mask=mask, other=0.0),
                          ACC)
        if LOG:
            acc += g
        else:
            o = _math.convert(tl.load(out_ptr + row * N + start + cols, mask=mask, other=0.0),
                              ACC)
            acc += g * o
    total = tl.sum(acc, axis=0)
    for start in range(0, N, BLOCK):
        mask = start + cols < N
        g = _math.convert(tl.load(grad_ptr + row * N + start + cols, mask=mask, other=0.0),
                          ACC)
        o = _math.convert(tl.load(out_ptr + row * N + start + cols, mask=mask, other=0.0),
                          ACC)
        if LOG:
            r = g - tl.exp(o) * total
        else:
            r = o * (g - total)
        tl.store(result_ptr + row * N + start + cols,
                 _math.convert(r, result_ptr.dtype.element_ty), mask=mask)


@triton.jit
def cross_entropy_kernel(
    x_ptr, target_ptr, weight_ptr,  # logits [rows, C] contiguous, targets [rows], weight [C]
    loss_ptr, probs_ptr, row_weight_ptr,  # per-row loss and weight, probs [rows, C]
    C, ignore_index,
    HAS_W: tl.constexpr,
    ACC: tl.constexpr,
    BLOCK: tl.constexpr,
):
    # Per row: m = max(x), s = sum(exp(x - m)); loss = w * (log(s) - (x[t] - m));
    # probs = exp(x - m) / s, kept for the backward kernel.
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    base = x_ptr + row * C
    t = tl.load(target_ptr + row)
    valid = t != ignore_index
    t_safe = tl.where(valid, t, 0)
    w = tl.where(valid, 1.0, 0.0)
    if HAS_W:
        w = w * _math.convert(tl.load(weight_ptr + t_safe), ACC)
    row_max, total = row_max_and_sum(base, C, ACC, BLOCK)
    picked = _math.convert(tl.load(base + t_safe), ACC)
    # NOTE: where, not just w = 0: an ignored row's picked value may be -inf (0 * inf = nan).
    tl.store(loss_ptr + row, tl.where(valid, w * (tl.log(total) - (picked - row_max)), 0.0))
    tl.store(row_weight_ptr + row, w)
    for start in range(0, C, BLOCK):
        mask = start + cols < C
        x = _math.convert(tl.load(base + start + cols, mask=mask), ACC)
        p = tl.exp(x - row_max) / total
        tl.store(probs_ptr + row * C + start + cols,
                 _math.convert(p, probs_ptr.dtype.element_ty), mask=mask)


@triton.jit
def cross_entropy_backward_kernel(
    probs_ptr, target_ptr, weight_ptr, grad_ptr, total_ptr,  # grad_output: scalar or [rows]
    out_ptr,  # [rows, C]: (probs - onehot(target)) * w * g   (nll_loss: probs = 0)
    C, ignore_index, grad_stride,  # grad_stride 0: one grad_output for every row
    HAS_PROBS: tl.constexpr, HAS_W: tl.constexpr, MEAN: tl.constexpr,
    ACC: tl.constexpr,
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    t = tl.load(target_ptr + row).to(tl.int64)
    valid = t != ignore_index
    t_safe = tl.where(valid, t, 0)
    w = tl.where(valid, 1.0, 0.0)
    if HAS_W:
        w = w * _math.convert(tl.load(weight_ptr + t_safe), ACC)
    g = _math.convert(tl.load(grad_ptr + row * grad_stride), ACC)
    if MEAN:
        g = g / _math.convert(tl.load(total_ptr), ACC)
    scale = w * g
    for start in range(0, C, BLOCK):
        mask = start + cols < C
        onehot = tl.where(start + cols == t_safe, 1.0, 0.0)
        if HAS_PROBS:
            p = _math.convert(tl.load(probs_ptr + row * C + start + cols, mask=mask), ACC)
            r = (p - onehot) * scale
        else:
            r = -onehot * scale
        tl.store(out_ptr + row * C + start + cols, _math.convert(r, out_ptr.dtype.element_ty),
                 mask=mask)


@triton.jit
def nll_kernel(
    x_ptr, target_ptr, weight_ptr,  # log-probabilities [R, C] contiguous, targets [R], [C]
    loss_ptr, row_weight_ptr,  # [R]: -w * x[r, target[r]], and w
    R, C, ignore_index,
    HAS_W: tl.constexpr,
    ACC: tl.constexpr,
    BLOCK: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = rows < R
    t = tl.load(target_ptr + rows, mask=mask, other=0).to(tl.int64)
    valid = (t != ignore_index) & mask
    t_safe = tl.where(valid, t, 0)
    w = tl.where(valid, 1.0, 0.0)
    if HAS_W:
        w = w * _math.convert(tl.load(weight_ptr + t_safe, mask=valid, other=0.0), ACC)
    picked = _math.convert(tl.load(x_ptr + rows.to(tl.int64) * C + t_safe, mask=mask,
                                   other=0.0), ACC)
    tl.store(loss_ptr + rows, tl.where(valid, -picked * w, 0.0), mask=mask)
    tl.store(row_weight_ptr + rows, w, mask=mask)


# ---- launchers ---------------------------------------------------------------------------
def _acc(dtype):
    return tl.float64 if dtype is dt.float64 else tl.float32


def _block(n):
    """(BLOCK, one pass?) for rows of n elements."""
    block = triton.next_power_of_2(max(n, 1))
    if block <= MAX_ONE_PASS:
        return block, True
    return (4096 if INTERPRETED else 2048), False


def _rows_last(t, dim):
    """t with `dim` moved last, contiguous, read as rows; and the order to undo it."""
    ndim = len(t._impl.sizes)
    if ndim == 0:
        return t.reshape([1]), None
    d = rules.wrap_dim("softmax", dim, ndim)
    order = [i for i in range(ndim) if i != d] + [d]
    moved = t.permute(order) if d != ndim - 1 else t
    if not moved.is_contiguous():
        moved = moved.contiguous()
    return moved, order


def _restore(result, order, like, dtype):
    """The row-major result back in `like`'s dim order, as a new contiguous tensor."""
    if order is None:
        return result.view(like._impl.sizes)
    if order == sorted(order):
        return result
    out = new_tensor(like._impl.sizes, dtype, like._impl.device)
    inverse = [order.index(i) for i in range(len(order))]
    return run("copy", out, (result.permute(inverse),), dtype)


@kernel(family=True)
def softmax(op, self, dim, half_to_float):
    """_softmax and _log_softmax: one row per program (see softmax_kernel)."""
    log = op == "_log_softmax"
    rules.softmax(op, (self, dim, False))
    device, _ = operands(op, self=self)
    dtype = dt.float32 if half_to_float and self._impl.dtype.itemsize == 2 else \
        self._impl.dtype
    rows, order = _rows_last(self, dim)
    result = new_tensor(rows._impl.sizes, dtype, device)
    if result._impl.numel():
        n = rows._impl.sizes[-1]
        block, one_pass = _block(n)
        launch(op, softmax_kernel, (result._impl.numel() // n,), pointer(rows), pointer(result),
               n, LOG=log, ONE_PASS=one_pass, ACC=_acc(self._impl.dtype), BLOCK=block)
    return _restore(result, order, self, dtype)


@kernel(family=True)
def softmax_backward_data(op, grad_output, *params):
    """_softmax_backward_data and _log_softmax_backward_data; params are the forward's
    output (probs or log_probs), dim and input_dtype."""
    output, dim, input_dtype = params
    log = op == "_log_softmax_backward_data"
    spec = rules.softmax_backward(op, (grad_output, output, dim, input_dtype))
    device, _ = operands(op, grad_output=grad_output, output=output)
    g, order = _rows_last(grad_output, dim)
    o, _ = _rows_last(output, dim)
    result = new_tensor(o._impl.sizes, spec.dtype, device)
    if result._impl.numel():
        n = o._impl.sizes[-1]
        block, _ = _block(n)
        launch(op, softmax_backward_kernel, (result._impl.numel() // n,), pointer(g),
               pointer(o), pointer(result), n, LOG=log, ACC=_acc(o._impl.dtype), BLOCK=block)
    return _restore(result, order, output, spec.dtype)


# ---- cross entropy -------------------------------------------------------------------------
def _check_targets(op, target, classes, ignore_index):
    """Class indices must lie in [0, C) (or be ignore_index): checked on the device, the
    bad value fetched only for the message. An index past C would read out of bounds."""
    if not target._impl.numel():
        return
    valid = F.ne(target, ignore_index)
    bad = F.logical_and(valid, F.logical_or(F.lt(target, 0), F.ge(target, classes)))
    if F.any(bad).item():
        host = target.cpu().numpy().reshape(-1)
        value = host[(host != ignore_index) & ((host < 0) | (host >= classes))][0]
        raise DimError(f"{op}(): Target {value} is out of bounds: argument 'target' must hold "
                       f"class indices in [0, {classes - 1}] (or ignore_index={ignore_index})",
                       op=op, arg="target")


def _reduce_losses(losses, row_weight, reduction, dtype):
    """(loss, total weight) from the per-row losses and weights the kernels wrote, in
    `dtype`: the rows themselves ("none"), their sum, or their weighted mean."""
    total = F.sum(row_weight)
    if reduction == "none":
        loss = losses
    else:
        loss = F.sum(losses)
        if reduction == "mean":
            loss = F.div(loss, total)
    return loss.to(dtype), total.to(dtype)


def cross_entropy_forward(self, target, weight, reduction, ignore_index):
    """(loss, probs, total_weight) for (N, C) logits at class indices, in one row kernel;
    the reduction over rows is the reduction kernel."""
    op = "_cross_entropy_forward"
    specs = rules.cross_entropy_forward(op, (self, target, weight, reduction, ignore_index))
    device, (x, t, w) = operands(op, self=self, target=target, weight=weight)
    rows_n, classes = x._impl.sizes
    _check_targets(op, t, classes, ignore_index)
    x = x if x.is_contiguous() else x.contiguous()
    t = t.contiguous()
    probs = new_tensor(x._impl.sizes, x._impl.dtype, device)
    acc = dt.float64 if x._impl.dtype is dt.float64 else dt.float32
    losses = new_tensor((rows_n,), acc, device)
    row_weight = new_tensor((rows_n,), acc, device)
    if rows_n:
        block, _ = _block(classes)
        launch(op, cross_entropy_kernel, (rows_n,), pointer(x), pointer(t),
               pointer(w if w is not None else x), pointer(losses), pointer(probs),
               pointer(row_weight), classes, ignore_index, HAS_W=w is not None,
               ACC=_acc(acc), BLOCK=block)
    loss, total = _reduce_losses(losses, row_weight, reduction, self._impl.dtype)
    return loss.view(specs[0].sizes), probs, total.view(specs[2].sizes)


def cross_entropy_backward(grad_output, probs, target, weight, reduction, ignore_index,
                           total_weight):
    """grad_input[r] = (probs[r] - onehot(target[r])) * w[r] * g (g / total for 'mean')."""
    op = "_cross_entropy_backward"
    rules.cross_entropy_backward(op, (grad_output, probs, target, weight, reduction,
                                      ignore_index, total_weight))
    device, (g, p, t, w, total) = operands(op, grad_output=grad_output, probs=probs,
                                           target=target, weight=weight,
                                           total_weight=total_weight)
    rows_n, classes = p._impl.sizes
    p = p if p.is_contiguous() else p.contiguous()
    t = t.contiguous()
    g = g.contiguous()
    out = new_tensor(p._impl.sizes, p._impl.dtype, device)
    if rows_n and classes:
        block, _ = _block(classes)
        launch(op, cross_entropy_backward_kernel, (rows_n,), pointer(p), pointer(t),
               pointer(w if w is not None else p), pointer(g), pointer(total), pointer(out),
               classes, ignore_index, 1 if g._impl.numel() > 1 else 0, HAS_PROBS=True,
               HAS_W=w is not None, MEAN=reduction == "mean", ACC=_acc(p._impl.dtype),
               BLOCK=block)
    return out


def _class_rows(x):
    """(N, C, d1, ...) -> rows (N * d1 * ..., C) with the class dim last; (C,) -> (1, C)."""
    sizes = x._impl.sizes
    if len(sizes) == 1:
        return x.reshape([1, sizes[0]])
    if len(sizes) > 2:
        x = x.permute([0] + list(range(2, len(sizes))) + [1])
    return x.reshape([-1, sizes[1]])


def nll_loss_forward(self, target, weight, reduction, ignore_index):
    """(loss, total_weight): loss[r] = -w[r] * self[r, target[r]] (one gather per row),
    reduced by the reduction kernel; 'mean' divides the sum by total_weight = sum(w)."""
    op = "nll_loss_forward"
    spec, total_spec = rules.nll_loss_forward(op, (self, target, weight, reduction,
                                                   ignore_index))
    device, (x, t, w) = operands(op, self=self, target=target, weight=weight)
    rows = _class_rows(x).contiguous()
    classes = rows._impl.sizes[1]
    t = t.reshape([-1]).contiguous()
    _check_targets(op, t, classes, ignore_index)
    acc = dt.float64 if x._impl.dtype is dt.float64 else dt.float32
    losses = new_tensor((rows._impl.sizes[0],), acc, device)
    row_weight = new_tensor((rows._impl.sizes[0],), acc, device)
    if rows._impl.sizes[0]:
        block = min(triton.next_power_of_2(rows._impl.sizes[0]), 1024)
        launch(op, nll_kernel, (triton.cdiv(rows._impl.sizes[0], block),), pointer(rows),
               pointer(t), pointer(w if w is not None else rows), pointer(losses),
               pointer(row_weight), rows._impl.sizes[0], classes, ignore_index,
               HAS_W=w is not None, ACC=_acc(acc), BLOCK=block)
    loss, total = _reduce_losses(losses, row_weight, reduction, self._impl.dtype)
    return loss.view(spec.sizes), total.view(total_spec.sizes)


def nll_loss_backward(grad_output, self, target, weight, reduction, ignore_index,
                      total_weight):
    """grad_input[r, target[r]] = -w[r] * g (g / total_weight for 'mean'), 0 elsewhere."""
    op = "nll_loss_backward"
    rules.nll_loss_backward(op, (grad_output, self, target, weight, reduction, ignore_index,
                                 total_weight))
    device, (g, x, t, w, total) = operands(op, grad_output=grad_output, self=self,
                                           target=target, weight=weight,
                                           total_weight=total_weight)
    sizes = x._impl.sizes
    classes = sizes[0] if len(sizes) == 1 else sizes[1]
    moved = [sizes[0]] + list(sizes[2:]) + [classes] if len(sizes) > 2 else [-1, classes]
    rows_n = x._impl.numel() // classes if classes else 0
    t = t.reshape([-1]).contiguous()
    g = g.reshape([-1]).contiguous()
    grad_rows = new_tensor((rows_n, classes), x._impl.dtype, device)
    if rows_n and classes:
        block, _ = _block(classes)
        launch(op, cross_entropy_backward_kernel, (rows_n,), pointer(grad_rows), pointer(t),
               pointer(w if w is not None else grad_rows), pointer(g), pointer(total),
               pointer(grad_rows), classes, ignore_index, 1 if g._impl.numel() > 1 else 0,
               HAS_PROBS=False, HAS_W=w is not None, MEAN=reduction == "mean",
               ACC=_acc(x._impl.dtype), BLOCK=block)
    if len(sizes) <= 2:
        return grad_rows.view(sizes)
    back = [0, len(sizes) - 1] + list(range(1, len(sizes) - 1))
    out = new_tensor(sizes, x._impl.dtype, device)
    return run("copy", out, (grad_rows.view(moved).permute(back),), x._impl.dtype)


# ---- dropout -----------------------------------------------------------------------------
def native_dropout(input, p, train, generator):
    """(output, keep mask): keep = uniform(0, 1) >= p (Philox at the cuda generator's seed
    and offset), output = input * keep / (1 - p). Not training: a copy, all True."""
    rules.native_dropout("native_dropout", (input, p, train, generator))
    device, (x,) = operands("native_dropout", input=input)
    sizes, dtype = x._impl.sizes, x._impl.dtype
    out = new_tensor(sizes, dtype, device)
    keep = new_tensor(sizes, dt.bool, device)
    if train is False:
        run("copy", out, (x,), dtype)
        return out, F.fill_(keep, True)
    n = x._impl.numel()
    seed, offset = cuda.philox_inputs(generator, n)
    run_expression("dropout_mask", "tl.rand(seed, index + offset) >= p", keep, (), dtype,
                   {"seed": seed, "offset": offset, "p": p})
    scale = 0.0 if p == 1 else 1.0 / (1.0 - p)
    run_expression("dropout_apply", "x * (y * scale)", out, (x, keep), dtype,
                   {"scale": scale})
    return out, keep


# ---- binary cross-entropy with logits ------------------------------------------------------
def binary_cross_entropy_with_logits(self, target, weight, pos_weight, reduction):
    """loss = (1 - y) * x + (1 + (pos_weight - 1) * y) * softplus(-x), times weight: one
    pointwise kernel into float32 (softplus never overflows), then the reduction kernel."""
    op = "binary_cross_entropy_with_logits"
    rules.bce_with_logits(op, (self, target, weight, pos_weight, reduction))
    device, (x, y, w, pw) = operands(op, self=self, target=target, weight=weight,
                                     pos_weight=pos_weight)
    acc = dt.float64 if x._impl.dtype is dt.float64 else dt.float32
    loss = new_tensor(x._impl.sizes, acc, device)
    if pw is None:
        run_expression("bce_logits", "(1.0 - y) * x + _math.softplus(-x)", loss, (x, y), acc,
                       {})
    else:
        run_expression("bce_logits_pos", "(1.0 - y) * x + (1.0 + (z - 1.0) * y) * "
                       "_math.softplus(-x)", loss, (x, y, pw), acc, {})
    if w is not None:
        loss = F.mul(loss, w.to(acc))
    if reduction == "sum":
        loss = F.sum(loss)
    elif reduction == "mean":
        loss = F.mean(loss)
    return loss.to(self._impl.dtype)
