"""No silent detach: the autograd fallback of an op that has no derivative.

An op reaches its backend kernel through its autograd key. When nothing is registered
there (no derivatives.yaml formula, no Composite decomposition above autograd, no
custom op's autograd kernel), the dispatch loop used to fall through: the result came
back with no grad_fn, as if the op were a constant, and a gradient that should have
flowed through it silently became zero. PyTorch's `autograd_not_implemented` fallback
instead gives such a result a grad_fn whose backward raises; so does this module's,
registered at every autograd key (`Dispatcher.register_fallback`, by
tensorplay/_backend_loading.py) for every op that registers nothing there itself:

    y = tp.bincount(idx, weights=w)     # w requires grad; bincount has no formula
    y.grad_fn                          # <NotImplemented>
    y.sum().backward()                 # AutogradError: derivative for bincount is not
                                       # implemented

(A custom op without a derivative gets the same node, with PyTorch's message for it:
tensorplay/library/custom_ops.py.)

It records only: with no input that requires grad the dispatch loop skips it (the
`records_only` mark), so calls that need no gradient pay nothing. Only floating and
complex outputs get the node (an argmax's indices have no gradient). An op that PyTorch
declares non-differentiable says so in derivatives.yaml (`output_differentiability:
[False]`): its generated wrapper records no history, and this fallback never runs.
"""
from __future__ import annotations

from tensorplay.autograd.node import Node
from tensorplay.autograd.recording import below_autograd, check_inplace, rebase_history, \
    set_history
from tensorplay.errors import AutogradError

__all__ = ["NotImplementedBackward", "not_implemented_kernel", "not_implemented_fallback"]


class NotImplementedBackward(Node):
    """The grad_fn of a result whose op has no derivative: reaching it in backward
    raises (PyTorch's `NotImplemented` node)."""

    __slots__ = ("message",)

    def __init__(self, message, *inputs):
        super().__init__(*inputs)
        self.message = message

    def name(self):
        return "NotImplemented"

    def apply(self, grads):
        raise AutogradError(self.message)


def _tensors_of(handle, args):
    """The op's tensor arguments, Tensor[] arguments element by element."""
    out = []
    lists = handle.schema.list_positions
    for i in handle.schema.tensor_positions:
        a = args[i]
        if a is None:
            continue
        if i in lists:
            out.extend(t for t in a if t is not None)
        else:
            out.append(a)
    return out


def not_implemented_kernel(handle, message=None):
    """The autograd kernel of `handle`'s op that records a NotImplementedBackward node
    (`message`: what its backward raises; PyTorch's wording by default)."""
    message = message or f"derivative for {handle.name} is not implemented"   # PyTorch's
    mutable = handle.schema.mutable_positions

    def autograd_not_implemented(ks, *args):
        inputs = [t for t in _tensors_of(handle, args) if t._impl.requires_grad]
        if not inputs:
            return below_autograd(handle, ks, *args)
        written = [args[i] for i in mutable if args[i] is not None]
        node = None
        if written:
            # An in-place op: checked and given its node before it writes (the edges
            # must point at the history its inputs had).
            for t in written:
                check_inplace(t, handle.name)
            node = NotImplementedBackward(message, *inputs)
        result = below_autograd(handle, ks, *args)
        outputs = result if isinstance(result, (tuple, list)) else (result,)
        fresh = [o if getattr(o, "_impl", None) is not None and o._impl.dtype.is_differentiable
                 and not any(o is t for t in written) else None for o in outputs]
        if node is None and not any(o is not None for o in fresh):
            return result       # integer or bool results only (argmax, eq): no gradient
        if node is None:        # (an out-of-place op left its inputs' histories as they were)
            node = NotImplementedBackward(message, *inputs)
        for t in written:
            if t._impl.dtype.is_differentiable:
                rebase_history(t, node)
        if any(o is not None for o in fresh):
            set_history(fresh, node)
        return result

    autograd_not_implemented.records_only = True
    autograd_not_implemented.fallback_name = \
        "autograd not implemented (tensorplay.autograd.not_implemented: a grad_fn " \
        "that raises in backward)"
    return autograd_not_implemented


def not_implemented_fallback(handle):
    """The boxed fallback at the autograd keys: one kernel per op, made on demand."""
    return not_implemented_kernel(handle)
