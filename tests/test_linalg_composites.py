"""cross, vander, tensorinv, tensorsolve, chain_matmul, addr, ger and matrix_exp beyond the
operator database (tests/opinfo/db_linalg.py, LINALG_COMPOSITES, holds their values,
gradients and errors): PyTorch's deprecation warnings, an empty chain, mixed dtypes, the
matrix exponential's accuracy at large norms and in half precision, vmap against a loop."""
import warnings

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.composite import linalg as composite_linalg
from tensorplay.errors import ArgumentError, ShapeError, TensorPlayError


def _np(t):
    return t.detach().numpy()


@pytest.fixture
def fresh_warnings(monkeypatch):
    """The deprecation warnings are PyTorch's TORCH_WARN_ONCE: forget which were given."""
    monkeypatch.setattr(composite_linalg, "_WARNED", set())


def test_cross_without_dim_takes_the_first_dim_of_size_3_and_warns_once(fresh_warnings):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 3, 3)), rng.standard_normal((2, 3, 3))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = tp.cross(tp.tensor(a), tp.tensor(b))
        tp.tensor(a).cross(tp.tensor(b))
    deprecations = [w for w in caught if "tp.cross without specifying the dim" in
                    str(w.message)]
    assert len(deprecations) == 1 and deprecations[0].category is UserWarning
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = torch.cross(torch.tensor(a), torch.tensor(b))
    np.testing.assert_allclose(_np(first), expected.numpy(), rtol=0, atol=1e-15)
    # dim 1, not linalg.cross's -1: the two differ on these inputs
    assert not np.allclose(_np(first), _np(tp.linalg.cross(tp.tensor(a), tp.tensor(b))))


def test_linalg_cross_and_cross_with_a_dim_do_not_warn(fresh_warnings):
    a = tp.ones((2, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tp.linalg.cross(a, a)
        tp.cross(a, a, dim=1)


def test_cross_of_integers_wraps_around_as_pytorchs():
    a = np.array([[100, -100, 7]], dtype=np.int8)
    b = np.array([[3, 90, -128]], dtype=np.int8)
    out = tp.linalg.cross(tp.tensor(a), tp.tensor(b))
    assert out.dtype is tp.int8
    assert out.tolist() == torch.linalg.cross(torch.tensor(a), torch.tensor(b)).tolist()


def test_chain_matmul_needs_a_matrix_and_warns_once(fresh_warnings):
    with pytest.raises(ArgumentError, match=r"chain_matmul\(\): Expected one or more "
                                            r"matrices") as info, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        composite_linalg.chain_matmul([])
    assert info.value.op == "chain_matmul" and info.value.arg == "matrices"
    # (Called with no tensor at all, the dispatcher has no device to pick a kernel by: it
    # raises before the composite runs, as for block_diag() and cartesian_prod().)
    with pytest.raises(TensorPlayError, match=r"chain_matmul") as info:
        tp.chain_matmul()
    assert info.value.op == "chain_matmul"
    m = tp.ones((2, 2))
    composite_linalg._WARNED.clear()       # (the call above warned already)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        one = tp.chain_matmul(m)
        tp.chain_matmul(m, m)
    assert sum("tp.chain_matmul is deprecated" in str(w.message) for w in caught) == 1
    assert one.data_ptr() != m.data_ptr()      # one matrix: a copy, as PyTorch's clone


def test_addr_promotes_its_operands_and_addr_casts_into_self():
    rng = np.random.default_rng(1)
    s, v1, v2 = rng.integers(-5, 5, (2, 3)), rng.standard_normal(2), rng.standard_normal(3)
    out = tp.addr(tp.tensor(s), tp.tensor(v1, dtype=tp.float32), tp.tensor(v2), beta=2)
    expected = torch.addr(torch.tensor(s), torch.tensor(v1, dtype=torch.float32),
                          torch.tensor(v2), beta=2)
    assert out.dtype is tp.float64 and expected.dtype is torch.float64
    np.testing.assert_allclose(_np(out), expected.numpy(), rtol=1e-6)
    x, xt = tp.ones((2, 3)), torch.ones((2, 3))
    assert x.addr_(tp.tensor(v1), tp.tensor(v2), alpha=0.5) is x
    xt.addr_(torch.tensor(v1), torch.tensor(v2), alpha=0.5)
    assert x.dtype is tp.float32
    np.testing.assert_allclose(_np(x), xt.numpy(), rtol=1e-6)


def test_ger_is_outer_under_its_own_name():
    a, b = tp.tensor([1.0, 2.0]), tp.tensor([3.0, 4.0, 5.0])
    assert tp.ger(a, b).tolist() == tp.outer(a, b).tolist() == a.ger(b).tolist()
    with pytest.raises(ShapeError, match=r"ger\(\): argument 'vec2' must be a vector"):
        tp.ger(a, b.reshape(3, 1))


def test_vander_under_vmap_equals_the_loop():
    x = tp.tensor(np.random.default_rng(2).standard_normal((4, 3)))
    batched = tp.vmap(lambda row: tp.linalg.vander(row, N=5))(x)
    looped = tp.stack([tp.linalg.vander(row, N=5) for row in x])
    np.testing.assert_array_equal(_np(batched), _np(looped))


def test_tensorinv_is_the_inverse_under_tensordot():
    rng = np.random.default_rng(3)
    a = tp.tensor((rng.standard_normal((6, 6)) + 6 * np.eye(6)).reshape(2, 3, 3, 2))
    inverse = tp.linalg.tensorinv(a, ind=2)
    assert inverse.shape == (3, 2, 2, 3)
    np.testing.assert_allclose(_np(tp.tensordot(a, inverse, 2)).reshape(6, 6), np.eye(6),
                               atol=1e-12)
    with pytest.raises(ArgumentError, match=r"linalg_tensorinv\(\): 'ind' \(5\) must be at "
                                            r"most the number of dims of 'self' \(4\)"):
        tp.linalg.tensorinv(a, ind=5)


def test_tensorsolve_solves_the_tensordot_equation():
    rng = np.random.default_rng(4)
    a = tp.tensor((rng.standard_normal((6, 6)) + 6 * np.eye(6)).reshape(2, 3, 6))
    b = tp.tensor(rng.standard_normal((2, 3)))
    x = tp.linalg.tensorsolve(a, b)
    np.testing.assert_allclose(_np(tp.tensordot(a, x, 1)), _np(b), atol=1e-12)
    with pytest.raises(ShapeError, match=r"linalg_tensorsolve\(\): 'other' \(4-D\) cannot "
                                         r"have more dims than 'self' \(3-D\)"):
        tp.linalg.tensorsolve(a, tp.ones((1, 1, 1, 6), dtype=tp.float64))


@pytest.mark.parametrize("scale", [0.01, 1.0, 5.0, 20.0])
def test_matrix_exp_agrees_with_pytorch_to_1e_12_in_float64(scale):
    """PyTorch's Taylor polynomials and SciPy's Pade approximants, both with scaling and
    squaring: the same exp(A) to rounding, the large norms (many squarings) included."""
    a = np.random.default_rng(5).standard_normal((3, 6, 6)) * scale
    ours, theirs = _np(tp.linalg.matrix_exp(tp.tensor(a))), \
        torch.linalg.matrix_exp(torch.tensor(a)).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12 * np.abs(theirs).max())


def test_matrix_exp_of_known_matrices():
    """exp of a nilpotent matrix is a finite sum; exp of a rotation generator rotates."""
    n = tp.tensor([[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 0.0, 0.0]], dtype=tp.float64)
    expected = np.eye(3) + _np(n) + _np(n @ n) / 2
    np.testing.assert_allclose(_np(tp.matrix_exp(n)), expected, rtol=1e-15, atol=1e-15)
    t = 0.7
    r = tp.linalg.matrix_exp(tp.tensor([[0.0, -t], [t, 0.0]], dtype=tp.float64))
    np.testing.assert_allclose(_np(r), [[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]],
                               rtol=1e-15, atol=1e-15)


@pytest.mark.parametrize("dtype", [tp.float16, tp.bfloat16])
def test_matrix_exp_in_half_precision_is_float32_rounded_once(dtype):
    """PyTorch accepts half types; its CPU kernel (2.13) returns nan and garbage for them,
    so the reference is its float32 result, rounded: ours is computed in float32."""
    a = np.random.default_rng(6).standard_normal((2, 4, 4)).astype(np.float32)
    a_half = tp.tensor(a, dtype=dtype)
    ours = tp.linalg.matrix_exp(a_half)
    assert ours.dtype is dtype
    reference = torch.linalg.matrix_exp(torch.tensor(a_half.float().numpy()))
    np.testing.assert_array_equal(_np(ours.float()), _np(tp.tensor(reference.numpy()).to(dtype)
                                                         .float()))


def test_matrix_exp_gradient_is_pytorchs_and_differentiates_twice():
    rng = np.random.default_rng(7)
    a, g = rng.standard_normal((2, 3, 3)), rng.standard_normal((2, 3, 3))
    x = tp.tensor(a, requires_grad=True)
    gx, = tp.autograd.grad(tp.linalg.matrix_exp(x), x, tp.tensor(g), create_graph=True)
    xt = torch.tensor(a, requires_grad=True)
    gt, = torch.autograd.grad(torch.linalg.matrix_exp(xt), xt, torch.tensor(g),
                              create_graph=True)
    np.testing.assert_allclose(_np(gx), gt.detach().numpy(), rtol=1e-12, atol=1e-12)
    ggx, = tp.autograd.grad(gx.sum(), x)
    ggt, = torch.autograd.grad(gt.sum(), xt)
    np.testing.assert_allclose(_np(ggx), ggt.numpy(), rtol=1e-11, atol=1e-11)


def test_matrix_exp_under_vmap_equals_the_loop():
    x = tp.tensor(np.random.default_rng(8).standard_normal((3, 2, 4, 4)))
    batched = tp.vmap(tp.linalg.matrix_exp, in_dims=1)(x)
    looped = tp.stack([tp.linalg.matrix_exp(x[:, i]) for i in range(2)])
    np.testing.assert_allclose(_np(batched), _np(looped), rtol=1e-14, atol=1e-14)
