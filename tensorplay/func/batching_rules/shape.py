"""Batching rules of the shape ops that copy: cat/stack, repeat, roll (the batch dim
first, the dim arguments shifted by one)."""
from __future__ import annotations

from tensorplay.func.batching_rules import (
    batch_size, call, dim_rule, materialize, to_front, wrap_dim,
)


def repeat_rule(op, args, bdims):
    x = to_front(args[0], bdims[0])
    repeats = list(args[1])
    for _ in range(len(repeats) - (x.dim() - 1)):
        x = x.unsqueeze(1)
    return call(op, x, [1] + repeats), 0


def roll_rule(op, args, bdims):
    x = to_front(args[0], bdims[0])
    if list(args[2]):
        return dim_rule(op, args, bdims)
    # No dims: roll the flattened example, keep its shape.
    flat = x.reshape((x.shape[0], -1))
    return call(op, flat, list(args[1]), [1]).reshape(x.shape), 0


# ---- several tensors into one ----------------------------------------------------------------
def cat_rule(op, args, bdims):
    size = batch_size(args, bdims)
    tensors = [materialize(t, d, size) for t, d in zip(args[0], bdims[0])]
    rank = max(t.dim() - 1 for t in tensors)
    if op.name == "stack":
        dim = wrap_dim(args[1], rank + 1, "stack")
    else:
        # PyTorch's cat skips 1-d empty tensors (the legacy "nothing" tensor).
        tensors = [t for t in tensors if not (t.dim() == 2 and t.shape[1] == 0)] or tensors
        rank = max(t.dim() - 1 for t in tensors)
        dim = wrap_dim(args[1], rank, "cat")
    return call(op, tensors, dim + 1), 0


def diag_embed_rule(op, args, bdims):
    """The batch dim first; dim1 and dim2 (dims of the result, one more than the
    example's) shift by one."""
    x, offset, dim1, dim2 = args
    x = to_front(x, bdims[0])
    rank = x.dim()            # the example's rank + 1: the result's
    d1 = wrap_dim(dim1, rank, op.name, "dim1") + 1
    d2 = wrap_dim(dim2, rank, op.name, "dim2") + 1
    return call(op, x, offset, d1, d2), 0
