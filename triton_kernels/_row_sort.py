"""Sorting and top-k along one dim on the `cuda` device: a bitonic sort of each block,
then merge passes across the blocks. sorting.py builds sort, topk, kthvalue, median,
mode and unique on the two entry points here, sort_rows and smallest_rows.

Rows. The dim is the row; the other dims, coalesced (triton_kernels/_launch.py), give
each row's start. When they coalesce to at most two dims, row m starts at

    (m // inner) * stride_outer + (m % inner) * stride_inner

and the kernels read the input in place, whatever its strides (a copy only when three
or more dims stay apart). Results are written the same way, so a sort writes its
values and indices straight into result tensors laid out like the input's shape.

Keys. Each element becomes a pair (key, idx): bitonic.order_key maps floats (NaN the
largest, -0.0 == 0.0), integers, bool and half types (exactly, through float32) to an
integer that sorts ascending in the order wanted, descending included; idx is the
element's position in its row. Pairs are distinct and compared lexicographically, so
the sort is stable. Values are read back through idx at the end (a gather within the
row), never rebuilt from keys.

Sort, O(N log N) per row of N (B, the block, a constant):
1. tile_kernel: each block of B elements is sorted in registers by a bitonic network,
   O(B log^2 B); the last block is filled with sentinels (KEY_MAX, IDX_MAX) that sort
   after every real pair. A row that fits one block is done: its result is written.
2. merge_kernel, log2(N / B) passes: runs of R sorted pairs merge into runs of 2R. Each
   program makes B outputs of one merged run: a binary search along its diagonal (merge
   path: how many of the first d outputs come from the first run), O(log R), finds the
   B inputs it needs, the first run's ascending and the second's reversed (a bitonic
   sequence), which log2(B) half-cleaner steps sort. O(N log B) per pass.

Top-k, O(N log^2 k) per row: tile_kernel keeps each block's k smallest pairs (a bitonic
top-k, bitonic.smallest_of_tile), so a row of N leaves N k / B candidates, and rounds
repeat on the candidates until one block holds them; its k smallest are the result,
sorted. When k is close to B (2k > B) the row is sorted instead.
"""
from __future__ import annotations

import triton
import triton.language as tl

from tensorplay import _dtype as dt
from triton_kernels import _bitonic as bitonic
from triton_kernels._launch import INTERPRETED, coalesce, compute_dtype, launch, new_tensor, \
    pointer

# The largest block sorted in registers, and the elements per program when short rows
# (or merge outputs) share one. A GPU: 1024 pairs in 4 warps take 56-142 registers a
# thread (sm_90, cuobjdump --dump-resource-usage; 32 rows of 64 took 219-253, near the
# 255 cap). The interpreter pays per operation, not per element: large tiles.
MAX_BLOCK = 8192 if INTERPRETED else 1024
TILE = 16384 if INTERPRETED else 1024

IDX_MAX = 2 ** 31 - 1            # the sentinel's idx: after every real position


def row_layout(d, x, *outputs):
    """(inner, x's (stride_outer, stride_inner, stride_n), each output's): how to find row
    m of x and of the outputs along dim d (see the module's docstring); the outputs have
    x's dims, their own size along d. None when the other dims do not coalesce to two."""
    sizes = x._impl.sizes
    others = [i for i in range(len(sizes)) if i != d]
    tensors = (x,) + outputs
    shape, strides = coalesce([sizes[i] for i in others],
                              [[t._impl.strides[i] for i in others] for t in tensors])
    if len(shape) > 2:
        return None
    if len(shape) == 1:
        shape, strides = [1] + shape, [[0] + st for st in strides]
    return shape[1], [(st[0], st[1], t._impl.strides[d]) for st, t in zip(strides, tensors)]


def readable(d, x, *outputs):
    """(x or a contiguous copy of it, its row layout with the outputs'): a copy only when
    x's other dims do not coalesce to two (with contiguous outputs they then do)."""
    layout = row_layout(d, x, *outputs)
    if layout is None:
        x = x.contiguous()
        layout = row_layout(d, x, *outputs)
    return x, layout


def _key_types(dtype):
    """(COMPUTE, FLOAT, WIDE): the dtype the key is made from, whether it is a float,
    whether it needs a 64-bit key."""
    compute = compute_dtype(dtype)
    return compute, dtype.is_floating_point, dtype in (dt.int64, dt.float64)


@triton.jit
def _row_start(rows, inner, stride_outer, stride_inner):
    rows = rows.to(tl.int64)
    return (rows // inner) * stride_outer + (rows % inner) * stride_inner


@triton.jit
def _write_result(x_ptr, values_ptr, indices_ptr, rows, positions, idx, mask,
                  x_start, x_stride_n, inner, o_stride_outer, o_stride_inner, o_stride_n):
    """Store the sorted row's values (read from x through idx) and its indices, the
    element at `positions` of the result's rows."""
    o = _row_start(rows, inner, o_stride_outer, o_stride_inner)[:, None] + \
        positions.to(tl.int64) * o_stride_n
    value = tl.load(x_ptr + x_start[:, None] + idx.to(tl.int64) * x_stride_n, mask=mask)
    tl.store(values_ptr + o, value, mask=mask)
    tl.store(indices_ptr + o, idx.to(tl.int64), mask=mask)


@triton.jit
def tile_kernel(
    x_ptr,  # the input, row m's element n at row_start(m) + n * x_stride_n
    keys_in_ptr, idx_in_ptr,  # [M, in_width] pairs from the previous round (not FROM_X)
    keys_out_ptr, idx_out_ptr,  # [M, out_width]: each block's `keep` smallest (not FINAL)
    values_ptr, indices_ptr,  # the results (FINAL): row m's first `keep` sorted elements
    M, count,  # rows, and pairs per row in this round's input (N when FROM_X)
    keep,  # pairs kept per block (<= 2**LOG_KEEP)
    in_width, out_width,
    inner, x_stride_outer, x_stride_inner, x_stride_n,
    o_stride_outer, o_stride_inner, o_stride_n,
    FROM_X: tl.constexpr,  # read the input (else the previous round's pairs)
    FINAL: tl.constexpr,  # one block per row: write the results
    COMPUTE: tl.constexpr, FLOAT: tl.constexpr, WIDE: tl.constexpr,
    DESCENDING: tl.constexpr,
    SEGMENTS: tl.constexpr,  # blocks per program (of one row or of several)
    BLOCK: tl.constexpr, LOG_BLOCK: tl.constexpr,
    LOG_KEEP: tl.constexpr,  # LOG_BLOCK: a full sort of the block; less: a top-k
):
    # Segment s is block (s % tiles) of row (s // tiles); each is sorted on its own.
    tiles = tl.cdiv(count, BLOCK)
    segment = tl.program_id(0) * SEGMENTS + tl.arange(0, SEGMENTS)
    live = segment < M * tiles
    row = segment // tiles
    tile = segment % tiles
    cols = tile[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :]      # [SEGMENTS, BLOCK]
    mask = live[:, None] & (cols < count)
    x_start = _row_start(row, inner, x_stride_outer, x_stride_inner)
    if FROM_X:
        x = tl.load(x_ptr + x_start[:, None] + cols.to(tl.int64) * x_stride_n, mask=mask,
                    other=0)
        key = bitonic.order_key(x, COMPUTE, FLOAT, WIDE, DESCENDING)
        idx = cols
    else:
        at = row.to(tl.int64)[:, None] * in_width + cols
        key = tl.load(keys_in_ptr + at, mask=mask, other=0)
        idx = tl.load(idx_in_ptr + at, mask=mask, other=0)
    if WIDE:
        key = tl.where(mask, key, 0x7FFFFFFFFFFFFFFF)
    else:
        key = tl.where(mask, key, 0x7FFFFFFF)
    idx = tl.where(mask, idx, 0x7FFFFFFF)
    key, idx = bitonic.smallest_of_tile(key, idx, SEGMENTS, BLOCK, LOG_BLOCK, LOG_KEEP)
    j = tl.arange(0, 1 << LOG_KEEP)[None, :]
    kept = live[:, None] & (j < keep)
    if FINAL:
        _write_result(x_ptr, values_ptr, indices_ptr, row, j, idx, kept & (j < count),
                      x_start, x_stride_n, inner, o_stride_outer, o_stride_inner, o_stride_n)
    else:
        at = row.to(tl.int64)[:, None] * out_width + tile[:, None] * keep + j
        tl.store(keys_out_ptr + at, key, mask=kept)
        tl.store(idx_out_ptr + at, idx, mask=kept)


@triton.jit
def _merge_path(keys_ptr, idx_ptr, a0, na, b0, nb, d, live, steps):
    """How many of the first d pairs of merge(A, B) come from A (A = [a0, a0 + na),
    B = [b0, b0 + nb), both sorted): the smallest i with A[i] after B[d - 1 - i].
    Elementwise: every diagonal d is searched at once."""
    lo = tl.maximum(d - nb, 0)
    hi = tl.minimum(d, na)
    for _ in range(steps):
        active = live & (lo < hi)
        mid = (lo + hi) // 2
        a = a0 + mid
        b = b0 + d - 1 - mid
        ka = tl.load(keys_ptr + a, mask=active, other=0)
        kb = tl.load(keys_ptr + b, mask=active, other=0)
        ia = tl.load(idx_ptr + a, mask=active, other=0)
        ib = tl.load(idx_ptr + b, mask=active, other=0)
        a_first = (ka < kb) | ((ka == kb) & (ia < ib))
        lo = tl.where(active & a_first, mid + 1, lo)
        hi = tl.where(active & ~a_first, mid, hi)
    return lo


@triton.jit
def merge_kernel(
    keys_in_ptr, idx_in_ptr,  # [M, width]: sorted runs of `run` pairs
    keys_out_ptr, idx_out_ptr,  # [M, width]: sorted runs of 2 * run pairs (not FINAL)
    x_ptr, values_ptr, indices_ptr,  # the input and results (FINAL), as in tile_kernel
    M, N, keep, width, run,
    steps,  # binary search steps: enough for `run` + 1 candidates
    inner, x_stride_outer, x_stride_inner, x_stride_n,
    o_stride_outer, o_stride_inner, o_stride_n,
    FINAL: tl.constexpr,
    SEGMENTS: tl.constexpr,  # output blocks per program
    BLOCK: tl.constexpr, LOG_BLOCK: tl.constexpr,
):
    # Segment s makes outputs p .. p + BLOCK - 1 of row s // tiles, p = (s % tiles) BLOCK.
    tiles = width // BLOCK
    segment = tl.program_id(0) * SEGMENTS + tl.arange(0, SEGMENTS)
    live = segment < M * tiles
    row = segment // tiles
    p = (segment % tiles).to(tl.int64) * BLOCK
    base = row.to(tl.int64) * width
    start = (p // (2 * run)) * (2 * run)           # the pair of runs A, B it lies in
    na = tl.minimum(run, width - start)
    nb = tl.minimum(run, width - start - na)
    a0 = base + start
    b0 = a0 + na
    d = p - start
    # How much of A comes before this segment's outputs, and up to their end: the
    # diagonals d and d + BLOCK.
    ends = _merge_path(keys_in_ptr, idx_in_ptr, a0[:, None], na[:, None], b0[:, None],
                       nb[:, None], d[:, None] + tl.arange(0, 2)[None, :] * BLOCK,
                       live[:, None], steps)                        # [SEGMENTS, 2]
    a_lo = tl.sum(tl.where(tl.arange(0, 2)[None, :] == 0, ends, 0), axis=1)
    a_hi = tl.sum(tl.where(tl.arange(0, 2)[None, :] == 1, ends, 0), axis=1)
    b_lo = d - a_lo
    # A's part ascending, then B's part reversed: a bitonic sequence of BLOCK pairs.
    j = tl.arange(0, BLOCK)[None, :]
    from_a = j < (a_hi - a_lo)[:, None]
    at = tl.where(from_a, (a0 + a_lo)[:, None] + j, (b0 + b_lo)[:, None] + (BLOCK - 1 - j))
    key = tl.load(keys_in_ptr + at, mask=live[:, None], other=0)
    idx = tl.load(idx_in_ptr + at, mask=live[:, None], other=0)
    for step in tl.static_range(LOG_BLOCK):    # half-cleaners: J = BLOCK / 2, ..., 1
        key, idx = bitonic.exchange(key, idx, SEGMENTS, BLOCK, 1 << (LOG_BLOCK - 1 - step),
                                    BLOCK)
    positions = p[:, None] + j
    if FINAL:
        x_start = _row_start(row, inner, x_stride_outer, x_stride_inner)
        _write_result(x_ptr, values_ptr, indices_ptr, row, positions, idx,
                      live[:, None] & (positions < N) & (positions < keep), x_start,
                      x_stride_n, inner, o_stride_outer, o_stride_inner, o_stride_n)
    else:
        tl.store(keys_out_ptr + base[:, None] + positions, key, mask=live[:, None])
        tl.store(idx_out_ptr + base[:, None] + positions, idx, mask=live[:, None])


def _log2(n):
    return n.bit_length() - 1


def _grid(segments, block):
    """(grid, SEGMENTS): blocks of `block` elements, TILE elements per program."""
    per_program = max(1, min(triton.next_power_of_2(segments), TILE // block))
    return (triton.cdiv(segments, per_program),), per_program


def _prepare(x, d, values, indices):
    """x (copied only if it must be), M, N, and the kernels' layout arguments."""
    assert values._impl.strides == indices._impl.strides    # one layout for both results
    x, (inner, (x_strides, o_strides)) = readable(d, x, values)
    N = x._impl.sizes[d]
    M = x._impl.numel() // N if N else 0
    if N >= IDX_MAX:
        raise NotImplementedError(f"sorting rows of {N} elements (int32 positions)")
    return x, M, N, (inner, *x_strides, *o_strides)


def sort_rows(op, x, d, values, indices, descending, keep=None):
    """Sort x along dim d and write each row's first `keep` (default all) values and
    indices to `values` / `indices`, tensors with x's dims (size `keep` along d)."""
    x, M, N, layout = _prepare(x, d, values, indices)
    keep = N if keep is None else keep
    if M * N * keep == 0:
        return
    compute, is_float, wide = _key_types(x._impl.dtype)
    key_meta = dict(COMPUTE=compute, FLOAT=is_float, WIDE=wide, DESCENDING=bool(descending))
    final = N <= MAX_BLOCK         # one block per row: sort it and write the result
    block = max(2, triton.next_power_of_2(N)) if final else MAX_BLOCK
    tiles = triton.cdiv(N, block)
    width = tiles * block
    device = x._impl.device
    key_dtype = dt.int64 if wide else dt.int32
    keys = [new_tensor([M, width], key_dtype, device) for _ in range(0 if final else 2)]
    idx = [new_tensor([M, width], dt.int32, device) for _ in range(0 if final else 2)]
    out = (x, x) if final else (keys[0], idx[0])
    grid, segments = _grid(M * tiles, block)
    launch(op, tile_kernel, grid, pointer(x), pointer(x), pointer(x), pointer(out[0]),
           pointer(out[1]), pointer(values), pointer(indices), M, N, keep if final else block,
           0, width, *layout, FROM_X=True, FINAL=final, SEGMENTS=segments, BLOCK=block,
           LOG_BLOCK=_log2(block), LOG_KEEP=_log2(block), **key_meta)
    run, src = block, 0
    while run < width:     # log2(N / block) passes; the last writes the results
        launch(op, merge_kernel, grid, pointer(keys[src]), pointer(idx[src]),
               pointer(keys[1 - src]), pointer(idx[1 - src]), pointer(x), pointer(values),
               pointer(indices), M, N, keep, width, run, (run + 1).bit_length(), *layout,
               FINAL=2 * run >= width, SEGMENTS=segments, BLOCK=block, LOG_BLOCK=_log2(block))
        run, src = 2 * run, 1 - src


def smallest_rows(op, x, d, k, values, indices, largest):
    """The k smallest (largest) elements of x along dim d, sorted, ties in index order
    (the first k of a stable sort), written to values / indices (size k along d)."""
    if triton.next_power_of_2(max(k, 1)) * 2 > MAX_BLOCK and x._impl.sizes[d] > MAX_BLOCK:
        sort_rows(op, x, d, values, indices, largest, keep=k)     # rounds would not shrink
        return
    x, M, N, layout = _prepare(x, d, values, indices)
    if M * k == 0:
        return
    compute, is_float, wide = _key_types(x._impl.dtype)
    key_meta = dict(COMPUTE=compute, FLOAT=is_float, WIDE=wide, DESCENDING=bool(largest))
    device = x._impl.device
    key_dtype = dt.int64 if wide else dt.int32
    pairs = (x, x)            # the previous round's candidates (none in the first)
    count, from_x = N, True
    while True:
        final = count <= MAX_BLOCK
        block = max(2, triton.next_power_of_2(count)) if final else MAX_BLOCK
        tiles = triton.cdiv(count, block)
        out = (x, x) if final else (new_tensor([M, tiles * k], key_dtype, device),
                                    new_tensor([M, tiles * k], dt.int32, device))
        grid, segments = _grid(M * tiles, block)
        launch(op, tile_kernel, grid, pointer(x), pointer(pairs[0]), pointer(pairs[1]),
               pointer(out[0]), pointer(out[1]), pointer(values), pointer(indices), M, count, k,
               count, tiles * k, *layout, FROM_X=from_x, FINAL=final, SEGMENTS=segments,
               BLOCK=block, LOG_BLOCK=_log2(block), LOG_KEEP=_log2(triton.next_power_of_2(k)),
               **key_meta)
        if final:
            return
        pairs, count, from_x = out, tiles * k, False
