"""Indexing ops PyTorch defines by composition: take_along_dim (broadcast, then gather),
repeat_interleave with a tensor of counts (index_select), nonzero(as_tuple=True) and
one-argument where (nonzero, split by column), unique (the Python-level front of
`_unique2` / `unique_dim`).

Their gradients come from the ops they call (composite-implicit autograd).
"""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay._generated import functional as F
from tensorplay.errors import ArgumentError, DTypeError, ShapeError
from tensorplay.kernel_support.arguments import check_repeats_tensor
from tensorplay.kernel_support.checks import broadcast, wrap_dim
from tensorplay.meta.indexing import check_index_dtype
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
