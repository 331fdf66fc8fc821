"""Fused row kernels on the `cuda` device: softmax / log_softmax forward and backward.
(cross-entropy: losses.py; layer_norm and rms_norm: normalization.py.)

The input is read where it lies, as [outer, N, inner] around the softmax dim (_rows.py):
no copy moves the dim last. Each program walks tiles of ROWS rows x BLOCK elements
(several short rows at once; for a non-last dim, ROWS neighbouring rows, which are
contiguous in memory). When a row fits in one block it is read once, kept in registers,
and written once (Triton tutorial 02, the fused softmax):

    softmax:  m = max(x);  e = exp(x - m);  out = e / sum(e)
    memory:   N reads + N writes per row, against 3N + 2N for the unfused
              max / sub / exp / sum / div chain

A longer row is walked in blocks twice: once for the statistics (an online max and
sum, which rescales the running sum whenever the max grows), once to write. Half types
compute in float32 and round once.
"""
from __future__ import annotations

import triton
import triton.language as tl

from tensorplay import _dtype as dt
from tensorplay.kernel_support.checks import wrap_dim
from tensorplay.kernel_support.ops import shape_rule
from tensorplay.library import kernel
from triton_kernels import _math, _rows
from triton_kernels._launch import launch, new_tensor, operands, pointer


@triton.jit
def softmax_kernel(
    in_ptr, out_ptr,  # read as [outer, N, inner] through the strides below
    N, inner, tiles_per_outer, tiles,  # row length; rows per outer index; ROWS-row tiles
    s_in_o, s_in_n, s_in_i,  # the input's strides (outer, along a row, across rows)
    s_out_o, s_out_n, s_out_i,
    LOG: tl.constexpr,  # log_softmax
    ONE_PASS: tl.constexpr,  # a row fits in BLOCK
    ACC: tl.constexpr,  # float32 (float64 for float64 rows)
    ROWS: tl.constexpr, BLOCK: tl.constexpr,
):
    lanes = tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK).to(tl.int64)
    # Persistent: a program takes every num_programs-th tile.
    for tile in range(tl.program_id(0), tiles, tl.num_programs(0)):
        o = (tile // tiles_per_outer).to(tl.int64)
        i = (tile % tiles_per_outer) * ROWS + lanes
        row_mask = i < inner
        x_rows = in_ptr + o * s_in_o + i.to(tl.int64) * s_in_i  # [ROWS] row starts
        y_rows = out_ptr + o * s_out_o + i.to(tl.int64) * s_out_i
        if ONE_PASS:
            mask = row_mask[:, None] & (cols[None, :] < N)
            x = _math.convert(tl.load(x_rows[:, None] + cols[None, :] * s_in_n, mask=mask,
                                      other=float("-inf")), ACC)
            m = tl.max(x, axis=1)
            e = tl.exp(x - m[:, None])
            s = tl.sum(e, axis=1)
            if LOG:
                y = x - m[:, None] - tl.log(s)[:, None]   # the CPU kernel's order of rounding
            else:
                y = e / s[:, None]
            tl.store(y_rows[:, None] + cols[None, :] * s_out_n,
                     _math.convert(y, out_ptr.dtype.element_ty), mask=mask)
        else:
            # Pass 1: online max and sum per lane (a row of -inf gives (-inf, 0)).
            m = tl.zeros([ROWS, BLOCK], ACC) + float("-inf")
            s = tl.zeros([ROWS, BLOCK], ACC)
            for start in range(0, N, BLOCK):
                c = start + cols
                mask = row_mask[:, None] & (c[None, :] < N)
                x = _math.convert(tl.load(x_rows[:, None] + c[None, :] * s_in_n, mask=mask,
                                          other=float("-inf")), ACC)
                m_new = tl.maximum(m, x)
                s = s * tl.exp(m - m_new) + tl.where(x == float("-inf"), 0.0,
                                                     tl.exp(x - m_new))
                s = tl.where(m_new == float("-inf"), 0.0, s)
                m = m_new
            row_max = tl.max(m, axis=1)
            total = tl.sum(s * tl.exp(m - row_max[:, None]), axis=1)
            log_total = tl.log(total)
            # Pass 2: write.
            for start in range(0, N, BLOCK):
                c = start + cols
                mask = row_mask[:, None] & (c[None, :] < N)
                x = _math.convert(tl.load(x_rows[:, None] + c[None, :] * s_in_n, mask=mask),
                                  ACC)
                if LOG:
                    y = x - row_max[:, None] - log_total[:, None]
                else:
                    y = tl.exp(x - row_max[:, None]) / total[:, None]
                tl.store(y_rows[:, None] + c[None, :] * s_out_n,
                         _math.convert(y, out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def softmax_backward_kernel(
    grad_ptr, out_ptr, result_ptr,  # grad_output, the forward's output, grad_input
    N, inner, tiles_per_outer, tiles,
    s_g_o, s_g_n, s_g_i,
    s_o_o, s_o_n, s_o_i,
    s_r_o, s_r_n, s_r_i,
    LOG: tl.constexpr,  # log_softmax: g - exp(o) * sum(g);  softmax: o * (g - sum(g * o))
    ONE_PASS: tl.constexpr,
    ACC: tl.constexpr,
    ROWS: tl.constexpr, BLOCK: tl.constexpr,
):
    lanes = tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK).to(tl.int64)
    for tile in range(tl.program_id(0), tiles, tl.num_programs(0)):
        o_idx = (tile // tiles_per_outer).to(tl.int64)
        i = (tile % tiles_per_outer) * ROWS + lanes
        row_mask = i < inner
        i = i.to(tl.int64)
        g_rows = grad_ptr + o_idx * s_g_o + i * s_g_i
        o_rows = out_ptr + o_idx * s_o_o + i * s_o_i
        r_rows = result_ptr + o_idx * s_r_o + i * s_r_i
        if ONE_PASS:
            # Memory: 2N reads + N writes per row.
            mask = row_mask[:, None] & (cols[None, :] < N)
            g = _math.convert(tl.load(g_rows[:, None] + cols[None, :] * s_g_n, mask=mask,
                                      other=0.0), ACC)
            o = _math.convert(tl.load(o_rows[:, None] + cols[None, :] * s_o_n, mask=mask,
                                      other=0.0), ACC)
            if LOG:
                r = g - tl.exp(o) * tl.sum(g, axis=1)[:, None]
            else:
                r = o * (g - tl.sum(g * o, axis=1)[:, None])
            tl.store(r_rows[:, None] + cols[None, :] * s_r_n,
                     _math.convert(r, result_ptr.dtype.element_ty), mask=mask)
        else:
            acc = tl.zeros([ROWS, BLOCK], ACC)
            for start in range(0, N, BLOCK):
                c = start + cols
                mask = row_mask[:, None] & (c[None, :] < N)
                g = _math.convert(tl.load(g_rows[:, None] + c[None, :] * s_g_n, mask=mask,
                                          other=0.0), ACC)
                if LOG:
                    acc += g
                else:
                    acc += g * _math.convert(tl.load(o_rows[:, None] + c[None, :] * s_o_n,
                                                     mask=mask, other=0.0), ACC)
            total = tl.sum(acc, axis=1)[:, None]
            for start in range(0, N, BLOCK):
                c = start + cols
                mask = row_mask[:, None] & (c[None, :] < N)
                g = _math.convert(tl.load(g_rows[:, None] + c[None, :] * s_g_n, mask=mask,
                                          other=0.0), ACC)
                o = _math.convert(tl.load(o_rows[:, None] + c[None, :] * s_o_n, mask=mask,
                                          other=0.0), ACC)
                if LOG:
                    r = g - tl.exp(o) * total
                else:
                    r = o * (g - total)
                tl.store(r_rows[:, None] + c[None, :] * s_r_n,
                         _math.convert(r, result_ptr.dtype.element_ty), mask=mask)


# ---- launchers ---------------------------------------------------------------------------
def acc_dtype(dtype):
    return tl.float64 if dtype is dt.float64 else tl.float32


def _rows_of(op, t, dim):
    """(tensor, outer, n, inner, strides): t read as [outer, n, inner] around `dim`; an
    input whose outer (or inner) dims do not walk memory with one stride is copied
    contiguous first (a permuted 4-d tensor, say)."""
    ndim = len(t._impl.sizes)
    if ndim == 0:
        return t, 1, 1, 1, (0, 0, 0)
    d = wrap_dim(op, dim, ndim)
    view = _rows.rows_view(t, d)
    if view is None:
        t = t.contiguous()
        view = _rows.rows_view(t, d)
    outer, n, inner, strides = view
    return t, outer, n, inner, strides


def _contiguous_strides(n, inner):
    return (n * inner, inner, 1)


def plan_for(n, inner, strides):
    """The RowPlan of a launch whose first operand walks with `strides` (s_o, s_n, s_i)."""
    return _rows.RowPlan(n, inner, coalesce_rows=strides[2] == 1 and strides[1] != 1)


@kernel(family=True)
def softmax(op, self, dim, half_to_float):
    """_softmax and _log_softmax: ROWS rows per tile, persistent programs (see
    softmax_kernel); the result is contiguous."""
    log = op == "_log_softmax"
    shape_rule("softmax.softmax")(op, (self, dim, False))
    device, (x,) = operands(op, self=self)
    dtype = dt.float32 if half_to_float and x._impl.dtype.itemsize == 2 else x._impl.dtype
    result = new_tensor(x._impl.sizes, dtype, device)
    if not result._impl.numel():
        return result
    x, outer, n, inner, strides = _rows_of(op, x, dim)
    outer, inner, (s_in, s_out) = _rows.as_row_tiles(outer, inner, strides,
                                                     _contiguous_strides(n, inner))
    plan = plan_for(n, inner, s_in)
    tiles = outer * plan.tiles_per_outer
    launch(op, softmax_kernel, (_rows.persistent_grid(tiles),), pointer(x), pointer(result),
           n, inner, plan.tiles_per_outer, tiles, *s_in, *s_out, LOG=log,
           ONE_PASS=plan.one_pass, ACC=acc_dtype(x._impl.dtype), ROWS=plan.rows,
           BLOCK=plan.block, num_warps=plan.num_warps)
    return result


@kernel(family=True)
def softmax_backward_data(op, grad_output, *params):
    """_softmax_backward_data and _log_softmax_backward_data; params are the forward's
    output (probs or log_probs), dim and input_dtype."""
    output, dim, input_dtype = params
    log = op == "_log_softmax_backward_data"
    spec = shape_rule("softmax.softmax_backward")(op, (grad_output, output, dim, input_dtype))
    device, (g, o) = operands(op, grad_output=grad_output, output=output)
    result = new_tensor(o._impl.sizes, spec.dtype, device)
    if not result._impl.numel():
        return result
    g, outer, n, inner, s_g = _rows_of(op, g, dim)
    o, _, _, _, s_o = _rows_of(op, o, dim)
    outer, inner, (s_g, s_o, s_r) = _rows.as_row_tiles(outer, inner, s_g, s_o,
                                           _contiguous_strides(n, inner))
    plan = plan_for(n, inner, s_o)
    tiles = outer * plan.tiles_per_outer
    launch(op, softmax_backward_kernel, (_rows.persistent_grid(tiles),), pointer(g),
           pointer(o), pointer(result), n, inner, plan.tiles_per_outer, tiles, *s_g, *s_o,
           *s_r, LOG=log, ONE_PASS=plan.one_pass, ACC=acc_dtype(o._impl.dtype),
           ROWS=plan.rows, BLOCK=plan.block, num_warps=plan.num_warps)
    return result
