"""Batching rules of the losses: per-element losses on the broadcast batch, then each
example's own reduction; class losses with the batch folded into N."""
from __future__ import annotations

from tensorplay.func.batching_rules import (
    NeedsFallback, batch_size, call, logical_rank, materialize, pad_rank,
)


# ---- losses ----------------------------------------------------------------------------------
def _per_example_reduce(losses, reduction, op_name):
    """[B, ...] per-element losses to each example's own 'mean' / 'sum' / 'none'."""
    if reduction == "none" or losses.dim() == 1:
        return losses
    dims = list(range(1, losses.dim()))
    if reduction == "sum":
        return losses.sum(dims)
    if reduction == "mean":
        return losses.mean(dims)
    raise NeedsFallback(op_name)


def elementwise_loss_rule(op, args, bdims):
    """Per-element losses: 'none' on the broadcast batch, then each example's reduction."""
    names = op.schema.arg_names
    r = names.index("reduction")
    reduction = args[r]
    size = batch_size(args, bdims)
    tensors = [i for i in op.schema.tensor_positions if args[i] is not None]
    rank = max(logical_rank(args[i], bdims[i]) for i in tensors)
    shape = None
    new = list(args)
    for i in tensors:
        t = pad_rank(materialize(args[i], bdims[i], size), rank)
        new[i] = t
        shape = t.shape if shape is None or t.dim() > len(shape) else shape
    # The losses want equal shapes: expand every tensor to the broadcast shape.
    full = [size] + [max(new[i].shape[k] for i in tensors) for k in range(1, rank + 1)]
    for i in tensors:
        new[i] = new[i].expand(full)
    new[r] = "none"
    losses = call(op, *new)
    if reduction == "batchmean":        # kl_div: the sum over the example / its size(0)
        per = losses.reshape((size, -1)).sum(1)
        return per / (full[1] if rank > 0 else 1), 0
    return _per_example_reduce(losses, reduction, op.name), 0


def _class_rows(x, x_bdim, t, t_bdim, size):
    """Input [N, C] (or [C]) and class targets [N] (or []) per example, as [B*N, C] and
    [B*N] rows, and N. Other layouts (K-dim losses) are not folded."""
    x = materialize(x, x_bdim, size)
    t = materialize(t, t_bdim, size)
    if x.dim() == 2:
        x, t = x.unsqueeze(1), t.unsqueeze(1)
    if x.dim() != 3 or t.dim() not in (2, 3):
        raise NeedsFallback("class-index loss of more than two dims")
    n = x.shape[1]
    rows_t = t.reshape((size * n,) + tuple(t.shape[2:]))
    return x.reshape((size * n, x.shape[2])), rows_t, n


def _nll_mean_weights(target, weight, ignore_index, size, n):
    """Each example's mean denominator: the summed weight of its non-ignored targets."""
    keep = target != ignore_index
    if weight is None:
        return keep.reshape((size, n)).sum(1)
    safe = target.masked_fill(~keep, 0)
    return (weight.index_select(0, safe) * keep).reshape((size, n)).sum(1)


def class_loss_rule(op, args, bdims):
    x, target, weight, reduction, ignore_index = args[:5]
    if bdims[2] is not None:
        raise NeedsFallback(op.name)
    size = batch_size(args, bdims)
    probabilities = target.dtype.is_floating_point
    if op.name == "cross_entropy_loss" and (probabilities or
                                            (args[5] and weight is not None)):
        raise NeedsFallback(op.name)
    rows, rows_t, n = _class_rows(x, bdims[0], target, bdims[1], size)
    losses = call(op, rows, rows_t, weight, "none", ignore_index, *args[5:])
    losses = losses.reshape((size, n))
    if reduction == "none":
        return (losses.squeeze(1) if x.dim() - (bdims[0] is not None) == 1 else losses), 0
    if reduction == "sum":
        return losses.sum(1), 0
    total = _nll_mean_weights(rows_t, weight, ignore_index, size, n)
    return losses.sum(1) / total.to(losses.dtype), 0
