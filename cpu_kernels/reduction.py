"""Reductions: sum, mean, max/min (with indices), argmax/argmin."""
from __future__ import annotations

import numpy as np

from tensorplay import _dtype as dt
from tensorplay.library import kernel
from tensorplay.meta import rules
from cpu_kernels._common import accumulate_dtype, out
from cpu_kernels._float_errors import (
    DEFAULT_ERROR_STATE, Ignored, call_ignoring, current_error_state, reset_error_state,
    set_error_state,
)

_SUM_ERRORS = Ignored(invalid="ignore", over="ignore")    # inf + -inf is nan, as in PyTorch
_MEAN_ERRORS = Ignored(invalid="ignore", divide="ignore")  # the mean of nothing is nan


# Every dim of an ndim-d tensor, for a full reduction (`x.sum()`): a lookup instead of
# `tuple(range(ndim))` on every call (0.1 us). NumPy arrays have at most 64 dims.
_ALL_DIMS = tuple(tuple(range(ndim)) for ndim in range(65))


def _dims(op, self, dim):
    ndim = len(self._impl.sizes)
    if dim is None or len(dim) == 0:
        return _ALL_DIMS[ndim] if ndim < len(_ALL_DIMS) else tuple(range(ndim))
    dims = rules.reduce_dim_list(op, dim, ndim)
    # A 0-dim tensor accepts dim 0 or -1 (as PyTorch does) but has no axis to reduce.
    return dims if ndim else ()


def _full_sum_types(d):
    """The result dtype of a sum of dtype `d` with no dtype given (floating types keep
    theirs, bool and integers give int64, as in PyTorch) and the dtype it adds in."""
    result = d if d.is_floating_point else dt.int64
    return result, accumulate_dtype(result)


# By the input's dtype: a lookup on every sum instead of the rule.
_FULL_SUM_TYPES = {d: _full_sum_types(d) for d in dt.ALL_DTYPES}


def _sum_dtype(self, dtype):
    return dtype if dtype is not None else _FULL_SUM_TYPES[self._impl.dtype][0]


def sum(self, dtype):  # noqa: A001 - the op's name
    """Every element added up: `sum_dim(self, None, False, dtype)` in one frame.

    A training step's loss is made here, so `sum_dim`'s helpers are written out: both
    dtypes come from `_FULL_SUM_TYPES` (as `_sum_dtype`'s), the error state is set as
    `call_ignoring` sets it, `_add_up`'s two lines run in this frame. np.add.reduce with
    axis None reduces over every axis: the axes `_dims` would give, in the same order."""
    impl = self._impl
    if dtype is None:
        dtype, acc = _FULL_SUM_TYPES[impl.dtype]
    else:
        acc = accumulate_dtype(dtype)
    np_dtype = dtype.np
    a = impl._array
    if a is None:
        a = impl.array()
    state = _SUM_ERRORS.state
    if state is not None and current_error_state() is DEFAULT_ERROR_STATE:
        token = set_error_state(state)
        try:
            r = np.add.reduce(a, None, acc, None, False)
            if acc is not np_dtype:
                r = r.astype(np_dtype)
        finally:
            reset_error_state(token)
    else:
        r = call_ignoring(_SUM_ERRORS, _add_up, a, None, acc, False, np_dtype)
    return out(r, dtype)


def sum_dim(self, dim, keepdim, dtype):
    dtype = _sum_dtype(self, dtype)
    a = self._impl.array()
    axes = _dims("sum", self, dim)
    r = call_ignoring(_SUM_ERRORS, _add_up, a, axes, accumulate_dtype(dtype), keepdim,
                      dtype.np)
    return out(r, dtype)


def _add_up(a, axes, acc, keepdim, np_dtype):
    """The sum over `axes` in the accumulation dtype `acc`, rounded once to `np_dtype`.

    np.add.reduce is what np.sum runs for an ndarray, without np.sum's Python layer (a
    third of a small sum's time). The rounding happens here, under the caller's error
    state: a half type's float32 total beyond its range becomes inf without NumPy's
    overflow warning, as in PyTorch. `acc` is `np_dtype` itself unless they differ."""
    r = np.add.reduce(a, axes, acc, None, keepdim)
    if acc is not np_dtype:
        r = r.astype(np_dtype)
    return r


def mean(self, dtype):
    return mean_dim(self, None, False, dtype)


def mean_dim(self, dim, keepdim, dtype):
    rules.check_mean_dtype("mean", self, dtype)
    dtype = dtype or self._impl.dtype
    axes = _dims("mean", self, dim)
    a = self._impl.array()
    acc = accumulate_dtype(dtype)
    count = 1
    for axis in axes:
        count *= a.shape[axis]
    # sum / count rather than np.mean, which warns on an empty slice; 0 / 0 is nan,
    # as in PyTorch.
    r = call_ignoring(_MEAN_ERRORS, _sum_over_count, a, axes, keepdim, acc, count)
    return out(r, dtype)


def _sum_over_count(a, axes, keepdim, acc, count):
    return np.true_divide(np.add.reduce(a, axes, acc, None, keepdim), count, dtype=acc)


def max(self):  # noqa: A001
    rules.check_nonempty_reduction("max", self)
    with np.errstate(invalid="ignore"):   # nan propagates; bfloat16 warns about it
        return out(np.max(self._impl.array()), self._impl.dtype)


def min(self):  # noqa: A001
    rules.check_nonempty_reduction("min", self)
    with np.errstate(invalid="ignore"):
        return out(np.min(self._impl.array()), self._impl.dtype)


@kernel(family=True)
def max_min_dim(op, self, dim, keepdim):
    """max.dim and min.dim: the extreme values along `dim` and where they are."""
    pick = np.argmax if op == "max" else np.argmin
    sizes = self._impl.sizes
    dim = rules.wrap_dim(op, dim, len(sizes))
    a = self._impl.array()
    if a.ndim == 0:
        # NOTE: copy, as torch does: the values must not alias the 0-dim input.
        return out(a.copy(), self._impl.dtype), out(np.zeros((), np.int64), dt.int64)
    rules.check_nonempty_dim(op, self, dim)
    idx = pick(a, axis=dim, keepdims=True)
    values = np.take_along_axis(a, idx, axis=dim)
    if not keepdim:
        values, idx = np.squeeze(values, dim), np.squeeze(idx, dim)
    return out(values, self._impl.dtype), out(idx, dt.int64)


@kernel(family=True)
def argmax_argmin(op, self, dim, keepdim):
    """argmax and argmin, over everything (dim None) or along `dim`."""
    rules.reject_bool(op, self)
    pick = np.argmax if op == "argmax" else np.argmin
    a = self._impl.array()
    if dim is None:
        rules.check_nonempty_reduction(op, self)
        r = np.asarray(pick(a.reshape(-1)))
        if keepdim:
            r = r.reshape((1,) * a.ndim)
        return out(r, dt.int64)
    dim = rules.wrap_dim(op, dim, a.ndim)
    if a.ndim == 0:
        return out(np.zeros((), np.int64), dt.int64)
    rules.check_nonempty_dim(op, self, dim)
    return out(pick(a, axis=dim, keepdims=keepdim), dt.int64)
