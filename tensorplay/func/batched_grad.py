"""`tp.autograd.grad` of batched tensors: per-example gradients inside vmap.

Under vmap the graph is recorded on the physical tensors (the batch side by side), so a
per-example gradient is an ordinary gradient of the physical tensors: example i's loss
depends only on example i's slice of a batched input, so the gradient of the *sum* of
the per-example losses w.r.t. the physical input holds, in slice i, the gradient of loss
i w.r.t. input i.

    inside vmap: grad(loss, w)          loss: []  w: [k]       (logical)
    what runs:   grad(loss_p, w_p, 1)   loss_p: [B]  w_p: [B, k] (physical)
    result:      wrapped again as w is: one [k] gradient per example

An input given to vmap with in_dims=None is an expanded view of one tensor, so it too
has a slice per example. A tensor the function captured from outside (a closure) has
no batch dim: its gradient would be the sum over the batch, so that is an error.

A grad_output `g` is folded into the output first (`(out * g).sum()`, batched like any
op), which makes every output a per-example scalar.
"""
from __future__ import annotations

from tensorplay import _tensor_factory as factory
from tensorplay.func.batched import VmapError, batched_impl, rewrap_all, unwrap_all


def has_batched(tensors):
    return any(batched_impl(t) is not None for t in tensors)


def batched_grad(engine_grad, outputs, inputs, grad_outputs, retain_graph, create_graph,
                 allow_unused, materialize_grads):
    """`engine_grad` (tp.autograd.grad) with every batched tensor unwrapped to its
    physical tensor, and the gradients wrapped as their inputs are."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    elif not isinstance(grad_outputs, (tuple, list)):
        grad_outputs = (grad_outputs,)
    roots = []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if g is None:
            if out._impl.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            roots.append(out.sum() if out.dim() else out)
        else:
            roots.append((out * g).sum())
    physical_roots = []
    out_levels = set()
    for r in roots:
        p, chain = unwrap_all(r)
        physical_roots.append(p)
        out_levels.update(level for level, _ in chain)
    physical_inputs, chains = [], []
    for k, t in enumerate(inputs):
        p, chain = unwrap_all(t)
        missing = out_levels - {level for level, _ in chain}
        if missing:
            raise VmapError(
                f"grad(): input {k} is not batched at vmap level {min(missing)} but the "
                f"outputs are: its gradient would be summed over the batch, not per "
                f"example. Pass the tensor to vmap as an argument (in_dims=None) instead "
                f"of capturing it from outside the function", op="grad", arg="inputs")
        physical_inputs.append(p)
        chains.append(chain)
    seeds = tuple(factory.ones_like(p) for p in physical_roots)
    grads = engine_grad(tuple(physical_roots), tuple(physical_inputs), seeds,
                        retain_graph=retain_graph, create_graph=create_graph,
                        allow_unused=allow_unused, materialize_grads=materialize_grads)
    return tuple(None if g is None else rewrap_all(g, chain)
                 for g, chain in zip(grads, chains))
