"""Batching rules of embedding (rows of a table picked by index) and one_hot."""
from __future__ import annotations

from tensorplay.func.batching_rules import (
    NeedsFallback, batch_size, call, materialize, to_front,
)


def embedding_rule(op, args, bdims):
    weight, indices = args[0], args[1]
    if bdims[0] is None:
        return call(op, weight, to_front(indices, bdims[1]), *args[2:]), 0
    # One table per example: gather each example's rows from its own table.
    size = batch_size(args, bdims)
    table = to_front(weight, bdims[0])
    idx = materialize(indices, bdims[1], size)
    flat = idx.reshape((size, -1, 1)).expand((size, idx[0].numel(), table.shape[-1]))
    rows = table.gather(1, flat)
    return rows.view(tuple(idx.shape) + (table.shape[-1],)), 0


def one_hot_rule(op, args, bdims):
    """one_hot(x, -1) sizes the classes from each example's own maximum: the loop."""
    if args[1] == -1:
        raise NeedsFallback(op.name)
    return call(op, to_front(args[0], bdims[0]), args[1]), 0
