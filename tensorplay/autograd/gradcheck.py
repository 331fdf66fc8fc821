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

from tensorplay import _dtype as dt
from tensorplay import _tensor_factory as factory
from tensorplay._generated import ops
from tensorplay.autograd import forward_ad
from tensorplay.autograd.engine import grad as autograd_grad
from tensorplay.errors import NotBuiltYetError

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]

# tp.func.vmap, for check_batched_grad. vmap is built on the autograd engine, above this
# module, so tensorplay/func/__init__.py hands it over when it loads (as it hands the
# engine its batched_grad) instead of this module importing upward.
vmap = None


class GradcheckError(RuntimeError):
    """The analytical gradient does not match the numerical one."""


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False,
              check_forward_ad=False, check_backward_ad=True, fast_mode=False, masked=None):
    """True if the gradients of `func` at `inputs` match finite differences.

    On a mismatch: raises GradcheckError naming the output and input, with both
    Jacobians (or returns False with `raise_exception=False`). PyTorch's arguments:

        check_undefined_grad  backward copes with outputs that receive no gradient
        check_batched_grad    vmap over backward gives the per-grad_output results
        fast_mode             compare v^T J u for random u, v, not whole Jacobians
        check_backward_ad     False skips every backward check (nothing is left here)
        check_forward_ad      the Jacobian by forward mode (one jvp per input element,
                              forward_ad.py) against the same finite differences
        check_batched_forward_grad  those jvps as one batch of tangents under vmap
        masked                sparse inputs' gradients only on their stored elements:
                              dense inputs only here, so it changes nothing
    """
    if not (check_forward_ad or check_backward_ad):
        raise AssertionError("Expected at least one of check_forward_ad or check_backward_ad "
                             "to be True")
    if check_batched_grad and not check_backward_ad:
        raise AssertionError("Setting check_batched_grad=True requires check_backward_ad to "
                             "be True")
    if check_batched_forward_grad and not check_forward_ad:
        raise AssertionError("Setting check_batched_forward_grad=True requires "
                             "check_forward_ad to be True")
    inputs = inputs if isinstance(inputs, tuple) else \
        tuple(inputs) if isinstance(inputs, list) else (inputs,)
    if any(_is_tensor(x) and x.is_sparse for x in inputs):
        raise NotBuiltYetError("gradcheck(): sparse inputs are not supported (masked or "
                               "not); pass x.to_dense()", op="gradcheck", arg="inputs")
    func, inputs = _real_form(func, inputs)
    try:
        if check_backward_ad and fast_mode:
            _check_fast(func, inputs, eps, atol, rtol)
        elif check_backward_ad:
            _check(func, inputs, eps, atol, rtol, nondet_tol, check_grad_dtypes)
        if check_forward_ad:
            _check_forward(func, inputs, eps, atol, rtol, check_batched_forward_grad)
        if check_batched_grad:
            _check_batched_grad(func, inputs)
        if check_undefined_grad and check_backward_ad:
            _check_undefined_grad(func, inputs)
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False,
                  check_batched_grad=False, check_fwd_over_rev=False,
                  check_rev_over_rev=True, fast_mode=False, masked=False):
    """gradcheck of the backward of `func`: checks second derivatives.

    `grad_outputs` default to random values in [-1, 1) that require grad, drawn from the
    global generator as PyTorch draws them (torch.testing.make_tensor, one output after
    the other), so `tp.manual_seed` decides them and every later random number matches a
    PyTorch program's. gen_non_contig_grad_outputs makes them non-contiguous (make_tensor's
    noncontiguous: every other element of a tensor twice as long in its last dim)."""
    if not (check_fwd_over_rev or check_rev_over_rev):
        raise AssertionError("Expected at least one of check_fwd_over_rev or "
                             "check_rev_over_rev to be True")
    if check_undefined_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_undefined_grad=True requires check_rev_over_rev "
                             "to be True")
    if check_batched_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_batched_grad=True requires check_rev_over_rev "
                             "to be True")
    inputs = inputs if isinstance(inputs, tuple) else \
        tuple(inputs) if isinstance(inputs, list) else (inputs,)
    if grad_outputs is None:
        # Drawn on the outputs as `func` returns them (a complex one as complex, as
        # PyTorch does), before the real form splits them into parts.
        grad_outputs = tuple(_random_grad_output(o, gen_non_contig_grad_outputs)
                             for o in _differentiable_outputs(func(*inputs)))
    else:
        grad_outputs = grad_outputs if isinstance(grad_outputs, tuple) else \
            tuple(grad_outputs) if isinstance(grad_outputs, list) else (grad_outputs,)
    grad_outputs = tuple(_parts(v) if _is_complex(v) else v for v in grad_outputs)
    func, inputs = _real_form(func, inputs)
    n_in = len(inputs)

    def first_derivative(*args):
        ins, vs = args[:n_in], args[n_in:]
        diff_ins = [x for x in ins if _is_tensor(x) and x.requires_grad]
        outputs = _differentiable_outputs(func(*ins))
        grads = autograd_grad(outputs, diff_ins, vs, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_derivative, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes,
                     check_batched_grad=check_batched_grad, fast_mode=fast_mode,
                     masked=masked, check_forward_ad=check_fwd_over_rev,
                     check_backward_ad=check_rev_over_rev)


def _random_grad_output(out, noncontiguous):
    """tp.testing.make_tensor(out.shape, dtype=out's (float64 if not floating or
    complex), low=-1, high=1, requires_grad=True, noncontiguous=...): its floating and
    complex branch, draw for draw (a complex tensor draws its (re, im) pairs in order)."""
    dtype = out.dtype if out.dtype.is_differentiable else dt.float64
    shape = tuple(out.shape)
    noncontiguous = noncontiguous and int(np.prod(shape, dtype=np.int64)) > 1
    if noncontiguous:
        shape = shape[:-1] + (2 * shape[-1],)
    result = factory.empty(shape, dtype=dtype, device=out.device)
    (_parts(result) if dtype.is_complex else result).uniform_(-1, 1)
    if noncontiguous:
        result = result[..., 1::2]      # offset by one, as make_tensor, to catch offsets
    return result.requires_grad_(True)


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


def _check_fast(func, inputs, eps, atol, rtol):
    """fast_mode: per input j and output o, one number each way instead of a Jacobian:
    v^T J u, with u a random direction in the input's space and v a random weighting of
    the output (both drawn from the global generator). The central difference along u
    gives J u numerically; one backward pass with grad_output v gives v^T J."""
    diff_idx = [i for i, x in enumerate(inputs) if _is_tensor(x) and x.requires_grad]
    if not diff_idx:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, "
                         "but none of the them have requires_grad=True.")
    outs = [o for o in _as_tuple(func(*inputs))
            if _is_tensor(o) and o.dtype.is_floating_point]
    vs = [_as_array(factory.empty(tuple(o.shape), dtype=dt.float64).uniform_(0, 1))
          for o in outs]
    for j, i in enumerate(diff_idx):
        x = inputs[i]
        u = _as_array(factory.empty(tuple(x.shape), dtype=dt.float64).uniform_(0, 1))
        base = np.array(np.asarray(x.detach().cpu()), dtype=np.float64).reshape(-1)
        shifted = []
        for sign in (1, -1):
            args = list(inputs)
            args[i] = _rebuilt(x, base + sign * eps * u)
            shifted.append([_as_array(o) for o in _as_tuple(func(*args))
                            if _is_tensor(o) and o.dtype.is_floating_point])
        for o, (out, v) in enumerate(zip(outs, vs)):
            numerical = float(v @ ((shifted[0][o] - shifted[1][o]) / (2 * eps)))
            analytical = 0.0
            if out.requires_grad:
                weight = factory.tensor(v.reshape(tuple(out.shape)), dtype=out.dtype,
                                        device=out.device)
                g, = autograd_grad(out, [x], weight, retain_graph=True, allow_unused=True)
                analytical = 0.0 if g is None else float(_as_array(g) @ u)
            if not np.isclose(analytical, numerical, rtol=rtol, atol=atol):
                raise GradcheckError(
                    f"Jacobian mismatch for output {o} with respect to input {j},\n"
                    f"numerical:{numerical!r}\nanalytical:{analytical!r}\n\n"
                    f"The above quantities relating the numerical and analytical jacobians "
                    f"are computed in fast mode (v^T J u for random u and v); run with "
                    f"fast_mode=False to see the whole Jacobians.")


def _check_batched_grad(func, inputs):
    """check_batched_grad: backward under vmap, over two random grad_outputs at once,
    equals the two backward passes one by one (PyTorch's _test_batched_grad)."""
    diff_ins = [x for x in inputs if _is_tensor(x) and x.requires_grad]
    for o, out in enumerate(_differentiable_outputs(func(*inputs))):
        def vjp(v, out=out):
            grads = autograd_grad(out, diff_ins, v, retain_graph=True, allow_unused=True)
            return tuple(factory.zeros(tuple(x.shape), dtype=x.dtype, device=x.device)
                         if g is None else g for g, x in zip(grads, diff_ins))
        vs = [factory.empty(tuple(out.shape), dtype=out.dtype, device=out.device).normal_()
              for _ in range(2)]
        expected = [np.stack([_as_array(g) for g in shards])
                    for shards in zip(*(vjp(v) for v in vs))]
        batch = vs[0].new_empty((2,) + tuple(out.shape))
        for k, v in enumerate(vs):
            batch[k].copy_(v)
        try:
            result = vmap(vjp)(batch)     # vmap: handed over by tensorplay.func
        except Exception as ex:   # any failure of the batched backward is the finding
            raise GradcheckError(f"While computing batched gradients, got: {ex}") from ex
        for j, (res, exp) in enumerate(zip(result, expected)):
            if not np.allclose(_as_array(res), exp.reshape(-1)):
                raise GradcheckError(
                    f"For output {o} and input {j}:\n\nbackward under vmap gives "
                    f"different gradients from backward called once per grad_output.\n\n"
                    f"Got:\n{res!r}\n\nExpected:\n{factory.tensor(exp)!r}")


def _check_undefined_grad(func, inputs):
    """check_undefined_grad: a function of several outputs must backpropagate when some
    outputs get no gradient (PyTorch: an undefined grad) and the others zero: every input
    gradient is then None or zero. TensorPlay's engine never runs a backward that gets no
    gradient at all, so the case of every output undefined needs no check here; each
    output is left out of the backward in turn."""
    diff_ins = [x for x in inputs if _is_tensor(x) and x.requires_grad]
    n_outputs = len(_differentiable_outputs(func(*inputs)))
    for left_out in range(n_outputs if n_outputs > 1 else 0):
        outs = [o for k, o in enumerate(_differentiable_outputs(func(*inputs)))
                if k != left_out]
        zeros = [factory.zeros(tuple(o.shape), dtype=o.dtype, device=o.device) for o in outs]
        try:
            grads = autograd_grad(outs, diff_ins, zeros, allow_unused=True)
        except RuntimeError as e:
            raise GradcheckError("Expected backward function to handle undefined output "
                                 f"grads (output {left_out} got none).") from e
        for g in grads:
            if g is not None and np.any(_as_array(g) != 0):
                raise GradcheckError(
                    "Expected all input grads to be undefined or zero when all output "
                    f"grads are undefined or zero (output {left_out} got none, the others "
                    "zero).")


def _check_forward(func, inputs, eps, atol, rtol, batched):
    """check_forward_ad: the Jacobian by forward mode, column by column (the tangent of
    every output for a one-hot tangent of one input element), against finite
    differences; with `batched`, all the columns at once under vmap must agree too."""
    diff_idx = [i for i, x in enumerate(inputs) if _is_tensor(x) and x.requires_grad]
    if not diff_idx:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, "
                         "but none of the them have requires_grad=True.")
    numerical = _numerical_jacobians(func, inputs, diff_idx, eps)
    for j, i in enumerate(diff_idx):
        x = inputs[i]
        n = x.numel()
        basis = factory.tensor(np.eye(n).reshape((n,) + tuple(x.shape)), dtype=x.dtype,
                               device=x.device)

        def columns(tangent, i=i, x=x):
            with forward_ad.dual_level():
                args = list(inputs)
                args[i] = forward_ad.make_dual(x, tangent)
                outs = [o for o in _as_tuple(func(*args))
                        if _is_tensor(o) and o.dtype.is_floating_point]
                tangents = [forward_ad.unpack_dual(o).tangent for o in outs]
                return tuple(factory.zeros_like(forward_ad.unpack_dual(o).primal)
                             if t is None else t for o, t in zip(outs, tangents))
        per_column = [columns(basis[k]) for k in range(n)]
        for o in range(len(numerical)):
            forward = np.stack([_as_array(c[o]) for c in per_column]) if n else \
                numerical[o][j]
            if not np.allclose(forward, numerical[o][j], rtol=rtol, atol=atol):
                raise GradcheckError("Jacobian computed with forward mode mismatch for "
                                     + _mismatch_message(o, j, numerical[o][j], forward)
                                     .removeprefix("Jacobian mismatch for "))
            if batched and n:
                together = _as_array(vmap(lambda t: columns(t)[o])(basis)).reshape(n, -1)
                if not np.allclose(together, forward, rtol=rtol, atol=atol):
                    raise GradcheckError(f"While computing batched gradients, got: the "
                                         f"tangents of output {o} for input {j} under vmap "
                                         f"differ from the ones computed one at a time")


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
