"""The Triton kernels of tp.special's Bessel functions and polynomials
(triton_kernels/bessel.py), under the interpreter here: ports of PyTorch's own code, so
they agree with torch.special to rounding on grids that cross every interval of the
approximations and every branch of the polynomials (the ends of [-1, 1], the
trigonometric form, truncated, negative and non-finite n), in float64 (the OpInfo
entries' reduced cuda run checks float32 and int64). airy_ai and zeta run on a host copy
and say so."""
import logging

import numpy as np
import pytest
import torch

from triton_util import CUDA

import tensorplay as tp

X = np.array([-40.0, -9.0, -5.0, -2.0, -0.3, 0.0, 1e-6, 0.4, 1.9, 2.0, 2.1, 4.99, 5.0, 5.01,
              7.9, 8.0, 8.1, 25.0, 90.0, np.inf, -np.inf, np.nan])
UNARY = ("bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0",
         "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
         "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0")
POLYNOMIALS = ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
               "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
               "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
               "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
               "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p")
TOL = {tp.float32: 2e-5, tp.float64: 1e-9}


def _check(got, expected, dtype):
    assert got.device == CUDA and got.dtype == dtype
    tol = TOL[dtype]
    np.testing.assert_allclose(np.asarray(got.cpu()).astype(np.float64),
                               expected.double().numpy(), rtol=tol, atol=tol, equal_nan=True)


@pytest.mark.parametrize("name", UNARY)
def test_unary_kernel_matches_torch(name, dtype=tp.float64):
    got = getattr(tp.special, name)(tp.tensor(X, dtype=dtype, device="cuda"))
    expected = getattr(torch.special, name)(torch.tensor(X, dtype=getattr(torch, dtype.name)))
    _check(got, expected, dtype)


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomial_kernel_matches_torch(name, dtype=tp.float64):
    xs = np.array([-3.0, -1.0, -0.7, 0.0, 0.2, 0.5, 0.999, 1.0, 1.3, np.inf])
    ns = np.array([-2.0, -0.5, 0.0, 1.0, 2.7, 3.0, 5.0, 7.0, 9.0, 25.0, 130.0, np.nan, 1e30])
    # (x = nan with n >= 2 is left out: PyTorch returns an uninitialized value there)
    x, n = np.meshgrid(xs, ns)
    got = getattr(tp.special, name)(tp.tensor(x, dtype=dtype, device="cuda"),
                                    tp.tensor(n, dtype=dtype, device="cuda"))
    t = getattr(torch, dtype.name)
    expected = getattr(torch.special, name)(torch.tensor(x, dtype=t), torch.tensor(n, dtype=t))
    _check(got, expected, dtype)


def test_integer_inputs_broadcasting_and_a_python_number():
    n = tp.tensor([[0], [3], [6]], device="cuda")                 # int64, broadcast
    x = tp.tensor([[1, 2], [3, 4]], dtype=tp.int32, device="cuda").t()    # transposed
    got = tp.special.hermite_polynomial_he(x[0], n)
    expected = torch.special.hermite_polynomial_he(torch.tensor([1, 3], dtype=torch.int32),
                                                   torch.tensor([[0], [3], [6]]))
    _check(got, expected, tp.float32)
    _check(tp.special.legendre_polynomial_p(0.5, n), torch.special.legendre_polynomial_p(
        0.5, torch.tensor([[0], [3], [6]])), tp.float32)
    _check(tp.special.bessel_j0(x), torch.special.bessel_j0(torch.tensor([[1, 3], [2, 4]],
                                                                          dtype=torch.int32)),
           tp.float32)


def test_airy_ai_and_zeta_run_on_a_host_copy_and_log_it(caplog):
    x = tp.tensor([-3.0, 0.5, 2.5], dtype=tp.float64, device="cuda")
    with caplog.at_level(logging.INFO, logger="tensorplay.dispatch"):
        ai = tp.special.airy_ai(x)
        zeta = tp.special.zeta(x + 5, tp.tensor([1.0, 2.0, 0.5], dtype=tp.float64,
                                                device="cuda"))
    assert "special_airy_ai on cuda: no Triton kernel" in caplog.text
    assert "special_zeta on cuda: no Triton kernel" in caplog.text
    assert ai.device == CUDA and zeta.device == CUDA
    tx = torch.tensor([-3.0, 0.5, 2.5], dtype=torch.float64)
    np.testing.assert_allclose(np.asarray(ai.cpu()), torch.special.airy_ai(tx).numpy(),
                               rtol=1e-5)
    np.testing.assert_allclose(np.asarray(zeta.cpu()), torch.special.zeta(
        tx + 5, torch.tensor([1.0, 2.0, 0.5], dtype=torch.float64)).numpy(), rtol=1e-12)
