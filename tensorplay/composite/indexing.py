"""Indexing ops PyTorch defines by composition: take_along_dim (broadcast, then gather),
nonzero(as_tuple=True) and one-argument where (nonzero, split by column), unique (the
Python-level front of `_unique2` / `unique_dim`).

Their gradients come from the ops they call (composite-implicit autograd).
"""
from __future__ import annotations

from tensorplay._generated import functional as F
from tensorplay.errors import ShapeError
from tensorplay.meta.indexing import check_index_dtype
from tensorplay.meta.rules import broadcast, wrap_dim


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
    return F.gather(self.expand(self_shape), d, indices.expand(index_shape))


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

