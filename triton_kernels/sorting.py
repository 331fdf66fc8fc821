"""Sorting, selection and the remaining scans on the `cuda` device: sort, topk,
kthvalue, median, mode, cummax/cummin, unique (flat and along a dim).

Sorting and top-k are _row_sort.py's: a bitonic sort of each block and merge passes
across blocks, O(N log N) per row, stable (equal elements keep their order, in both
directions), NaN the largest; a top-k keeps each block's k smallest and never sorts the
whole row. The ops here read the input along any dim in place (strides, no copy where
its other dims coalesce to two) and write results in the input's dim order.

Selection is a sort and a pick (kthvalue, median: select_kernel; kthvalue with a small
k picks from a top-k instead). mode walks each sorted row once, measuring runs of equal
values. unique sorts, marks where a new value starts and counts the starts; along a dim
it sorts the slices lexicographically by one stable sort per element of a slice, the
last element first (an LSD radix sort whose digits are whole elements).
cummax/cummin are one tl.associative_scan over (value, index) pairs.
"""
from __future__ import annotations

import numpy as np
import triton
import triton.language as tl

from tensorplay import _dtype as dt
from tensorplay._device_transfer import from_host
from tensorplay._memory_format import preserve_format
from tensorplay.kernel_support.checks import wrap_dim
from tensorplay.kernel_support.layout import unique_dim_strides
from tensorplay.kernel_support.ops import call_below_autograd, shape_rule
from tensorplay.kernel_support.results import factory
from tensorplay.library import kernel
from triton_kernels import _math, _row_sort as row_sort
from triton_kernels._launch import INTERPRETED, compute_dtype, launch, new_tensor, operands, \
    pointer
from triton_kernels.pointwise import run
from cpu_kernels import sorting as cpu_sorting
from triton_kernels.reduction import run_on_host

# The interpreter pays about a millisecond per operation whatever the tile size, so it
# takes large tiles.
TILE = 16384 if INTERPRETED else 4096          # the row walks: select, mode, cummax
MAX_BLOCK_N = 4096 if INTERPRETED else 1024


# ---- sort and top-k: _row_sort.py's kernels, along any dim -------------------------
def rows_of(t, d):
    """t with dim d moved last, as contiguous [..., N] rows (a copy only when needed),
    and the permutation used."""
    order = [i for i in range(t.dim()) if i != d] + [d]
    moved = t.permute(order)
    return (moved if moved.is_contiguous() else moved.contiguous()), order


def back(rows, order, dtype, device):
    """The inverse of rows_of: a new contiguous tensor in the original dim order."""
    inverse = [order.index(i) for i in range(len(order))]
    result = new_tensor([rows._impl.sizes[i] for i in inverse], dtype, device)
    return run("copy", result, (rows.permute(inverse),), dtype)


def _results(x, d, n, dtype):
    """(values, indices): new contiguous tensors of x's sizes but n along d."""
    sizes = list(x._impl.sizes)
    sizes[d] = n
    return new_tensor(sizes, dtype, x._impl.device), new_tensor(sizes, dt.int64,
                                                                x._impl.device)


@kernel(family=True)
def sort(op, self, *params):
    """sort(dim, descending) and sort.stable(stable, dim, descending): the sort is
    always stable."""
    dim, descending = params[-2:]
    shape_rule("sorting.sort")(op, (self, dim, descending))
    device, (self,) = operands(op, self=self)
    x = self if self.dim() else self.reshape([1])
    d = wrap_dim(op, dim, x.dim())
    values, indices = _results(x, d, x._impl.sizes[d], x._impl.dtype)
    row_sort.sort_rows(op, x, d, values, indices, descending)
    if not self.dim():
        return values.view([]), indices.view([])
    return values, indices


def topk(self, k, dim, largest, sorted):  # noqa: A002 - the schema's name
    """The first k of a stable sort (descending for the largest), from row_sort's top-k:
    always sorted, ties in index order, as the CPU kernel."""
    shape_rule("sorting.topk")("topk", (self, k, dim, largest, sorted))
    device, (self,) = operands("topk", self=self)
    x = self if self.dim() else self.reshape([1])
    if not self.dim():
        k = 1               # a 0-dim input gives its element for k = 0 too, as PyTorch's
    d = wrap_dim("topk", dim, x.dim())
    values, indices = _results(x, d, k, x._impl.dtype)
    row_sort.smallest_rows("topk", x, d, k, values, indices, largest)
    if not self.dim():
        return values.view([]), indices.view([])
    return values, indices


def sorted_rows(op, self, dim, keep=None):
    """The first `keep` (default all) of each slice along dim, sorted ascending (stably):
    (values, indices) as contiguous [M, keep] rows in moved order, the moved sizes and
    the permutation. A 0-dim tensor is one row of one element."""
    x = self if self.dim() else self.reshape([1])
    d = wrap_dim(op, dim, x.dim())
    order = [i for i in range(x.dim()) if i != d] + [d]
    inverse = [order.index(i) for i in range(len(order))]
    N = x._impl.sizes[d]
    n = N if keep is None else keep
    sizes = [x._impl.sizes[i] for i in order[:-1]] + [n]
    values = new_tensor(sizes, x._impl.dtype, x._impl.device)
    indices = new_tensor(sizes, dt.int64, x._impl.device)
    # The [..., n] buffers seen in x's dim order: the kernels write them as results.
    if keep is None:
        row_sort.sort_rows(op, x, d, values.permute(inverse), indices.permute(inverse), False)
    else:
        row_sort.smallest_rows(op, x, d, keep, values.permute(inverse),
                               indices.permute(inverse), False)
    M = values._impl.numel() // n if n else 0
    sizes[-1] = N
    return values.view([M, n]), indices.view([M, n]), sizes, order


def row_walk(M, N):
    """(grid, BLOCK_M, BLOCK_N) for the kernels that walk M rows of N, BLOCK_N at a time."""
    block_n = min(triton.next_power_of_2(N), MAX_BLOCK_N)
    block_m = max(1, min(triton.next_power_of_2(M), TILE // block_n))
    return (triton.cdiv(M, block_m),), block_m, block_n


# ---- selection: one element of each sorted row ------------------------------------------
@triton.jit
def select_kernel(
    values_ptr, indices_ptr,  # [M, N] sorted rows and their indices, contiguous
    out_values_ptr, out_indices_ptr,  # [M] the picked element of each row
    M, N,
    position,  # the position picked in each sorted row
    NAN_FIRST: tl.constexpr,  # median: a row with NaN picks its first NaN instead
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < M
    base = rows.to(tl.int64) * N
    pos = tl.zeros([BLOCK_M], tl.int64) + position
    if NAN_FIRST:   # NaN sorts last: the first NaN sits at N - (number of NaNs)
        nans = tl.zeros([BLOCK_M], tl.int64)
        for n0 in range(0, N, BLOCK_N):
            n = n0 + tl.arange(0, BLOCK_N)
            mask = row_mask[:, None] & (n[None, :] < N)
            v = tl.load(values_ptr + base[:, None] + n[None, :], mask=mask, other=0)
            v = v.to(tl.float32)
            nans += tl.sum((mask & (v != v)).to(tl.int64), axis=1)
        pos = tl.where(nans > 0, N - nans, pos)
    tl.store(out_values_ptr + rows, tl.load(values_ptr + base + pos, mask=row_mask),
             mask=row_mask)
    tl.store(out_indices_ptr + rows, tl.load(indices_ptr + base + pos, mask=row_mask),
             mask=row_mask)


def _pick(op, self, dim, keepdim, position, nan_first):
    """Sort each slice along dim (stably, ascending) and take the element at `position`
    (or, nan_first, the first NaN of a slice that has one). Without nan_first only the
    first position + 1 are needed: a top-k when that is small."""
    device, (self,) = operands(op, self=self)
    keep = None if nan_first or 2 * (position + 1) > row_sort.MAX_BLOCK else position + 1
    values, indices, sizes, order = sorted_rows(op, self, dim, keep)
    M, N = values._impl.sizes
    dtype = self._impl.dtype
    out_values = new_tensor([M], dtype, device)
    out_indices = new_tensor([M], dt.int64, device)
    if M:
        grid, block_m, block_n = row_walk(M, N)
        launch(op, select_kernel, grid, pointer(values),
               pointer(indices), pointer(out_values), pointer(out_indices), M, N, position,
               NAN_FIRST=nan_first and dtype.is_floating_point, BLOCK_M=block_m,
               BLOCK_N=block_n)
    return _place(op, self, dim, keepdim, out_values, out_indices, sizes, order)


def _place(op, self, dim, keepdim, values, indices, sizes, order):
    """Per-row results [M] back in self's dim order: the dim dropped, or kept as size 1."""
    if not self.dim():
        return values.view([]), indices.view([])
    kept = list(sizes[:-1]) + [1]
    inverse = [order.index(i) for i in range(len(order))]
    values = values.view(kept).permute(inverse)
    indices = indices.view(kept).permute(inverse)
    if not keepdim:
        d = wrap_dim(op, dim, self.dim())
        values, indices = values.squeeze(d), indices.squeeze(d)
    return values.contiguous(), indices.contiguous()


def median(self):
    """The lower median of all elements ((n - 1) // 2-th smallest), NaN if there is one."""
    shape_rule("sorting.median")("median", (self,))
    if self._impl.numel() == 0:      # NaN, cast on the host as the CPU kernel does
        with np.errstate(invalid="ignore"):
            value = np.array(np.nan).astype(self._impl.dtype.np)
        return from_host(value, self._impl.dtype, self._impl.device)
    flat = self.reshape([-1])
    values, _ = _pick("median", flat, 0, False, (flat._impl.numel() - 1) // 2, True)
    return values


def median_dim(self, dim, keepdim):
    shape_rule("sorting.median_dim")("median", (self, dim, keepdim))
    n = self._impl.sizes[wrap_dim("median", dim, self.dim())] if self.dim() else 1
    return _pick("median", self, dim, keepdim, (n - 1) // 2, True)


def kthvalue(self, k, dim, keepdim):
    shape_rule("sorting.kthvalue")("kthvalue", (self, k, dim, keepdim))
    return _pick("kthvalue", self, dim, keepdim, k - 1, False)


# ---- mode: the longest run of equal values in each sorted row ---------------------------
@triton.jit
def _max_combine(a, b):
    return tl.maximum(a, b)


@triton.jit
def mode_kernel(
    values_ptr, indices_ptr,  # [M, N] rows sorted stably (ascending), contiguous
    out_values_ptr, out_indices_ptr,  # [M] the mode of each row and its last index
    M, N,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    # In a sorted row, equal values form runs; run[j] = j - (start of j's run) + 1. The
    # mode ends the first longest run (the smallest of equally frequent values), and,
    # the sort being stable, the run's last element has the largest original index.
    # NaN != NaN: every NaN is a run of its own, as in the CPU kernel.
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < M
    base = rows.to(tl.int64) * N
    best_run = tl.zeros([BLOCK_M], tl.int64)
    best_pos = tl.zeros([BLOCK_M], tl.int64)
    start = tl.zeros([BLOCK_M], tl.int64)   # where the run reaching this block began
    for n0 in range(0, N, BLOCK_N):
        n = n0 + tl.arange(0, BLOCK_N).to(tl.int64)
        mask = row_mask[:, None] & (n[None, :] < N)
        offsets = base[:, None] + n[None, :]
        v = tl.load(values_ptr + offsets, mask=mask, other=0)
        prev = tl.load(values_ptr + offsets - 1, mask=mask & (n[None, :] > 0), other=0)
        starts = (n[None, :] == 0) | (v != prev)
        begun = tl.associative_scan(tl.where(starts & mask, n[None, :], 0), 1, _max_combine)
        begun = tl.maximum(begun, start[:, None])
        run = tl.where(mask, n[None, :] - begun + 1, 0)
        longest = tl.max(run, axis=1)
        at = tl.argmax(run, axis=1, tie_break_left=True)   # the first longest run
        better = longest > best_run
        best_pos = tl.where(better, n0 + at, best_pos)
        best_run = tl.where(better, longest, best_run)
        start = tl.max(tl.where(mask, begun, 0), axis=1)
    tl.store(out_values_ptr + rows, tl.load(values_ptr + base + best_pos, mask=row_mask),
             mask=row_mask)
    tl.store(out_indices_ptr + rows, tl.load(indices_ptr + base + best_pos, mask=row_mask),
             mask=row_mask)


def mode(self, dim, keepdim):
    """The most frequent value of each slice (the smallest of equally frequent ones) and
    the index of its last occurrence, as the CPU kernel and PyTorch's CPU kernel."""
    shape_rule("sorting.value_and_index")("mode", (self, dim, keepdim))
    device, (self,) = operands("mode", self=self)
    values, indices, sizes, order = sorted_rows("mode", self, dim)
    M, N = values._impl.sizes
    out_values = new_tensor([M], self._impl.dtype, device)
    out_indices = new_tensor([M], dt.int64, device)
    if M:
        grid, block_m, block_n = row_walk(M, N)
        launch("mode", mode_kernel, grid, pointer(values),
               pointer(indices), pointer(out_values), pointer(out_indices), M, N,
               BLOCK_M=block_m, BLOCK_N=block_n)
    return _place("mode", self, dim, keepdim, out_values, out_indices, sizes, order)


# ---- cummax / cummin ---------------------------------------------------------------------
# The scan's combine takes (value, index) of the earlier part `a` and the later part `b`
# and keeps the later one on ties (PyTorch moves the index on), except that the first
# NaN, once reached, stays: a total order, so the combine is associative.
@triton.jit
def _cummax_combine(va, ia, vb, ib):
    later = (va == va) & ((vb != vb) | (vb >= va))
    return tl.where(later, vb, va), tl.where(later, ib, ia)


@triton.jit
def _cummin_combine(va, ia, vb, ib):
    later = (va == va) & ((vb != vb) | (vb <= va))
    return tl.where(later, vb, va), tl.where(later, ib, ia)


@triton.jit
def cum_extreme_kernel(
    in_ptr,  # the input, [M, N] contiguous rows
    values_ptr, indices_ptr,  # [M, N] contiguous: the running extreme and where it was
    M, N,
    MAX: tl.constexpr,  # cummax (else cummin)
    COMPUTE: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    # Memory traffic: each element read once (plus one carry per row and block), the
    # value and the index written once.
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < M
    base = rows.to(tl.int64) * N
    cols = tl.arange(0, BLOCK_N)
    carry_i = tl.zeros([BLOCK_M], tl.int64)
    for n0 in range(0, N, BLOCK_N):
        n = n0 + cols.to(tl.int64)
        mask = row_mask[:, None] & (n[None, :] < N)
        offsets = base[:, None] + n[None, :]
        x = _math.convert(tl.load(in_ptr + offsets, mask=mask, other=0), COMPUTE)
        idx = tl.zeros([BLOCK_M, BLOCK_N], tl.int64) + n[None, :]
        # The previous blocks' result enters the scan as the first element's past.
        carry_v = _math.convert(tl.load(in_ptr + base + carry_i, mask=row_mask, other=0),
                                COMPUTE)
        if MAX:
            cv, ci = _cummax_combine(carry_v[:, None], carry_i[:, None], x, idx)
        else:
            cv, ci = _cummin_combine(carry_v[:, None], carry_i[:, None], x, idx)
        first = (cols[None, :] == 0) & (n0 > 0)
        x = tl.where(first, cv, x)
        idx = tl.where(first, ci, idx)
        if MAX:
            run_v, run_i = tl.associative_scan((x, idx), 1, _cummax_combine)
        else:
            run_v, run_i = tl.associative_scan((x, idx), 1, _cummin_combine)
        tl.store(values_ptr + offsets, _math.convert(run_v, values_ptr.dtype.element_ty),
                 mask=mask)
        tl.store(indices_ptr + offsets, run_i, mask=mask)
        # The running value is always x[run index]: carry the index, reload the value.
        last = tl.minimum(N - n0, BLOCK_N) - 1
        carry_i = tl.max(tl.where(cols[None, :] == last, run_i, 0), axis=1)


@kernel(family=True)
def cummax_cummin(op, self, dim):
    """cummax and cummin: the running extreme along `dim` and where it was last set."""
    shape_rule("sorting.cummax")(op, (self, dim))
    device, (self,) = operands(op, self=self)
    x = self if self.dim() else self.reshape([1])
    rows, order = rows_of(x, wrap_dim(op, dim, x.dim()))
    sizes = rows._impl.sizes
    N = sizes[-1]
    M = rows._impl.numel() // N if N else 0
    dtype = self._impl.dtype
    values = new_tensor(sizes, dtype, device)
    indices = new_tensor(sizes, dt.int64, device)
    if M:
        grid, block_m, block_n = row_walk(M, N)
        launch(op, cum_extreme_kernel, grid, pointer(rows),
               pointer(values), pointer(indices), M, N, MAX=op == "cummax",
               COMPUTE=compute_dtype(dtype), BLOCK_M=block_m, BLOCK_N=block_n)
    values = back(values, order, dtype, device)
    indices = back(indices, order, dt.int64, device)
    return values.view(self._impl.sizes), indices.view(self._impl.sizes)


# ---- unique: sorted keys, where a new value starts, a running count of starts ------------
@triton.jit
def group_starts_kernel(
    keys_ptr,  # [N, K] sorted keys, contiguous
    starts_ptr,  # [N] int64: 1 where a key differs from the one before it, else 0
    N, K,
    COMPUTE: tl.constexpr,
    BLOCK: tl.constexpr,
):
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = i < N
    new = i == 0
    for k in range(0, K):
        a = tl.load(keys_ptr + i * K + k, mask=mask, other=0).to(COMPUTE)
        b = tl.load(keys_ptr + (i - 1) * K + k, mask=mask & (i > 0), other=0).to(COMPUTE)
        new = new | (a != b)   # NaN != NaN: every NaN is a value of its own, as in PyTorch
    tl.store(starts_ptr + i, new.to(tl.int64), mask=mask)


@triton.jit
def unique_scatter_kernel(
    keys_ptr, order_ptr,  # [N, K] sorted keys and [N] where each was before sorting
    starts_ptr, groups_ptr,  # [N] int64: group starts, and their running count
    values_ptr,  # [U, K]: the first key of each group
    inverse_ptr,  # [N]: the group of each unsorted key
    first_ptr, end_ptr,  # [U]: where each group starts and ends in the sorted keys
    N, K,
    BLOCK: tl.constexpr,
):
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = i < N
    group = tl.load(groups_ptr + i, mask=mask, other=1) - 1
    new = tl.load(starts_ptr + i, mask=mask, other=0) != 0
    last = (i == N - 1) | (tl.load(starts_ptr + i + 1, mask=mask & (i + 1 < N), other=0) != 0)
    tl.store(inverse_ptr + tl.load(order_ptr + i, mask=mask, other=0), group, mask=mask)
    tl.store(first_ptr + group, i, mask=mask & new)
    tl.store(end_ptr + group, i + 1, mask=mask & last)
    for k in range(0, K):
        tl.store(values_ptr + group * K + k, tl.load(keys_ptr + i * K + k, mask=mask),
                 mask=mask & new)


def _lexicographic_order(op, keys):
    """The order that sorts the rows of keys [N, K] lexicographically (stable): a stable
    sort by the last column, then by each column before it, the rows taken in the order
    so far (an LSD radix sort whose digits are elements): K sorts of N keys."""
    N, K = keys._impl.sizes
    device = keys._impl.device
    if K == 0:      # empty rows are all equal: keep their order
        keys = factory.zeros((N, 1), dtype=dt.int32, device=device)
        K = 1
    order = None
    for c in range(K - 1, -1, -1):
        column = keys.narrow(1, c, 1)
        if order is not None:
            column = call_below_autograd("index_select", column, 0, order)
        values, step = _results(column, 0, N, column._impl.dtype)
        row_sort.sort_rows(op, column, 0, values, step, False)
        step = step.view([N])
        order = step if order is None else call_below_autograd("index_select", order, 0, step)
    return order


def _unique_keys(op, keys):
    """Distinct rows of keys [N, K] (contiguous): (values [U, K] sorted, inverse [N],
    counts [U]). Sort, mark where a new key starts, count the starts (cumsum): a key's
    group is the count so far; then scatter the first key of each group and its span."""
    device, dtype = keys._impl.device, keys._impl.dtype
    N, K = keys._impl.sizes
    order = _lexicographic_order(op, keys) if N else new_tensor([0], dt.int64, device)
    keys = call_below_autograd("index_select", keys, 0, order)
    starts = new_tensor([N], dt.int64, device)
    block = min(max(16, triton.next_power_of_2(N)), TILE)
    grid = (triton.cdiv(N, block),)
    if N:
        launch(op, group_starts_kernel, grid, pointer(keys), pointer(starts), N, K,
               COMPUTE=compute_dtype(dtype), BLOCK=block)
    groups = call_below_autograd("cumsum", starts, 0, None)
    # One host sync: the number of distinct keys is the size of the results.
    count = int(groups[N - 1].item()) if N else 0
    values = new_tensor([count, K], dtype, device)
    inverse = new_tensor([N], dt.int64, device)
    first = new_tensor([count], dt.int64, device)
    end = new_tensor([count], dt.int64, device)
    if N:
        launch(op, unique_scatter_kernel, grid, pointer(keys), pointer(order), pointer(starts),
               pointer(groups), pointer(values), pointer(inverse), pointer(first), pointer(end),
               N, K, BLOCK=block)
    return values, inverse, call_below_autograd("sub.Tensor", end, first, 1)


def unique2(self, sorted, return_inverse, return_counts):  # noqa: A002 - the schema's name
    """The distinct values in ascending order (sorted or not: sorting is how they are
    found), each element's position among them, and how often each occurs. NaNs are
    each distinct (PyTorch's behaviour; the CPU kernel's np.unique merges them)."""
    device, (self,) = operands("_unique2", self=self)
    flat = self.reshape([-1])
    if not flat.is_contiguous():
        flat = flat.contiguous()
    values, inverse, counts = _unique_keys("_unique2", flat.view([-1, 1]))
    return values.view([-1]), inverse.view(self._impl.sizes), counts


def unique_dim(self, dim, sorted, return_inverse, return_counts):  # noqa: A002
    """Distinct slices along `dim`, compared as whole slices (lexicographically sorted)."""
    shape_rule("sorting.unique_dim")("unique_dim", (self, dim))
    d = wrap_dim("unique_dim", dim, self.dim())
    device, (self,) = operands("unique_dim", self=self)
    x = self if self.dim() else self.reshape([1])
    order = [d] + [i for i in range(x.dim()) if i != d]
    moved = x.permute(order)
    if not moved.is_contiguous():
        moved = moved.contiguous()
    sizes = moved._impl.sizes
    n = sizes[0]
    k = moved._impl.numel() // n if n else 0
    values, inverse, counts = _unique_keys("unique_dim", moved.reshape([n, k]))
    values = values.view([values._impl.sizes[0]] + list(sizes[1:]))
    inverse_order = [order.index(i) for i in range(len(order))]
    sizes = [values._impl.sizes[i] for i in inverse_order]
    result = factory.empty_strided(sizes, unique_dim_strides(sizes, d), dtype=self._impl.dtype,
                                   device=device)
    return run("copy", result, (values.permute(inverse_order),), self._impl.dtype), inverse, \
        counts


# ---- nanmedian: the sort's kernel, then a read at each slice's own rank ------------------------
def _nan_median_along(x, d, keepdim):
    """Sort each slice along d (NaN last), count its values that are not NaN, and read
    the sorted slice (and the sort's indices) at (count - 1) // 2, at 0 when there are
    none (a slice of NaNs: NaN at its first index). The rank differs from slice to slice,
    so it is a gather, not select_kernel's one k."""
    values, indices = call_below_autograd("sort", x, d, False)
    present = call_below_autograd("logical_not", call_below_autograd("isnan", x))
    count = call_below_autograd("sum.dim_IntList", present, [d], True, dt.int64)
    rank = call_below_autograd("floor_divide.Scalar",
                               call_below_autograd("sub.Scalar", count, 1, 1), 2)
    rank = call_below_autograd("clamp_min", rank, 0)
    picked = [call_below_autograd("gather", t, d, rank, False) for t in (values, indices)]
    return tuple(t if keepdim else call_below_autograd("squeeze.dim", t, d) for t in picked)


def nanmedian(self):
    shape_rule("sorting.median")("nanmedian", (self,))
    if not self._impl.numel():      # NaN (cast to an integer dtype: the CPU kernel's value)
        return run_on_host("nanmedian", cpu_sorting.nanmedian, self)
    return _nan_median_along(call_below_autograd("reshape", self, [-1]), 0, False)[0]


def nanmedian_dim(self, dim, keepdim):
    shape_rule("sorting.median_dim")("nanmedian", (self, dim, keepdim))
    if self.dim() == 0:
        return _nan_median_along(call_below_autograd("reshape", self, [1]), 0, False)
    return _nan_median_along(self, wrap_dim("nanmedian", dim, self.dim()), keepdim)


# ---- unique_consecutive: where a run starts, from the comparison, cumsum and nonzero kernels ---
def unique_consecutive(self, return_inverse, return_counts, dim):
    """starts[i] = x[i] != x[i-1] (any element of the slices, along a dim), starts[0] =
    True; the runs' first positions are nonzero(starts) (its host sync gives the output's
    size), each element's run cumsum(starts) - 1, each run's length the gaps between the
    first positions."""
    op = "unique_consecutive"
    shape_rule("sorting.unique_consecutive")(op, (self, return_inverse, return_counts, dim))
    if self.dim() == 0 or self._impl.numel() == 0:
        return run_on_host(op, cpu_sorting.unique_consecutive, self, return_inverse,
                           return_counts, dim)
    device = self._impl.device
    d = 0 if dim is None else wrap_dim(op, dim, self.dim())
    x = call_below_autograd("reshape", self, [-1]) if dim is None else \
        call_below_autograd("movedim.int", self, d, 0)
    n = x._impl.sizes[0]
    changed = call_below_autograd("ne.Tensor", call_below_autograd("narrow", x, 0, 1, n - 1),
                                  call_below_autograd("narrow", x, 0, 0, n - 1))
    if changed.dim() > 1:
        changed = call_below_autograd(
            "any.dim", call_below_autograd("reshape", changed, [n - 1, -1]), 1, False)
    first_row = factory.ones((1,), dtype=dt.bool, device=device)
    starts = call_below_autograd("cat", [first_row, changed], 0)
    first = call_below_autograd("reshape", call_below_autograd("nonzero", starts), [-1])
    values = call_below_autograd("index_select", x, 0, first)
    if dim is not None:
        # a copy that keeps this layout (PyTorch's: the dim's slices in front), no view
        values = call_below_autograd("clone", call_below_autograd("movedim.int", values, 0, d),
                                     preserve_format)
    empty = factory.empty((0,), dtype=dt.int64, device=device)
    inverse, counts = empty, empty
    if return_inverse or dim is not None:
        inverse = call_below_autograd("sub.Scalar", call_below_autograd(
            "cumsum", starts, 0, dt.int64), 1, 1)
        if dim is None:
            inverse = call_below_autograd("reshape", inverse, list(self._impl.sizes))
    if return_counts or dim is not None:
        ends = factory.full((1,), n, dtype=dt.int64, device=device)
        bounds = call_below_autograd("cat", [first, ends], 0)
        runs = bounds._impl.sizes[0] - 1
        counts = call_below_autograd("sub.Tensor",
                                     call_below_autograd("narrow", bounds, 0, 1, runs),
                                     call_below_autograd("narrow", bounds, 0, 0, runs), 1)
    return values, inverse, counts
