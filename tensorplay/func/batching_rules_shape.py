"""Batching rules of views and shape ops: move the batch dim first, shift the dims.

Every rule here leaves the batch dim at 0 of its result except the ones that do not
touch dims at all (`detach`, conversions), which keep it where it was. View ops stay
views of the physical tensor, so writes through them reach the batch.

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
    batch_size, batching_rule, call, check_inplace_target, dim_rule, materialize, to_front,
    wrap_dim,
)


# ---- ops that do not look at dims: keep the batch dim where it is ---------------------------
@batching_rule("detach", "detach_", "_to_copy", "to.dtype", "to.device", "float", "double",
               "long", "int", "bool", "half", "bfloat16", "byte", "char", "short",
               "square", "square_", "deg2rad", "rad2deg", "sinc", "fill_.Scalar", "zero_")
def same_layout_rule(op, args, bdims):
    check_inplace_target(op, args, bdims)
    return call(op, *args), bdims[0]


@batching_rule("clone", "contiguous")
def front_rule(op, args, bdims):
    return call(op, to_front(args[0], bdims[0]), *args[1:]), 0


@batching_rule("to.other")
def to_other_rule(op, args, bdims):
    other = args[1]
    if bdims[1] is not None:
        other = other.select(bdims[1], 0)    # only its dtype and device are read
    if bdims[0] is None:
        return call(op, args[0], other, *args[2:]), None
    return call(op, args[0], other, *args[2:]), bdims[0]


# ---- views and reshapes ----------------------------------------------------------------------
@batching_rule("view", "reshape", "_unsafe_view")
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


@batching_rule("view_as")
def view_as_rule(op, args, bdims):
    other = args[1]
    shape = other.shape if bdims[1] is None else other.select(bdims[1], 0).shape
    view = dispatcher.find("view")
    if bdims[0] is None:        # only `other` is batched, and only its shape is read
        return call(view, args[0], list(shape)), None
    return view_rule(view, (args[0], list(shape)), (bdims[0], None))


@batching_rule("flatten.using_ints")
def flatten_rule(op, args, bdims):
    x = to_front(args[0], bdims[0])
    rank = x.dim() - 1
    if rank == 0:
        return x.reshape((x.shape[0], 1)), 0
    start = wrap_dim(args[1], rank, "flatten", "start_dim") + 1
    end = wrap_dim(args[2], rank, "flatten", "end_dim") + 1
    return call(op, x, start, end), 0


@batching_rule("ravel")
def ravel_rule(op, args, bdims):
    x = to_front(args[0], bdims[0])
    return x.reshape((x.shape[0], -1)), 0


@batching_rule("transpose.int", "swapaxes", "swapdims", "movedim.int", "movedim.intlist",
               "select.int", "slice.Tensor", "narrow", "diagonal", "unbind.int",
               "split.Tensor", "split.sizes", "chunk", "tensor_split.sections",
               "tensor_split.indices", "unflatten.int", "squeeze.dim", "unfold")
def shifted_view_rule(op, args, bdims):
    return dim_rule(op, args, bdims)


@batching_rule("permute")
def permute_rule(op, args, bdims):
    x = to_front(args[0], bdims[0])
    rank = x.dim() - 1
    dims = [wrap_dim(d, rank, "permute", "dims") + 1 for d in args[1]]
    return call(op, x, [0] + dims), 0


@batching_rule("t")
def t_rule(op, args, bdims):
    x = to_front(args[0], bdims[0])
    if x.dim() - 1 < 2:
        return x, 0
    return x.transpose(1, 2), 0


@batching_rule("unsqueeze")
def unsqueeze_rule(op, args, bdims):
    x = to_front(args[0], bdims[0])
    dim = wrap_dim(args[1], x.dim(), "unsqueeze")     # the result has one dim more
    return call(op, x, dim + 1), 0


@batching_rule("squeeze")
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


@batching_rule("expand", "broadcast_to")
def expand_rule(op, args, bdims):
    return _expand_to(to_front(args[0], bdims[0]), list(args[1])), 0


@batching_rule("expand_as")
def expand_as_rule(op, args, bdims):
    other = args[1]
    shape = other.shape if bdims[1] is None else other.select(bdims[1], 0).shape
    x = materialize(args[0], bdims[0], batch_size(args, bdims))
    return _expand_to(x, list(shape)), 0


@batching_rule("repeat")
def repeat_rule(op, args, bdims):
    x = to_front(args[0], bdims[0])
    repeats = list(args[1])
    for _ in range(len(repeats) - (x.dim() - 1)):
        x = x.unsqueeze(1)
    return call(op, x, [1] + repeats), 0


@batching_rule("roll")
def roll_rule(op, args, bdims):
    x = to_front(args[0], bdims[0])
    if list(args[2]):
        return dim_rule(op, args, bdims)
    # No dims: roll the flattened example, keep its shape.
    flat = x.reshape((x.shape[0], -1))
    return call(op, flat, list(args[1]), [1]).reshape(x.shape), 0


# ---- several tensors into one ----------------------------------------------------------------
@batching_rule("cat", "stack")
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


# ---- in-place view ops change the tensor's own metadata --------------------------------------
# The BatchedTensor's impl takes the physical result of the out-of-place rule.
INPLACE_VIEWS = {
    "unsqueeze_": "unsqueeze", "squeeze_": "squeeze", "squeeze_.dim": "squeeze.dim",
    "t_": "t", "transpose_.int": "transpose.int", "swapaxes_": "swapaxes",
    "swapdims_": "swapdims",
}


@batching_rule(*INPLACE_VIEWS)
def inplace_view_rule(op, args, bdims):
    """The out-of-place view; the batching kernel then reseats the BatchedTensor on it."""
    from tensorplay.func.batching_rules import RULES
    out_of_place = dispatcher.find(INPLACE_VIEWS[op.name])
    return RULES[out_of_place.name](out_of_place, args, bdims)
