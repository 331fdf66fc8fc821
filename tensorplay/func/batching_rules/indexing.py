"""Batching rules of indexing: index_select, gather/scatter, masked_fill,
index_add/copy/fill, take and advanced indexing (`x[i]`).

When the index is the same for every example, the batch dim is one more dim the index
does not touch (`index_select(x, d, i)` -> `index_select(x', d + 1, i)`). When the index
is batched, each example indexes its own slice: the rule turns the call into a `gather`
along the batch, or joins an `arange(B)` to the indices (`x[i]` -> `x'[arange(B), i']`).
"""
from __future__ import annotations

import numpy as np

from tensorplay import _tensor_factory as factory
from tensorplay._dtype import int64
from tensorplay.dispatch.dispatcher import dispatcher
from tensorplay.func.batching_rules import (
    NeedsFallback, batch_size, call, check_inplace_target, dim_rule,
    logical_rank, materialize, pad_rank, pointwise_rule, to_front, wrap_dim,
)


def index_select_rule(op, args, bdims):
    x, dim, index = args
    size = batch_size(args, bdims)
    x = materialize(x, bdims[0], size)
    rank = x.dim() - 1
    d = wrap_dim(dim, rank, "index_select") + 1
    if rank == 0:
        raise NeedsFallback(op.name)
    if bdims[2] is None:
        return call(op, x, d, index), 0
    # A batched index: gather with the index spread over the other dims.
    index = to_front(index, bdims[2]).reshape((size, -1))
    shape = [size] + [1] * rank
    shape[d] = index.shape[1]
    spread = list(x.shape)
    spread[d] = index.shape[1]
    return x.gather(d, index.view(shape).expand(spread)), 0


def gather_rule(op, args, bdims):
    """All tensors have the example's rank: batch them all, shift the dim."""
    if op.name == "take_along_dim" and args[2] is None:
        raise NeedsFallback(op.name)
    return dim_rule(op, args, bdims)


def masked_fill_rule(op, args, bdims):
    """The mask broadcasts like a pointwise argument. A batched fill value (a 0-dim
    tensor per example) is one value per example: where(mask, value, self)."""
    if len(args) < 3 or bdims[2] is None:
        return pointwise_rule(op, args, bdims)
    self_, mask, value = args
    check_inplace_target(op, args, bdims)
    rank = max(logical_rank(self_, bdims[0]), logical_rank(mask, bdims[1]))
    value = pad_rank(to_front(value, bdims[2]).to(self_.dtype), rank)
    filled, _ = pointwise_rule(dispatcher.find("where.self"), (mask, value, self_),
                               (bdims[1], 0, bdims[0]))
    if op.name.startswith("masked_fill_"):
        target = to_front(self_, bdims[0])
        target.copy_(filled)
        return target, 0
    return filled, 0


def index_dim_rule(op, args, bdims):
    """The index picks the same slices in every example: shift the dim. (A batched index
    or fill value differs per example: the loop.)"""
    fill = op.name.startswith("index_fill")
    if bdims[2] is not None or (fill and bdims[3] is not None):
        raise NeedsFallback(op.name)
    check_inplace_target(op, args, bdims)
    size = batch_size(args, bdims)
    x = materialize(args[0], bdims[0], size)
    rank = x.dim() - 1
    if rank == 0:
        raise NeedsFallback(op.name)
    new = list(args)
    new[0] = x
    new[1] = wrap_dim(args[1], rank, op.name.split(".")[0]) + 1
    if not fill:
        new[3] = materialize(args[3], bdims[3], size)
    return call(op, *new), 0


def take_rule(op, args, bdims):
    """take reads the flattened example: flatten each example, pick along dim 1."""
    x, index = args
    size = batch_size(args, bdims)
    flat = materialize(x, bdims[0], size).reshape((size, -1))
    # take counts negative indices from the end; index_select and gather do not.
    if bdims[1] is None:
        flat_idx = index.reshape(-1)
        flat_idx = flat_idx + (flat_idx < 0).to(flat_idx.dtype) * flat.shape[1]
        picked = flat.index_select(1, flat_idx)
        return picked.view((size,) + tuple(index.shape)), 0
    idx = to_front(index, bdims[1])
    flat_idx = idx.reshape((size, -1))
    flat_idx = flat_idx + (flat_idx < 0).to(flat_idx.dtype) * flat.shape[1]
    return flat.gather(1, flat_idx).view(tuple(idx.shape)), 0


def _join_arange(x, indices, index_bdims, size):
    """(indices with an arange over the batch in front, the indices' rank, the number of
    slices before the first index). NeedsFallback for bool masks (a data-dependent
    number of elements) and for indices with slices between them."""
    if any(i is not None and i.dtype.name == "bool" for i in indices):
        raise NeedsFallback("index with a bool mask")
    used = [k for k, i in enumerate(indices) if i is not None]
    if used != list(range(used[0], used[-1] + 1)):
        raise NeedsFallback("index with slices between the indices")
    rank = max(logical_rank(i, d) for i, d in zip(indices, index_bdims) if i is not None)
    new = []
    for i, d in zip(indices, index_bdims):
        if i is None or d is None:
            new.append(i)
        else:
            new.append(pad_rank(to_front(i, d), rank))
    arange = _arange(size, x).view((size,) + (1,) * rank)
    return [arange] + new, rank, used[0]


def index_rule(op, args, bdims):
    """x[i0, i1, ...]: an arange over the batch joins the indices at dim 0.

    When the example's indices are adjacent and start at dim 0, the indexed dims stay in
    place, right after the batch dim. With leading slices (`x[:, i]`), PyTorch keeps the
    indexed dims in place for the example but the arange makes them non-adjacent in the
    physical call, which puts them first: they are moved back after the slices.
    """
    x, indices = args
    size = batch_size(args, bdims)
    x = materialize(x, bdims[0], size)
    if all(i is None for i in indices):
        return x, 0
    joined, rank, lead = _join_arange(x, indices, bdims[1], size)
    out = call(op, x, joined)
    if lead == 0:
        return out, 0
    # out: [B, idx..., lead slices..., rest]; the example wants [lead slices, idx..., rest]
    perm = [0] + list(range(1 + rank, 1 + rank + lead)) + list(range(1, 1 + rank)) + \
        list(range(1 + rank + lead, out.dim()))
    return out.permute(perm), 0


def index_put_rule(op, args, bdims):
    """x[i0, i1, ...] = values: the same arange joins the indices; the values line up with
    the indexed part `[B, idx..., rest]` as in a pointwise op."""
    x, indices, values, accumulate = args
    check_inplace_target(op, args, bdims)
    size = batch_size(args, bdims)
    target = materialize(x, bdims[0], size)
    if all(i is None for i in indices):
        raise NeedsFallback(op.name)
    joined, rank, lead = _join_arange(target, indices, bdims[1], size)
    if lead != 0:
        raise NeedsFallback(op.name)
    if bdims[2] is not None:
        indexed_rank = rank + target.dim() - 1 - len(indices)
        values = pad_rank(to_front(values, bdims[2]), indexed_rank)
    return call(op, target, joined, values, accumulate), 0


def _arange(size, like):
    return factory.tensor(np.arange(size), dtype=int64, device=like.device)


# ---- scatters into views, index_reduce, and the ops that take the loop -------------------
def view_scatter_rule(op, args, bdims):
    """diagonal_scatter / select_scatter / slice_scatter: self and src batched first, the
    dims of self shifted by one (src's view of the batch is the batch of its views)."""
    size = batch_size(args, bdims)
    self_ = materialize(args[0], bdims[0], size)
    src = materialize(args[1], bdims[1], size)
    rank = logical_rank(args[0], bdims[0])
    rest = list(args[2:])
    if op.name == "diagonal_scatter":
        rest[1] = wrap_dim(rest[1], rank, op.name, "dim1") + 1
        rest[2] = wrap_dim(rest[2], rank, op.name, "dim2") + 1
    else:
        if rank == 0:
            raise NeedsFallback(op.name)   # the example's own error, from the loop
        rest[0] = wrap_dim(rest[0], rank, op.name) + 1
    return call(op, self_, src, *rest), 0


def index_reduce_rule(op, args, bdims):
    """One index for the whole batch: it picks slices along dim + 1 of the batched self
    and source. A batched index (each example its own) takes the loop."""
    self_, dim, index, source = args[:4]
    rank = logical_rank(self_, bdims[0])
    if bdims[2] is not None or rank == 0:
        raise NeedsFallback(op.name)
    check_inplace_target(op, args, bdims)
    size = batch_size(args, bdims)
    new = list(args)
    new[0] = materialize(self_, bdims[0], size)
    new[1] = wrap_dim(dim, rank, op.name) + 1
    new[3] = materialize(source, bdims[3], size)
    out = call(op, *new)
    return out, 0



def refused_rule(op, args, bdims):
    """as_strided_scatter, as_strided_, resize_, resize_as_ address (or change) the memory
    under one example, which the batch shares with the others: refused, as PyTorch's vmap
    refuses as_strided_scatter."""
    from tensorplay.func.batched import VmapError
    raise VmapError(f"vmap: {op.name}() addresses the storage under one example, which a "
                    f"batch shares with the others: it has no batching rule; call it outside "
                    f"vmap", op=op.name)
