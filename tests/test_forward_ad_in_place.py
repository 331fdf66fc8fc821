"""Tangents the OpInfo sweep (test_forward_ad_ops.py) does not reach: the in-place-only
entries of derivatives.yaml (`fill_`, `copy_`, the draws, the in-place comparisons), whose
formula returns self's new tangent, and the ops PyTorch has no tangent formula for.

Each case runs in TensorPlay and, where PyTorch has a formula, in PyTorch on the same
values and tangents; otherwise the expected tangent is a central difference of the
out-of-place op (or zeros, for a random draw).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.autograd.forward_ad as tfw

import tensorplay as tp
import tensorplay.autograd.forward_ad as fw
from tensorplay._generated import functional as F

_rng = np.random.default_rng(7)
X = _rng.uniform(0.5, 2.0, (3, 4))      # positive primals
Y = _rng.uniform(0.5, 2.0, (3, 4))
TX = _rng.standard_normal((3, 4))       # tangents
TY = _rng.standard_normal((3, 4))


def _tp_tangent(fn, primals, tangents):
    with fw.dual_level():
        args = [fw.make_dual(tp.tensor(p), tp.tensor(t)) if t is not None else tp.tensor(p)
                for p, t in zip(primals, tangents)]
        return fw.unpack_dual(fn(*args)).tangent.numpy()


def _torch_tangent(fn, primals, tangents):
    with tfw.dual_level():
        args = [tfw.make_dual(torch.tensor(p), torch.tensor(t)) if t is not None
                else torch.tensor(p) for p, t in zip(primals, tangents)]
        return tfw.unpack_dual(fn(*args)).tangent.numpy()


def _central_difference(fn, primals, tangents, eps=1e-6):
    def at(sign):
        return fn(*[tp.tensor(p + sign * eps * t if t is not None else p)
                    for p, t in zip(primals, tangents)]).numpy()
    return (at(1) - at(-1)) / (2 * eps)


def _method(name, *args, **kwargs):
    """`self.clone().<name>(*args)`, for TensorPlay and PyTorch alike (the clone keeps
    the in-place op off the dual input itself)."""
    return lambda a, *rest: getattr(a.clone(), name)(*rest, *args, **kwargs)


# (id, fn for both libraries, primals, tangents)
AGAINST_TORCH = [
    *[(m, _method(m), [X, Y], [TX, TY]) for m in ("eq_", "ne_", "lt_", "le_", "gt_", "ge_")],
    *[(name, _method(name.split(".")[0], *a), [X], [TX]) for name, a in [
        ("normal_", ()), ("uniform_", ()), ("exponential_", ()), ("cauchy_", ()),
        ("log_normal_", ()), ("geometric_", (0.3,)), ("random_", ()), ("random_.to", (5,)),
        ("random_.from", (1, 5)), ("bernoulli_.float", (0.5,))]],
    ("bernoulli_.Tensor", _method("bernoulli_"), [X, Y / 3], [TX, None]),
    ("fill_", _method("fill_", 2.0), [X], [TX]),
    ("copy_", _method("copy_"), [X, Y], [TX, TY]),
    ("copy_.broadcast", _method("copy_"), [X, Y[0]], [TX, TY[0]]),
    ("copy_.src_without_tangent", _method("copy_"), [X, Y], [TX, None]),
    ("polygamma_", _method("polygamma_", 1), [X], [TX]),
    ("pow_", _method("pow_"), [X, Y], [TX, TY]),
    # a negative base and an exponent with no tangent: 0 * log(self) must not be NaN
    ("pow_.constant_exponent", _method("pow_"), [-X, np.full((3, 4), 2.0)], [TX, None]),
    ("pow.constant_exponent", lambda a, b: a ** b, [-X, np.full((3, 4), 3.0)], [TX, None]),
    ("conj_physical_", _method("conj_physical_"), [X + 1j * Y], [TX + 1j * TY]),
]


@pytest.mark.parametrize("fn, primals, tangents",
                         [pytest.param(*c[1:], id=c[0]) for c in AGAINST_TORCH])
def test_tangent_matches_torch(fn, primals, tangents):
    got = _tp_tangent(fn, primals, tangents)
    np.testing.assert_allclose(got, _torch_tangent(fn, primals, tangents), rtol=1e-10, atol=1e-12)


# Ops PyTorch has no tangent formula for: (id, TensorPlay fn, out-of-place reference, primals,
# tangents). Primals keep off the kinks and jumps, so the difference is the derivative.
AGAINST_DIFFERENCES = [
    ("acosh_", _method("acosh_"), F.acosh, [X + 1], [TX]),
    ("asinh_", _method("asinh_"), F.asinh, [X - 1], [TX]),
    ("atanh_", _method("atanh_"), F.atanh, [X / 3], [TX]),
    ("silu_backward", F.silu_backward, F.silu_backward, [Y, X - 1], [TY, TX]),
    ("floor_divide", F.floor_divide, F.floor_divide, [X * 5 + 0.05, Y], [TX, TY]),
    ("remainder.Scalar_Tensor", lambda b: tp.remainder(5.0, b), lambda b: tp.remainder(5.0, b),
     [Y], [TY]),
]


@pytest.mark.parametrize("fn, reference, primals, tangents",
                         [pytest.param(*c[1:], id=c[0]) for c in AGAINST_DIFFERENCES])
def test_tangent_matches_central_difference(fn, reference, primals, tangents):
    got = _tp_tangent(fn, primals, tangents)
    np.testing.assert_allclose(got, _central_difference(reference, primals, tangents),
                               rtol=1e-6, atol=1e-6)


def test_heaviside_tangent_is_values_tangent_where_self_is_zero():
    """heaviside(x, v) is v where x == 0 (a jump no difference can take), flat elsewhere."""
    x = np.array([0.0, 1.5, -2.0, 0.0])
    got = _tp_tangent(F.heaviside, [x, np.full(4, 0.5)], [np.ones(4), np.arange(1.0, 5.0)])
    np.testing.assert_array_equal(got, [1.0, 0.0, 0.0, 4.0])


@pytest.mark.parametrize("draw", [
    pytest.param(lambda p: F.bernoulli(p, 0.5), id="bernoulli.p"),
    pytest.param(lambda p: F.binomial(tp.full(p.shape, 4.0, dtype=tp.float64), p),
                 id="binomial")])
def test_a_random_draw_has_a_zero_tangent(draw):
    np.testing.assert_array_equal(_tp_tangent(draw, [Y / 3], [TY]), np.zeros((3, 4)))
