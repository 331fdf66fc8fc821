"""Batching rules of copies and conversions: `detach`, `to(...)`, the dtype shorthands,
fills; they do not look at dims, so the batch dim stays where it is (or moves first,
for `clone` and `contiguous`)."""
from __future__ import annotations

from tensorplay.func.batching_rules import call, check_inplace_target, to_front


# ---- ops that do not look at dims: keep the batch dim where it is ---------------------------
def same_layout_rule(op, args, bdims):
    check_inplace_target(op, args, bdims)
    return call(op, *args), bdims[0]


def front_rule(op, args, bdims):
    return call(op, to_front(args[0], bdims[0]), *args[1:]), 0


def to_other_rule(op, args, bdims):
    other = args[1]
    if bdims[1] is not None:
        other = other.select(bdims[1], 0)    # only its dtype and device are read
    if bdims[0] is None:
        return call(op, args[0], other, *args[2:]), None
    return call(op, args[0], other, *args[2:]), bdims[0]
