"""gather, scatter (with `reduce=`), scatter_add, scatter_reduce and take.

All of them address one element per index entry. For an index of shape S and a
`dim`, the element that entry `i = (i0, i1, ...)` addresses is `i` itself with
coordinate `dim` replaced by `index[i]`. `scatter_coords` builds those coordinates
once as a tuple of broadcastable NumPy arrays, so

    gather:       out[i] = self[coords(i)]             -> self[coords]
    scatter:      out[coords(i)] = src[i]              -> out[coords] = src[:S]
    scatter_add:  out[coords(i)] += src[i]             -> np.add.at(out, coords, src[:S])

(`ufunc.at` applies repeated indices one after the other, as the loops above do;
a plain `out[coords] += v` would apply only one of them). Every index is checked
against its dimension on the host before any array is touched.
"""
from __future__ import annotations

import numpy as np

from tensorplay.library import kernel
from tensorplay.meta import indexing as rules
from tensorplay.meta.rules import wrap_dim
from cpu_kernels._common import out, write_target, written

_REDUCE_UFUNC = {"add": np.add, "multiply": np.multiply, "sum": np.add, "prod": np.multiply,
                 "amax": np.maximum, "amin": np.minimum}


def _as_nd(a):
    """0-dim arrays are indexed as 1-D arrays of one element (PyTorch's rule)."""
    return a.reshape(1) if a.ndim == 0 else a


def scatter_coords(index, dim):
    """The coordinates each entry of `index` addresses (see the module docstring)."""
    coords = list(np.indices(index.shape, sparse=True))
    coords[dim] = index
    return tuple(coords)


def _leading(a, shape):
    """The corner of `a` of the given shape (src may be larger than index)."""
    return a[tuple(slice(0, n) for n in shape)]


def _checked_coords(op, self, dim, index):
    d = wrap_dim(op, dim, self._impl.array().ndim)
    idx = _as_nd(index._impl.array())
    size = _as_nd(self._impl.array()).shape[d]
    rules.check_in_range(op, idx, size, d)
    return scatter_coords(idx, d), idx.shape


def gather(self, dim, index, sparse_grad):
    rules.gather("gather", (self, dim, index, sparse_grad))
    coords, _ = _checked_coords("gather", self, dim, index)
    result = _as_nd(self._impl.array())[coords]
    return out(result.reshape(index._impl.sizes), self._impl.dtype)


def _values(src, shape, dtype):
    """What scatter writes: the corner of `src`, or a Python number cast like PyTorch
    casts it (2.7 into an int tensor is 2)."""
    if getattr(src, "_impl", None) is not None:
        return _leading(_as_nd(src._impl.array()), shape)
    return np.array(src).astype(dtype.np)


@kernel(family=True)
def scatter(op, self, dim, index, *params):
    """scatter and scatter_ (src or value, with an optional reduce), and scatter_add and
    scatter_add_ (reduce 'add'); their parameters: rules.scatter_params."""
    src, reduce = rules.scatter_params(op, params)
    rules.scatter(op, (self, dim, index, src) + ((reduce,) if reduce is not None else ()))
    target = write_target(op, self)
    coords, shape = _checked_coords(op, self, dim, index)
    values = _values(src, shape, self._impl.dtype)
    view = _as_nd(target)
    if reduce is None:
        view[coords] = values
    else:
        _REDUCE_UFUNC[reduce].at(view, coords, np.broadcast_to(values, shape))
    return written(op, self, target)


# ---- scatter_reduce ------------------------------------------------------------------
def _identity(reduce, dtype):
    """The value a reduction starts from when `self` is left out (include_self=False)."""
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dtype.is_floating_point:
        return -np.inf if reduce == "amax" else np.inf
    info = np.iinfo(dtype.np)
    return info.min if reduce == "amax" else info.max


def _scatter_reduce_into(op, target, self, dim, index, src, reduce, include_self):
    """    for each entry i of index:  target[coords(i)] = reduce(target[coords(i)], src[i])
    with target[coords] first reset to the identity when include_self is False, and
    `mean` dividing each reduced element by how many values it received."""
    coords, shape = _checked_coords(op, self, dim, index)
    values = _values(src, shape, self._impl.dtype)
    view = _as_nd(target)
    dtype = self._impl.dtype
    if not include_self:
        view[coords] = _identity(reduce, dtype)
    if reduce != "mean":
        _REDUCE_UFUNC[reduce].at(view, coords, values)
        return
    counts = np.full(view.shape, 1 if include_self else 0, np.int64)
    np.add.at(counts, coords, 1)
    np.add.at(view, coords, values)
    counts = np.maximum(counts, 1)   # untouched elements keep self (PyTorch clamps to 1)
    if dtype.is_floating_point:
        view[...] = view / counts.astype(view.dtype)
    else:
        view[...] = np.floor_divide(view, counts)


@kernel(family=True)
def scatter_reduce(op, self, dim, index, src, reduce, include_self):
    """scatter_reduce and scatter_reduce_."""
    rules.scatter_reduce(op, (self, dim, index, src, reduce, include_self))
    target = write_target(op, self)
    _scatter_reduce_into(op, target, self, dim, index, src, reduce, include_self)
    return written(op, self, target)


# ---- take ----------------------------------------------------------------------------
def take(self, index):
    """self viewed as 1-D, indexed by `index` (negative values count from the end)."""
    rules.take("take", (self, index))
    flat = self._impl.array().reshape(-1)
    idx = index._impl.array()
    rules.check_in_range("take", idx, flat.size, 0, allow_negative=True)
    return out(flat[idx], self._impl.dtype)
