"""Forward-mode AD across the OpInfo database: every op's tangent equals PyTorch's.

For each sample (float64 on the CPU, and complex128 where the entry takes it), every
input that would require grad becomes a dual tensor with a random tangent, in
TensorPlay (`tp.autograd.forward_ad`) and in PyTorch (`torch.autograd.forward_ad`) alike;
the outputs' tangents must agree. A sample PyTorch has no forward formula for is skipped
(the acceptance covers the ops that have one in PyTorch); TensorPlay must then have one
too. The in-place form (`add_`) is checked the same way on a copy of the input.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.autograd.forward_ad as tfw

import tensorplay as tp
import tensorplay.autograd.forward_ad as fw
from opinfo import op_db
from opinfo.core import REPO, DEFAULT_TOLERANCES, assert_close, make_tensor, rng_for, to_torch

# Ops whose samples PyTorch answers with a tangent and TensorPlay deliberately does not
# match, with the reason.
KNOWN = {
    # op(A) X = b reads one triangle of A: its derivative takes dA's triangle, transposed
    # with op (finite differences agree); PyTorch's triangular_solve_jvp uses the whole dA
    # as it is.
    "triangular_solve": "PyTorch's tangent ignores the triangle and the transpose",
    # (F F^H)^-1 has the derivative -X (dF F^H + F dF^H) X (finite differences agree);
    # PyTorch's cholesky_inverse_jvp computes -X dF X F^H + its adjoint.
    "cholesky_inverse": "PyTorch's tangent is not the derivative of (F F^H)^-1",
}

# Samples where PyTorch's tangent is not the derivative, checked against central finite
# differences of TensorPlay's own op instead: op name -> (which samples, why).
AGAINST_FINITE_DIFFERENCES = {
    # PyTorch's logcumsumexp_jvp divides cumsums of exp(x - max) t and exp(x - max) +
    # 1e-13: an entry far below its row's max gets a damped tangent (x = [-30, 0, 1]:
    # 0.077 for the first, whose derivative is its own t, 0.3), and a row with +inf gives
    # 0 before it. TensorPlay's is the derivative, in log space (formulas/scan.py).
    # ldexp(x, n) = x * 2 ** n: PyTorch's tangent takes 2 ** n in n's integer dtype,
    # 0 for a negative n (ldexp(1.5, -2) has tangent 0 there, for the derivative 0.25)
    "ldexp": (lambda sample: isinstance(sample.args[0], tp.Tensor)
              and not sample.args[0].dtype.is_floating_point
              and not sample.args[0].dtype.is_complex and bool((sample.args[0] < 0).any()),
              "PyTorch's tangent computes 2 ** n in n's integer dtype: 0 for n < 0"),
    "logcumsumexp": (lambda sample: _far_below_the_max(sample.input),
                     "PyTorch's 1e-13 guard damps the tangent of entries far below the max"),
}


# x ** c with one of x, c complex and the other real with a tangent: the result and its
# tangent are complex; PyTorch's pow_backward_self and pow_backward_exponent keep the real
# part of a real input's derivative (handle_r_to_c), which its tangent formula inherits
# (seed 264421: complex64 ** float64, the exponent's term loses its imaginary part; seed
# 2089971: float32 ** (1.5-0.5j), PyTorch's tangent 0.0914+0j, finite differences
# 0.0914-0.0047j). Every spelling of pow goes through it: pow, pow.scalar, pow.number_base
# (number ** tensor), and the in-place entries, whose op is pow(x, e) out of place (pow_
# is called only for the equality test; seed 5085251: float64 ** complex64 through
# pow.inplace, PyTorch's tangent -0.0399-0j, finite differences -0.0399-0.1512j).
# float_power is not listed: it computes in complex128 first, and its tangent agrees
# with finite differences.
for _name in ("pow", "pow.scalar", "pow.number_base", "pow.inplace", "pow.inplace_scalar"):
    AGAINST_FINITE_DIFFERENCES[_name] = (
        lambda sample: _real_input_of_a_complex_result(sample.input, *sample.args),
        "PyTorch keeps the real part of a real input's complex tangent")


def _far_below_the_max(x):
    """A real tensor holding +inf or finite values more than 10 apart (closer, PyTorch's
    guard moves a tangent by 1e-13 * e**10 = 2e-9 relative at most, under any tolerance)."""
    if x.dtype.is_complex or x.numel() == 0:
        return False
    a = x.detach().cpu().numpy().astype(float)
    finite = a[np.isfinite(a)]
    return bool(np.isposinf(a).any() or (finite.size and finite.max() - finite.min() > 10))


def _real_input_of_a_complex_result(*inputs):
    """A real tensor that requires grad among inputs of which one is complex (a complex
    tensor or a complex Python number): a complex result."""
    tensors = [t for t in inputs if isinstance(t, tp.Tensor)]
    return (any(isinstance(t, complex) or isinstance(t, tp.Tensor) and t.dtype.is_complex
                for t in inputs)
            and any(t.requires_grad and not t.dtype.is_complex for t in tensors))

_DTYPES = (tp.float64, tp.complex128)


def _params():
    out = []
    for op in op_db:
        if not op.supports_autograd or op.mutates_input:
            continue
        for dtype in _DTYPES:
            if dtype in op.dtypes and dtype in op.grad_dtypes:
                marks = [pytest.mark.xfail(reason=KNOWN[op.full_name], strict=True)] \
                    if op.full_name in KNOWN else []
                out.append(pytest.param(op, dtype, id=f"{op.full_name}-{dtype.name}",
                                        marks=marks))
    return out


def _flat(value):
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _flat(v)]
    return [value]


def _map(fn, value):
    if isinstance(value, (tuple, list)):
        return type(value)(_map(fn, v) for v in value)
    if isinstance(value, dict):
        return {k: _map(fn, v) for k, v in value.items()}
    return fn(value)


def _torch_tangents(op, t_input, t_args, t_kwargs, tangents):
    """PyTorch's output tangents, or None where it has no forward formula."""
    it = iter(tangents)

    def dual(t):
        if isinstance(t, torch.Tensor) and t.requires_grad:
            primal = t.detach()
            if any(st == 0 and n > 1 for st, n in zip(primal.stride(), primal.shape)):
                primal = primal.clone()     # PyTorch refuses a tangent for an expand
            return tfw.make_dual(primal, to_torch(next(it)))
        return t
    with tfw.dual_level():
        args = _map(dual, (t_input, t_args, t_kwargs))
        try:
            out = op.ref(args[0], *args[1], **args[2])
        except (NotImplementedError, RuntimeError) as e:
            text = str(e)
            if ("forward AD" in text or "forward-mode" in text or "forward grad" in text
                    or "implement the jvp function" in text):
                return None     # (the last: a reference written as a Function without jvp)
            raise
        return [(tfw.unpack_dual(o).tangent if isinstance(o, torch.Tensor) else None)
                for o in _flat(out)]


def _tp_tangents(call, sample, tangents):
    it = iter(tangents)

    def dual(t):
        if isinstance(t, tp.Tensor) and t.requires_grad:
            return fw.make_dual(t.detach(), next(it))
        return t
    with fw.dual_level():
        s = sample.map_tensors(dual)
        out = call(s)
        return [(fw.unpack_dual(o).tangent if isinstance(o, tp.Tensor) else None)
                for o in _flat(out)]


def _finite_differences(call, sample, tangents, eps=1e-6):
    """(f(x + eps t) - f(x - eps t)) / 2 eps of TensorPlay's op, as torch tensors."""
    def shifted(sign):
        it = iter(tangents)

        def move(t):
            if isinstance(t, tp.Tensor) and t.requires_grad:
                return (t.detach() + sign * eps * next(it)).detach()
            return t
        return [o for o in _flat(call(sample.map_tensors(move)))]
    plus, minus = shifted(1), shifted(-1)
    return [torch.tensor(((p - m) / (2 * eps)).detach().numpy())
            if isinstance(p, tp.Tensor) else None for p, m in zip(plus, minus)]


@pytest.mark.parametrize("op, dtype", _params())
def test_tangents_match_torch(op, dtype):
    rng = rng_for("forward", op.full_name, dtype)
    checked = 0
    for sample in op.sample_inputs("cpu", dtype, requires_grad=True):
        leaves = [t for t in sample.tensors() if t.requires_grad]
        if not leaves:
            continue
        tangents = [make_tensor(t.shape, t.dtype, "cpu", rng=rng) for t in leaves]
        which, _ = AGAINST_FINITE_DIFFERENCES.get(op.full_name, (lambda s: False, ""))
        if which(sample):
            expected = _finite_differences(op.call, sample, tangents)
        else:
            t_sample = to_torch((sample.input, sample.args, sample.kwargs))
            expected = _torch_tangents(op, *t_sample, tangents)
        if expected is None:
            continue
        try:
            got = _tp_tangents(op.call, sample, tangents)
        except Exception as e:  # noqa: BLE001 - reported with the sample
            raise AssertionError(f"sample {sample!r} raised {type(e).__name__}: {e}") from e
        assert len(got) == len(expected), f"sample {sample!r}: {len(got)} outputs"
        for i, (g, e) in enumerate(zip(got, expected)):
            if e is None or not (e.dtype.is_floating_point or e.dtype.is_complex):
                continue
            if g is None:
                assert not e.abs().any(), \
                    f"sample {sample!r}: output {i} has no tangent, PyTorch's is non-zero"
                continue
            try:
                assert_close(g, e, op.tolerance(dtype) or DEFAULT_TOLERANCES[dtype],
                             where=f"tangent of output {i}")
            except AssertionError as err:
                raise AssertionError(f"sample {sample!r}:\n{err}") from None
        checked += 1
    if checked == 0:
        pytest.skip("no sample PyTorch has a forward formula for")


# Entries with a backward formula and no tangent formula, each with the reason. Every
# other entry of derivatives.yaml has one, written or derived.
NO_TANGENT = {
    "_lstm_sequence_backward": "a backward op whose own derivative is not implemented",
    "_gru_sequence_backward": "a backward op whose own derivative is not implemented",
    "_ctc_loss_backward": "a backward op whose own derivative is not implemented",
    "_scaled_dot_product_flash_attention_backward": "a backward op whose own derivative is "
                                                    "not implemented",
    "grid_sampler_2d_backward": "a backward op whose own derivative is not implemented",
    "grid_sampler_3d_backward": "a backward op whose own derivative is not implemented",
    "_fused_adam_": "an optimizer step, not differentiable (its backward refuses too)",
    "_fused_sgd_": "an optimizer step, not differentiable (its backward refuses too)",
    "geqrf": "no derivative in PyTorch either (Householder's compact form)",
    "_unique2": "no derivative in PyTorch either",
    "unique_dim": "no derivative in PyTorch either",
    "_unique_consecutive": "no derivative in PyTorch either",
    "linalg_ldl_factor_ex": "no derivative in PyTorch either (Bunch-Kaufman pivoting)",
    "linalg_ldl_solve": "no derivative in PyTorch either",
    "histogram.bin_ct": "no derivative in PyTorch either (its entry only marks both "
                        "outputs not implemented, as PyTorch's fallback does)",
    "histogram.bins_tensor": "no derivative in PyTorch either (as histogram.bin_ct)",
}


def test_every_op_with_a_backward_formula_has_a_tangent_formula():
    from tensorplay._generated.forward_formulas import FORWARD
    lines = (REPO / "derivatives.yaml").read_text().splitlines()
    missing = set()
    for tangent in FORWARD.values():
        if tangent.fn is None and tangent.inputs:
            line = lines[int(tangent.where.split(":")[1]) - 1]
            missing.add(line.removeprefix("- name: ").split("(")[0])
    assert missing == set(NO_TANGENT), (
        f"without a tangent formula: {sorted(missing - set(NO_TANGENT))}; "
        f"listed but now given one: {sorted(set(NO_TANGENT) - missing)}")
