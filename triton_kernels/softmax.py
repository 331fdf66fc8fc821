"""Fused row kernels on the `cuda` device: softmax / log_softmax forward and backward,
cross-entropy forward and backward, nll_loss, dropout. (layer_norm and rms_norm:
normalization.py.)

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
from tensorplay.dispatch.autotune import Config, bucket, choose
from tensorplay.kernel_support.checks import wrap_dim
from tensorplay.kernel_support.ops import shape_rule
from tensorplay.library import kernel
from triton_kernels import _math
from triton_kernels._launch import INTERPRETED, launch, new_tensor, operands, pointer
from triton_kernels.pointwise import run

# The longest row kept in registers (one program, one pass); longer rows loop.
MAX_ONE_PASS = 16384

# The forward kernel's configurations, autotuned per bucket of (rows, row length)
# (tensorplay/dispatch/autotune.py), the first the default: MAX_BLOCK is the longest row
# read in one pass (a longer row is walked in blocks, twice), num_warps the threads that
# share a row. A smaller MAX_BLOCK trades a second read of the row for fewer registers per
# program (more programs resident at once). Under the interpreter the second config
# exists to be measured, and tested, against the first: rows over 32 take two passes.
if INTERPRETED:
    CONFIGS = [Config({"MAX_BLOCK": MAX_ONE_PASS}), Config({"MAX_BLOCK": 32})]
else:
    CONFIGS = [Config({"MAX_BLOCK": MAX_ONE_PASS}, num_warps=4),
               Config({"MAX_BLOCK": MAX_ONE_PASS}, num_warps=8),
               Config({"MAX_BLOCK": MAX_ONE_PASS}, num_warps=16),
               Config({"MAX_BLOCK": 4096}, num_warps=8),
               Config({"MAX_BLOCK": 1024}, num_warps=4)]


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


# ---- launchers ---------------------------------------------------------------------------
def acc_dtype(dtype):
    return tl.float64 if dtype is dt.float64 else tl.float32


def row_block(n, max_block=MAX_ONE_PASS):
    """(BLOCK, one pass?) for rows of n elements: the whole row when it fits in
    `max_block`, else blocks of at most 2048 (4096 in the interpreter) walked twice."""
    block = triton.next_power_of_2(max(n, 1))
    if block <= max_block:
        return block, True
    return min(max_block, 4096 if INTERPRETED else 2048), False


def _rows_last(t, dim):
    """t with `dim` moved last, contiguous, read as rows; and the order to undo it."""
    ndim = len(t._impl.sizes)
    if ndim == 0:
        return t.reshape([1]), None
    d = wrap_dim("softmax", dim, ndim)
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
    shape_rule("softmax.softmax")(op, (self, dim, False))
    device, _ = operands(op, self=self)
    dtype = dt.float32 if half_to_float and self._impl.dtype.itemsize == 2 else \
        self._impl.dtype
    rows, order = _rows_last(self, dim)
    result = new_tensor(rows._impl.sizes, dtype, device)
    if result._impl.numel():
        n = rows._impl.sizes[-1]
        count = result._impl.numel() // n

        def run_config(config):
            # `result` is only written: a measured run may write it again.
            block, one_pass = row_block(n, config.kwargs["MAX_BLOCK"])
            launch(op, softmax_kernel, (count,), pointer(rows), pointer(result), n, LOG=log,
                   ONE_PASS=one_pass, ACC=acc_dtype(self._impl.dtype), BLOCK=block,
                   num_warps=config.num_warps, num_stages=config.num_stages)
        run_config(choose("softmax", CONFIGS, (bucket(count, n), self._impl.dtype.name, log),
                          run_config))
    return _restore(result, order, self, dtype)


@kernel(family=True)
def softmax_backward_data(op, grad_output, *params):
    """_softmax_backward_data and _log_softmax_backward_data; params are the forward's
    output (probs or log_probs), dim and input_dtype."""
    output, dim, input_dtype = params
    log = op == "_log_softmax_backward_data"
    spec = shape_rule("softmax.softmax_backward")(op, (grad_output, output, dim, input_dtype))
    device, _ = operands(op, grad_output=grad_output, output=output)
    g, order = _rows_last(grad_output, dim)
    o, _ = _rows_last(output, dim)
    result = new_tensor(o._impl.sizes, spec.dtype, device)
    if result._impl.numel():
        n = o._impl.sizes[-1]
        block, _ = row_block(n)
        launch(op, softmax_backward_kernel, (result._impl.numel() // n,), pointer(g),
               pointer(o), pointer(result), n, LOG=log, ACC=acc_dtype(o._impl.dtype), BLOCK=block)
    return _restore(result, order, output, spec.dtype)


