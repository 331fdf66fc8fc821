"""The batching fallback: run an op once per example and stack the results.

Ops without a batching rule (and rules that do not cover some argument combination)
still work under vmap, only slowly: the kernel selects example i of every batched
argument, calls the op, and stacks what comes back. The first time an op takes this
path a warning names it, and `tp.func.fallback_ops()` lists every op that has, so the
missing rules are easy to find.
"""
from __future__ import annotations

import warnings

from tensorplay.dispatch.dispatcher import dispatcher
from tensorplay.func.batched import VmapError
from tensorplay.func.batching_rules import batch_size, call

_taken = {}     # op name -> how many calls took the fallback


def fallback_ops():
    """The ops that ran per example under vmap so far (no batching rule served them)."""
    return sorted(_taken)


def reset_fallback_ops():
    _taken.clear()


def _example(value, bdim, i):
    if isinstance(bdim, (list, tuple)):
        return [_example(v, d, i) for v, d in zip(value, bdim)]
    if bdim is None:
        return value
    return value.select(bdim, i)


def loop_fallback(op, args, bdims):
    """The rule every op has: (out, out_bdims) from one call per example, stacked on dim 0."""
    if op.name not in _taken:
        warnings.warn(f"vmap: there is no batching rule for {op.name}; it runs once per "
                      f"example (slow). tp.func.fallback_ops() lists every such op.",
                      UserWarning, stacklevel=4)
    _taken[op.name] = _taken.get(op.name, 0) + 1
    size = batch_size(args, bdims)
    results = []
    for i in range(size):
        results.append(call(op, *(_example(a, d, i) for a, d in zip(args, bdims))))
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
