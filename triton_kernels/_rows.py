"""How the row kernels (softmax.py, normalization.py, losses.py) cut their work into
programs: the launch heuristics of Triton's tutorials 02 (fused softmax) and 05 (layer
norm), in one place.

A row kernel reduces rows of N elements. The input is read as a 3-d [outer, N, inner]
view with any strides (`rows_view`): softmax over dim d of [A, B, C, D] with d = 1 is
outer = A, N = B, inner = C * D. No copy moves the reduced dim last.

    last-dim rows (inner = 1)   the rows' elements are contiguous: a program reads a
                                [ROWS, BLOCK] tile, BLOCK along the row
    a non-last dim (inner > 1)  neighbouring *rows* are contiguous (stride 1 across
                                rows, `inner` along a row): the same [ROWS, BLOCK] tile,
                                now read coalesced along ROWS, so ROWS is kept wide

One program handles ROWS rows at a time, so rows of 32 elements do not leave most of a
program's threads idle (tutorial 02 launches one program per row; short rows waste it).
A row longer than MAX_ONE_PASS is walked in blocks (an online statistic, then a second
pass), never held whole in registers. num_warps grows with the tile (tutorial 02: 4
warps below 2048 elements, 8 below 8192, 16 below 16384; 32 from there), so a
16384-element row is spread over 1024 threads (16 values each) rather than 128 (the 184
registers per thread of a 4-warp launch, which left one program per SM). The grid is
persistent: at most a few programs per SM, each looping over tiles, so a launch of 100k
short rows is not 100k program starts.
"""
from __future__ import annotations

import triton

from tensorplay.kernel_support.results import numel_of
from triton_kernels._launch import INTERPRETED

# The longest row kept whole in registers (one read, one write); longer rows loop.
MAX_ONE_PASS = 16384
# The block a looped (too long) row is walked in.
LOOP_BLOCK = 4096 if INTERPRETED else 2048
# Elements of a tile of short rows: ROWS * BLOCK.
SHORT_TILE = 2048
# A non-last-dim tile keeps this many neighbouring rows (one 128-byte line of fp32) so
# that every load is coalesced, and at most COALESCED_TILE elements: each element there
# has its own 64-bit address (a row's elements lie `inner` apart), and a 16-warp tile of
# 8192 spilled registers (sm_90, 128 registers a thread at 512 threads).
COALESCED_ROWS = 32
COALESCED_TILE = 4096
# Programs of a persistent launch per SM; the interpreter gets a handful, so that its
# tests walk the persistent loop too.
PROGRAMS_PER_SM = 4
INTERPRETER_PROGRAMS = 4


def pow2(n):
    return triton.next_power_of_2(max(int(n), 1))


def num_warps_for(elements):
    """Tutorial 02's rule, with one more step: warps for a tile of `elements` values held
    in registers. At 16384 elements 16 warps spilled layer_norm (128 registers a thread,
    72 bytes of stack on sm_90); 32 warps (16 elements a thread) fit in 64."""
    if elements >= 16384:
        return 32
    if elements >= 8192:
        return 16
    if elements >= 2048:
        return 8
    return 4


_sm_count = []


def sm_count():
    """Streaming multiprocessors of the current GPU (132 on an H100), asked once."""
    if not _sm_count:
        try:
            import torch
            _sm_count.append(torch.cuda.get_device_properties(
                torch.cuda.current_device()).multi_processor_count)
        except Exception:      # no driver here (compile checks, the interpreter)
            _sm_count.append(132)
    return _sm_count[0]


def persistent_grid(tiles):
    """Programs for `tiles` tiles: one each, up to a few per SM (each then loops)."""
    cap = INTERPRETER_PROGRAMS if INTERPRETED else PROGRAMS_PER_SM * sm_count()
    return max(1, min(tiles, cap))


class RowPlan:
    """(ROWS, BLOCK, ONE_PASS, num_warps) for rows of n elements, `rows` of them per
    outer index; `coalesce_rows`: neighbouring rows are neighbours in memory."""

    __slots__ = ("rows", "block", "one_pass", "num_warps", "tiles_per_outer")

    def __init__(self, n, rows, coalesce_rows, max_one_pass=None):
        max_one_pass = MAX_ONE_PASS if max_one_pass is None else max_one_pass
        if coalesce_rows:
            self.rows = min(pow2(rows), COALESCED_ROWS)
            block = min(pow2(n), max(min(max_one_pass, COALESCED_TILE) // self.rows, 1))
        else:
            block = min(pow2(n), max_one_pass)
            self.rows = min(pow2(rows), max(SHORT_TILE // block, 1))
        self.one_pass = block >= n
        if not self.one_pass:
            block = min(block, max(LOOP_BLOCK // self.rows, 1))
        self.block = block
        self.num_warps = num_warps_for(self.rows * block)
        self.tiles_per_outer = triton.cdiv(max(rows, 1), self.rows)


def _collapse(sizes, strides):
    """One stride for dims that walk memory evenly (else None); size 1 dims are free."""
    dims = [(s, st) for s, st in zip(sizes, strides) if s != 1]
    for (_, outer), (size, inner) in zip(dims, dims[1:]):
        if outer != inner * size:
            return None
    return dims[-1][1] if dims else 0


def rows_view(t, d):
    """(outer, n, inner, (stride_outer, stride_n, stride_inner)) of tensor t read as
    [outer, n, inner] around dim d, or None when the dims before (after) d do not walk
    memory with one stride (the caller copies such an input)."""
    sizes, strides = t._impl.sizes, t._impl.strides
    before = _collapse(sizes[:d], strides[:d])
    after = _collapse(sizes[d + 1:], strides[d + 1:])
    if before is None or after is None:
        return None
    return (numel_of(sizes[:d]), sizes[d], numel_of(sizes[d + 1:]),
            (before, strides[d], after))


def as_row_tiles(outer, inner, *all_strides):
    """(outer, inner, [(s_o, s_n, s_i) per operand]) as the kernels walk them: last-dim
    rows (inner == 1) become one outer index over `outer` rows (row stride s_o), so that
    short rows share a program's tile whatever the dim."""
    if inner == 1:
        return 1, outer, [(0, s_n, s_o) for s_o, s_n, _ in all_strides]
    return outer, inner, list(all_strides)
