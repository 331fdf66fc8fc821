"""Batching rule of dropout: the mask is drawn as native_dropout's (random.py), by vmap's
`randomness` flag."""
from __future__ import annotations

from tensorplay.dispatch.dispatcher import dispatcher
from tensorplay.func.batching_rules.random import random_rule


def dropout_rule(op, args, bdims, randomness):
    """dropout is native_dropout's output when training, the input itself when not."""
    x, p, train = args[:3]
    if not train or p == 0:
        return x, bdims[0]
    native = dispatcher.find("native_dropout")
    (out, _), (out_bdim, _) = random_rule(native, (x, p, train) + tuple(args[3:]), bdims,
                                          randomness)
    return out, out_bdim


dropout_rule.takes_randomness = True
