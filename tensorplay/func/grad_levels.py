"""How one call of a transform makes its inputs differentiable and hands results back.

functorch tags every tensor with the *level* of the transform that wrapped it, so that
`grad(grad(f))` keeps the two derivatives apart. TensorPlay's transforms run on the
ordinary autograd graph instead, and the level is read off the graph:

- each call makes its own inputs: a fresh leaf (`x.detach().requires_grad_()`) for a
  tensor the caller does not differentiate, or a view `x.view_as(x)` of a tensor the
  caller *does* differentiate (it requires grad and grad mode was on), which keeps the
  path to the caller's graph;
- a tensor *belongs to an outer level* when its history reaches a leaf that someone
  may still differentiate with respect to: a leaf of the user's (the caller's input, a
  tensor the function closed over) or the fresh leaf of an enclosing transform that is
  still running. The leaves of this call, and those of transform calls that have
  returned (a `vjp_fn` called later keeps its vjp's leaves alive), do not count;
- the backward pass records a graph (create_graph) only when the outputs belong to an
  outer level, and every result that does not is detached before it is returned;
- detaching keeps forward-mode tangents (a forward level around the call is outer too:
  `jacfwd(jacrev(f))` pushes its tangents through the reverse pass).

So `grad(grad(lambda x: x ** 3))(x)`: the inner call's input is a view of the outer
call's leaf, its gradient 3x^2 is recorded, and the outer call differentiates it: 6x.
At the top level, `grad(f)(x)` with a plain `x` returns a plain tensor, and with an `x`
that requires grad it returns a tensor with history, as torch.func's transforms do.
"""
from __future__ import annotations

import threading
import weakref

from tensorplay import _tensor_factory as factory
from tensorplay.autograd.engine import grad as autograd_grad
from tensorplay.autograd.forward_mode import detach_keeping_tangents
from tensorplay.autograd.grad_mode import grad_state
from tensorplay.autograd.node import AccumulateGrad
from tensorplay.errors import ArgumentError, DTypeError
from tensorplay.func.batched import physical_impls
from tensorplay.func.trees import tree_map

__all__ = ["Level", "is_tensor", "vector_jacobian_product"]


def is_tensor(x):
    return getattr(x, "_impl", None) is not None


class _Running(threading.local):
    """The transform calls running on this thread, outermost first."""

    def __init__(self):
        self.levels = []


_running = _Running()
_transform_leaves = weakref.WeakSet()     # the TensorImpl of every leaf a transform made


class Level:
    """One call of a transform: the leaves it made, and whether grad mode was on for its
    caller. `transform` names the call in error messages, e.g. "grad(f)(*args)". Used as
    a context manager around the call, which marks it as running."""

    def __init__(self, transform):
        self.transform = transform
        self.outer_grad = grad_state.enabled
        self._own = set()       # the TensorImpls of the fresh leaves this call made
        self._inner = set()     # nodes known to reach no outer leaf (a cache)

    def __enter__(self):
        _running.levels.append(self)
        return self

    def __exit__(self, *exc):
        _running.levels.remove(self)

    def make_differentiable(self, x, where):
        """This call's own version of input `x` (see the module docstring)."""
        if not is_tensor(x):
            raise ArgumentError(f"{self.transform}: {where} must be a Tensor, got "
                                f"{type(x).__name__}", op=self.transform, arg=where)
        if not x.dtype.is_differentiable:
            raise DTypeError(f"{self.transform}: {where} must have a floating point or complex dtype "
                             f"to be differentiated, got {x.dtype.name}",
                             op=self.transform, arg=where)
        if self.outer_grad and x.requires_grad:
            return x.view_as(x)
        return self._own_leaf(detach_keeping_tangents(x))

    def own_zeros(self, like):
        """A zero tensor shaped like `like`, a leaf of this call (jvp's dummy cotangent)."""
        return self._own_leaf(factory.zeros_like(like))

    def _own_leaf(self, t):
        leaf = t.requires_grad_(True)
        # Under vmap the graph is recorded on the physical tensor under a BatchedTensor:
        # that is the leaf the graph reaches, so it is this call's too.
        for impl in physical_impls(leaf):
            self._own.add(impl)
            _transform_leaves.add(impl)
        return leaf

    def _is_outer_leaf(self, impl):
        if impl in self._own:
            return False
        if impl not in _transform_leaves:
            return True         # the user's
        return any(impl in level._own for level in _running.levels)

    def reaches_outer(self, t):
        """Whether the history of tensor `t` reaches an outer leaf: the user's, or one of
        a transform call that is running and is not this one."""
        if not is_tensor(t) or not t.requires_grad:
            return False
        root = t.grad_fn
        if root is None:
            return self._is_outer_leaf(t._impl)
        seen = set()
        stack = [root]
        while stack:
            node = stack.pop()
            if node in seen or node in self._inner:
                continue
            seen.add(node)
            if isinstance(node, AccumulateGrad):
                if self._is_outer_leaf(node.variable._impl):
                    return True
                continue
            for child, _ in node.next_functions:
                if child is not None:
                    stack.append(child)
        self._inner |= seen
        return False

    def any_outer(self, tensors):
        """Whether a backward pass from `tensors` must record a graph for the caller."""
        return self.outer_grad and any(self.reaches_outer(t) for t in tensors)

    def lower(self, tree, keep_history=None):
        """The nest with every tensor that does not belong to an outer level detached
        (all of them when `keep_history` is false; it defaults to the caller's grad mode)."""
        keep = self.outer_grad if keep_history is None else keep_history

        def lower_one(x):
            if not is_tensor(x) or (keep and self.reaches_outer(x)):
                return x
            return detach_keeping_tangents(x)
        return tree_map(lower_one, tree)


def vector_jacobian_product(outputs, inputs, cotangents, create_graph, retain_graph=True):
    """d(outputs)/d(inputs) contracted with `cotangents` (None: ones for a scalar output),
    one tensor per input. An input the outputs do not depend on gets zeros, as in
    torch.func; outputs that do not require grad contribute nothing. The graph is kept by
    default: jacrev and vjp_fn run it once per row."""
    if cotangents is None:
        cotangents = (None,) * len(outputs)
    pairs = [(o, c) for o, c in zip(outputs, cotangents) if o.requires_grad]
    if not pairs:
        return tuple(factory.zeros_like(x) for x in inputs)
    grads = autograd_grad([o for o, _ in pairs], list(inputs), [c for _, c in pairs],
                          retain_graph=retain_graph, create_graph=create_graph,
                          allow_unused=True)
    return tuple(factory.zeros_like(x) if g is None else g for g, x in zip(grads, inputs))
