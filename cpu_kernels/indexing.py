"""index_select, index_add, index_copy, index_fill: whole slices picked by a vector of
indices along one dimension.

Each kernel moves `dim` to the front (a NumPy view, no copy) so that `moved[idx]` is
the list of slices the indices name:

    index_select:  out[..., j, ...] = self[..., index[j], ...]
    index_add:     out[..., index[j], ...] += alpha * source[..., j, ...]   (repeats add up)
    index_copy:    out[..., index[j], ...] = source[..., j, ...]
    index_fill:    out[..., index[j], ...] = value
"""
from __future__ import annotations

import numpy as np

from tensorplay import _dtype as dt
from tensorplay.kernel_support.arguments import fills_nothing, reads_no_index, scatter_params
from tensorplay.kernel_support.checks import SELF, is_mask, wrap_dim
from tensorplay.kernel_support.checks import check_in_range, check_masked_scatter_count
from tensorplay.kernel_support.layout import index_strides
from tensorplay.kernel_support.ops import shape_rule
from tensorplay.kernel_support.results import contiguous_strides
from tensorplay.library import kernel
from cpu_kernels._common import accumulate_dtype, out, out_strided, write_target, written


def _front(a, dim):
    """`a` with `dim` first; 0-dim arrays act as 1-D arrays of one element."""
    return np.moveaxis(a.reshape(1) if a.ndim == 0 else a, dim, 0)


def _checked_index(op, self, dim, index, allow_negative=False):
    d = wrap_dim(op, dim, len(self._impl.sizes))
    idx = index._impl.array().reshape(-1)
    size = self._impl.sizes[d] if self._impl.sizes else 1
    check_in_range(op, idx, size, d, allow_negative=allow_negative)
    return d, idx


def index_select(self, dim, index):
    spec = shape_rule("indexing.index_select")("index_select", (self, dim, index))
    d, idx = _checked_index("index_select", self, dim, index)
    picked = np.take(_front(self._impl.array(), d), idx, axis=0)
    return out(np.moveaxis(picked, 0, d).reshape(spec.sizes), self._impl.dtype)


def _source(source, d):
    return _front(source._impl.array(), d)


def add_rows(target, idx, rows):
    """target[idx[j]] += rows[j] for every j, repeated indices adding up.

    np.add.at adds one element at a time. Instead, add in rounds: each round takes the
    first remaining occurrence of every distinct index, which has no repeats, so one
    vectorised `+=` does it. Rounds = the largest multiplicity (1 without repeats), and
    each index still receives its rows in their original order, as np.add.at would.
    """
    remaining = np.arange(len(idx))
    while remaining.size:
        _, first = np.unique(idx[remaining], return_index=True)
        take = remaining[first]
        target[idx[take]] += rows[take]
        remaining = np.delete(remaining, first)


@kernel(family=True)
def index_add(op, self, dim, index, source, alpha):
    """index_add and index_add_."""
    shape_rule("indexing.index_add")(op, (self, dim, index, source, alpha))
    target = write_target(op, self)
    if reads_no_index(op, self, source):
        return written(op, self, target)
    d, idx = _checked_index(op, self, dim, index)
    src = _source(source, d)
    if alpha != 1:
        src = src * np.array(alpha).astype(src.dtype)
    add_rows(_front(target, d), idx, src.reshape((len(idx),) + src.shape[1:]))
    return written(op, self, target)


@kernel(family=True)
def index_copy(op, self, dim, index, source):
    """index_copy and index_copy_."""
    shape_rule("indexing.index_copy")(op, (self, dim, index, source))
    target = write_target(op, self)
    if reads_no_index(op, self, source):
        return written(op, self, target)
    d, idx = _checked_index(op, self, dim, index)
    src = _source(source, d)
    _front(target, d)[idx] = src.reshape((len(idx),) + src.shape[1:])
    return written(op, self, target)


def _fill_value(value, dtype):
    if getattr(value, "_impl", None) is not None:
        value = value._impl.array()
    return np.array(value).astype(dtype.np)


@kernel(family=True)
def index_fill(op, self, dim, index, value):
    """index_fill and index_fill_, the value a Scalar or a 0-dim Tensor."""
    shape_rule("indexing.index_fill")(op, (self, dim, index, value))
    target = write_target(op, self)
    if fills_nothing(op, self, dim):
        return written(op, self, target, keep_layout=True)
    # index_fill alone among these accepts negative indices, as in PyTorch.
    d, idx = _checked_index(op, self, dim, index, allow_negative=True)
    _front(target, d)[idx] = _fill_value(value, self._impl.dtype)
    return written(op, self, target, keep_layout=True)


# ---- gather / scatter-add along a dim (the selection ops' backward) ---------------------
def gather_along(self, dim, index):
    """out[..., i, ...] = self[..., index[..., i, ...], ...] along `dim`."""
    spec = shape_rule("indexing.gather_along")("_gather_along", (self, dim, index))
    a, idx = self._impl.array(), index._impl.array()
    if a.ndim == 0:
        return out(a.copy(), spec.dtype)
    d = wrap_dim("_gather_along", dim, a.ndim)
    return out(np.take_along_axis(a, idx, axis=d), spec.dtype)


def scatter_add_along(self, dim, index, sizes):
    """zeros(sizes), then out[..., index[..., i, ...], ...] += self[..., i, ...] along `dim`
    (repeated indices accumulate: np.add.at, not fancy assignment)."""
    spec = shape_rule("indexing.scatter_add_along")(
        "_scatter_add_along", (self, dim, index, sizes))
    a, idx = self._impl.array(), index._impl.array()
    r = np.zeros(spec.sizes, accumulate_dtype(spec.dtype))
    if a.ndim == 0:
        r[...] = a
        return out(r, spec.dtype)
    d = wrap_dim("_scatter_add_along", dim, a.ndim)
    coords = list(np.indices(idx.shape, sparse=True))
    coords[d] = idx
    np.add.at(r, tuple(coords), a)
    return out(r, spec.dtype)


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
    check_in_range(op, idx, size, d)
    return scatter_coords(idx, d), idx.shape


def gather(self, dim, index, sparse_grad):
    shape_rule("indexing.gather")("gather", (self, dim, index, sparse_grad))
    coords, _ = _checked_coords("gather", self, dim, index)
    result = _as_nd(self._impl.array())[coords]
    return out(result.reshape(index._impl.sizes), self._impl.dtype)


def _values(src, shape, dtype):
    """What scatter writes: the corner of `src`, or a Python number cast like PyTorch
    casts it (2.7 into an int tensor is 2)."""
    if getattr(src, "_impl", None) is not None:
        return _leading(_as_nd(src._impl.array()), shape)
    if isinstance(src, complex) and not dtype.is_complex:
        src = src.real          # (the meta rule refused a nonzero imaginary part)
    return np.array(src).astype(dtype.np)


@kernel(family=True)
def scatter(op, self, dim, index, *params):
    """scatter and scatter_ (src or value, with an optional reduce), and scatter_add and
    scatter_add_ (reduce 'add'); their parameters: scatter_params."""
    src, reduce = scatter_params(op, params)
    reduce_arg = (reduce,) if reduce is not None else ()
    shape_rule("indexing.scatter")(op, (self, dim, index, src) + reduce_arg)
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
    if dtype.is_differentiable:     # floating and complex: a true mean
        view[...] = view / counts.astype(view.dtype)
    else:
        view[...] = np.floor_divide(view, counts)


@kernel(family=True)
def scatter_reduce(op, self, dim, index, src, reduce, include_self):
    """scatter_reduce and scatter_reduce_."""
    shape_rule("indexing.scatter_reduce")(op, (self, dim, index, src, reduce, include_self))
    target = write_target(op, self)
    _scatter_reduce_into(op, target, self, dim, index, src, reduce, include_self)
    return written(op, self, target)


# ---- take ----------------------------------------------------------------------------
def take(self, index):
    """self viewed as 1-D, indexed by `index` (negative values count from the end)."""
    shape_rule("indexing.take")("take", (self, index))
    flat = self._impl.array().reshape(-1)
    idx = index._impl.array()
    check_in_range("take", idx, flat.size, 0, allow_negative=True)
    return out(flat[idx], self._impl.dtype)


def _value(value, dtype):
    if getattr(value, "_impl", None) is not None:
        value = value._impl.array()
    value = np.array(value)
    if value.dtype.kind == "c" and not dtype.is_complex and dtype.np.kind != "b":
        value = value.real      # a real complex number (the rule refused any other)
    return value.astype(dtype.np)   # 2.7 into an int tensor is 2, like PyTorch


def _broadcast_copy(self, sizes):
    return np.array(np.broadcast_to(self._impl.array(), sizes), copy=True)


@kernel(family=True)
def masked_fill(op, self, mask, value):
    """masked_fill and masked_fill_, the value a Scalar or a 0-dim Tensor."""
    spec = shape_rule("indexing.masked_fill")(op, (self, mask, value))
    fill = _value(value, self._impl.dtype)
    if spec == SELF:
        a = self._impl.array()
        a[np.broadcast_to(mask._impl.array(), a.shape)] = fill
        return self
    result = _broadcast_copy(self, spec.sizes)
    result[np.broadcast_to(mask._impl.array(), spec.sizes)] = fill
    return out(result, self._impl.dtype)


def masked_select(self, mask):
    # The rule checks (devices, a bool mask, shapes that broadcast) and answers that the
    # length depends on the values, which NumPy counts.
    shape_rule("indexing.masked_select")("masked_select", (self, mask))
    a, m = np.broadcast_arrays(self._impl.array(), mask._impl.array())
    return out(a[m], self._impl.dtype)


def _masked_scatter_into(op, target, mask, source):
    m = np.broadcast_to(mask._impl.array(), target.shape)
    count = int(np.count_nonzero(m))
    check_masked_scatter_count(op, count, source)
    target[m] = source._impl.array().reshape(-1)[:count]


@kernel(family=True)
def masked_scatter(op, self, mask, source):
    """masked_scatter and masked_scatter_."""
    spec = shape_rule("indexing.masked_scatter")(op, (self, mask, source))
    if spec == SELF:
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


def numpy_key(op, self, indices):
    """The NumPy index for `indices`, every integer checked against its dimension."""
    sizes = self._impl.sizes
    key = []
    dim = 0
    for t in indices:
        if t is None:
            key.append(slice(None))
            dim += 1
            continue
        a = t._impl.array()
        if is_mask(t):
            key += list(np.nonzero(a.astype(bool)))
            dim += a.ndim
            continue
        a = a.astype(np.int64, copy=False)
        check_in_range(op, a, sizes[dim], dim, arg="indices", allow_negative=True)
        key.append(a)
        dim += 1
    return tuple(key)


def index(self, indices):
    shape_rule("indexing.index")("index", (self, indices))
    key = numpy_key("index", self, indices)
    impl = self._impl
    a = impl.array()
    result = a[key]
    if np.may_share_memory(result, a):   # no tensor among the indices: a[...] is a view
        result = result.copy()
    if len(key) == 1 and getattr(key[0], "ndim", 0) == 1 and \
            impl.strides == contiguous_strides(impl.sizes):
        # x[idx] on a row-major x (embedding-like, the common case): row-major too.
        return out(result, impl.dtype)
    operands = [None if isinstance(k, slice) else (k.shape, (1,) * k.ndim) for k in key]
    for d, t in enumerate(indices):      # an index tensor's own layout (a mask's columns:
        if t is not None and not is_mask(t):          # 1-D, any stride will do)
            operands[_key_position(indices, d)] = (t._impl.sizes, t._impl.strides)
    strides = index_strides(result.shape, impl.sizes, impl.strides, operands)
    return out_strided(result, impl.dtype, strides)


def _key_position(indices, i):
    """The position in numpy_key's key (one entry per dim of self) of `indices[i]`."""
    return sum(t.dim() if t is not None and is_mask(t) else 1 for t in indices[:i])


@kernel(family=True)
def index_put(op, self, indices, values, accumulate):
    """index_put and index_put_."""
    shape_rule("indexing.index_put")(op, (self, indices, values, accumulate))
    target = write_target(op, self)
    key = numpy_key(op, self, indices)
    v = values._impl.array()
    if v.size == 1 and not accumulate:
        # one value written (PyTorch's masked_fill_ path, the rule's _check_fill: of any
        # dtype and any shape of one element): cast as a fill value is
        v = _value(v.reshape(()), self._impl.dtype)
    if accumulate and len(key) == 1 and key[0].ndim <= 1:
        # x[idx] with one index vector (embedding-like; also what x[idx]'s backward does)
        idx = key[0].reshape(-1) % max(target.shape[0], 1)   # negative indices count back
        add_rows(target, idx, np.broadcast_to(v, (len(idx),) + target.shape[1:]))
    elif accumulate:
        np.add.at(target, key, v)
    else:
        target[key] = v
    return written(op, self, target, keep_layout=True)
