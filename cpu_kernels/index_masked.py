"""Boolean masks and data-dependent shapes: masked_fill, masked_select, masked_scatter,
nonzero and unique.

The mask broadcasts against `self` (out-of-place ops broadcast both; in-place ops
need the mask to broadcast to `self`). Elements are visited in row-major order, so

    masked_select:   out = [self[i] for i in positions if mask[i]]
    masked_scatter:  k = 0; for i where mask[i]: out[i] = source.flat[k]; k += 1
"""
from __future__ import annotations

import numpy as np

from tensorplay import _dtype as dt
from tensorplay.library import kernel
from tensorplay.meta import indexing as rules
from tensorplay.meta.layout import unique_dim_strides
from tensorplay.meta.rules import wrap_dim
from cpu_kernels._common import out, out_strided


def _value(value, dtype):
    if getattr(value, "_impl", None) is not None:
        value = value._impl.array()
    return np.array(value).astype(dtype.np)   # 2.7 into an int tensor is 2, like PyTorch


def _broadcast_copy(self, sizes):
    return np.array(np.broadcast_to(self._impl.array(), sizes), copy=True)


@kernel(family=True)
def masked_fill(op, self, mask, value):
    """masked_fill and masked_fill_, the value a Scalar or a 0-dim Tensor."""
    spec = rules.masked_fill(op, (self, mask, value))
    fill = _value(value, self._impl.dtype)
    if spec == rules.SELF:
        a = self._impl.array()
        a[np.broadcast_to(mask._impl.array(), a.shape)] = fill
        return self
    result = _broadcast_copy(self, spec.sizes)
    result[np.broadcast_to(mask._impl.array(), spec.sizes)] = fill
    return out(result, self._impl.dtype)


def masked_select(self, mask):
    sizes = rules.masked_select("masked_select", (self, mask))
    a = np.broadcast_to(self._impl.array(), sizes)
    return out(a[np.broadcast_to(mask._impl.array(), sizes)], self._impl.dtype)


def _masked_scatter_into(op, target, mask, source):
    m = np.broadcast_to(mask._impl.array(), target.shape)
    count = int(np.count_nonzero(m))
    rules.check_masked_scatter_count(op, count, source)
    target[m] = source._impl.array().reshape(-1)[:count]


@kernel(family=True)
def masked_scatter(op, self, mask, source):
    """masked_scatter and masked_scatter_."""
    spec = rules.masked_scatter(op, (self, mask, source))
    if spec == rules.SELF:
        _masked_scatter_into(op, self._impl.array(), mask, source)
        return self
    result = _broadcast_copy(self, spec.sizes)
    _masked_scatter_into(op, result, mask, source)
    return out(result, self._impl.dtype)


def nonzero(self):
    """The coordinates of the non-zero elements, one row each, in row-major order.

    The (n, ndim) result is laid out column-major (strides (1, n)), as PyTorch's is: each
    coordinate's column is contiguous, so `nonzero(as_tuple=True)` selects dense columns."""
    coords = np.argwhere(self._impl.array()).astype(np.int64)
    if coords.size == 0:
        return out(coords, dt.int64)
    return out_strided(coords, dt.int64, (1, coords.shape[0]))


def _unique(a, axis):
    values, inverse, counts = np.unique(a, return_inverse=True, return_counts=True, axis=axis)
    return values, inverse.reshape(-1), counts


def unique2(self, sorted, return_inverse, return_counts):  # noqa: A002 - the schema's name
    """The distinct values in ascending order (sorted or not: sorting is how we find
    them), the position of each element's value among them, and how often each occurs."""
    a = self._impl.array()
    values, inverse, counts = _unique(a.reshape(-1), None)
    return (out(values, self._impl.dtype), out(inverse.reshape(a.shape), dt.int64),
            out(counts, dt.int64))


def unique_dim(self, dim, sorted, return_inverse, return_counts):  # noqa: A002
    """Distinct slices along `dim`, compared as whole slices (lexicographically sorted)."""
    a = self._impl.array()
    d = wrap_dim("unique_dim", dim, a.ndim)
    if a.ndim == 0:
        a = a.reshape(1)
    values, inverse, counts = _unique(a, d)
    return (out_strided(values, self._impl.dtype, unique_dim_strides(values.shape, d)),
            out(inverse, dt.int64), out(counts, dt.int64))
