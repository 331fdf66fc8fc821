"""How a generated autograd wrapper records its op in the backward graph.

Every wrapper (tensorplay/_generated/autograd_wrappers.py) reads the same five steps:

    def mul_Tensor(ks, self, other):
        if not (self._impl.requires_grad or other._impl.requires_grad):  # 1. anything to
            return below_autograd(ops.mul_Tensor, ks, self, other)        #    record?
        node = MulBackward0(self, other)                            # 2. the node, with an
                                                                    #    edge per input
        node.other_ = SavedVariable(other, is_output=False) ...     # 3. what formulas read
        result = below_autograd(ops.mul_Tensor, ks, self, other)    # 4. run the op
        set_history(result, node)                                   # 5. result.grad_fn = node
        return result

Grad mode is not tested here: the dispatcher reaches a wrapper only while it is on
(`OperatorHandle.call` drops the key set's REQUIRES_GRAD flag while it is off, and the
dispatch loop then skips the wrapper). An in-place op checks first that it may write
(`check_inplace`) and then rebases the
history of what it wrote (`rebase_history`: a CopySlices for a view) instead of step 5.
The node's edges are made by `Node.__init__` (node.py); step 4 is the dispatcher's
(`below_autograd`); this module holds the rest.
"""
from __future__ import annotations

import weakref

from tensorplay.autograd.grad_mode import grad_state
from tensorplay.dispatch.dispatcher import below_autograd  # noqa: F401  (step 4)
from tensorplay.dispatch.keys import REQUIRES_GRAD
from tensorplay.errors import AutogradError

__all__ = ["below_autograd", "set_history", "check_inplace", "rebase_history",
           "any_requires_grad"]


def any_requires_grad(tensors):
    for t in tensors:
        if t is not None and t._impl.requires_grad:
            return True
    return False


def set_history(result, node, output_differentiability=None):
    """Make `node` the grad_fn of each differentiable output of an out-of-place op.

    Only floating and complex outputs are differentiable (an argmax's indices are not), and the
    derivatives.yaml entry can exclude outputs (`output_differentiability`)."""
    if output_differentiability is None:
        try:
            impl = result._impl
        except AttributeError:          # a tuple or list of outputs
            impl = None
        if (impl is not None and impl.grad_fn is None and not impl.requires_grad
                and impl.dtype.is_differentiable):
            # The common case, a fresh floating output, without the calls: exactly what
            # _attach(result, node, 0) does for it (no history to refuse, floating so no
            # dtype check), and the one-output _output_meta the general path builds.
            impl.grad_fn = node
            impl.output_nr = 0
            impl.requires_grad = True       # and the key set's flag: set_requires_grad(True),
            impl.keys |= REQUIRES_GRAD      # written out (one call less on every recorded op)
            node._output_meta = ((impl.sizes, impl.dtype, impl._device),)   # `device`'s field
            return
    if not isinstance(result, (tuple, list)):
        impl = getattr(result, "_impl", None)
        if impl is not None and not impl.dtype.is_differentiable:   # the rare case: a call
            _check_differentiable_dtype(result, node)
        if output_differentiability is None:
            node._output_meta = (_attach(result, node, 0),)      # the common single output
            return
    outputs = result if isinstance(result, (tuple, list)) else (result,)
    diff = output_differentiability
    if diff is not None and isinstance(result, list) and len(diff) == 1:
        diff = diff * len(outputs)          # one `Tensor[]` return covers every element
    # (a loop, not a generator: one reading `node` would make it a cell variable, an
    # object allocated on every call of this function, the fast case above included)
    meta = []
    for i, t in enumerate(outputs):
        meta.append(None if diff is not None and not diff[i] else _attach(t, node, i))
    node._output_meta = tuple(meta)


def _attach(t, node, i):
    """Make `node` the grad_fn of output `i`, `t`; its (sizes, dtype, device), or None
    when it is not differentiable (missing, or neither floating nor complex)."""
    if t is None:
        return None
    impl = t._impl
    if not impl.dtype.is_differentiable:
        return None
    if impl.grad_fn is not None or (impl.requires_grad and impl.base is None):
        raise AutogradError(
            f"{node.name()} ({node.OP}): output {i} already has autograd history; the "
            f"kernel returned one of its inputs instead of a new tensor (an out-of-place "
            f"op must return a new tensor or a view)")
    impl.grad_fn = node
    impl.output_nr = i
    impl.set_requires_grad(True)
    return (impl.sizes, impl.dtype, impl.device)


# PyTorch's names of the integer and bool types, for its error message.
_TORCH_TYPE_NAMES = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char",
                     "uint8": "Byte", "bool": "Bool"}


def _check_differentiable_dtype(result, node):
    """An op that records a graph cannot give its one output an integer dtype
    (`x.sum(dtype=tp.int32)` with x requiring grad): PyTorch refuses it, as a gradient
    could not flow back through it. A conversion (`x.to(tp.int32)`) is the exception:
    its result just does not require grad."""
    impl = getattr(result, "_impl", None)
    if impl is None or impl.dtype.is_differentiable:
        return
    if node.OP == "_to_copy":
        return
    raise AutogradError(f"{node.OP}: Autograd not support dtype: "
                        f"{_TORCH_TYPE_NAMES.get(impl.dtype.name, impl.dtype.name)}")


def check_inplace(tensor, op_name):
    """Refuse in-place ops that would make the graph wrong (PyTorch's rules)."""
    if not grad_state.enabled:
        return
    impl = tensor._impl
    if impl.inference and not grad_state.inference:
        raise AutogradError(f"{op_name}: Inplace update to inference tensor outside "
                           f"InferenceMode is not allowed. You can make a clone to get a "
                           f"normal tensor before doing inplace update.")
    base = impl.base
    if base is not None:
        # A view made in no_grad mode or by split/unbind may not be rebased. (A tensor
        # subclass's view, made at the Python key, is a plain impl with a base: no check.)
        check_rebase = getattr(impl, "check_rebase", None)
        if check_rebase is not None:
            check_rebase(op_name)
        if impl.requires_grad and base.grad_fn is None:
            raise AutogradError(f"{op_name}: a view of a leaf Variable that requires grad is "
                                f"being used in an in-place operation.")
    if impl.requires_grad and impl.grad_fn is None:
        raise AutogradError(f"{op_name}: a leaf Variable that requires grad is being used in "
                           f"an in-place operation.")


def rebase_history(tensor, node, view_op=False):
    """After an in-place op: `tensor`'s value is now the output of `node`.

    For a view, the *base* changed too: the base's new history is a CopySlices node
    (base with the view's region replaced by node's output), and the view becomes a
    strided window onto that new base history (see inplace_views.py). An in-place view
    op (`view_op`: transpose_, unsqueeze_, ...) changes the view's shape and strides
    but no value, of the view or of its base: the view's history is `node` alone."""
    impl = tensor._impl
    if not impl.dtype.is_differentiable:
        return      # `int_tensor.copy_(float_requiring_grad)`: no gradient flows into ints
    node._output_meta = ((impl.sizes, impl.dtype, impl.device),)
    if impl.base is None or view_op:
        _set_grad_fn(impl, node)
        return
    from tensorplay.autograd.inplace_views import CopySlices, view_of_base
    base = impl.base
    copy_slices = CopySlices(base, impl, node)
    _set_grad_fn(base, copy_slices)
    _set_grad_fn(impl, view_of_base(impl, (copy_slices, 0)))


def _set_grad_fn(impl, fn):
    """Give `impl` a new grad_fn (output 0), carrying its retain_grad() along."""
    old = impl.grad_fn
    impl.grad_fn = fn
    old_nr, impl.output_nr = impl.output_nr, 0
    impl.set_requires_grad(True)
    if impl.retains_grad:
        if old is not None and old._hooks is not None:
            old._hooks.retains_grad.pop(old_nr, None)
        register_retains_grad(impl)


def register_retains_grad(impl):
    """`.grad` of a non-leaf is filled by its grad_fn, which keeps only a weak reference:
    a tensor that is gone cannot be asked for its grad."""
    fn = impl.grad_fn
    fn._made_hooks().retains_grad[impl.output_nr] = weakref.ref(impl)
