"""What the generic OpInfo tests do not reach for the inverse hyperbolics, number theory,
bit shifts and in-place forms: gradients through the in-place forms (autograd saves a copy
of self first), the Python shift operators and unary plus, and nextafter's step in the
half types on `cuda` (computed in float32, stepped in the dtype's own bits)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tensorplay as tp
from opinfo.core import TORCH_DTYPE, available_devices

CUDA = "cuda" in available_devices()


def _inplace_cases():
    """(name, call on a tensor that needs a gradient, values of x)."""
    return [
        ("copysign_", lambda x, lib: x.copysign_(lib.tensor([-1.0, 1.0, -0.0])),
         [1.5, -2.0, 3.0]),
        ("copysign_.Scalar", lambda x, lib: x.copysign_(-2.0), [1.5, -2.0, 3.0]),
        ("pow_", lambda x, lib: x.pow_(lib.tensor([2.0, 0.5, -1.0])), [1.5, 2.0, 3.0]),
        ("pow_.Scalar", lambda x, lib: x.pow_(3), [1.5, -2.0, 3.0]),
        ("xlogy_", lambda x, lib: x.xlogy_(lib.tensor([2.0, 0.5, 3.0])), [1.5, 0.0, 3.0]),
        ("sinc_", lambda x, lib: x.sinc_(), [0.5, 0.0, 1.5]),
        ("rad2deg_", lambda x, lib: x.rad2deg_(), [0.5, 0.0, 1.5]),
        # (an exponent >= 0: PyTorch's ldexp gradient computes 2 ** other in integers)
        ("ldexp_", lambda x, lib: x.ldexp_(lib.tensor([1, 0, 3])), [0.5, 0.0, 1.5]),
        ("eq_", lambda x, lib: x.eq_(lib.tensor([0.5, 1.0, 1.5])), [0.5, 0.0, 1.5]),
        ("lt_.Scalar", lambda x, lib: x.lt_(1.0), [0.5, 0.0, 1.5]),
        ("sign_", lambda x, lib: x.sign_(), [0.5, 0.0, -1.5]),
        ("float_power_", lambda x, lib: x.float_power_(2.5), [0.5, 1.0, 1.5]),
    ]


@pytest.mark.parametrize("name, call, values", _inplace_cases(),
                         ids=[c[0] for c in _inplace_cases()])
def test_inplace_gradients_match_torch(name, call, values):
    dtype = tp.float64 if name == "float_power_" else tp.float32
    x = tp.tensor(values, dtype=dtype, requires_grad=True)
    tx = torch.tensor(values, dtype=TORCH_DTYPE[dtype], requires_grad=True)
    y = x * 1.0
    ty = tx * 1.0
    result = call(y, tp)
    assert result is y
    call(ty, torch)
    weights = [0.5, -2.0, 3.0]
    (y * tp.tensor(weights, dtype=dtype)).sum().backward()
    (ty * torch.tensor(weights, dtype=TORCH_DTYPE[dtype])).sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", ["acosh_", "asinh_", "atanh_"])
def test_inplace_inverse_hyperbolics_have_no_derivative(name):
    """As in PyTorch: its derivatives.yaml says not_implemented for these three."""
    x = tp.tensor([1.5, 2.0], requires_grad=True)
    y = getattr(x * 1.0, name)()
    with pytest.raises(tp.errors.TensorPlayError, match=f"inplace version of {name[:-1]}"):
        y.sum().backward()
    tx = torch.tensor([1.5, 2.0], requires_grad=True)
    with pytest.raises(NotImplementedError):
        getattr(tx * 1.0, name)().sum().backward()


def test_gradients_of_sgn_frexp_and_nextafter():
    x = tp.tensor([-1.5, 0.75, 3.0, 40.0], requires_grad=True)
    tp.sgn(x).sum().backward()
    assert x.grad.tolist() == [0.0] * 4          # (torch's is a ZeroTensor)
    x.grad = None
    mantissa, exponent = tp.frexp(x)
    assert not exponent.requires_grad
    (mantissa * tp.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    tx = torch.tensor([-1.5, 0.75, 3.0, 40.0], requires_grad=True)
    (torch.frexp(tx).mantissa * torch.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    assert x.grad.tolist() == tx.grad.tolist()
    # nextafter: the gradient passes where the step is taken (PyTorch 2.13's formula)
    y = tp.tensor([-1.5, 0.0, 3.0, 41.0])
    x.grad = None
    tp.nextafter(x, y).sum().backward()
    tx.grad = None
    torch.nextafter(tx, torch.tensor([-1.5, 0.0, 3.0, 41.0])).sum().backward()
    assert x.grad.tolist() == tx.grad.tolist() == [0.0, 1.0, 0.0, 1.0]


def test_shift_operators_and_unary_plus():
    a = tp.tensor([1, -8, 3, 5], dtype=tp.int16)
    ta = torch.tensor([1, -8, 3, 5], dtype=torch.int16)
    b = tp.tensor([1, 2, 15, 16], dtype=tp.int16)
    tb = torch.tensor([1, 2, 15, 16], dtype=torch.int16)
    assert (a << b).tolist() == (ta << tb).tolist()
    assert (a >> b).tolist() == (ta >> tb).tolist()
    assert (a << 2).tolist() == (ta << 2).tolist() and (a >> 1).tolist() == (ta >> 1).tolist()
    assert (3 << b).tolist() == (3 << tb).tolist() and (-64 >> b).tolist() == (-64 >> tb).tolist()
    c, tc = a.clone(), ta.clone()
    c <<= b
    tc <<= tb
    assert c.tolist() == tc.tolist()
    c >>= 1
    tc >>= 1
    assert c.tolist() == tc.tolist()
    assert +a is a
    with pytest.raises(tp.errors.DTypeError, match=r"positive\(\)"):
        +tp.tensor([True])


@pytest.mark.skipif(not CUDA, reason="no cuda device (nor the Triton interpreter)")
@pytest.mark.parametrize("dtype", [tp.float16, tp.bfloat16, tp.float32, tp.float64])
def test_cuda_nextafter_steps_in_the_dtype(dtype):
    inf, nan = float("inf"), float("nan")
    a = [1.0, 1.0, 0.0, -0.0, 0.0, -2.0, inf, nan, 2.0, 1000.0, -1e-3]
    b = [2.0, 0.0, 1.0, -1.0, 0.0, -inf, 0.0, 1.0, nan, inf, 1.0]
    expected = torch.nextafter(torch.tensor(a, dtype=TORCH_DTYPE[dtype]),
                               torch.tensor(b, dtype=TORCH_DTYPE[dtype]))
    got = tp.nextafter(tp.tensor(a, dtype=dtype, device="cuda"),
                       tp.tensor(b, dtype=dtype, device="cuda"))
    assert got.dtype is dtype
    np.testing.assert_array_equal(got.cpu().double().numpy(), expected.double().numpy())
