"""The per-tensor autograd API that `Tensor` delegates to: `requires_grad_`, `.data = `,
`register_hook`, `register_post_accumulate_grad_hook`, `retain_grad`.

Where a hook lives matters: a leaf's hooks live on the leaf itself (its AccumulateGrad
is recreated per graph), a non-leaf's on its grad_fn, keyed by output number (so the
hook still fires after the Python tensor object is gone, as in PyTorch).
"""
from __future__ import annotations

from tensorplay.autograd.grad_mode import grad_state
from tensorplay.autograd.node import impl_edge
from tensorplay.autograd.recording import register_retains_grad
from tensorplay.autograd.node import add_hook
from tensorplay.errors import AutogradError

__all__ = ["set_requires_grad", "set_data", "adopt_view", "register_hook",
           "register_post_accumulate_grad_hook", "retain_grad"]


def set_requires_grad(tensor, flag):
    impl = tensor._impl
    flag = bool(flag)
    if impl.grad_fn is not None:
        if not flag:
            raise AutogradError("you can only change requires_grad flags of leaf variables. If "
                               "you want to use a computed variable in a subgraph that doesn't "
                               "require differentiation use var_no_grad = var.detach().")
        return
    if flag and not impl.dtype.is_differentiable:
        from tensorplay.errors import DTypeError
        # PyTorch's words, though complex tensors can require gradients too
        raise DTypeError(f"requires_grad_(): only Tensors of floating point dtype can require "
                         f"gradients (got {impl.dtype.name})", op="requires_grad_",
                         arg="requires_grad")
    if flag and impl.inference and not grad_state.inference:
        raise AutogradError("Setting requires_grad=True on inference tensor outside "
                           "InferenceMode is not allowed.")
    impl.set_requires_grad(flag)


def set_data(tensor, value):
    """`x.data = v`: x now shows v's memory, and keeps its own autograd identity (its
    requires_grad, its .grad, its version counter)."""
    if getattr(value, "_impl", None) is None:
        raise TypeError(f"Tensor.data must be set to a Tensor, got {type(value).__name__}")
    impl, new = tensor._impl, value._impl
    if impl.requires_grad and not new.dtype.is_differentiable:
        raise AutogradError("data set to a tensor that requires gradients must be floating "
                           "point")
    # A new device is allowed, as in PyTorch: `Module.to("cuda")` moves parameters this
    # way, so that a Parameter object (and an optimizer's reference to it) survives the move.
    impl.device = new.device
    impl.storage = new.storage
    impl.sizes = new.sizes
    impl.strides = new.strides
    impl.offset = new.offset
    impl.dtype = new.dtype
    impl.is_contiguous = new.is_contiguous
    impl._array = None        # the cached NumPy view describes the old memory
    impl.base = None
    # The next graph gets a fresh AccumulateGrad with the new shape and dtype.
    impl.grad_accumulator = None


def adopt_view(tensor, view):
    """The kernel of the in-place view ops (`x.unsqueeze_(0)`): `tensor` takes `view`'s
    sizes and strides (a view of `tensor` itself) and its version counter is bumped, as
    for any in-place op. The autograd wrapper records the backward node around it."""
    impl, new = tensor._impl, view._impl
    impl.sizes = new.sizes
    impl.strides = new.strides
    impl.offset = new.offset
    impl.is_contiguous = new.is_contiguous
    impl._array = None        # the cached NumPy view describes the old shape
    impl.version.value += 1
    return tensor


def register_hook(tensor, hook):
    """`hook(grad) -> Tensor or None` runs when the gradient of `tensor` is computed;
    a returned tensor replaces the gradient. Returns a handle with `.remove()`."""
    impl = tensor._impl
    if not impl.requires_grad:
        raise AutogradError("cannot register a hook on a tensor that doesn't require gradient")
    if impl.grad_fn is None:
        if impl.hooks is None:
            impl.hooks = {}
        return add_hook(impl.hooks, hook)
    fn, output_nr = impl_edge(impl)        # (a view's history may need rebuilding first)
    return fn.add_tensor_hook(output_nr, hook)


def register_post_accumulate_grad_hook(tensor, hook):
    """`hook(tensor) -> None` runs after a backward pass has added into `tensor.grad` (a
    leaf only: only leaves accumulate). Returns a handle with `.remove()`."""
    impl = tensor._impl
    if not impl.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if impl.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf "
                           "tensors")
    if impl.post_accumulate_hooks is None:
        impl.post_accumulate_hooks = {}
    return add_hook(impl.post_accumulate_hooks, hook)


def retain_grad(tensor):
    """Fill `.grad` of a non-leaf tensor too during backward (a no-op on a leaf)."""
    impl = tensor._impl
    if not impl.requires_grad:
        raise AutogradError("can't retain_grad on Tensor that has requires_grad=False")
    if impl.grad_fn is None or impl.retains_grad:
        return
    impl_edge(impl)                        # (a view's history may need rebuilding first)
    impl.retains_grad = True
    register_retains_grad(impl)
