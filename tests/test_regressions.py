"""Regression tests for silent wrong results (issue 12), each checked against torch."""
import numpy as np
import pytest
import torch

import tensorplay as tp


@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_dim_of_0dim_does_not_alias_input(op):
    x, tx = tp.tensor(3.0), torch.tensor(3.0)
    values = getattr(x, op)(dim=0).values
    tvalues = getattr(tx, op)(dim=0).values
    x.add_(1)
    tx.add_(1)
    assert values.item() == tvalues.item() == 3.0


@pytest.mark.parametrize("lo, hi", [(3.0, 1.0), (1.0, 3.0), (2.0, 2.0)])
def test_clamp_tensor_bounds_gradients_match_torch(lo, hi):
    xs = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, float("nan")]
    n = len(xs)

    def run(m):
        x = m.tensor(xs, requires_grad=True)
        lo_t = m.tensor([lo] * n, requires_grad=True)
        hi_t = m.tensor([hi] * n, requires_grad=True)
        y = m.clamp(x, min=lo_t, max=hi_t)
        y.sum().backward()
        return [np.asarray(t.tolist()) for t in (y, x.grad, lo_t.grad, hi_t.grad)]

    for got, want in zip(run(tp), run(torch)):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("loss", ["nll_loss", "cross_entropy"])
@pytest.mark.parametrize("weighted", [False, True])
def test_ignore_index_row_with_minus_inf_stays_finite(loss, reduction, weighted):
    ninf = float("-inf")
    rows = [[ninf, 0.0, 1.0], [0.5, 0.2, 0.1], [0.3, ninf, 0.7]]
    targets = [-100, 1, 2]

    def run(m):
        x = m.tensor(rows, requires_grad=True)
        weight = m.tensor([0.5, 2.0, 1.5]) if weighted else None
        out = getattr(m.nn.functional, loss)(x, m.tensor(targets), weight=weight,
                                             reduction=reduction)
        (out * m.tensor(2.0)).sum().backward()
        return np.asarray(out.tolist()), np.asarray(x.grad.tolist())

    (got_loss, got_grad), (want_loss, want_grad) = run(tp), run(torch)
    assert np.isfinite(got_loss).all() and np.isfinite(got_grad).all()
    np.testing.assert_allclose(got_loss, want_loss, rtol=1e-6)
    np.testing.assert_allclose(got_grad, want_grad, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("value", [1.5, -1.5, 0.5, 2.7])
def test_integer_addcmul_truncates_value_like_torch(value):
    def run(m):
        a, b, c = m.tensor([1, 2, -3]), m.tensor([3, 4, 5]), m.tensor([1, -1, 2])
        inplace = a.clone()
        inplace.addcmul_(b, c, value=value)
        return m.addcmul(a, b, c, value=value).tolist(), inplace.tolist()

    assert run(tp) == run(torch)


@pytest.mark.parametrize("beta, alpha", [(1.5, 2.5), (0.5, 1), (1, -1.7), (0, 0.9)])
def test_integer_addmm_truncates_beta_alpha_like_torch(beta, alpha):
    def run(m):
        mat = m.tensor([[1, 2], [3, -4]])
        inplace = mat.clone()
        inplace.addmm_(mat, mat, beta=beta, alpha=alpha)
        return m.addmm(mat, mat, mat, beta=beta, alpha=alpha).tolist(), inplace.tolist()

    assert run(tp) == run(torch)


@pytest.mark.parametrize("op", ["std", "var", "var_mean", "std_mean"])
@pytest.mark.parametrize("data", [[1e30, -1.89], [3e38, 3e38], [1.0, 2.0, 4.5, -3.25]])
def test_float32_var_std_use_a_double_intermediate(op, data):
    def run(m):
        with np.errstate(over="ignore"):
            r = getattr(m, op)(m.tensor(data))
        return [t.item() for t in (r if isinstance(r, tuple) else (r,))]

    np.testing.assert_allclose(run(tp), run(torch), rtol=1e-6)


def test_broadcast_tensors_returns_a_tensor_of_the_broadcast_shape_itself():
    """PyTorch's broadcast_tensors returns an input already of the broadcast shape itself
    (expand_outplace), so an in-place swapaxes_ of it shows in the result (fuzz seed
    1007028); the others are expanded views."""
    import torch
    shapes = []
    for lib in (tp, torch):
        a, b = lib.ones(2, 3, 4), lib.ones(3, 1)
        first, second = lib.broadcast_tensors(a, b)
        assert first is a and second is not b
        a.swapaxes_(2, 1)
        shapes.append((tuple(first.shape), tuple(second.shape)))
    assert shapes[0] == shapes[1]
