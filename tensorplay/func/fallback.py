"""The batching fallback: run an op once per example and stack the results.

Ops without a batching rule (and rules that do not cover some argument combination)
still work under vmap, only slowly: the kernel selects example i of every batched
argument, calls the op, and stacks what comes back. The first time an op takes this
path a warning names it, and `tp.func.fallback_ops()` lists every op that has, so the
missing rules are easy to find.
"""
from __future__ import annotations

import warnings

from tensorplay._generated.op_tags import OP_TAGS
from tensorplay.dispatch.dispatcher import dispatcher
from tensorplay.func.batched import VmapError
from tensorplay.func.batching_rules import batch_size, call, check_inplace_target

_taken = {}     # op name -> how many calls took the fallback
_declined = set()   # ops whose rule handed a call over (NeedsFallback)


def fallback_ops():
    """The ops that ran per example under vmap so far (no batching rule served them)."""
    return sorted(_taken)


def declined_ops():
    """The ops whose batching rule handed some call to the fallback on purpose."""
    return sorted(_declined)


def reset_fallback_ops():
    _taken.clear()
    _declined.clear()


def _example(value, bdim, i, copy):
    if isinstance(bdim, (list, tuple)):
        return [_example(v, d, i, copy) for v, d in zip(value, bdim)]
    if bdim is None:
        return value
    example = value.select(bdim, i)
    return example.clone() if copy else example


def loop_fallback(op, args, bdims, declined=False):
    """The rule every op has: (out, out_bdims) from one call per example, stacked on dim 0.
    `declined`: the op's rule does not cover these arguments (it raised NeedsFallback)."""
    if declined:
        _declined.add(op.name)
    check_inplace_target(op, args, bdims)
    if op.name not in _taken:
        warnings.warn(f"vmap: there is no batching rule for {op.name}; it runs once per "
                      f"example (slow). tp.func.fallback_ops() lists every such op.",
                      UserWarning, stacklevel=4)
    _taken[op.name] = _taken.get(op.name, 0) + 1
    size = batch_size(args, bdims)
    # A view op without a rule (as_strided) reads the example's memory layout: give it
    # each example as a tensor of its own, as the per-example program has.
    copy = "view" in OP_TAGS.get(op.name, ())
    results = []
    for i in range(size):
        results.append(call(op, *(_example(a, d, i, copy) for a, d in zip(args, bdims))))
    if op.schema.mutable_positions:
        # The op wrote into the examples of the batched tensor (views of it); the batching
        # kernel returns that tensor itself.
        return None, None
    return _stack(op, results)


def _stack(op, results):
    first = results[0]
    if isinstance(first, (tuple, list)):
        parts = [_stack(op, [r[k] for r in results]) for k in range(len(first))]
        return tuple(p[0] for p in parts), tuple(p[1] for p in parts)
    if getattr(first, "_impl", None) is not None:
        shapes = {tuple(r.shape) for r in results}
        if len(shapes) != 1:
            raise VmapError(f"vmap: {op.name} returned tensors of different shapes for "
                            f"different examples ({sorted(shapes)}); vmap needs one shape "
                            f"for the whole batch", op=op.name)
        return call(dispatcher.find("stack"), results, 0), 0
    if any(r != first for r in results):
        raise VmapError(f"vmap: {op.name} returned a different non-tensor value for different "
                        f"examples ({results[:3]}...); vmap can only batch tensors",
                        op=op.name)
    return first, None
