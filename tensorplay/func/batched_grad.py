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
has a slice per example. A plain tensor (captured from outside, or made inside the
function, e.g. jvp's dummy cotangent) has no slice per example: its per-example
gradients are the rows of the Jacobian of the physical losses, computed by running the
backward pass once on a batch of one-hot cotangents (the backward formulas batched by
vmap, as jacrev does).

A grad_output `g` is folded into the output first (`(out * g).sum()`, batched like any
op), which makes every output a per-example scalar.
"""
from __future__ import annotations

import numpy as np

from tensorplay import _tensor_factory as factory
from tensorplay.autograd.engine import UNUSED_MESSAGE
from tensorplay.func.batched import VmapError, batched_impl, rewrap_all, unwrap_all
from tensorplay.func.vmap import vmap


def has_batched(tensors):
    return any(batched_impl(t) is not None for t in tensors)


def batched_grad(engine_grad, outputs, inputs, grad_outputs, retain_graph, create_graph,
                 allow_unused, materialize_grads):
    """`engine_grad` (tp.autograd.grad) with every batched tensor unwrapped to its
    physical tensor, and the gradients wrapped as their inputs are."""
    root = _logical_root(outputs, grad_outputs)
    physical_root, root_chain = unwrap_all(root)
    root_levels = {level for level, _ in root_chain}
    direct, plain = [], []
    for k, t in enumerate(inputs):
        physical, chain = unwrap_all(t)
        levels = {level for level, _ in chain}
        if root_levels <= levels:
            direct.append((k, physical, chain))
        elif not chain:
            plain.append((k, t))
        else:
            raise VmapError(
                f"grad(): input {k} is batched at vmap levels {sorted(levels)} but the "
                f"outputs at {sorted(root_levels)}: its per-example gradient is not "
                f"defined", op="grad", arg="inputs")
    retain = create_graph if retain_graph is None else retain_graph
    results = [None] * len(inputs)
    if direct:
        grads = engine_grad((physical_root,), tuple(p for _, p, _ in direct),
                            (factory.ones_like(physical_root),),
                            retain_graph=retain or bool(plain),
                            create_graph=create_graph, allow_unused=allow_unused,
                            materialize_grads=materialize_grads)
        for (k, _, chain), g in zip(direct, grads):
            results[k] = None if g is None else rewrap_all(g, chain)
    if plain:
        rows = _jacobian_rows(engine_grad, physical_root, [t for _, t in plain], retain,
                              create_graph)
        for (k, t), g in zip(plain, rows):
            if g is None:
                if not (allow_unused or materialize_grads):
                    raise RuntimeError(UNUSED_MESSAGE)
                if materialize_grads:
                    g = factory.zeros_like(t).expand(tuple(physical_root.shape) +
                                                     tuple(t.shape))
            if g is not None:
                results[k] = rewrap_all(g, root_chain)
    return tuple(results)


def _logical_root(outputs, grad_outputs):
    """One per-example scalar whose gradient is the vector-Jacobian product asked for:
    the sum of each output (times its grad_output, when one is given)."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    elif not isinstance(grad_outputs, (tuple, list)):
        grad_outputs = (grad_outputs,)
    root = None
    for out, g in zip(outputs, grad_outputs):
        if g is None:
            if out._impl.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            term = out.sum() if out.dim() else out
        else:
            term = (out * g).sum()
        root = term if root is None else root + term
    return root


def _jacobian_rows(engine_grad, physical_root, inputs, retain_graph, create_graph):
    """d(physical_root[i]) / d(input) for every element i of the physical root: one
    backward pass on a batch of one-hot cotangents. Each result is shaped
    `physical_root.shape + input.shape` (None: the input was not used)."""
    n = physical_root.numel()
    shape = tuple(physical_root.shape)
    eye = factory.tensor(np.eye(n), dtype=physical_root.dtype, device=physical_root.device)

    def row(cotangent):
        return engine_grad((physical_root,), tuple(inputs), (cotangent.reshape(shape),),
                           retain_graph=retain_graph,
                           create_graph=create_graph, allow_unused=True)

    rows = vmap(row)(eye)
    return [None if g is None else g.reshape(shape + tuple(g.shape[1:])) for g in rows]


def grads_batched(engine_grad, outputs, inputs, grad_outputs, retain_graph, create_graph,
                  allow_unused, materialize_grads):
    """`tp.autograd.grad(..., is_grads_batched=True)`: the vector-Jacobian product of each
    grad_output along its first dim, as PyTorch computes it: the backward pass under
    vmap over that dim (the backward formulas see batched gradients). Each result has
    the batch dim in front; an unused input's is None (or zeros, materialize_grads)."""
    batched = [k for k, g in enumerate(grad_outputs) if g is not None]

    def vjp(*gs):
        full = list(grad_outputs)
        for k, g in zip(batched, gs):
            full[k] = g
        return engine_grad(outputs, inputs, tuple(full), retain_graph=retain_graph,
                           create_graph=create_graph, allow_unused=allow_unused,
                           materialize_grads=materialize_grads)

    return tuple(vmap(vjp)(*(grad_outputs[k] for k in batched)))
