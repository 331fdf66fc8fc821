"""gradcheck: compare the backward pass with finite differences.

For each input x_i that requires grad and each differentiable output y_o, two
Jacobians of shape (x_i.numel(), y_o.numel()) are built:

    numerical[k, :]  = (f(x + eps e_k) - f(x - eps e_k)) / (2 eps)       one per element k
    analytical[:, r] = grad(y_o, x_i, grad_outputs=e_r)                  one backward per r

and must agree within `atol + rtol * |numerical|`. Use float64 inputs: in float32 the
central difference alone is off by more than the tolerance.

gradgradcheck runs gradcheck on the function `(inputs, v) -> grad(f(inputs), inputs, v,
create_graph=True)`, which checks the second derivative (the backward of the backward).

Complex numbers are checked as pairs of real ones (`_real_form`): a complex input becomes
two real inputs, its real and imaginary parts, joined by `tp.complex` inside the checked
function, and a complex output becomes its `view_as_real`. The function of real numbers
has an ordinary Jacobian, and PyTorch's convention (z.grad = dL/dx + i dL/dy) is what
makes the gradient through `complex` and `view_as_real` agree with it, so any complex
formula that breaks the convention fails the real check.
"""
from __future__ import annotations

import warnings

import numpy as np

from tensorplay import _tensor_factory as factory
from tensorplay._generated import ops
from tensorplay.autograd.engine import grad as autograd_grad

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """The analytical gradient does not match the numerical one."""


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_grad_dtypes=False):
    """True if the gradients of `func` at `inputs` match finite differences.

    On a mismatch: raises GradcheckError naming the output and input, with both
    Jacobians (or returns False with `raise_exception=False`)."""
    inputs = inputs if isinstance(inputs, tuple) else \
        tuple(inputs) if isinstance(inputs, list) else (inputs,)
    func, inputs = _real_form(func, inputs)
    try:
        _check(func, inputs, eps, atol, rtol, nondet_tol, check_grad_dtypes)
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  raise_exception=True, nondet_tol=0.0, check_grad_dtypes=False, seed=0):
    """gradcheck of the backward of `func`: checks second derivatives.

    `grad_outputs` default to random float values in [-1, 1) that require grad (drawn
    from a fixed seed, so a failure reproduces)."""
    inputs = inputs if isinstance(inputs, tuple) else \
        tuple(inputs) if isinstance(inputs, list) else (inputs,)
    func, inputs = _real_form(func, inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(seed)
        grad_outputs = tuple(
            factory.tensor(rng.uniform(-1, 1, size=tuple(o.shape)), dtype=o.dtype,
                           device=o.device, requires_grad=True)
            for o in _differentiable_outputs(func(*inputs)))
    else:
        grad_outputs = grad_outputs if isinstance(grad_outputs, tuple) else \
            tuple(grad_outputs) if isinstance(grad_outputs, list) else (grad_outputs,)
        grad_outputs = tuple(_parts(v) if _is_complex(v) else v for v in grad_outputs)
    n_in = len(inputs)

    def first_derivative(*args):
        ins, vs = args[:n_in], args[n_in:]
        diff_ins = [x for x in ins if _is_tensor(x) and x.requires_grad]
        outputs = _differentiable_outputs(func(*ins))
        grads = autograd_grad(outputs, diff_ins, vs, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_derivative, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_grad_dtypes=check_grad_dtypes)


def _is_tensor(x):
    return getattr(x, "_impl", None) is not None


def _is_complex(x):
    return _is_tensor(x) and x.dtype.is_complex


def _parts(z):
    """view_as_real(z), through its dispatcher handle (the front doors are a layer up)."""
    return ops.view_as_real.call(z._impl.keys, z)


def _make_complex(re, im):
    return ops.complex.call(re._impl.keys | im._impl.keys, re, im)


def _real_form(func, inputs):
    """(func, inputs) with every complex number split into its two parts (the module
    docstring says why); a function of real tensors is returned as it is."""
    if not any(_is_complex(x) for x in inputs) and \
            not any(_is_complex(o) for o in _as_tuple(func(*inputs))):
        return func, inputs
    real_inputs = []
    for x in inputs:
        if not _is_complex(x):
            real_inputs.append(x)
            continue
        for part in (x.real, x.imag):
            part = part.detach().clone()
            part.requires_grad_(x.requires_grad)
            real_inputs.append(part)

    def real_func(*args):
        args = iter(args)
        rebuilt = [_make_complex(next(args), next(args)) if _is_complex(x) else next(args)
                   for x in inputs]
        out = func(*rebuilt)
        outs = tuple(_parts(o) if _is_complex(o) else o for o in _as_tuple(out))
        return outs if isinstance(out, (tuple, list)) else outs[0]

    return real_func, tuple(real_inputs)


def _as_tuple(out):
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def _differentiable_outputs(out):
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return tuple(o for o in outs if _is_tensor(o) and o.requires_grad)


def _as_array(t):
    return np.asarray(t.detach().cpu(), dtype=np.float64).reshape(-1)


def _check(func, inputs, eps, atol, rtol, nondet_tol, check_grad_dtypes):
    diff_idx = [i for i, x in enumerate(inputs) if _is_tensor(x) and x.requires_grad]
    if not diff_idx:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, "
                         "but none of the them have requires_grad=True.")
    for i in diff_idx:
        if inputs[i].dtype.name != "float64":
            warnings.warn(f"Input #{i} requires gradient and is not a double precision "
                          f"floating point. This check will likely fail if all the inputs "
                          f"are not of double precision floating point.", stacklevel=3)
    outputs = func(*inputs)
    outs = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
    outs = tuple(o for o in outs if _is_tensor(o) and o.dtype.is_floating_point)
    numerical = _numerical_jacobians(func, inputs, diff_idx, eps)
    diff_inputs = [inputs[i] for i in diff_idx]
    for o, out in enumerate(outs):
        analytical = _analytical_jacobians(out, diff_inputs, check_grad_dtypes)
        for j, (a, n) in enumerate(zip(analytical, numerical[o])):
            if not np.allclose(a, n, rtol=rtol, atol=atol):
                raise GradcheckError(_mismatch_message(o, j, n, a))
        again = _analytical_jacobians(out, diff_inputs, check_grad_dtypes)
        for a, b in zip(analytical, again):
            if a.size and np.max(np.abs(a - b)) > nondet_tol:
                raise GradcheckError(
                    "Backward is not reentrant, i.e., running backward with same input and "
                    "grad_output multiple times gives different values, although analytical "
                    "gradient matches numerical gradient. The tolerance for nondeterminism "
                    f"was {nondet_tol}.")


def _mismatch_message(o, j, numerical, analytical):
    bad = np.argwhere(~np.isclose(analytical, numerical, rtol=1e-3, atol=1e-5))
    where = f" (first mismatch at input element {bad[0][0]}, output element {bad[0][1]})" \
        if len(bad) else ""
    return (f"Jacobian mismatch for output {o} with respect to input {j},{where}\n"
            f"numerical:{factory.tensor(numerical)!r}\n"
            f"analytical:{factory.tensor(analytical)!r}\n")


def _rebuilt(x, flat):
    """A new leaf with the values `flat`, x's shape/dtype/device and requires_grad."""
    t = factory.tensor(flat.reshape(tuple(x.shape)), dtype=x.dtype, device=x.device)
    if x.requires_grad:
        t.requires_grad_(True)
    return t


def _numerical_jacobians(func, inputs, diff_idx, eps):
    """numerical[o][j]: (input j numel, output o numel) by central differences. Each
    perturbed input is a fresh tensor, so nothing the function saved is mutated."""
    def evaluate(args):
        out = func(*args)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        return [_as_array(t) for t in outs if _is_tensor(t) and t.dtype.is_floating_point]

    sizes = [f.size for f in evaluate(inputs)]
    jacobians = [[np.zeros((inputs[i].numel(), m)) for i in diff_idx] for m in sizes]
    for j, i in enumerate(diff_idx):
        x = inputs[i]
        base = np.array(np.asarray(x.detach().cpu()), dtype=np.float64).reshape(-1)
        for k in range(base.size):
            args = list(inputs)
            plus, minus = base.copy(), base.copy()
            plus[k] += eps
            minus[k] -= eps
            args[i] = _rebuilt(x, plus)
            f_plus = evaluate(args)
            args[i] = _rebuilt(x, minus)
            f_minus = evaluate(args)
            for o, (p, m) in enumerate(zip(f_plus, f_minus)):
                jacobians[o][j][k] = (p - m) / (2 * eps)
    return jacobians


def _analytical_jacobians(out, inputs, check_grad_dtypes):
    """One (input numel, output numel) matrix per input: column r is the gradient of
    output element r, from one backward pass with a one-hot grad_output."""
    n_out = out.numel()
    jacs = [np.zeros((x.numel(), n_out)) for x in inputs]
    if not out.requires_grad:
        return jacs
    for r in range(n_out):
        onehot = np.zeros(n_out)
        onehot[r] = 1.0
        v = factory.tensor(onehot.reshape(tuple(out.shape)), dtype=out.dtype, device=out.device)
        grads = autograd_grad(out, inputs, v, retain_graph=True, allow_unused=True)
        for jac, x, g in zip(jacs, inputs, grads):
            if g is None:
                continue
            if check_grad_dtypes and g.dtype is not x.dtype:
                raise GradcheckError(f"Gradient has dtype mismatch: input dtype {x.dtype}, "
                                     f"gradient dtype {g.dtype}")
            jac[:, r] = _as_array(g)
    return jacs
