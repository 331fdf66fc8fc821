"""Bitonic sorting networks on register tiles, the building blocks of _row_sort.py.

A tile is [ROWS, BLOCK] (BLOCK a power of two): ROWS independent rows, each sorted on
its own. An element is a pair (key, idx): `key` an integer whose order is the order
wanted (order_key below turns floats, NaN and descending order into one), `idx` the
element's position in its row. Pairs compare lexicographically, so equal keys keep
their positions' order: every sort here is stable, and no two pairs are equal.

The compare-exchange step pairs element i with element i ^ J (J a power of two). As in
Triton's own `tl.sort` (triton/language/standard.py), the partner is found without a
gather: the row is reshaped to [ROWS, BLOCK / 2J, 2, J], so that i and i ^ J sit on the
two sides of axis 2, and a reduction over that axis of one side (the other zeroed)
reads it. `tl.sort` carries one tensor and reduces with xor; this carries the pair and
reduces with tl.sum, which the interpreter runs as one NumPy call (it runs a xor
reduction element by element, seconds per step at the interpreter's block sizes).

    bitonic sort:   for K = 2, 4, ..., BLOCK:         (log2(BLOCK) phases)
                        for J = K/2, K/4, ..., 1:     (log2(K) steps each)
                            exchange(i, i ^ J), ascending where i & K == 0
    -> O(BLOCK log^2 BLOCK) comparisons, all of a step in parallel.
"""
from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def order_key(x, COMPUTE: tl.constexpr, FLOAT: tl.constexpr, WIDE: tl.constexpr,
              DESCENDING: tl.constexpr):
    """An integer key (int64 if WIDE, else int32) that sorts ascending in the order wanted:
    -0.0 as 0.0, NaN (any sign or payload) after +inf, and for DESCENDING the reverse.
    The values themselves are read again through the indices at the end, so -0.0 and
    NaN payloads come out as they went in."""
    x = x.to(COMPUTE)
    if FLOAT:
        x = tl.where(x == 0, 0.0, x)     # -0.0 == 0.0: the same key, ties by index
        if WIDE:
            bits = x.to(tl.int64, bitcast=True)
            # IEEE floats order as sign-magnitude integers: flipping the magnitude bits
            # of the negative ones makes them order as two's-complement integers.
            key = bits ^ ((bits >> 63) & 0x7FFFFFFFFFFFFFFF)
            key = tl.where(x != x, 0x7FFFFFFFFFFFFFFF, key)
        else:
            bits = x.to(tl.int32, bitcast=True)
            key = bits ^ ((bits >> 31) & 0x7FFFFFFF)
            key = tl.where(x != x, 0x7FFFFFFF, key)
    else:
        key = x.to(tl.int64) if WIDE else x.to(tl.int32)
    if DESCENDING:
        key = ~key           # -key - 1: reverses the order and never overflows
    return key


@triton.jit
def exchange(key, idx, ROWS: tl.constexpr, BLOCK: tl.constexpr, J: tl.constexpr,
             K: tl.constexpr):
    """One compare-exchange step: element i and i ^ J swap unless in order, ascending
    where i & K == 0 and descending elsewhere (K >= BLOCK: all ascending)."""
    shape: tl.constexpr = [ROWS, BLOCK // (2 * J), 2, J]
    k = tl.reshape(key, shape)
    i = tl.reshape(idx, shape)
    right = (tl.arange(0, 2) == 1)[None, None, :, None]          # the i & J != 0 side
    # Each side alone, [ROWS, BLOCK / 2J, 1, J]: a sum of it and a zero, so exact.
    k_left = tl.sum(tl.where(right, 0, k), 2, keep_dims=True)
    k_right = tl.sum(tl.where(right, k, 0), 2, keep_dims=True)
    i_left = tl.sum(tl.where(right, 0, i), 2, keep_dims=True)
    i_right = tl.sum(tl.where(right, i, 0), 2, keep_dims=True)
    position = tl.arange(0, BLOCK // (2 * J)) * (2 * J)           # i without its low bits
    descending = ((position & K) != 0)[None, :, None, None]
    # The left side gets the smaller pair, the right side the larger (the other way
    # round where descending): swap the sides when they are not so.
    out_of_order = (k_left > k_right) | ((k_left == k_right) & (i_left > i_right))
    swap = out_of_order != descending
    key = tl.reshape(tl.where(right != swap, k_right, k_left), [ROWS, BLOCK])
    idx = tl.reshape(tl.where(right != swap, i_right, i_left), [ROWS, BLOCK])
    return key, idx


@triton.jit
def smallest_of_tile(key, idx, ROWS: tl.constexpr, BLOCK: tl.constexpr,
                     LOG_BLOCK: tl.constexpr, LOG_KEEP: tl.constexpr):
    """The 2**LOG_KEEP smallest pairs of each row, sorted ascending: [ROWS, 2**LOG_KEEP].

    Bitonic top-k (as in `tl.topk`): sort runs of KEEP, alternately ascending and
    descending; then, while more than KEEP are left, pair each ascending run with the
    descending one after it: the pairwise smaller of the two holds the KEEP smallest of
    both, as a bitonic run, which LOG_KEEP steps sort again. O(BLOCK log^2 KEEP)
    comparisons, against O(BLOCK log^2 BLOCK) for sorting the tile (LOG_KEEP ==
    LOG_BLOCK is that sort)."""
    KEEP: tl.constexpr = 1 << LOG_KEEP
    # (Loops of exchange() steps written out, not a helper per phase: the interpreter
    # pays milliseconds for each call of a @triton.jit function.)
    for phase in tl.static_range(1, LOG_KEEP + 1):
        for step in tl.static_range(phase):
            key, idx = exchange(key, idx, ROWS, BLOCK, 1 << (phase - 1 - step), 1 << phase)
    for halving in tl.static_range(LOG_BLOCK - LOG_KEEP):
        # BLOCK >> halving pairs a row: (BLOCK >> halving) // 2KEEP pairs of runs. (Written
        # out each time: a local name would make it a tensor, not a compile-time size.)
        k = tl.reshape(key, [ROWS, (BLOCK >> halving) // (2 * KEEP), 2, KEEP])
        i = tl.reshape(idx, [ROWS, (BLOCK >> halving) // (2 * KEEP), 2, KEEP])
        right = (tl.arange(0, 2) == 1)[None, None, :, None]
        k_left = tl.sum(tl.where(right, 0, k), 2)             # [ROWS, pairs of runs, KEEP]
        i_left = tl.sum(tl.where(right, 0, i), 2)
        k_right = tl.sum(tl.where(right, k, 0), 2)
        i_right = tl.sum(tl.where(right, i, 0), 2)
        take_right = (k_right < k_left) | ((k_right == k_left) & (i_right < i_left))
        key = tl.reshape(tl.where(take_right, k_right, k_left), [ROWS, BLOCK >> (halving + 1)])
        idx = tl.reshape(tl.where(take_right, i_right, i_left), [ROWS, BLOCK >> (halving + 1)])
        # Runs of KEEP again alternate (the last one left is ascending: i & KEEP == 0).
        for step in tl.static_range(LOG_KEEP):
            key, idx = exchange(key, idx, ROWS, BLOCK >> (halving + 1),
                                1 << (LOG_KEEP - 1 - step), KEEP)
    return key, idx
