"""How the generated autograd wrappers attach a node to the graph.

A wrapper calls, in this order:

    node._edges = (input_edge(self._impl), ...)    # where the grads go (or, for list and
                                                   # optional inputs, collect_next_edges)
    ...run the op...
    set_history(result, node)          # result.grad_fn = node
    # or, for an in-place op on `self`:
    check_inplace(self, "mul_.Tensor") # before anything else
    rebase_history(self, node)         # self.grad_fn = node (CopySlices for a view)

An *edge* is `(node, input_nr)`: where a gradient goes. For a tensor made by an op it
is `(its grad_fn, its output_nr)`; for a leaf that requires grad it is
`(its AccumulateGrad, 0)`; for anything else `(None, 0)` (no gradient needed). A
recorded op may store a plain leaf as `(its impl, 0)` until the edge is read
(`input_edge`).
"""
from __future__ import annotations

import weakref

from tensorplay._impl import TensorImpl
from tensorplay.autograd.grad_mode import grad_state
from tensorplay.autograd.node import grad_accumulator
from tensorplay.errors import AutogradError

__all__ = ["collect_next_edges", "gradient_edge", "impl_edge", "input_edge",
           "any_requires_grad", "set_history", "check_inplace", "rebase_history",
           "grad_accumulator"]

NO_EDGE = (None, 0)


def impl_edge(impl):
    fn = impl.grad_fn      # a view's is rebuilt here if its base changed (view_impl.py)
    if fn is not None:
        return (fn, impl.output_nr)
    if impl.requires_grad and (impl.base is None or not impl.base.requires_grad):
        return (grad_accumulator(impl), 0)
    # A view with no history that requires grad only through its base (made in no_grad
    # mode): no gradient flows from it, as in PyTorch.
    return NO_EDGE


def input_edge(impl):
    """The edge a recorded op stores for an input that requires grad (the generated
    autograd wrappers): `impl_edge`'s, except for a plain leaf (its impl a TensorImpl:
    not a view's, a subclass's or vmap's) with no AccumulateGrad alive, which is pointed
    at by its own impl, `(impl, 0)`. Its AccumulateGrad is made when the edge is first
    read (Node.next_functions) or when backward starts (engine._discover), by the rule
    impl_edge would have applied here: the one alive then, else a new one. Exact but
    for the identity of an AccumulateGrad that a since-dropped graph kept alive in
    between (a hook put on that one does not carry over), and the order it runs in
    among ready nodes: made later, it runs earlier (PyTorch runs every AccumulateGrad
    first)."""
    fn = impl.grad_fn
    if fn is not None:
        return (fn, impl.output_nr)
    if type(impl) is not TensorImpl:
        return impl_edge(impl)
    if impl.requires_grad and (impl.base is None or not impl.base.requires_grad):
        ref = impl.grad_accumulator
        acc = ref() if ref is not None else None
        return (impl, 0) if acc is None else (acc, 0)
    return NO_EDGE


def gradient_edge(tensor):
    return impl_edge(tensor._impl)


def collect_next_edges(*args):
    """One edge per tensor argument; a list argument (cat's `tensors`) gives one per
    element; None (an optional tensor not given) gives an empty edge."""
    edges = []
    for a in args:
        if a is None:
            edges.append(NO_EDGE)
        elif isinstance(a, (list, tuple)):
            for t in a:
                edges.append(NO_EDGE if t is None else impl_edge(t._impl))
        else:
            edges.append(impl_edge(a._impl))
    return edges


def any_requires_grad(tensors):
    for t in tensors:
        if t is not None and t._impl.requires_grad:
            return True
    return False


def set_history(result, node, output_differentiability=None):
    """Make `node` the grad_fn of each differentiable output of an out-of-place op.

    Only floating outputs are differentiable (an argmax's indices are not), and the
    derivatives.yaml entry can exclude outputs (`output_differentiability`)."""
    if output_differentiability is None:
        impl = getattr(result, "_impl", None)      # None for a tuple or list of outputs
        if (impl is not None and impl.grad_fn is None and not impl.requires_grad
                and impl.dtype.is_floating_point):
            # The common case, a fresh floating output, without the calls: exactly what
            # _attach(result, node, 0) does for it (no history to refuse, floating so no
            # dtype check), and the one-output _output_meta the general path builds.
            impl.grad_fn = node
            impl.output_nr = 0
            impl.requires_grad = True
            node._output_meta = ((impl.sizes, impl.dtype, impl._device),)   # `device`'s field
            return
    if not isinstance(result, (tuple, list)):
        impl = getattr(result, "_impl", None)
        if impl is not None and not impl.dtype.is_floating_point:   # the rare case: a call
            _check_differentiable_dtype(result, node)
        if output_differentiability is None:
            node._output_meta = (_attach(result, node, 0),)      # the common single output
            return
    outputs = result if isinstance(result, (tuple, list)) else (result,)
    diff = output_differentiability
    if diff is not None and isinstance(result, list) and len(diff) == 1:
        diff = diff * len(outputs)          # one `Tensor[]` return covers every element
    node._output_meta = tuple(None if diff is not None and not diff[i] else
                              _attach(t, node, i) for i, t in enumerate(outputs))


def _attach(t, node, i):
    """Make `node` the grad_fn of output `i`, `t`; its (sizes, dtype, device), or None
    when it is not differentiable (missing, or not floating point)."""
    if t is None:
        return None
    impl = t._impl
    if not impl.dtype.is_floating_point:
        return None
    if impl.grad_fn is not None or (impl.requires_grad and impl.base is None):
        raise AutogradError(
            f"{node.name()} ({node.OP}): output {i} already has autograd history; the "
            f"kernel returned one of its inputs instead of a new tensor (an out-of-place "
            f"op must return a new tensor or a view)")
    impl.grad_fn = node
    impl.output_nr = i
    impl.requires_grad = True
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
    if impl is None or impl.dtype.is_floating_point or impl.dtype.is_complex:
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


def rebase_history(tensor, node):
    """After an in-place op: `tensor`'s value is now the output of `node`.

    For a view, the *base* changed too: the base's new history is a CopySlices node
    (base with the view's region replaced by node's output), and the view becomes a
    strided window onto that new base history (see inplace_views.py)."""
    impl = tensor._impl
    if not impl.dtype.is_floating_point:
        return      # `int_tensor.copy_(float_requiring_grad)`: no gradient flows into ints
    node._output_meta = ((impl.sizes, impl.dtype, impl.device),)
    if impl.base is None:
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
    impl.requires_grad = True
    if impl.retains_grad:
        if old is not None and old._retains_grad:
            old._retains_grad.pop(old_nr, None)
        register_retains_grad(impl)


def register_retains_grad(impl):
    """`.grad` of a non-leaf is filled by its grad_fn, which keeps only a weak reference:
    a tensor that is gone cannot be asked for its grad."""
    fn = impl.grad_fn
    if fn._retains_grad is None:
        fn._retains_grad = {}
    fn._retains_grad[impl.output_nr] = weakref.ref(impl)
