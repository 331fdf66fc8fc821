"""Reductions on the `cuda` device: sum, mean, prod, max/min (with indices),
argmax/argmin, over any dims, with keepdim. One Triton kernel serves them all.

Every reduction is read as a matrix: M rows (the kept dims, in order) of N elements
each (the reduced dims). When the dims collapse to one stride each, the kernel reads
the input where it lies (a column sum walks rows with stride 1); otherwise the
input is first permuted (kept dims first) and copied to a contiguous matrix.

    x: [B, C, H], dim=(0, 2)  ->  permute to [C, B, H]  ->  matrix [M=C, N=B*H]

Each program reduces a BLOCK_M x BLOCK_N tile at a time along its rows. When there
are too few rows to keep the GPU busy (a full sum has one), the N elements are cut
into SPLIT chunks, each program writes a partial result, and a second launch of the
same kernel reduces the [M, SPLIT] partials (carrying their indices for max/min).
"""
from __future__ import annotations

import builtins
import logging
import math

import triton
import triton.language as tl

from tensorplay import _dtype as dt
from tensorplay._device_transfer import from_host, to_host
from tensorplay._memory_format import contiguous_format
from tensorplay.errors import ArgumentError, ShapeError
from tensorplay.kernel_support.arguments import bincount_dtype, integral_to_long
from tensorplay.kernel_support.checks import reduce_dim_list
from tensorplay.kernel_support.ops import call_below_autograd, shape_rule
from tensorplay.kernel_support.results import factory, numel_of
from tensorplay.library import kernel
from triton_kernels import _math
from triton_kernels._launch import (
    INTERPRETED, TL_DTYPES, compute_dtype, launch, new_tensor, operands, pointer,
)
from triton_kernels._complex import as_complex, copy_values, pairs
from triton_kernels._indexing import atomic_dtype, copy_of, gather_walk, zeroed
from triton_kernels.copy import clone, fill_
from cpu_kernels import reduction as cpu_reduction   # the counting kernels run on the host
from cpu_kernels._common import out as cpu_tensor

# Tile and parallelism policy. The interpreter pays per program, so it takes large
# tiles and never splits; a GPU wants a few programs per SM (an H100 has 132).
TILE = 16384 if INTERPRETED else 4096          # elements per BLOCK_M x BLOCK_N tile
MAX_BLOCK_N = 8192 if INTERPRETED else 1024
MIN_PROGRAMS = 1 if INTERPRETED else 264
# A column reduction's tile: this many contiguous kept elements (1 KiB of fp32) per row.
COLUMN_BLOCK_M = 256
# The one-pass statistics keep three accumulators a lane (Welford's mean, m2 and count):
# a quarter of TILE, or their 4096-element tile spilled at 255 registers (sm_90, 4 warps).
STATS_TILE = TILE // 4

_TP_OF_TL = {v: k for k, v in TL_DTYPES.items()}


@triton.jit
def reduce_kernel(
    in_ptr,  # the input, read as an [M, N] matrix: M kept rows of N reduced elements
    idx_in_ptr,  # INDEXED_INPUT: the position each input element stands for
    out_ptr,  # [M, SPLIT] results, contiguous (SPLIT == 1: the final ones)
    idx_out_ptr,  # [M, SPLIT] int64 positions of the max/min (WITH_INDEX)
    M, N,  # rows, and elements reduced per row
    stride_m, stride_n,  # the input's strides, in elements
    chunk,  # elements of a row handled by one program (a multiple of BLOCK_N)
    divisor,  # MEAN: the result is divided by it
    init,  # the identity: 0 for a sum, the lowest/highest value for max/min
    OP: tl.constexpr,  # "sum", "prod", "max" or "min"
    MEAN: tl.constexpr,
    WITH_INDEX: tl.constexpr,
    INDEXED_INPUT: tl.constexpr,
    ACC: tl.constexpr,  # accumulator dtype (float32 for half types, int64 for integer sums)
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    # Memory traffic: every input element is read once; M * SPLIT results are written.
    pid_m = tl.program_id(0)
    pid_split = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < M
    cols = tl.arange(0, BLOCK_N)
    fill = (tl.zeros([BLOCK_M, BLOCK_N], ACC) + init).to(ACC)
    acc = fill
    acc_idx = tl.zeros([BLOCK_M, BLOCK_N], tl.int64)
    start = pid_split * chunk
    end = tl.minimum(start + chunk, N)
    for n0 in range(start, end, BLOCK_N):
        n = n0 + cols
        mask = row_mask[:, None] & (n[None, :] < end)
        offsets = rows[:, None].to(tl.int64) * stride_m + n[None, :] * stride_n
        # ACC is never bfloat16 (half types accumulate in float32), so a plain cast is
        # _math.convert here; inline, because the interpreter re-patches
        # triton.language on every nested @triton.jit call, each loop iteration.
        x = tl.load(in_ptr + offsets, mask=mask).to(ACC)
        x = tl.where(mask, x, fill)
        if OP == "sum":
            acc += x
        elif OP == "prod":
            acc *= x
        else:
            # Strict comparisons: among equal values the first one stays. A NaN wins over
            # any number (max and min propagate NaN, as in PyTorch), the first NaN stays.
            if OP == "max":
                take = (x > acc) | ((x != x) & (acc == acc))
            else:
                take = (x < acc) | ((x != x) & (acc == acc))
            acc = tl.where(take, x, acc)
            if WITH_INDEX:
                if INDEXED_INPUT:
                    position = tl.load(idx_in_ptr + offsets, mask=mask, other=0)
                else:
                    position = (n[None, :] + tl.zeros([BLOCK_M, BLOCK_N], tl.int32)).to(tl.int64)
                acc_idx = tl.where(take, position, acc_idx)
    out_offsets = rows * tl.num_programs(1) + pid_split
    if OP == "sum":
        result = tl.sum(acc, axis=1)
        if MEAN:
            result = result / divisor
    elif OP == "prod":
        result = tl.reduce(acc, 1, _math.multiply)
    else:
        # Across the lanes: the best number, unless some lane holds a NaN.
        is_nan = acc != acc
        numbers = tl.where(is_nan, fill, acc)
        if OP == "max":
            result = tl.max(numbers, axis=1)
        else:
            result = tl.min(numbers, axis=1)
        any_nan = tl.max(is_nan.to(tl.int32), axis=1) > 0
        if acc.dtype.is_floating():
            result = tl.where(any_nan, float("nan"), result).to(ACC)
        if WITH_INDEX:
            # The first position holding the result: the smallest index among the lanes
            # that hold it (the NaN lanes, when there are any).
            hit = tl.where(any_nan[:, None], is_nan, acc == result[:, None])
            big = tl.zeros([BLOCK_M, BLOCK_N], tl.int64) + 9223372036854775807
            index = tl.min(tl.where(hit, acc_idx, big), axis=1)
            tl.store(idx_out_ptr + out_offsets, index, mask=row_mask)
    tl.store(out_ptr + out_offsets, _math.convert(result, out_ptr.dtype.element_ty),
             mask=row_mask)


# ---- one-pass statistics: var / std (Welford) and logsumexp (online max and sum) ---------
# Each lane of the [BLOCK_M, BLOCK_N] tile keeps a running statistic of the elements it
# reads; at the end the lanes of a row are merged by tl.reduce with the statistic's own
# merge rule. A split row (too few rows to fill the GPU) writes per-program partial
# statistics, which a second launch of the same kernel merges (PARTIAL_IN): every input
# element is read once, where the composed var read it three times in four kernels.
# The merge rules are written twice: elementwise (two summaries into one, *_merge) and
# across a tile's lanes (*_rows, as sums).
@triton.jit
def welford_merge(mean_a, m2_a, n_a, mean_b, m2_b, n_b):
    """Chan et al.'s merge of two (mean, sum of squared deviations, count) summaries."""
    n = n_a + n_b
    frac = tl.where(n == 0, 0.0, n_b / tl.where(n == 0, 1.0, n))
    delta = mean_b - mean_a
    return mean_a + delta * frac, m2_a + m2_b + delta * delta * n_a * frac, n


@triton.jit
def lse_merge(m_a, s_a, nan_a, m_b, s_b, nan_b):
    """Merge two (max, sum of exp(x - max), NaN count) summaries. A -inf max holds no
    weight (its exp(-inf - -inf) would be NaN); a +inf max is settled at the end."""
    m = tl.maximum(m_a, m_b)
    safe = tl.where(m == float("-inf"), 0.0, m)
    s = tl.where(m_a == float("-inf"), 0.0, s_a * tl.exp(m_a - safe)) + \
        tl.where(m_b == float("-inf"), 0.0, s_b * tl.exp(m_b - safe))
    return m, s, nan_a + nan_b


@triton.jit
def welford_rows(mean, m2, n):
    """The lanes of each row (axis 1) merged into one (mean, m2, count): the parallel
    form of Chan's merge, with plain sums (tl.reduce with a combine function would be a
    tree of merges; this is three sums and a max-free pass, and the interpreter runs it
    as NumPy reductions instead of one Python call per element)."""
    total = tl.sum(n, axis=1)
    row_mean = tl.sum(mean * n, axis=1) / tl.where(total == 0, 1.0, total)
    d = tl.where(n == 0, 0.0, mean - row_mean[:, None])
    return row_mean, tl.sum(m2, axis=1) + tl.sum(n * d * d, axis=1), total


@triton.jit
def lse_rows(m, s, nans):
    """The lanes of each row (axis 1) merged into one (max, sum of exp(x - max), NaNs)."""
    row_max = tl.max(m, axis=1)
    safe = tl.where(row_max == float("-inf"), 0.0, row_max)
    total = tl.sum(tl.where(m == float("-inf"), 0.0, s * tl.exp(m - safe[:, None])), axis=1)
    return row_max, total, tl.sum(nans, axis=1)


@triton.jit
def stats_kernel(
    in_ptr,  # the input as [M, N] (strides below); PARTIAL_IN: the first partial statistic
    b_in_ptr, c_in_ptr,  # PARTIAL_IN: the second and third, [M, N] like in_ptr
    out_ptr,  # FINAL: the result [M]; else the first partial statistic [M, SPLIT]
    b_out_ptr, c_out_ptr,  # FINAL: WITH_MEAN's mean [M]; else partials [M, SPLIT]
    M, N, stride_m, stride_n,
    chunk,  # elements of a row per program (a multiple of BLOCK_N)
    correction,  # var/std: the divisor is max(0, count - correction)
    STAT: tl.constexpr,  # "var", "std" (Welford: mean, m2, count) or "lse" (max, sum, nans)
    PARTIAL_IN: tl.constexpr,
    FINAL: tl.constexpr,
    WITH_MEAN: tl.constexpr,
    ACC: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_split = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < M
    cols = tl.arange(0, BLOCK_N)
    # (a, b, c): Welford's (mean, m2, count), or logsumexp's (max, sum, NaN count)
    if STAT == "lse":
        a = tl.zeros([BLOCK_M, BLOCK_N], ACC) + float("-inf")
    else:
        a = tl.zeros([BLOCK_M, BLOCK_N], ACC)
    b = tl.zeros([BLOCK_M, BLOCK_N], ACC)
    c = tl.zeros([BLOCK_M, BLOCK_N], ACC)
    start = pid_split * chunk
    end = tl.minimum(start + chunk, N)
    for n0 in range(start, end, BLOCK_N):
        n = n0 + cols
        mask = row_mask[:, None] & (n[None, :] < end)
        offsets = rows[:, None].to(tl.int64) * stride_m + n[None, :] * stride_n
        if PARTIAL_IN:
            if STAT == "lse":
                a2 = tl.load(in_ptr + offsets, mask=mask, other=float("-inf")).to(ACC)
            else:
                a2 = tl.load(in_ptr + offsets, mask=mask, other=0.0).to(ACC)
            b2 = tl.load(b_in_ptr + offsets, mask=mask, other=0.0).to(ACC)
            c2 = tl.load(c_in_ptr + offsets, mask=mask, other=0.0).to(ACC)
            if STAT == "lse":
                a, b, c = lse_merge(a, b, c, a2, b2, c2)
            else:
                a, b, c = welford_merge(a, b, c, a2, b2, c2)
        elif STAT == "lse":
            x = tl.load(in_ptr + offsets, mask=mask, other=float("-inf")).to(ACC)
            is_nan = x != x
            x = tl.where(is_nan, float("-inf"), x)
            m_new = tl.maximum(a, x)
            safe = tl.where(m_new == float("-inf"), 0.0, m_new)
            b = tl.where(a == float("-inf"), 0.0, b * tl.exp(a - safe)) + \
                tl.where(x == float("-inf"), 0.0, tl.exp(x - safe))
            a = m_new
            c += is_nan.to(ACC)
        else:
            # Welford's update, lane by lane: count, mean and m2 of what the lane has read.
            x = tl.load(in_ptr + offsets, mask=mask, other=0.0).to(ACC)
            c_new = c + mask.to(ACC)
            delta = x - a
            a = a + tl.where(mask, delta / tl.where(mask, c_new, 1.0), 0.0)
            b = b + tl.where(mask, delta * (x - a), 0.0)
            c = c_new
    if STAT == "lse":
        a, b, c = lse_rows(a, b, c)
    else:
        a, b, c = welford_rows(a, b, c)
    if FINAL:
        if STAT == "lse":
            # +inf wins over any finite sum; a NaN anywhere makes the result NaN
            result = tl.where(a == float("inf"), a, a + tl.log(b))
            result = tl.where(c > 0, float("nan"), result)
        else:
            result = b / tl.maximum(c - correction, 0.0)
            if STAT == "std":
                result = tl.sqrt(result)
        tl.store(out_ptr + rows, _math.convert(result, out_ptr.dtype.element_ty),
                 mask=row_mask)
        if WITH_MEAN:
            tl.store(b_out_ptr + rows, _math.convert(a, b_out_ptr.dtype.element_ty),
                     mask=row_mask)
    else:
        out_offsets = rows * tl.num_programs(1) + pid_split
        tl.store(out_ptr + out_offsets, a, mask=row_mask)
        tl.store(b_out_ptr + out_offsets, b, mask=row_mask)
        tl.store(c_out_ptr + out_offsets, c, mask=row_mask)


def _pow2(n):
    return triton.next_power_of_2(builtins.max(int(n), 1))


def plan(M, N, columns=False, tile=None):
    """(BLOCK_M, BLOCK_N, split, chunk) for an [M, N] reduction. `columns`: the kept rows
    are the contiguous dim (a column sum, x.sum(0) of a row-major matrix): the tile is
    then wide along M, COLUMN_BLOCK_M neighbouring columns read as one coalesced line per
    reduced row and accumulated down the rows, instead of TILE // BLOCK_N (4) of them."""
    tile = TILE if tile is None else tile
    if columns:
        block_m = builtins.min(_pow2(M), COLUMN_BLOCK_M)
        block_n = builtins.max(1, builtins.min(_pow2(N), tile // block_m))
    else:
        block_n = builtins.min(_pow2(N), MAX_BLOCK_N, tile)
        block_m = builtins.max(1, builtins.min(_pow2(M), tile // block_n))
    row_programs = triton.cdiv(M, block_m)
    split = 1
    if row_programs < MIN_PROGRAMS and N > 4 * block_n:
        split = builtins.min(triton.cdiv(N, block_n), triton.cdiv(MIN_PROGRAMS, row_programs))
    chunk = triton.cdiv(triton.cdiv(N, split), block_n) * block_n
    return block_m, block_n, triton.cdiv(N, chunk), chunk


def _init(op, acc):
    if op == "sum":
        return 0
    if op == "prod":
        return 1
    if acc.is_floating():
        return float("-inf") if op == "max" else float("inf")
    info = acc.primitive_bitwidth
    lo, hi = (-(1 << (info - 1)), (1 << (info - 1)) - 1) if acc.is_int_signed() \
        else (0, (1 << info) - 1)
    return lo if op == "max" else hi


def _collapse(sizes, strides):
    """(numel, stride) when the dims walk memory with one stride, else None."""
    dims = [(s, st) for s, st in zip(sizes, strides) if s != 1]
    for (_, outer), (size, inner) in zip(dims, dims[1:]):
        if outer != inner * size:
            return None
    return numel_of(sizes), (dims[-1][1] if dims else 1)


def _as_matrix(x, kept, reduced):
    """(tensor, stride_m, stride_n): x read as [M kept rows, N reduced elements]."""
    sizes, strides = x._impl.sizes, x._impl.strides
    rows = _collapse([sizes[d] for d in kept], [strides[d] for d in kept])
    cols = _collapse([sizes[d] for d in reduced], [strides[d] for d in reduced])
    if rows is not None and cols is not None:
        return x, rows[1], cols[1]
    matrix = clone(x.permute(list(kept) + list(reduced)), contiguous_format)
    return matrix, numel_of([sizes[d] for d in reduced]), 1


def _is_columns(M, N, stride_m, stride_n):
    """The kept dim is the contiguous one (and the reduced one is not)."""
    return M > 1 and stride_m == 1 and stride_n != 1


def _run(op, x, values, indices, M, N, stride_m, stride_n, acc, mean):
    """Reduce x (read as [M, N]) into the contiguous `values` (and `indices`)."""
    block_m, block_n, split, chunk = plan(M, N, _is_columns(M, N, stride_m, stride_n))
    with_index = indices is not None
    init = _init(op, acc)
    grid = (triton.cdiv(M, block_m), split)
    if split == 1:
        launch(f"reduce_{op}", reduce_kernel, grid, pointer(x), pointer(x), pointer(values),
               pointer(indices if with_index else values), M, N, stride_m, stride_n, chunk,
               N, init, OP=op, MEAN=mean, WITH_INDEX=with_index, INDEXED_INPUT=False,
               ACC=acc, BLOCK_M=block_m, BLOCK_N=block_n)
        return
    # Pass 1: [M, split] partials in the accumulator dtype; pass 2 reduces them.
    device = values._impl.device
    partial = new_tensor((M, split), _TP_OF_TL[acc], device)
    partial_idx = new_tensor((M, split), dt.int64, device) if with_index else partial
    launch(f"reduce_{op} (partials)", reduce_kernel, grid, pointer(x), pointer(x),
           pointer(partial), pointer(partial_idx), M, N, stride_m, stride_n, chunk, N, init,
           OP=op, MEAN=False, WITH_INDEX=with_index, INDEXED_INPUT=False, ACC=acc,
           BLOCK_M=block_m, BLOCK_N=block_n)
    block_m2, block_n2, _, _ = plan(M, split)
    launch(f"reduce_{op} (final)", reduce_kernel, (triton.cdiv(M, block_m2), 1),
           pointer(partial), pointer(partial_idx), pointer(values),
           pointer(indices if with_index else values), M, split, split, 1,
           triton.cdiv(split, block_n2) * block_n2, N, init, OP=op, MEAN=mean,
           WITH_INDEX=with_index, INDEXED_INPUT=with_index, ACC=acc, BLOCK_M=block_m2,
           BLOCK_N=block_n2)


def _shape_of(name, x, dims, keepdim):
    """(kept dims, reduced dims, result sizes, M, N) of reducing x over `dims` (None or
    [] = all of them)."""
    sizes = x._impl.sizes
    ndim = len(sizes)
    reduced = tuple(range(ndim)) if dims is None or len(dims) == 0 else \
        reduce_dim_list(name, dims, ndim)
    if ndim == 0:                    # dim 0 or -1 of a 0-dim tensor: the one element
        reduced = ()
    kept = tuple(d for d in range(ndim) if d not in reduced)
    out_sizes = tuple(1 if d in reduced else sizes[d] for d in range(ndim)) if keepdim \
        else tuple(sizes[d] for d in kept)
    return (kept, reduced, out_sizes, numel_of([sizes[d] for d in kept]),
            numel_of([sizes[d] for d in reduced]))


def _reduce(name, op, self, dims, keepdim, out_dtype, acc_from, mean=False, values=True,
            indices=False):
    """The shared launcher: returns (values, indices) with either one None."""
    device, (x,) = operands(name, self=self)
    kept, reduced, out_sizes, M, N = _shape_of(name, x, dims, keepdim)
    out = new_tensor(out_sizes, out_dtype, device) if values else None
    idx = new_tensor(out_sizes, dt.int64, device) if indices else None
    if M == 0:
        return out, idx
    if N == 0:
        # An empty sum is 0 and an empty product 1 (mean: nan); max/min rules reject an
        # empty input, so here they are all()/any() of nothing: True / False.
        fill_(out, float("nan") if mean else {"sum": 0, "prod": 1, "min": 1, "max": 0}[op])
        return out, idx
    matrix, stride_m, stride_n = _as_matrix(x, kept, reduced)
    target = out if out is not None else new_tensor(out_sizes, x._impl.dtype, device)
    _run(op, matrix, target, idx, M, N, stride_m, stride_n, compute_dtype(acc_from), mean)
    return out, idx


def reduce_any(name, op, self, dims, keepdim, out_dtype, acc_from):
    """`op` ("sum", "prod", "max", "min") of `self` over `dims` (None or [] = all), the
    result in `out_dtype`, accumulated in the compute dtype of `acc_from`."""
    return _reduce(name, op, self, dims, keepdim, out_dtype, acc_from)[0]


# ---- the kernels ops.yaml names --------------------------------------------------------
@kernel(takes_complex=True)
def sum(self, dtype):  # noqa: A001 - the op's name
    return sum_dim(self, None, False, dtype)


@kernel(takes_complex=True)
def sum_dim(self, dim, keepdim, dtype):
    spec = shape_rule("reduce_dims")("sum", (self, dim, keepdim, dtype))
    if _is_complex(self, dtype):
        return _complex_reduce("sum.dim_IntList", self, dim, keepdim, dtype)
    acc = dt.int64 if not spec.dtype.is_floating_point else spec.dtype
    return _reduce("sum", "sum", self, dim, keepdim, spec.dtype, acc)[0]


@kernel(takes_complex=True)
def mean(self, dtype):
    return mean_dim(self, None, False, dtype)


@kernel(takes_complex=True)
def mean_dim(self, dim, keepdim, dtype):
    spec = shape_rule("reduce_dims_float")("mean", (self, dim, keepdim, dtype))
    if _is_complex(self, dtype):
        return _complex_reduce("mean.dim", self, dim, keepdim, dtype)
    return _reduce("mean", "sum", self, dim, keepdim, spec.dtype, spec.dtype, mean=True)[0]


# ---- complex sums and means: of the (re, im) pairs -------------------------------------
def _is_complex(self, dtype):
    return self._impl.dtype.is_complex or (dtype is not None and dtype.is_complex)


def _complex_reduce(op, self, dim, keepdim, dtype):
    """sum / mean of a complex tensor: the real reduction `op` of its (re, im) pairs
    (triton_kernels/_complex.py) over the same dims, which leaves the pair dim, last,
    alone. A tensor reduced into another dtype is converted first: a real one into a
    complex dtype, and a complex one into a real dtype keeps its real parts (as PyTorch
    casts), which the real reduction then takes."""
    dtype = dtype or self._impl.dtype
    if self._impl.dtype is not dtype:
        converted = new_tensor(self._impl.sizes, dtype, self._impl.device)
        self = copy_values(converted, self)
        if not dtype.is_complex:
            return call_below_autograd(op, self, dim, keepdim, dtype)
    ndim = len(self._impl.sizes)
    if ndim == 0:       # one number: its own sum and mean (dims [] would reduce the pair)
        return clone(self, None)
    dims = _dims(dim)
    dims = range(ndim) if not dims else reduce_dim_list(op.split(".")[0], dims, ndim)
    parts = call_below_autograd(op, pairs(self), tuple(dims), keepdim, dtype.to_real())
    return as_complex(parts)


def max(self):  # noqa: A001
    spec = shape_rule("reduce_all_same")("max", (self,))
    return _reduce("max", "max", self, None, False, spec.dtype, spec.dtype)[0]


def min(self):  # noqa: A001
    spec = shape_rule("reduce_all_same")("min", (self,))
    return _reduce("min", "min", self, None, False, spec.dtype, spec.dtype)[0]


@kernel(family=True)
def max_min_dim(op, self, dim, keepdim):
    """max.dim and min.dim: the extreme values along `dim` and where they are."""
    values_spec, _ = shape_rule("reduce_dim_with_indices")(op, (self, dim, keepdim))
    dims = (dim,) if self._impl.sizes else None
    return _reduce(op, op, self, dims, keepdim, values_spec.dtype, self._impl.dtype,
                   indices=True)


@kernel(family=True)
def argmax_argmin(op, self, dim, keepdim):
    """argmax and argmin: the indices of max.dim / min.dim, or of the flattened max."""
    shape_rule("arg_reduce")(op, (self, dim, keepdim))
    dims = (dim,) if dim is not None and self._impl.sizes else None
    return _reduce(op, op[3:], self, dims, keepdim, self._impl.dtype, self._impl.dtype,
                   values=False, indices=True)[1]


def _dims(dim):
    """A reduction's dims as the core's list (None = all)."""
    if dim is None:
        return None
    return [dim] if isinstance(dim, int) else list(dim)


def _accumulate(t):
    """Half types are computed in float32 and rounded once at the end."""
    return t.to(dt.float32) if t.dtype in (dt.float16, dt.bfloat16) else t


# ---- the reduction kernel --------------------------------------------------------------
def prod(self, dtype):
    shape_rule("reduction.prod")("prod", (self, dtype))
    out_dtype = integral_to_long(self, dtype)
    return reduce_any("prod", "prod", self, None, False, out_dtype, out_dtype)


def prod_dim(self, dim, keepdim, dtype):
    shape_rule("reduction.prod_dim")("prod", (self, dim, keepdim, dtype))
    out_dtype = integral_to_long(self, dtype)
    return reduce_any("prod", "prod", self, [dim], keepdim, out_dtype, out_dtype)


@kernel(family=True)
def amax_amin(op, self, dim, keepdim):
    """amax and amin over the dims in `dim` (all of them when empty)."""
    shape_rule("reduction.amax")(op, (self, dim, keepdim))
    dtype = self._impl.dtype
    return reduce_any(op, op[1:], self, _dims(dim), keepdim, dtype, dtype)


@kernel(family=True)
def all_any(op, self, *params):
    """all and any, over everything or (with params = (dim, keepdim)) along one dim: the
    min (all) or max (any) of `self != 0`."""
    spec = shape_rule("reduction.all_any")(op, (self,) + params)
    dim, keepdim = params or (None, False)
    operands(op, self=self)
    nonzero = call_below_autograd("ne.Scalar", self, 0)
    pick = "min" if op == "all" else "max"
    return reduce_any(op, pick, nonzero, None if dim is None else [dim], keepdim,
                                spec.dtype, dt.bool)


def count_nonzero(self, dim):
    shape_rule("reduction.count_nonzero")("count_nonzero", (self, dim))
    operands("count_nonzero", self=self)
    return _sum(call_below_autograd("ne.Scalar", self, 0), _dims(dim) or [], False, dt.int64)


# ---- built from the backend's ops ------------------------------------------------------
# Each op runs below autograd through the dispatcher (kernel_support/ops.py), on `cuda`.
def _sum(x, dims, keepdim, dtype=None):
    return call_below_autograd("sum.dim_IntList", x, tuple(dims), keepdim, dtype)


def statistic(op, stat, self, dims, keepdim, out_dtype, correction=0, with_mean=False):
    """One pass over `self` (read as [M, N] where it lies, as the reductions above) for
    var / std (Welford) or logsumexp: (result, mean or None), in `out_dtype`."""
    device, (x,) = operands(op, self=self)
    kept, reduced, out_sizes, M, N = _shape_of(op, x, dims, keepdim)
    out = new_tensor(out_sizes, out_dtype, device)
    mean = new_tensor(out_sizes, out_dtype, device) if with_mean else None
    if M == 0:
        return out, mean
    if N == 0:     # var of nothing: 0 / 0; logsumexp: log(0); the mean of nothing: NaN
        fill_(out, float("-inf") if stat == "lse" else float("nan"))
        if mean is not None:
            fill_(mean, float("nan"))
        return out, mean
    matrix, stride_m, stride_n = _as_matrix(x, kept, reduced)
    acc = tl.float64 if x._impl.dtype is dt.float64 else tl.float32
    block_m, block_n, split, chunk = plan(M, N, _is_columns(M, N, stride_m, stride_n),
                                          STATS_TILE)
    common = dict(STAT=stat, WITH_MEAN=with_mean, ACC=acc)
    if split == 1:
        launch(op, stats_kernel, (triton.cdiv(M, block_m), 1), pointer(matrix),
               pointer(matrix), pointer(matrix), pointer(out),
               pointer(mean if with_mean else out), pointer(out), M, N, stride_m, stride_n,
               chunk, correction, PARTIAL_IN=False, FINAL=True, BLOCK_M=block_m,
               BLOCK_N=block_n, **common)
        return out, mean
    # Two levels: [M, split] partial statistics, then one merge of each row's.
    partials = [new_tensor((M, split), _TP_OF_TL[acc], device) for _ in range(3)]
    launch(f"{op} (partials)", stats_kernel, (triton.cdiv(M, block_m), split),
           pointer(matrix), pointer(matrix), pointer(matrix), *map(pointer, partials), M, N,
           stride_m, stride_n, chunk, correction, PARTIAL_IN=False, FINAL=False,
           BLOCK_M=block_m, BLOCK_N=block_n, **common)
    block_m2, block_n2, _, _ = plan(M, split, tile=STATS_TILE)
    launch(f"{op} (merge)", stats_kernel, (triton.cdiv(M, block_m2), 1),
           *map(pointer, partials), pointer(out), pointer(mean if with_mean else out),
           pointer(out), M, split, split, 1, triton.cdiv(split, block_n2) * block_n2,
           correction, PARTIAL_IN=True, FINAL=True, BLOCK_M=block_m2, BLOCK_N=block_n2,
           **common)
    return out, mean


def _variance(op, stat, self, dim, correction, keepdim):
    spec = shape_rule("reduction.var")(op, (self, dim, correction, keepdim))
    correction = 1 if correction is None else correction
    return statistic(op, stat, self, _dims(dim), keepdim, spec.dtype, correction)[0]


def var(self, dim, correction, keepdim):
    """sum((x - mean)**2) / max(0, N - correction), in one pass (Welford)."""
    return _variance("var", "var", self, dim, correction, keepdim)


def std(self, dim, correction, keepdim):
    return _variance("std", "std", self, dim, correction, keepdim)


def norm(self, p, dim, keepdim, dtype):
    """Vector p-norm: p = 2 sqrt(sum x**2), 1 sum |x|, inf / -inf max / min |x|, 0 the
    number of non-zeros, else sum(|x|**p) ** (1/p)."""
    spec = shape_rule("reduction.norm")("norm", (self, p, dim, keepdim, dtype))
    operands("norm", self=self)
    dims = _dims(dim) or []
    a = call_below_autograd("abs", _accumulate(self.to(spec.dtype)))
    p = 2.0 if p is None else float(p)
    if p == 2:
        squares = call_below_autograd("mul.Tensor", a, a)
        r = call_below_autograd("sqrt", _sum(squares, dims, keepdim))
    elif p == 1:
        r = _sum(a, dims, keepdim)
    elif p == math.inf:
        r = call_below_autograd("amax", a, tuple(dims), keepdim) if a.numel() else \
            _sum(a, dims, keepdim)
    elif p == -math.inf:
        r = call_below_autograd("amin", a, tuple(dims), keepdim)
    elif p == 0:
        r = _sum(call_below_autograd("ne.Scalar", a, 0), dims, keepdim, a.dtype)
    else:
        powers = call_below_autograd("pow.Tensor_Scalar", a, p)
        r = call_below_autograd("pow.Tensor_Scalar", _sum(powers, dims, keepdim), 1.0 / p)
    return r.to(spec.dtype)


def logsumexp(self, dim, keepdim):
    """log(sum(exp(x))) without overflow, in one pass: an online max and sum (the sum
    rescaled whenever the max grows), as softmax's; an empty reduction is -inf."""
    spec = shape_rule("reduction.logsumexp")("logsumexp", (self, dim, keepdim))
    return statistic("logsumexp", "lse", self, _dims(dim) or [], keepdim, spec.dtype)[0]


log = logging.getLogger("tensorplay.dispatch")


def _host_bounds(x):
    """x's min and max as Python numbers (one host sync)."""
    bounds = [call_below_autograd("amin", x, (), False), call_below_autograd("amax", x, (), False)]
    low, high = call_below_autograd("stack", bounds, 0).cpu().numpy()
    return low.item(), high.item()


def _add_into_bins(size, dtype, bins_of, weights, device):
    """out[bins_of[i]] += weights[i] for a 1-D int64 `bins_of` (weights: a tensor, or a
    0-dim one for the same weight everywhere), out a new zeroed [size] of `dtype`."""
    acc = atomic_dtype(dtype)
    out = zeroed((size,), acc, device)
    n = bins_of._impl.numel()
    if n:
        w = weights if weights._impl.dtype is acc else copy_of(weights, acc)
        w_strides = [0] if not w._impl.sizes else [w._impl.strides[0]]
        gather_walk(out, w, bins_of, [n], [0], w_strides, [bins_of._impl.strides[0]], size, 1,
                    mode="add")
    return out if acc is dtype else copy_of(out, dtype)


def bincount(self, weights, minlength):
    """counts[v] = how many elements equal v (the sum of their weights): atomic adds."""
    op = "bincount"
    shape_rule("reduction.bincount")(op, (self, weights, minlength))
    device, (x,) = operands(op, self=self)
    size = minlength
    if x._impl.numel():
        low, high = _host_bounds(x)
        if low < 0:
            raise ShapeError(f"{op}(): only supports 1-d non-negative integral inputs, but "
                             f"argument 'self' holds {low}", op=op, arg="self")
        size = builtins.max(size, int(high) + 1)
    dtype = bincount_dtype(self, weights)
    if dtype is dt.int64:
        w = factory.scalar_tensor(1, dtype=dt.int64, device=device)
    else:
        w = weights
    return _add_into_bins(size, dtype, copy_of(x, dt.int64), w, device)


def histc(self, bins, min, max):  # noqa: A002 - PyTorch's argument names
    """bin = trunc((x - lo) * bins / (hi - lo)) in x's dtype (the CPU kernel's arithmetic,
    with lo and hi as 0-dim tensors of that dtype), the last bin closed; elements outside
    [lo, hi] (and NaN) add 0."""
    op = "histc"
    spec = shape_rule("reduction.histc")(op, (self, bins, min, max))
    device, (x,) = operands(op, self=self)
    x = x.reshape([-1])
    lo, hi = float(min), float(max)
    if lo == hi and x._impl.numel():
        lo, hi = _host_bounds(x)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ArgumentError(f"{op}(): range of [{lo}, {hi}] is not finite (argument 'self')",
                            op=op, arg="self")
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    dtype = spec.dtype
    lo_t, hi_t = (factory.scalar_tensor(v, dtype=dtype, device=device) for v in (lo, hi))
    width = call_below_autograd("sub.Tensor", hi_t, lo_t, 1)
    shifted = call_below_autograd("sub.Tensor", x, lo_t, 1)
    scaled = call_below_autograd("div.Tensor", call_below_autograd(
        "mul.Tensor", shifted, factory.scalar_tensor(bins, dtype=dtype, device=device)), width)
    inside = call_below_autograd("logical_and", call_below_autograd("ge.Tensor", x, lo_t),
                                 call_below_autograd("le.Tensor", x, hi_t))
    scaled = call_below_autograd("where.self", inside, scaled, factory.scalar_tensor(
        0, dtype=dtype, device=device))
    positions = call_below_autograd("clamp", copy_of(scaled, dt.int64), 0, bins - 1)
    return _add_into_bins(bins, dtype, positions, inside, device)


def _to_cpu(value):
    """A cuda tensor (or a list of them) as a CPU tensor holding a host copy."""
    if isinstance(value, (list, tuple)):
        return [_to_cpu(v) for v in value]
    if not hasattr(value, "_impl"):
        return value
    if not value._impl.is_contiguous:
        value = clone(value, contiguous_format)
    return cpu_tensor(to_host(value), value._impl.dtype)


def _to_device(value, device):
    if isinstance(value, tuple):
        return tuple(_to_device(v, device) for v in value)
    return from_host(value._impl.array(), value._impl.dtype, device)


def run_on_host(op, cpu_kernel, *args):
    """`cpu_kernel(*args)` with every tensor argument copied to the host, its results
    copied back to the device of the first tensor argument."""
    log.info("%s on cuda: no Triton kernel, the CPU's NumPy kernel on a host copy", op)
    device = next(a for a in args if hasattr(a, "_impl"))._impl.device
    return _to_device(cpu_kernel(*[_to_cpu(a) for a in args]), device)


def histogramdd_from_bin_cts_on_host(self, bins, range, weight, density):  # noqa: A002
    return run_on_host("_histogramdd_from_bin_cts", cpu_reduction.histogramdd_from_bin_cts,
                       self, bins, range, weight, density)


def histogramdd_from_bin_tensors_on_host(self, bins, weight, density):
    return run_on_host("_histogramdd_from_bin_tensors",
                       cpu_reduction.histogramdd_from_bin_tensors, self, bins, weight, density)
