"""Numerical stability of the reduction family at extreme inputs, against PyTorch."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tensorplay as tp


def _both(values, dtype=np.float32, requires_grad=False):
    data = np.asarray(values, dtype=dtype)
    return (tp.tensor(data, requires_grad=requires_grad),
            torch.tensor(data, requires_grad=requires_grad))


@pytest.mark.parametrize("values", [[1e30, -1e30, 0.0], [88.0, 89.0, 90.0], [-1e4, -1e4 + 1],
                                    [float("-inf"), float("-inf")], [float("inf"), 0.0]])
def test_logsumexp_does_not_overflow(values):
    x, t = _both(values)
    np.testing.assert_allclose(tp.logsumexp(x, [0]).item(), torch.logsumexp(t, 0).item(),
                               rtol=1e-6)


def test_logsumexp_gradient_is_the_softmax_at_large_inputs():
    x, t = _both([1000.0, 999.0, -1000.0], np.float64, requires_grad=True)
    tp.logsumexp(x, [0]).backward()
    torch.logsumexp(t, 0).backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12)
    assert np.all(np.isfinite(x.grad.numpy()))


def test_var_with_a_large_mean_is_two_pass():
    rng = np.random.default_rng(0)
    x, t = _both(1e4 + rng.standard_normal(1000), np.float32)
    np.testing.assert_allclose(tp.var(x).item(), torch.var(t).item(), rtol=1e-3)
    np.testing.assert_allclose(tp.std(x).item(), 1.0, rtol=0.1)


@pytest.mark.parametrize("zeros", [[], [2], [0, 3], [4]])
def test_prod_and_cumprod_gradients_with_zeros(zeros):
    values = [0.5, -1.5, 2.0, 0.75, 1.25]
    for z in zeros:
        values[z] = 0.0
    for fn in (lambda m, a: m.prod(a), lambda m, a: m.cumprod(a, 0)):
        x, t = _both(values, np.float64, requires_grad=True)
        g = np.arange(1.0, 6.0)[:5] if fn(torch, t).dim() else np.float64(2.0)
        fn(tp, x).backward(tp.tensor(g))
        fn(torch, t).backward(torch.tensor(g))
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12)


def test_norm_gradient_at_zero_vector_is_zero():
    x, t = _both([0.0, 0.0, 0.0], np.float64, requires_grad=True)
    tp.norm(x).backward()
    torch.norm(t).backward()
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())


# Rows of identical values: PyTorch's CPU var/std along a dim (and of half types) run
# Welford's algorithm, whose mean of identical values is exact, so the variance is exactly
# 0, which std's derivative tests (masked to 0 there). (Its full float/complex reductions
# take two plain passes, rounding residue in both libraries: not compared here.)
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("value", [0.1, 1 / 3, 123.456, -2.2e-5, 1e10 + 0.3j, 0.7 + 0.1j])
@pytest.mark.parametrize("n", [2, 3, 5, 7, 100])
def test_var_std_of_identical_values_along_a_dim_is_exactly_zero(dtype, value, n):
    if isinstance(value, complex) and not dtype.startswith("complex"):
        pytest.skip("a complex value of a real dtype")
    data = np.full((n, 4), value, dtype=dtype)
    x, t = tp.tensor(data), torch.tensor(data)
    for correction in (0, 1):
        for name in ("var", "std"):
            got = getattr(tp, name)(x, [0], correction=correction).numpy()
            want = getattr(torch, name)(t, 0, correction=correction).numpy()
            np.testing.assert_array_equal(got, want)
            assert not got.any()
        got_std = tp.std_mean(x, [0], correction=correction)[0].numpy()
        np.testing.assert_array_equal(
            got_std, torch.std_mean(t, 0, correction=correction)[0].numpy())


def test_std_gradient_of_identical_values_is_zero_as_torch():
    # (seed 4030154) std is exactly 0 for each column of identical values, so its
    # gradient is masked to 0, not a rounding residue divided by a rounding residue
    data = np.broadcast_to(np.array([0.1, 123.456, 0.7 + 0.1j, 1e10 + 0.3j]), (3, 4)).copy()
    x, t = tp.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    tp.std(x, [0], correction=0).sum().backward()
    torch.std(t, 0, correction=0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())
    assert not x.grad.numpy().any()


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("value", [0.1, 1 / 3, 123.456, 1e10 + 0.3j, 0.7 + 0.1j])
@pytest.mark.parametrize("dim", [None, [0]], ids=["all", "dim0"])
def test_var_mean_of_identical_values_is_exact_as_torch(dtype, value, dim):
    # var_mean / std_mean run Welford's algorithm in PyTorch even over everything (where
    # var() alone takes two plain passes): the mean of identical values is exactly their
    # value and the variance exactly 0
    if isinstance(value, complex) and not dtype.startswith("complex"):
        pytest.skip("a complex value of a real dtype")
    data = np.full((7, 3), value, dtype=dtype)
    x, t = tp.tensor(data), torch.tensor(data)
    for name in ("var_mean", "std_mean"):
        got = getattr(tp, name)(x, dim, correction=0)
        want = getattr(torch, name)(t, dim, correction=0)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), w.numpy())
        assert not got[0].numpy().any()
