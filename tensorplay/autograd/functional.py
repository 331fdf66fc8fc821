"""Whole-function derivatives built on `grad`: vjp, jvp, jacobian, hessian, vhp, hvp.

Same signatures and return structure as torch.autograd.functional: a function of a
Tensor (or a tuple of Tensors) gives Tensors (or tuples) back.

    jacobian(f, x)[i..., j...] = d f(x)[i...] / d x[j...]       shape f(x).shape + x.shape
    hessian(f, x) = jacobian(jacobian of f, x), f scalar-valued

`vjp`, `vhp` and the reverse-mode `jacobian` (one backward pass per output element) run
on the graph; `jvp` runs forward mode (forward_ad.py: dual tensors, one pass), `hvp`
forward over reverse (the gradient computed on dual inputs carries H v as its tangent),
and `jacobian(..., vectorize=True, strategy="forward-mode")` is tp.func.jacfwd's.
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
    """(func(inputs), J v): the Jacobian-vector product, by forward mode. With
    create_graph, both are differentiable with respect to `inputs` (the tangent's
    computation is recorded like any other op's)."""
    from tensorplay.autograd import forward_ad as fwAD
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _prepare(inputs, create_graph)
        if v is not None:
            _, v = _as_tuple(v, "v", "jvp")
            _check_v(v, inputs, "jvp")
        elif len(inputs) != 1 or inputs[0].numel() != 1:
            raise AutogradError("The vector v can only be None if the input to the "
                               "user-provided function is a single Tensor with a single "
                               "element.")
        else:
            v = (factory.ones_like(inputs[0]),)
        with fwAD.dual_level():
            duals = tuple(fwAD.make_dual(x, t) for x, t in zip(inputs, v))
            is_outputs_tuple, outputs = _as_tuple(func(*duals), "outputs of the "
                                                  "user-provided function", "jvp")
            unpacked = [fwAD.unpack_dual(o) for o in outputs]
        outputs = tuple(u.primal for u in unpacked)
        grads = tuple(u.tangent for u in unpacked)
        if strict and any(g is None for g in grads):
            i = next(k for k, g in enumerate(grads) if g is None)
            raise AutogradError(f"The output {i} of the user-provided function is "
                               f"independent of the inputs. This is not allowed in strict "
                               f"mode (jvp).")
        result = _zeros_for_none(grads, outputs)
    return (_untuple(_finish(outputs, create_graph), is_outputs_tuple),
            _untuple(_finish(result, create_graph), is_outputs_tuple))


def _check_v(v, inputs, name):
    if len(v) != len(inputs):
        raise AutogradError(f"The given v should contain a single Tensor for each input "
                           f"of {name}: got {len(v)} for {len(inputs)} inputs")
    for i, (t, x) in enumerate(zip(v, inputs)):
        if tuple(t.shape) != tuple(x.shape):
            raise AutogradError(f"Entry {i} in v has invalid size: should be "
                               f"{tuple(x.shape)} but got {tuple(t.shape)}.")


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian of `func` at `inputs`: one backward pass per output element, or with
    vectorize=True and strategy="forward-mode" tp.func.jacfwd's single forward pass over
    a batch of tangents (the better choice when inputs are fewer than outputs)."""
    if strategy not in ("reverse-mode", "forward-mode"):
        raise AutogradError(f'Expected strategy to be either "forward-mode" or '
                           f'"reverse-mode". Hint: If your strategy is "backward-mode", '
                           f'use "reverse-mode" instead. Got {strategy!r}')
    if strategy == "forward-mode":
        if not vectorize:
            raise NotImplementedError("torch.autograd.functional.jacobian: `strategy=\"forward-"
                                      "mode\"` only works with `vectorize=True` at the moment.")
        if create_graph:
            raise NotImplementedError("torch.autograd.functional.jacobian: `create_graph=True` "
                                      "and `strategy=\"forward-mode\"` are not supported "
                                      "together (yet).")
        return _forward_jacobian(func, inputs)
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


# tp.func's jacfwd and hessian (forward mode over vmap): tensorplay.func sits above autograd
# and hands them over here as it loads.
func_transforms = None


def _forward_jacobian(func, inputs):
    jacfwd = func_transforms.jacfwd
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    argnums = tuple(range(len(inputs)))
    jac = jacfwd(func, argnums=argnums)(*inputs)
    out = func(*inputs)
    if isinstance(out, tuple):
        return tuple(_untuple(tuple(row), is_inputs_tuple) for row in jac)
    return _untuple(tuple(jac), is_inputs_tuple)


def _zeros_like_shape(shape, x):
    return factory.zeros(shape, dtype=x.dtype, device=x.device)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar function: the Jacobian of its gradient (with
    vectorize=True and outer_jacobian_strategy="forward-mode", forward over reverse:
    tp.func.hessian)."""
    if outer_jacobian_strategy == "forward-mode" and vectorize and not create_graph:
        func_hessian = func_transforms.hessian
        is_tuple, xs = _as_tuple(inputs, "inputs", "hessian")
        h = func_hessian(lambda *a: func(*a).reshape(()),
                         argnums=tuple(range(len(xs))))(*xs)
        return tuple(tuple(row) for row in h) if is_tuple else h[0][0]
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
    """vhp: the gradient's vjp in the direction v (reverse over reverse). hvp: forward over
    reverse, the gradient computed on dual inputs whose tangent is v carries H v as its
    own tangent (for a scalar function H is symmetric, so vhp and hvp agree)."""
    from tensorplay.autograd import forward_ad as fwAD
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", name)
        inputs = _prepare(inputs, create_graph)
        if v is not None:
            _, v = _as_tuple(v, "v", name)
            _check_v(v, inputs, name)
        elif len(inputs) != 1 or inputs[0].numel() != 1:
            raise AutogradError("The vector v can only be None if the input to the "
                               "user-provided function is a single Tensor with a single "
                               "element.")
        else:
            v = (factory.ones_like(inputs[0]),)
        if name == "vhp":
            outputs = _scalar_output(func(*inputs), name)
            first = _grad(outputs, inputs, None, create_graph=True)
            grads = _grad(first, inputs, v, create_graph)
        else:
            with fwAD.dual_level():
                duals = tuple(fwAD.make_dual(x, t) for x, t in zip(inputs, v))
                outputs = _scalar_output(func(*duals), name)
                first = _grad(outputs, duals, None, create_graph=True)
                grads = tuple(None if g is None else fwAD.unpack_dual(g).tangent
                              for g in first)
                outputs = (fwAD.unpack_dual(outputs[0]).primal,)
        _check_strict(strict, grads, name)
        result = _zeros_for_none(grads, inputs)
    return (_finish(outputs, create_graph)[0],
            _untuple(_finish(result, create_graph), is_inputs_tuple))


def _scalar_output(out, name):
    is_out_tuple, outputs = _as_tuple(out, "outputs of the user-provided function", name)
    if is_out_tuple or outputs[0].numel() != 1:
        raise AutogradError(f"The function given to {name} should return a single Tensor "
                           f"with a single element")
    return outputs


def _check_strict(strict, grads, name):
    if strict:
        for i, g in enumerate(grads):
            if g is None:
                raise AutogradError(f"The output of the user-provided function is independent "
                                   f"of input {i}. This is not allowed in strict mode ({name}).")
