"""Whole-function derivatives built on `grad`: vjp, jvp, jacobian, hessian, vhp, hvp.

Same signatures and return structure as torch.autograd.functional: a function of a
Tensor (or a tuple of Tensors) gives Tensors (or tuples) back.

    jacobian(f, x)[i..., j...] = d f(x)[i...] / d x[j...]       shape f(x).shape + x.shape
    hessian(f, x) = jacobian(jacobian of f, x), f scalar-valued

Reverse mode only: a Jacobian costs one backward pass per output element, and
`jvp` uses the double-vjp trick: u -> vjp(u) is linear in u, so its vjp in the
direction v is the forward-mode product J v.
"""
from __future__ import annotations

from tensorplay import _tensor_factory as factory
from tensorplay.autograd.engine import grad as autograd_grad
from tensorplay.autograd.grad_mode import enable_grad, grad_state
from tensorplay.autograd.node import collect_next_edges
from tensorplay.autograd.recording import set_history
from tensorplay.autograd.node import Node
from tensorplay.dispatch.keys import AUTOGRAD_MASK
from tensorplay.dispatch.tls import ExcludeKeys
from tensorplay.errors import AutogradError

__all__ = ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"]


def _is_tensor(x):
    return getattr(x, "_impl", None) is not None


def _as_tuple(x, arg, fn):
    is_tuple = isinstance(x, (tuple, list))
    items = tuple(x) if is_tuple else (x,)
    for i, t in enumerate(items):
        if not _is_tensor(t):
            where = f"{arg}[{i}]" if is_tuple else arg
            raise TypeError(f"The {where} given to {fn} must be a Tensor, but got "
                            f"{type(t).__name__}.")
    return is_tuple, items


def _untuple(items, is_tuple):
    return tuple(items) if is_tuple else items[0]


def _prepare(inputs, create_graph):
    """Fresh inputs that require grad; with create_graph, inputs that already have a
    history keep it (an outer derivative differentiates through this one)."""
    out = []
    for x in inputs:
        if create_graph and x.requires_grad:
            out.append(x.view_as(x))
        else:
            out.append(x.detach().requires_grad_(True))
    return tuple(out)


def _finish(tensors, create_graph):
    return tuple(t if create_graph or t is None else t.detach() for t in tensors)


def _grad(outputs, inputs, grad_outputs, create_graph):
    """grad() that skips outputs which do not require grad (their gradient is zero)."""
    grad_outputs = grad_outputs if grad_outputs is not None else (None,) * len(outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return autograd_grad([o for o, _ in pairs], inputs, [g for _, g in pairs],
                         retain_graph=True, create_graph=create_graph, allow_unused=True)


def _zeros_for_none(grads, like):
    return tuple(factory.zeros_like(x) if g is None else g for g, x in zip(grads, like))


# ---- stacking rows, differentiably --------------------------------------------------------
class StackBackward(Node):
    """Backward of `_stack`: row k of the gradient goes to tensor k."""

    __slots__ = ("count",)

    def __init__(self, count):
        super().__init__()
        self.count = count

    def apply(self, grads):
        g = grads[0]
        return tuple(g.select(0, k) if self.needs_input_grad(k) else None
                     for k in range(self.count))


def _stack(tensors, like):
    """Stack same-shaped tensors along a new dim 0 (recorded, so create_graph works)."""
    shape = tuple(like.shape)
    with ExcludeKeys(AUTOGRAD_MASK):
        out = factory.empty((len(tensors),) + shape, dtype=like.dtype, device=like.device)
        for k, t in enumerate(tensors):
            out.select(0, k).copy_(t)
    if grad_state.enabled and any(t.requires_grad for t in tensors):
        node = StackBackward(len(tensors))
        node.set_next_edges(collect_next_edges(list(tensors)))
        set_history(out, node)
    return out


# ---- the API ---------------------------------------------------------------------------
def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): the vector-Jacobian product."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _prepare(inputs, create_graph)
        is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided "
                                              "function", "vjp")
        if v is not None:
            _, v = _as_tuple(v, "v", "vjp")
        elif len(outputs) != 1 or outputs[0].numel() != 1:
            raise AutogradError("The vector v can only be None if the user-provided function "
                               "returns a single Tensor with a single element.")
        grads = _grad(outputs, inputs, v, create_graph)
        _check_strict(strict, grads, "vjp")
        result = _zeros_for_none(grads, inputs)
    return (_untuple(_finish(outputs, create_graph), is_outputs_tuple),
            _untuple(_finish(result, create_graph), is_inputs_tuple))


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): the Jacobian-vector product (by the double-vjp trick)."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _prepare(inputs, create_graph)
        if v is not None:
            _, v = _as_tuple(v, "v", "jvp")
        elif len(inputs) != 1 or inputs[0].numel() != 1:
            raise AutogradError("The vector v can only be None if the input to the "
                               "user-provided function is a single Tensor with a single "
                               "element.")
        is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided "
                                              "function", "jvp")
        dummies = tuple(factory.zeros_like(o, requires_grad=True) for o in outputs)
        vjps = _grad(outputs, inputs, dummies, create_graph=True)
        grads = _grad(vjps, dummies, v, create_graph)
        _check_strict(strict, grads, "jvp")
        result = _zeros_for_none(grads, outputs)
    return (_untuple(_finish(outputs, create_graph), is_outputs_tuple),
            _untuple(_finish(result, create_graph), is_outputs_tuple))


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False):
    """The Jacobian of `func` at `inputs`: one backward pass per output element."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _prepare(inputs, create_graph)
        is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided "
                                              "function", "jacobian")
        jac = []
        for i, out in enumerate(outputs):
            rows = [[] for _ in inputs]
            # (0-dim outputs are used as they are: they need no flattening)
            flat = (out,) if out.dim() == 0 else out.reshape(-1)
            for k in range(out.numel()):
                grads = _grad((flat[k],), inputs, None, create_graph)
                for j, (g, x) in enumerate(zip(grads, inputs)):
                    if g is None:
                        if strict:
                            raise AutogradError(f"Output {i} of the user-provided function is "
                                               f"independent of input {j}. This is not "
                                               f"allowed in strict mode.")
                        g = _zeros_for_none((None,), (x,))[0]
                    rows[j].append(g)
            per_input = []
            for j, x in enumerate(inputs):
                shape = tuple(out.shape) + tuple(x.shape)
                if rows[j]:
                    block = _stack(rows[j], x).view(shape)
                else:
                    block = _zeros_like_shape(shape, x)
                per_input.append(block)
            jac.append(_finish(per_input, create_graph))
    if is_outputs_tuple:
        return tuple(_untuple(row, is_inputs_tuple) for row in jac)
    return _untuple(jac[0], is_inputs_tuple)


def _zeros_like_shape(shape, x):
    return factory.zeros(shape, dtype=x.dtype, device=x.device)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False):
    """The Hessian of a scalar function: the Jacobian of its gradient."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")

    def scalar_func(*inp):
        out = func(*inp)
        if not _is_tensor(out):
            raise AutogradError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise AutogradError("The Tensor returned by the function given to hessian should "
                               "contain a single element")
        return out.reshape(())

    def gradient(*inp):
        return jacobian(scalar_func, inp, create_graph=True, strict=strict)

    res = jacobian(gradient, inputs, create_graph=create_graph, strict=strict)
    if is_inputs_tuple:
        return res
    return res[0][0]


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H) of a scalar function."""
    return _hessian_product(func, inputs, v, create_graph, strict, "vhp")


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v) of a scalar function (a double backward)."""
    return _hessian_product(func, inputs, v, create_graph, strict, "hvp")


def _hessian_product(func, inputs, v, create_graph, strict, name):
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", name)
        inputs = _prepare(inputs, create_graph)
        if v is not None:
            _, v = _as_tuple(v, "v", name)
        elif len(inputs) != 1 or inputs[0].numel() != 1:
            raise AutogradError("The vector v can only be None if the input to the "
                               "user-provided function is a single Tensor with a single "
                               "element.")
        is_out_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided "
                                          "function", name)
        if is_out_tuple or outputs[0].numel() != 1:
            raise AutogradError(f"The function given to {name} should return a single Tensor "
                               f"with a single element")
        first = _grad(outputs, inputs, None, create_graph=True)
        if name == "vhp":
            grads = _grad(first, inputs, v, create_graph)
        else:
            dummies = tuple(factory.zeros_like(x, requires_grad=True) for x in inputs)
            back = _grad(first, inputs, dummies, create_graph=True)
            grads = _grad(back, dummies, v, create_graph)
        _check_strict(strict, grads, name)
        result = _zeros_for_none(grads, inputs)
    return (_finish(outputs, create_graph)[0],
            _untuple(_finish(result, create_graph), is_inputs_tuple))


def _check_strict(strict, grads, name):
    if strict:
        for i, g in enumerate(grads):
            if g is None:
                raise AutogradError(f"The output of the user-provided function is independent "
                                   f"of input {i}. This is not allowed in strict mode ({name}).")
