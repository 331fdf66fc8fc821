"""tp.nn.functional activations against torch.nn.functional (PyTorch's signatures, the
`inplace=` flag), and the extreme inputs where a naive formula overflows."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import tensorplay as tp
import tensorplay.nn.functional as F

X = [-40.0, -3.0, -1.0, -0.25, 0.0, 0.5, 2.0, 3.0, 7.0, 40.0]

CALLS = [
    ("relu6", {}), ("leaky_relu", {"negative_slope": 0.1}), ("elu", {"alpha": 0.7}),
    ("selu", {}), ("celu", {"alpha": 1.5}), ("gelu", {}), ("gelu", {"approximate": "tanh"}),
    ("silu", {}), ("mish", {}), ("softplus", {"beta": 2.0, "threshold": 10.0}),
    ("softsign", {}), ("hardtanh", {"min_val": -2.0, "max_val": 2.5}), ("hardsigmoid", {}),
    ("hardswish", {}), ("threshold", {"threshold": 0.1, "value": -5.0}),
]


def _call(module, name, x, kwargs):
    if name == "threshold":   # positional in torch
        return module.threshold(x, kwargs["threshold"], kwargs["value"])
    return getattr(module, name)(x, **kwargs)


@pytest.mark.parametrize("name, kwargs", CALLS, ids=[f"{n}{k}" for n, k in CALLS])
def test_functional_matches_torch(name, kwargs):
    x = tp.tensor(X, dtype=tp.float64)
    expected = _call(TF, name, torch.tensor(X, dtype=torch.float64), kwargs)
    np.testing.assert_allclose(_call(F, name, x, kwargs).tolist(), expected.tolist(),
                               rtol=1e-12, atol=1e-14)


INPLACE = ["relu6", "leaky_relu", "elu", "selu", "celu", "silu", "mish", "hardtanh",
           "hardsigmoid", "hardswish"]


@pytest.mark.parametrize("name", INPLACE)
def test_functional_inplace_writes_into_input(name):
    x = tp.tensor(X, dtype=tp.float64)
    t = torch.tensor(X, dtype=torch.float64)
    version = x._version
    result = getattr(F, name)(x, inplace=True)
    getattr(TF, name)(t, inplace=True)
    assert result is x and x._version > version
    np.testing.assert_allclose(x.tolist(), t.tolist(), rtol=1e-12, atol=1e-14)


def test_threshold_inplace():
    x = tp.tensor(X)
    assert F.threshold(x, 0.0, 9.0, inplace=True) is x
    assert x.tolist() == TF.threshold(torch.tensor(X), 0.0, 9.0).tolist()


def test_glu_and_prelu():
    a = np.arange(12, dtype=np.float64).reshape(3, 4) / 10
    for dim in (-1, 1):
        np.testing.assert_allclose(F.glu(tp.tensor(a), dim).tolist(),
                                   TF.glu(torch.tensor(a), dim).tolist(), rtol=1e-12)
    w = np.array([0.1, 0.2, 0.3])
    x = a.reshape(2, 3, 2) - 0.6
    np.testing.assert_allclose(F.prelu(tp.tensor(x), tp.tensor(w)).tolist(),
                               TF.prelu(torch.tensor(x), torch.tensor(w)).tolist(), rtol=1e-12)


@pytest.mark.parametrize("dtype", [tp.float32, tp.float16])
def test_extreme_inputs_do_not_overflow(dtype):
    """exp(1000) overflows; softplus, silu, mish, elu and gelu must not go through it."""
    x = tp.tensor([-1000.0, -100.0, 100.0, 1000.0], dtype=tp.float32).to(dtype)
    finite = np.isfinite
    for fn in (F.softplus, F.silu, F.mish, F.elu, F.gelu, F.selu, F.celu):
        out = fn(x).tolist()
        for v_in, v_out in zip(x.tolist(), out):
            if finite(v_in):
                assert finite(v_out), f"{fn.__name__}({v_in}) = {v_out}"
    assert F.softplus(tp.tensor([1000.0])).tolist() == [1000.0]
    assert F.softplus(tp.tensor([-1000.0])).tolist() == [0.0]


def test_softplus_gradient_in_the_tails():
    x = tp.tensor([-800.0, 800.0], dtype=tp.float64, requires_grad=True)
    F.softplus(x).sum().backward()
    assert x.grad.tolist() == [0.0, 1.0]


@pytest.mark.parametrize("inplace", [False, True], ids=["out_of_place", "inplace"])
@pytest.mark.parametrize("name, kwargs", [("elu", {"alpha": 1.5}), ("celu", {"alpha": 0.7}),
                                          ("selu", {})])
def test_elu_family_second_derivative_at_zero(name, kwargs, inplace):
    """PyTorch's elu_double_backward masks the second derivative by x < 0 (by r < 0 from
    the result of the in-place forms): 0 at exactly 0, not the left limit alpha."""
    values = [0.0, -0.5, 0.5, -2.0]

    def gradgrad(module, lib):
        x = lib.tensor(values, dtype=lib.float64, requires_grad=True)
        y = getattr(module, name)(x * 1, inplace=inplace, **kwargs)
        (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        return g.tolist(), gg.tolist()

    ours, theirs = gradgrad(F, tp), gradgrad(TF, torch)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-7)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-7)
    assert ours[1][0] == 0.0


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_backward_at_the_zero_of_its_derivative_is_float32_accurate(approximate):
    """gelu's derivative crosses zero at x = -0.7518, where its two terms cancel: float32
    rounding of them was 1e-4 of the result (fuzz: gelu_backward of a 1e30 gradient,
    seed 615305). Ours equals PyTorch's float64 derivative rounded to float32's tolerance
    there (PyTorch's own float32 kernel does not: its relative error there reaches 1),
    and at the window's edges; and in the left tail (x = -4.94), where Phi(x) was
    0.5 (1 + erf), which cancels (now 0.5 erfc(-x / sqrt 2)), and the tanh form's
    1 + tanh(u) cancels (computed in float64 there)."""
    near = -0.7517916 + np.arange(-300, 301) * 6e-8
    x = np.concatenate([near, [-0.8, -0.7, -0.65, 0.0, 1.5, -4.2175, -4.9377]]).astype(np.float32)
    g = np.full(x.shape, 1e30, np.float32)
    ours = tp.gelu_backward(tp.tensor(g), tp.tensor(x), approximate=approximate)
    theirs = torch.ops.aten.gelu_backward(torch.tensor(g).double(), torch.tensor(x).double(),
                                          approximate=approximate)
    assert ours.dtype is tp.float32
    np.testing.assert_allclose(np.asarray(ours.numpy(), np.float64), theirs.numpy(),
                               rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("contiguous", [True, False])
def test_relu_and_its_backward_keep_the_bits_of_torch(dtype, contiguous):
    """relu's compiled loop (float32 / float64, row-major) and NumPy's path for the rest:
    -0.0 stays -0.0 and NaN stays NaN, as in PyTorch (x < 0 ? 0 : x); the backward keeps
    the gradient where the input is NaN or above 0, +0.0 elsewhere, an inf gradient too."""
    values = np.array([-0.0, 0.0, np.nan, -1.5, 2.0, np.inf, -np.inf, 1e-30, -1e-30, 3.0])
    x_values, g_values = np.tile(values, (4, 1)), np.tile(values[::-1], (4, 1))

    def both(a):
        theirs = torch.tensor(a, dtype=getattr(torch, dtype))
        ours = tp.tensor(a, dtype=getattr(tp, dtype))
        return (theirs, ours) if contiguous else (theirs.t(), ours.t())
    (x, ours), (g, grad) = both(x_values), both(g_values)
    assert ours.is_contiguous() == contiguous
    for got, want in ((tp.relu(ours), torch.relu(x)),
                      (tp.threshold_backward(grad, ours, 0),
                       torch.ops.aten.threshold_backward(g, x, 0))):
        got, want = got.float().numpy(), want.float().numpy()
        np.testing.assert_array_equal(got, want)
        numbers = ~np.isnan(want)              # (a NaN's sign bit is no contract)
        np.testing.assert_array_equal(np.signbit(got[numbers]), np.signbit(want[numbers]))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32"])
def test_relu_in_place_on_a_view_matches_torch(dtype):
    """relu_ writes only the view (the loop for a contiguous float view, NumPy's masked
    copy for a strided one), -0.0 and NaN kept as torch keeps them."""
    values = np.array([[-0.0, 2.0, -1.0, np.nan], [3.0, -4.0, 0.0, -np.inf]])
    if dtype == "int32":
        values = np.array([[0, 2, -1, 5], [3, -4, 0, -7]])
    for index in ((0,), (slice(None), 1)):
        theirs = torch.tensor(values, dtype=getattr(torch, dtype))
        ours = tp.tensor(values, dtype=getattr(tp, dtype))
        torch.relu_(theirs[index])
        tp.relu_(ours[index])
        got, want = ours.double().numpy(), theirs.double().numpy()
        np.testing.assert_array_equal(got, want)
        numbers = ~np.isnan(want)
        np.testing.assert_array_equal(np.signbit(got[numbers]), np.signbit(want[numbers]))


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_relu_backward_of_an_expanded_gradient_matches_torch(dtype):
    """sum()'s gradient reaches relu's backward expanded (stride 0): the loop reads it
    through a flat copy, the result laid out as the input; torch's values and layout."""
    values = np.array([[-1.0, 0.0, 2.0], [np.nan, -0.0, 3.0]])
    x = torch.tensor(values, dtype=getattr(torch, dtype), requires_grad=True)
    ours = tp.tensor(values, dtype=getattr(tp, dtype), requires_grad=True)
    torch.relu(x).sum().backward()
    tp.relu(ours).sum().backward()
    np.testing.assert_array_equal(ours.grad.float().numpy(), x.grad.float().numpy())
    assert ours.grad.stride() == x.grad.stride()
    g = tp.ones((), dtype=getattr(tp, dtype)).expand(2, 3)
    result = tp.threshold_backward(g, ours.detach(), 0.5)
    want = torch.ops.aten.threshold_backward(torch.ones(()).expand(2, 3).to(x.dtype),
                                             x.detach(), 0.5)
    np.testing.assert_array_equal(result.float().numpy(), want.float().numpy())
    assert result.stride() == want.stride()
