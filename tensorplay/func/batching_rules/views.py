"""Batching rules of views: move the batch dim first, shift the dims (the shape ops
that copy, such as cat, are in shape.py; conversions, which keep the batch dim where it
is, in copy.py). View ops stay views of the physical tensor, so writes through them
reach the batch.

    logical op               physical op (x' = x with its batch dim first)
    x.view(2, 3)             x'.view(B, 2, 3)
    x.transpose(0, 1)        x'.transpose(1, 2)
    x.expand(4, 2, 3)        x'.unsqueeze(1).expand(B, 4, 2, 3)
    x.select(0, i)           x'.select(1, i)
    cat([x, y], 0)           cat([x', y'], 1)          (y unbatched: y' = y expanded)
"""
from __future__ import annotations

from tensorplay.dispatch.dispatcher import dispatcher
from tensorplay.errors import ShapeError
from tensorplay.func.batching_rules import (
    batch_size, call, dim_rule, materialize, to_front, wrap_dim,
)


# ---- views and reshapes ----------------------------------------------------------------------
def view_rule(op, args, bdims):
    x = to_front(args[0], bdims[0])
    size = [x.shape[0]] + list(args[1])
    if op.name in ("view", "_unsafe_view") and bdims[0] not in (None, 0):
        # With the batch dim inside (in_dims=1), the batch may not be viewable as a whole
        # even though each example is: then the examples are copied (NOTE: no aliasing).
        try:
            return call(op, x, size), 0
        except ShapeError:
            return x.reshape(size), 0
    return call(op, x, size), 0


def view_as_rule(op, args, bdims):
    other = args[1]
    shape = other.shape if bdims[1] is None else other.select(bdims[1], 0).shape
    view = dispatcher.find("view")
    if bdims[0] is None:        # only `other` is batched, and only its shape is read
        return call(view, args[0], list(shape)), None
    return view_rule(view, (args[0], list(shape)), (bdims[0], None))


def flatten_rule(op, args, bdims):
    x = to_front(args[0], bdims[0])
    rank = x.dim() - 1
    if rank == 0:
        return x.reshape((x.shape[0], 1)), 0
    start = wrap_dim(args[1], rank, "flatten", "start_dim") + 1
    end = wrap_dim(args[2], rank, "flatten", "end_dim") + 1
    return call(op, x, start, end), 0


def ravel_rule(op, args, bdims):
    x = to_front(args[0], bdims[0])
    return x.reshape((x.shape[0], -1)), 0


def shifted_view_rule(op, args, bdims):
    return dim_rule(op, args, bdims)


def permute_rule(op, args, bdims):
    x = to_front(args[0], bdims[0])
    rank = x.dim() - 1
    dims = [wrap_dim(d, rank, "permute", "dims") + 1 for d in args[1]]
    return call(op, x, [0] + dims), 0


def t_rule(op, args, bdims):
    x = to_front(args[0], bdims[0])
    if x.dim() - 1 < 2:
        return x, 0
    return x.transpose(1, 2), 0


def unsqueeze_rule(op, args, bdims):
    x = to_front(args[0], bdims[0])
    dim = wrap_dim(args[1], x.dim(), "unsqueeze")     # the result has one dim more
    return call(op, x, dim + 1), 0


def squeeze_rule(op, args, bdims):
    x = to_front(args[0], bdims[0])
    for d in range(x.dim() - 1, 0, -1):
        if x.shape[d] == 1:
            x = x.squeeze(d)
    return x, 0


def _expand_to(x, size):
    """Batch-first `x` expanded to the logical `size` (which may add leading dims)."""
    for _ in range(len(size) - (x.dim() - 1)):
        x = x.unsqueeze(1)
    return x.expand([x.shape[0]] + [x.shape[i + 1] if s == -1 else s
                                     for i, s in enumerate(size)])


def expand_rule(op, args, bdims):
    return _expand_to(to_front(args[0], bdims[0]), list(args[1])), 0


def expand_as_rule(op, args, bdims):
    other = args[1]
    shape = other.shape if bdims[1] is None else other.select(bdims[1], 0).shape
    x = materialize(args[0], bdims[0], batch_size(args, bdims))
    return _expand_to(x, list(shape)), 0


# ---- in-place view ops change the tensor's own metadata --------------------------------------
# The BatchedTensor's impl takes the physical result of the out-of-place rule.
INPLACE_VIEWS = {
    "unsqueeze_": "unsqueeze", "squeeze_": "squeeze", "squeeze_.dim": "squeeze.dim",
    "t_": "t", "transpose_.int": "transpose.int", "swapaxes_": "swapaxes",
    "swapdims_": "swapdims",
}


def inplace_view_rule(op, args, bdims):
    """The out-of-place view; the batching kernel then reseats the BatchedTensor on it."""
    from tensorplay.func.batching_rules import RULES
    out_of_place = dispatcher.find(INPLACE_VIEWS[op.name])
    return RULES[out_of_place.name](out_of_place, args, bdims)
