"""Sorting and selection: sort, topk, kthvalue, median, mode, cummax/cummin (a running
extreme and where it was set), unique. (The gather/scatter-add pair their backward
formulas use is in indexing.py.)

Sorting is always stable (NumPy's `kind="stable"`), and NaN sorts as the largest value,
as in PyTorch. A 0-dim tensor is sorted/scanned as a 1-element vector.
"""
from __future__ import annotations

import numpy as np

from tensorplay import _dtype as dt
from tensorplay.kernel_support.checks import wrap_dim
from tensorplay.kernel_support.complex_refusals import reject_complex
from tensorplay.kernel_support.layout import clone_strides, unique_dim_strides
from tensorplay.kernel_support.ops import shape_rule
from tensorplay.library import kernel
from cpu_kernels._common import out, out_strided


def _as_1d_if_scalar(a):
    return a.reshape(1) if a.ndim == 0 else a


# ---- cummax / cummin -------------------------------------------------------------------
@kernel(family=True)
def cummax_cummin(op, self, dim):
    """cummax and cummin: the running max/min and where it was last reached (PyTorch:
    ties move the index on; from the first NaN on, the value is NaN and the index stays
    at that NaN).

        update[i] = i == 0 or x[i] == run[i] or (x[i] is the first nan)
        index[i]  = the last j <= i with update[j]"""
    ufunc = np.maximum if op == "cummax" else np.minimum
    shape_rule("sorting.cummax")(op, (self, dim))
    a = self._impl.array()
    x = _as_1d_if_scalar(a)
    d = wrap_dim(op, dim, a.ndim) if a.ndim else 0
    with np.errstate(invalid="ignore"):
        run = ufunc.accumulate(x, axis=d)
    update = x == run
    if x.dtype.kind == "f" or self._impl.dtype is dt.bfloat16:
        nan = np.isnan(x.astype(np.float32) if x.dtype.kind != "f" else x)
        seen = np.logical_or.accumulate(nan, axis=d)
        first_nan = nan & (np.cumsum(nan, axis=d) == 1)
        update = (update & ~seen) | first_nan
    shape = [1] * x.ndim
    shape[d] = x.shape[d]
    positions = np.arange(x.shape[d]).reshape(shape)
    idx = np.maximum.accumulate(np.where(update, positions, 0), axis=d) if x.size else \
        np.zeros(x.shape, np.int64)
    return out(run.reshape(a.shape), self._impl.dtype), out(idx.reshape(a.shape), dt.int64)


# ---- sorting ---------------------------------------------------------------------------
def sort_keys(x):
    """What to sort by: bfloat16 (ml_dtypes) as float32, so NaN sorts last like in NumPy."""
    return x.astype(np.float32) if x.dtype.name == "bfloat16" else x


def stable_argsort(x, axis, descending):
    """Stable argsort; descending keeps equal elements in their original order too.

    Descending = ascending on the reversed axis, reversed back: equal elements, reversed
    twice, are back in their original order; positions map back as n - 1 - i."""
    x = sort_keys(x)
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    n = x.shape[axis]
    rev = np.flip(x, axis=axis)
    return n - 1 - np.flip(np.argsort(rev, axis=axis, kind="stable"), axis=axis)


@kernel(family=True)
def sort(op, self, *params):
    """sort(dim, descending) and sort.stable(stable, dim, descending): always stable."""
    dim, descending = params[-2:]
    shape_rule("sorting.sort")(op, (self, dim, descending))
    a = self._impl.array()
    x = _as_1d_if_scalar(a)
    d = wrap_dim(op, dim, a.ndim) if a.ndim else 0
    idx = stable_argsort(x, d, descending)
    values = np.take_along_axis(x, idx, axis=d)
    # PyTorch sorts into clones of the input: both results keep a dense input's layout
    impl = self._impl
    strides = clone_strides(impl.sizes, impl.strides)
    return (out_strided(values.reshape(a.shape), impl.dtype, strides),
            out_strided(idx.reshape(a.shape), dt.int64, strides))


def topk(self, k, dim, largest, sorted):  # noqa: A002 - the schema's name
    """The k largest (smallest) along dim: a stable sort, then the first k (always sorted)."""
    shape_rule("sorting.topk")("topk", (self, k, dim, largest, sorted))
    a = self._impl.array()
    x = _as_1d_if_scalar(a)
    d = wrap_dim("topk", dim, a.ndim) if a.ndim else 0
    # A 0-dim input gives its element for k = 0 too, as PyTorch's kernel does.
    idx = np.take(stable_argsort(x, d, largest), np.arange(k if a.ndim else 1), axis=d)
    values = np.take_along_axis(x, idx, axis=d)
    if a.ndim == 0:
        values, idx = values.reshape(()), idx.reshape(())
    return out(values, self._impl.dtype), out(idx, dt.int64)


# ---- selection: one value (and its index) per slice ------------------------------------
def _pick(op, self, dim, keepdim, position, a=None):
    """Sort each slice along dim (stably) and take the element at `position(sorted, d)`,
    an index array with a size-1 dim d. (`a`: the data, if not the tensor's own array.)"""
    a = self._impl.array() if a is None else a
    x = _as_1d_if_scalar(a)
    d = wrap_dim(op, dim, a.ndim) if a.ndim else 0
    order = np.argsort(sort_keys(x), axis=d, kind="stable")
    s = np.take_along_axis(x, order, axis=d)
    pos = position(s, d)
    values = np.take_along_axis(s, pos, axis=d)
    idx = np.take_along_axis(order, pos, axis=d)
    if a.ndim == 0:
        values, idx = values.reshape(()), idx.reshape(())
    elif not keepdim:
        values, idx = np.squeeze(values, d), np.squeeze(idx, d)
    return out(values, self._impl.dtype), out(idx, dt.int64)


def _lower_median_position(s, d):
    """(n - 1) // 2, or the first NaN when the slice has one (the median is then NaN)."""
    n = s.shape[d]
    pos = np.full(s.shape[:d] + (1,) + s.shape[d + 1:], (n - 1) // 2, np.int64)
    if s.dtype.kind == "f" or s.dtype.name == "bfloat16":
        nans = np.sum(np.isnan(s.astype(np.float32)), axis=d, keepdims=True)
        pos = np.where(nans > 0, n - nans, pos)
    return pos


def median(self):
    shape_rule("sorting.median")("median", (self,))
    flat = self._impl.array().reshape(-1)
    if flat.size == 0:
        with np.errstate(invalid="ignore"):
            return out(np.array(np.nan).astype(self._impl.dtype.np), self._impl.dtype)
    values, _ = _pick("median", self, 0, False, _lower_median_position, a=flat)
    return values


def median_dim(self, dim, keepdim):
    shape_rule("sorting.median_dim")("median", (self, dim, keepdim))
    return _pick("median", self, dim, keepdim, _lower_median_position)


def kthvalue(self, k, dim, keepdim):
    shape_rule("sorting.kthvalue")("kthvalue", (self, k, dim, keepdim))
    return _pick("kthvalue", self, dim, keepdim,
                 lambda s, d: np.full(s.shape[:d] + (1,) + s.shape[d + 1:], k - 1, np.int64))


def mode(self, dim, keepdim):
    """The most frequent value of each slice (the smallest of equally frequent ones) and
    the index of its last occurrence, as PyTorch's CPU kernel.

        s = sort(x);  run[j] = length of the run of equal values ending at j
        value = s[first j with the longest run];  index = last i with x[i] == value

    NOTE: runs are found with `!=`, as PyTorch's kernel does, so every NaN is a run of
    its own: NaN is the mode only of an all-NaN slice, and then its index is the last
    NaN's. (PyTorch's unstable sort can also split runs of numbers around NaNs; that
    accident is not reproduced: here the numbers are sorted first, NaNs last.)"""
    shape_rule("sorting.value_and_index")("mode", (self, dim, keepdim))
    a = self._impl.array()
    x = _as_1d_if_scalar(a)
    d = wrap_dim("mode", dim, a.ndim) if a.ndim else 0
    keys = sort_keys(np.moveaxis(x, d, -1))
    s = np.sort(keys, axis=-1)
    n = s.shape[-1]
    starts = np.ones(s.shape, bool)
    starts[..., 1:] = s[..., 1:] != s[..., :-1]
    positions = np.arange(n)
    run = positions - np.maximum.accumulate(np.where(starts, positions, 0), axis=-1) + 1
    best = np.take_along_axis(s, np.argmax(run, axis=-1)[..., None], axis=-1)
    with np.errstate(invalid="ignore"):
        hit = (keys == best) | (np.isnan(keys) & np.isnan(best)) if s.dtype.kind == "f" \
            else keys == best
    last = n - 1 - np.argmax(np.flip(hit, axis=-1), axis=-1)
    value = np.take_along_axis(np.moveaxis(x, d, -1), last[..., None], axis=-1)[..., 0]
    if a.ndim == 0:
        value, last = value.reshape(()), last.reshape(())
    elif keepdim:
        value, last = np.expand_dims(value, d), np.expand_dims(last, d)
    return out(value, self._impl.dtype), out(last, dt.int64)


def _unique(a, axis):
    values, inverse, counts = np.unique(a, return_inverse=True, return_counts=True, axis=axis)
    return values, inverse.reshape(-1), counts


def unique2(self, sorted, return_inverse, return_counts):  # noqa: A002 - the schema's name
    """The distinct values in ascending order (sorted or not: sorting is how we find
    them), the position of each element's value among them, and how often each occurs."""
    reject_complex("unique", self, kind="unique.all")
    a = self._impl.array()
    values, inverse, counts = _unique(a.reshape(-1), None)
    return (out(values, self._impl.dtype), out(inverse.reshape(a.shape), dt.int64),
            out(counts, dt.int64))


def unique_dim(self, dim, sorted, return_inverse, return_counts):  # noqa: A002
    """Distinct slices along `dim`, compared as whole slices (lexicographically sorted)."""
    shape_rule("sorting.unique_dim")("unique_dim", (self, dim))
    a = self._impl.array()
    d = wrap_dim("unique_dim", dim, a.ndim)
    if a.ndim == 0:
        a = a.reshape(1)
    values, inverse, counts = _unique(a, d)
    return (out_strided(values, self._impl.dtype, unique_dim_strides(values.shape, d)),
            out(inverse, dt.int64), out(counts, dt.int64))


# ---- nanmedian: the median of the values that are not NaN -----------------------------------
def _nan_median_position(s, d):
    """(count - 1) // 2 among a sorted slice's count non-NaN values (NaN sorts last); 0 for
    a slice of NaNs only (its median is NaN, at its first index)."""
    if s.dtype.kind == "f" or s.dtype.name == "bfloat16":
        count = np.sum(~np.isnan(s.astype(np.float32)), axis=d, keepdims=True)
    else:
        count = np.full(s.shape[:d] + (1,) + s.shape[d + 1:], s.shape[d])
    return np.maximum((count - 1) // 2, 0).astype(np.int64)


def nanmedian(self):
    shape_rule("sorting.median")("nanmedian", (self,))
    flat = self._impl.array().reshape(-1)
    if flat.size == 0:
        with np.errstate(invalid="ignore"):
            return out(np.array(np.nan).astype(self._impl.dtype.np), self._impl.dtype)
    values, _ = _pick("nanmedian", self, 0, False, _nan_median_position, a=flat)
    return values


def nanmedian_dim(self, dim, keepdim):
    shape_rule("sorting.median_dim")("nanmedian", (self, dim, keepdim))
    return _pick("nanmedian", self, dim, keepdim, _nan_median_position)


# ---- unique_consecutive: runs of equal values ------------------------------------------------
def unique_consecutive(self, return_inverse, return_counts, dim):
    """One value per run of equal consecutive values (or equal consecutive slices along
    `dim`), the run each element belongs to, and each run's length. Runs are found with
    `!=`, so each NaN is a run of its own, as in PyTorch."""
    op = "unique_consecutive"   # PyTorch's aten::unique_consecutive, the name errors give
    shape_rule("sorting.unique_consecutive")(op, (self, return_inverse, return_counts, dim))
    a = self._impl.array()
    if dim is None:
        x = a.reshape(-1)
        starts = np.ones(x.shape[0], bool)
        starts[1:] = x[1:] != x[:-1]
    else:
        d = wrap_dim(op, dim, a.ndim)
        x = np.moveaxis(a, d, 0)
        starts = np.ones(x.shape[0], bool)
        if x.shape[0] > 1:
            starts[1:] = (x[1:] != x[:-1]).reshape(x.shape[0] - 1, -1).any(axis=1)
    run = np.cumsum(starts) - 1
    first = np.flatnonzero(starts)
    counts = np.diff(np.append(first, x.shape[0]))
    values = x[first]
    if dim is None:
        # (PyTorch leaves the results not asked for empty, along a dim it fills them all)
        inverse = run.reshape(a.shape) if return_inverse else np.empty(0, np.int64)
        counts = counts if return_counts else np.empty(0, np.int64)
    else:
        values = np.moveaxis(values, 0, d)
        inverse = run
        # laid out as unique_dim's: PyTorch computes both along dim moved to the front
        return (out_strided(values, self._impl.dtype, unique_dim_strides(values.shape, d)),
                out(inverse, dt.int64), out(counts, dt.int64))
    return out(values, self._impl.dtype), out(inverse, dt.int64), out(counts, dt.int64)
