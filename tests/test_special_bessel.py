"""tp.special's Bessel and Airy functions, zeta and the orthogonal polynomials (family
`bessel`): the names torch.special has, and what PyTorch does about their derivatives.
Values, dtypes and errors are the OpInfo entries' (tests/opinfo/db_bessel.py)."""
import numpy as np
import pytest
import torch

import tensorplay as tp

UNARY = ("airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0",
         "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
         "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0")
POLYNOMIALS = ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
               "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
               "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
               "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
               "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p")
X = [0.3, 1.7, 4.5, 7.25]
N = [0.0, 2.0, 5.0, 9.0]


@pytest.mark.parametrize("name", UNARY + POLYNOMIALS + ("zeta",))
def test_the_name_is_in_tp_special_and_agrees_with_torch(name):
    assert hasattr(torch.special, name)
    fn = getattr(tp.special, name)
    assert fn is getattr(tp, f"special_{name}")
    args = [X] if name in UNARY else [[x + 1.0 for x in X], X] if name == "zeta" else [X, N]
    got = fn(*[tp.tensor(a, dtype=tp.float64) for a in args])
    expected = getattr(torch.special, name)(*[torch.tensor(a, dtype=torch.float64)
                                             for a in args])
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", UNARY + POLYNOMIALS)
def test_no_derivative_the_result_does_not_require_grad_as_in_torch(name):
    """PyTorch has no derivative for these, and does not record them: their result does
    not require grad, so backward through it raises there (no graph), as here."""
    n = 1 if name in UNARY else 2
    tp_args = [tp.tensor(X, dtype=tp.float64, requires_grad=True) for _ in range(n)]
    torch_args = [torch.tensor(X, dtype=torch.float64, requires_grad=True) for _ in range(n)]
    got = getattr(tp.special, name)(*tp_args)
    expected = getattr(torch.special, name)(*torch_args)
    assert expected.requires_grad is False and got.requires_grad is False
    assert got.grad_fn is None


def test_zeta_derivative_in_x_raises_as_in_torch():
    """zeta records a node (its derivative in q exists), whose x part raises."""
    x = tp.tensor([2.0, 3.0], requires_grad=True)
    result = tp.special.zeta(x, tp.tensor([1.0, 2.0]))
    assert result.requires_grad and type(result.grad_fn).__name__ == "SpecialZetaBackward0"
    with pytest.raises(NotImplementedError, match="derivative of zeta is not implemented"):
        result.sum().backward()
    tx = torch.tensor([2.0, 3.0], requires_grad=True)
    with pytest.raises(NotImplementedError, match="zeta"):
        torch.special.zeta(tx, torch.tensor([1.0, 2.0])).sum().backward()


def test_zeta_derivative_in_q_is_minus_x_zeta_of_x_plus_1():
    x = tp.tensor([2.0, 3.5, 1.5], dtype=tp.float64)
    q = tp.tensor([0.5, 1.0, 3.0], dtype=tp.float64, requires_grad=True)
    tp.special.zeta(x, q).sum().backward()
    expected = -x * tp.special.zeta(x + 1, q.detach())
    np.testing.assert_allclose(q.grad.numpy(), expected.numpy(), rtol=1e-12)
    # a Python number for x (the self_scalar overload) and for q (other_scalar)
    q.grad = None
    tp.special.zeta(2.0, q).sum().backward()
    tq = torch.tensor([0.5, 1.0, 3.0], dtype=torch.float64, requires_grad=True)
    torch.special.zeta(2.0, tq).sum().backward()
    np.testing.assert_allclose(q.grad.numpy(), tq.grad.numpy(), rtol=1e-12)
    assert tp.special.zeta(x, 2).requires_grad is False


def test_polynomial_conventions_of_pytorch():
    """n truncated toward zero, n < 0 and non-finite n give 0, H past n = 512 (float64) is
    nan, |x| == 1 takes the closed form: PyTorch's Math.h, not SciPy's eval_* functions."""
    n = [2.7, -0.5, -3.0, float("nan"), float("inf"), 600.0]
    for name, x in (("chebyshev_polynomial_t", 0.3), ("hermite_polynomial_h", 0.3),
                    ("legendre_polynomial_p", -1.0), ("chebyshev_polynomial_v", -1.0)):
        got = getattr(tp.special, name)(tp.full((6,), x, dtype=tp.float64),
                                        tp.tensor(n, dtype=tp.float64))
        expected = getattr(torch.special, name)(torch.full((6,), x, dtype=torch.float64),
                                                torch.tensor(n, dtype=torch.float64))
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-10, equal_nan=True)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_polynomials_round_as_pytorchs_kernels_to_the_last_bit(dtype):
    """Bit for bit PyTorch's: the recurrences' `a * q - p` is one fused multiply-add in
    its (AVX2, FMA-contracted) build, and the trigonometric forms call libm's acos, cos,
    sin (NumPy's float32 ones, and its float64 arccos, are a unit off now and then).
    Near a root the two roundings of `a * q - p` gave 6.3 where PyTorch's Laguerre gave
    3.4e-13; seed 93759's W of degree 1542841 at 0.25 (float32) was -0.55, PyTorch's
    -0.1535 (cos(n acos x) multiplies acos's error by n)."""
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-1.2, 1.2, 300), rng.uniform(-6, 6, 60), [0.25]])
    n = np.concatenate([rng.choice([0, 1, 2, 3, 5, 7, 9, 12, 40, 2.5], 360), [1542841]])
    for name in POLYNOMIALS:
        if name.startswith(("hermite", "laguerre", "legendre")):
            n = np.minimum(n, 40)       # (a recurrence of a million steps: too slow here)
        got = getattr(tp.special, name)(tp.tensor(x).to(getattr(tp, dtype)),
                                        tp.tensor(n).to(getattr(tp, dtype))).numpy()
        expected = getattr(torch.special, name)(torch.tensor(x).to(getattr(torch, dtype)),
                                                torch.tensor(n).to(getattr(torch, dtype)))
        np.testing.assert_array_equal(got, expected.numpy(), err_msg=name)
