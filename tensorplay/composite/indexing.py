"""Indexing ops PyTorch defines by composition: take_along_dim (broadcast, then gather),
repeat_interleave with a tensor of counts (index_select), nonzero(as_tuple=True) and
one-argument where (nonzero, split by column), unique (the Python-level front of
`_unique2` / `unique_dim`); the scatters into views (diagonal / select / slice /
as_strided_scatter: a copy, the view, copy_), put (index_put at unravelled positions)
and index_reduce (scatter_reduce with the index spread over source).

Their gradients come from the ops they call (composite-implicit autograd).
"""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay._generated import functional as F
from tensorplay._impl import TensorImpl
from tensorplay._tensor import wrap
from tensorplay.errors import ArgumentError, DimError, DTypeError, fmt_shape, ShapeError
from tensorplay.kernel_support.arguments import check_repeats_tensor
from tensorplay.kernel_support.checks import broadcast, wrap_dim
from tensorplay.kernel_support.complex_refusals import reject_complex
from tensorplay.meta.indexing import _index_source, check_index_dtype
from tensorplay.meta.shape import repeated_size


def repeat_interleave_tensor(self, repeats, dim, output_size):
    """Each element of self along dim, `repeats[i]` times in a row: index_select at
    repeat_interleave(repeats) ([2, 1] -> [0, 0, 1]); flattened when dim is None.

    NOTE: a composition, as in PyTorch, not a kernel with a formula: the index is a new
    tensor, so backward saves neither self nor repeats, and an in-place change of either
    before backward does not make it raise (a formula would have had to save repeats)."""
    op = "repeat_interleave"
    n = repeated_size(op, self, dim)
    check_repeats_tensor(op, repeats, n)
    if dim is None or self.dim() == 0:
        self, dim = self.reshape([-1]), 0
    counts = repeats.reshape([1]).expand([n]) if repeats.numel() == 1 else repeats
    return F.index_select(self, dim, F.repeat_interleave(counts, output_size=output_size))


def take_along_dim(self, indices, dim):
    """Along `dim`, pick self's elements at `indices`; the other dims broadcast.

        take_along_dim(x [3, 4], idx [3, 1], dim=1)[i, 0] = x[i, idx[i, 0]]
        take_along_dim(x, idx) = x.flatten()[idx.flatten()]          (dim=None)
    """
    op = "take_along_dim"
    check_index_dtype(op, indices, "indices")
    if dim is None:
        # view, not reshape, as PyTorch: a self (or indices) that cannot be viewed flat
        # (a clone of a transposed tensor) raises
        return F.gather(self.view(-1), 0, indices.view(-1))
    ndim = self.dim()
    d = wrap_dim(op, dim, ndim)
    if indices.dim() != ndim:
        raise ShapeError(f"{op}(): argument 'indices' must have the same number of dimensions "
                         f"as 'self' ({ndim}), but has {indices.dim()}", op=op, arg="indices")
    if ndim == 0:
        return F.gather(self, 0, indices)
    self_sizes = list(self.shape)
    self_sizes[d] = indices.shape[d]
    index_shape = broadcast(op, [("self", tuple(self_sizes)), ("indices", tuple(indices.shape))])
    idx_sizes = list(indices.shape)
    idx_sizes[d] = self.shape[d]
    self_shape = broadcast(op, [("indices", tuple(idx_sizes)), ("self", tuple(self.shape))])
    # NOTE: gather gets a copy of the broadcast indices, as PyTorch's take_along_dim gives
    # it: the index gather's backward saves is then private, and an in-place change of
    # `indices` before backward does not make it raise (self's view is saved, and does).
    return F.gather(self.expand(self_shape), d, indices.expand(index_shape).clone())


def nonzero_as_tuple(self, as_tuple):
    """nonzero(x, as_tuple=True): one index tensor per dimension (0-dim counts as 1-D),
    ready for `x[...]`; as_tuple=False is plain nonzero."""
    if not as_tuple:
        return F.nonzero(self)
    x = self.reshape(1) if self.dim() == 0 else self
    coords = F.nonzero(x)
    return tuple(coords.select(1, i) for i in range(x.dim()))


def where_condition(condition):
    return nonzero_as_tuple(condition, True)


def unique(self, sorted, return_inverse, return_counts, dim):  # noqa: A002 - schema name
    """torch.unique: the distinct values (or slices along `dim`), with the inverse
    indices and the counts when asked for them, as a tuple; the values alone otherwise."""
    if dim is None:
        values, inverse, counts = F._unique2(self, sorted, return_inverse, return_counts)
    else:
        values, inverse, counts = F.unique_dim(self, dim, sorted, return_inverse, return_counts)
    if not return_inverse and not return_counts:
        return values
    extra = ((inverse,) if return_inverse else ()) + ((counts,) if return_counts else ())
    return (values,) + extra


def argwhere(self):
    """The indices of the non-zero elements, one row each: nonzero(self)."""
    return F.nonzero(self)


def unravel_index(indices, shape):
    """The coordinates in `shape` of flat indices, one tensor per dim."""
    op = "unravel_index"
    if indices.is_floating_point() or indices.dtype is dt.bool:
        raise DTypeError(f"unravel_index(): expected 'indices' to be integer dtype, but got "
                         f"{indices.dtype.name}", op=op, arg="indices")
    if any(s < 0 for s in shape):
        raise ArgumentError(f"unravel_index(): 'shape' cannot have negative values, but got "
                            f"{tuple(shape)}", op=op, arg="shape")
    coords, rest = [], indices.to(dt.int64)
    for s in reversed(shape):
        coords.append(F.remainder(rest, s))
        rest = F.floor_divide(rest, s)
    # one stacked tensor unbound along its last dim, as PyTorch builds it: the coordinates
    # are views with its strides (a [2, 2] input gives strides (4, 2))
    return list(F.stack(list(reversed(coords)), -1).unbind(-1))


# ---- scatters into views: a copy of self with one of its views overwritten by src --------
def _clone_preserve_strides(self):
    """A copy of self with self's strides and storage offset (PyTorch's
    clone_preserve_strides): the whole storage is copied, so that as_strided_scatter's
    size / stride / storage_offset address the copy as they address self. A self whose
    elements overlap (expanded) is cloned plainly: writing into it would write twice."""
    impl = self._impl
    if any(st == 0 and sz > 1 for sz, st in zip(impl.sizes, impl.strides)):
        return self.clone()
    n = impl.storage.nbytes // impl.dtype.itemsize
    whole = self.as_strided([n], [1], 0).clone()
    # a tensor of its own over the copy (not a view of `whole`: the op's result has no base)
    w = whole._impl
    return wrap(TensorImpl(w.storage, impl.sizes, impl.strides, impl.offset, w.dtype, w.device,
                           inference=w.inference))


def _scatter_into(op, self, src, view):
    """clone, take the view, check src against it, copy src in."""
    out = _clone_preserve_strides(self)
    part = view(out)
    if tuple(part.shape) != tuple(src.shape):
        raise ShapeError(f"{op}(): expected argument 'src' to have the size of the slice of "
                         f"self {fmt_shape(part.shape)}, but got {fmt_shape(src.shape)}",
                         op=op, arg="src")
    part.copy_(src)
    return out


def diagonal_scatter(self, src, offset, dim1, dim2):
    """A copy of self whose diagonal(offset, dim1, dim2) is src."""
    return _scatter_into("diagonal_scatter", self, src,
                         lambda t: t.diagonal(offset, dim1, dim2))


def select_scatter(self, src, dim, index):
    """A copy of self whose select(dim, index) is src."""
    return _scatter_into("select_scatter", self, src, lambda t: t.select(dim, index))


def slice_scatter(self, src, dim, start, end, step):
    """A copy of self whose slice(dim, start, end, step) is src."""
    return _scatter_into("slice_scatter", self, src, lambda t: t.slice(dim, start, end, step))


def as_strided_scatter(self, src, size, stride, storage_offset):
    """A copy of self (strides and storage offset kept) whose as_strided(size, stride,
    storage_offset) view is src: the view addresses the copied storage as it would
    address self's."""
    return _scatter_into("as_strided_scatter", self, src,
                         lambda t: t.as_strided(size, stride, storage_offset))


# ---- put: self seen as a flat vector -------------------------------------------------
def _put(op, self, index, source, accumulate):
    """self.flatten()[index] = source (+= with accumulate), written into self whatever its
    layout: the flat positions are unravelled into coordinates for index_put_, whose
    gradient the call records."""
    if index.dtype is not dt.int64:
        raise DTypeError(f"{op}(): argument 'index' must be an int64 tensor of indices, but "
                         f"got {index.dtype.name}", op=op, arg="index")
    if source.dtype is not self.dtype:
        raise DTypeError(f"{op}(): argument 'source' ({source.dtype.name}) must have the same "
                         f"dtype as 'self' ({self.dtype.name})", op=op, arg="source")
    if source.numel() != index.numel():
        raise ShapeError(f"{op}(): arguments 'source' and 'index' must have the same number of "
                         f"elements, but got source.numel() = {source.numel()}, "
                         f"index.numel() = {index.numel()}", op=op, arg="source")
    n = self.numel()
    flat = index.reshape([-1])
    if flat.numel() and self.device.type != "meta":
        low, high = int(flat.min().item()), int(flat.max().item())
        if low < -n or high >= n:
            bad = low if low < -n else high
            raise DimError(f"{op}(): index {bad} in argument 'index' is out of bounds for a "
                           f"tensor of {n} elements", op=op, arg="index")
    flat = F.where(flat < 0, flat + n, flat)
    # a 0-dim self is written through its 1-element view
    target = self if self.dim() else self.view([1])
    # (no element: the index is empty too, and so is every coordinate; unravel_index would
    # divide by the zero size)
    coords = F.unravel_index(flat, list(target.shape)) if n else [flat] * target.dim()
    target.index_put_(list(coords), source.reshape([-1]), accumulate)
    return self


def put_(self, index, source, accumulate):
    return _put("put_", self, index, source, accumulate)


def put(self, index, source, accumulate):
    """put_ on a copy of self."""
    return _put("put", self.clone(), index, source, accumulate)


# ---- index_reduce: scatter_reduce with a vector of indices ------------------------------
INDEX_REDUCTIONS = ("prod", "mean", "amax", "amin")


def spread_index(index, dim, source):
    """index_reduce's vector of positions along `dim` as scatter_reduce's index: source's
    shape, index[j] at every element of source's slice j."""
    index = index.to(dt.int64)
    if source.dim() == 0:
        return index.reshape([])
    shape = [1] * source.dim()
    shape[dim] = -1
    return index.reshape(shape).expand(list(source.shape))


def _index_reduce_args(op, self, dim, index, source, reduce):
    if reduce not in INDEX_REDUCTIONS:
        raise ArgumentError(f"{op}(): argument 'reduce' must be one of prod, mean, amax or amin, "
                            f"but got {reduce!r}", op=op, arg="reduce")
    if index.dtype is dt.int32:   # PyTorch takes int32 indices here
        index = index.to(dt.int64)
    d = _index_source(op, self, dim, index, source)
    size = self.shape[d] if self.dim() else 1
    if index.numel() and index.device.type != "meta":
        low, high = int(index.min().item()), int(index.max().item())
        if low < 0 or high >= size:
            bad = low if low < 0 else high
            raise DimError(f"{op}(): index {bad} in argument 'index' is out of bounds for "
                           f"dimension {d} with size {size}", op=op, arg="index")
    return d, spread_index(index, d, source)


def index_reduce(self, dim, index, source, reduce, include_self):
    """out[..., index[j], ...] = reduce(self's slice (if include_self), every source[..., j,
    ...] sent there); slices that receive nothing keep self's values."""
    d, spread = _index_reduce_args("index_reduce", self, dim, index, source, reduce)
    if reduce in ("amax", "amin"):
        reject_complex("index_reduce", self, kind=f"index_reduce.{reduce}")
    return F.scatter_reduce(self, d, spread, source, reduce, include_self=include_self)


def index_reduce_(self, dim, index, source, reduce, include_self):
    d, spread = _index_reduce_args("index_reduce_", self, dim, index, source, reduce)
    if reduce in ("amax", "amin"):
        reject_complex("index_reduce_", self, kind=f"index_reduce.{reduce}")
    return self.scatter_reduce_(d, spread, source, reduce, include_self=include_self)
