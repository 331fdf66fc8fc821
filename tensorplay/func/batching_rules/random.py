"""Batching rules of random ops, by vmap's `randomness` flag.

    "error"      a random op under vmap raises (the default: silently drawing one set of
                 numbers for the whole batch, or a different set per example, are both
                 easy to get wrong without noticing)
    "different"  each example draws its own numbers: the op runs once on the whole
                 physical batch, which draws one number per element
    "same"       one draw, shared by every example: the op runs on one example's shape
                 and the result is broadcast over the batch
"""
from __future__ import annotations

from tensorplay import _tensor_factory as factory
from tensorplay._generated.op_tags import OP_TAGS
from tensorplay.func.batched import VmapError
from tensorplay.func.batching_rules import (
    batch_size, call, check_inplace_target, materialize, pad_rank, to_front,
)

# Random without the ops.yaml tag: dropout draws its mask (when training).
UNTAGGED_RANDOM = {"native_dropout"}


def tags(op):
    extra = ("random",) if op.name in UNTAGGED_RANDOM else ()
    return OP_TAGS.get(op.name, ()) + extra


def check_randomness(op, randomness):
    if randomness == "error":
        raise VmapError(f"vmap: called random operation {op.name} while in randomness error "
                        f"mode. Please either use the 'same' or 'different' randomness flags "
                        f"on vmap or perform the randomness operation out of vmap",
                        op=op.name, arg="randomness")


def random_rule(op, args, bdims, randomness):
    """The rule of every random op; the batching kernel passes the level's `randomness`."""
    if op.name == "native_dropout" and args[2] is False:
        out, mask = call(op, to_front(args[0], bdims[0]), *args[1:])
        return (out, mask), (0, 0)
    check_randomness(op, randomness)
    check_inplace_target(op, args, bdims)
    size = batch_size(args, bdims)
    mutable = op.schema.mutable_positions
    if randomness == "different":
        if mutable:
            # Fill the whole batch; a batched parameter (bernoulli_'s p) lines up as in a
            # pointwise op.
            target = to_front(args[0], bdims[0])
            new = [target] + list(args[1:])
            for i in op.schema.tensor_positions[1:]:
                if args[i] is not None and bdims[i] is not None:
                    new[i] = pad_rank(to_front(args[i], bdims[i]), target.dim() - 1)
            call(op, *new)
            return target, 0
        if op.name == "multinomial":
            return _multinomial(op, args, bdims), 0
        new = list(args)
        for i in op.schema.tensor_positions:
            if args[i] is not None:
                new[i] = materialize(args[i], bdims[i], size)
        out = call(op, *new)
        return out, (0,) * len(out) if isinstance(out, tuple) else 0
    return _same(op, args, bdims)


def _multinomial(op, args, bdims):
    """multinomial draws one row of samples per row of probabilities: the examples' rows,
    folded together."""
    probs = to_front(args[0], bdims[0])
    if probs.dim() == 2:
        return call(op, probs, *args[1:])
    rows = probs.reshape((-1, probs.shape[-1]))
    out = call(op, rows, *args[1:])
    return out.view(tuple(probs.shape[:-1]) + (out.shape[-1],))


def _same(op, args, bdims):
    """One draw of one example's shape, broadcast over the batch."""
    name = op.name
    if mutable_only_self(op, bdims):
        target = to_front(args[0], bdims[0])
        draw = factory.zeros_like(target.select(0, 0))
        call(op, draw, *args[1:])
        target.copy_(draw)
        return target, 0
    if name == "native_dropout":
        x = to_front(args[0], bdims[0])
        scaled_mask, mask = call(op, factory.ones_like(x.select(0, 0)), *args[1:])
        return (x * scaled_mask, mask), (0, None)
    if name == "bernoulli":
        p = to_front(args[0], bdims[0])
        u = factory.zeros_like(p.select(0, 0)).uniform_(0.0, 1.0, generator=args[1])
        return (u < p).to(p.dtype), 0
    raise VmapError(f"vmap: {name} with randomness='same' and batched arguments other than "
                    f"the tensor it fills is not supported; use randomness='different' or "
                    f"call it outside vmap", op=name, arg="randomness")


def mutable_only_self(op, bdims):
    """An in-place fill whose only batched tensor is the one it writes (normal_, ...)."""
    if not op.schema.mutable_positions:
        return False
    return all(d is None for i, d in enumerate(bdims) if i != 0)


random_rule.takes_randomness = True
