"""Complex convolutions against PyTorch: values, gradients (PyTorch's convention: each
gradient takes the conjugate of the other factor), gradcheck and gradgradcheck in
complex128, and forward-mode tangents. (They computed in int64 before: the imaginary
parts were dropped with only NumPy's ComplexWarning to say so.)

PyTorch takes complex numbers at F.conv1d/2d/3d and F.conv_transpose*d, which split them
into real convolutions; its aten::convolution and convolution_backward, the operator
database's references for tp.convolution, raise for them ("slow_conv2d_cpu" not
implemented for 'ComplexDouble'). So the comparisons are here, through the functional
API, and the database keeps to the real dtypes."""
import warnings

import numpy as np
import pytest
import torch

import tensorplay as tp
import tensorplay.autograd.forward_ad as fwAD

F = tp.nn.functional
TF = torch.nn.functional

CASES = [
    # (name, input shape, weight shape, has bias, keyword arguments)
    ("conv2d same size", (1, 3, 5, 5), (4, 3, 3, 3), True, dict(padding=1)),
    ("conv2d 32 channels", (2, 32, 8, 8), (8, 32, 3, 3), True, dict(padding=1)),
    ("conv2d strided, grouped", (2, 4, 7, 6), (6, 2, 3, 2), True,
     dict(stride=2, padding=(1, 0), groups=2)),
    ("conv2d 1x1", (2, 4, 6, 6), (4, 4, 1, 1), False, {}),
    ("conv2d dilated", (2, 4, 9, 9), (4, 4, 3, 3), True, dict(dilation=2, padding=2)),
    ("conv1d", (2, 3, 10), (5, 3, 4), True, dict(stride=2)),
    ("conv3d", (1, 2, 4, 5, 4), (3, 2, 2, 3, 2), True, dict(padding=1)),
]


def _complex(rng, shape, dtype):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def _conv(lib_f, dims):
    return getattr(lib_f, f"conv{dims}d")


def _check_against_torch(y, yt, ours, theirs, rng, tol):
    """y against PyTorch's yt, then the gradients of both libraries' leaves (ours,
    theirs) for one random complex gradient of the output, each within `tol` of the
    largest value it is compared with."""
    want = yt.detach().numpy()
    np.testing.assert_allclose(y.detach().numpy(), want, rtol=tol,
                               atol=tol * np.abs(want).max())
    g = _complex(rng, tuple(yt.shape), want.dtype)
    y.backward(tp.tensor(g))
    yt.backward(torch.tensor(g))
    for mine, other in zip(ours, theirs):
        want = other.grad.numpy()
        np.testing.assert_allclose(mine.grad.numpy(), want, rtol=tol,
                                   atol=tol * np.abs(want).max())


@pytest.mark.parametrize("dtype, tol", [(np.complex64, 2e-4), (np.complex128, 1e-12)])
@pytest.mark.parametrize("name, x_shape, w_shape, bias, kwargs", CASES,
                         ids=[c[0] for c in CASES])
def test_values_and_gradients_match_torch(dtype, tol, name, x_shape, w_shape, bias, kwargs):
    rng = np.random.default_rng(0)
    arrays = [_complex(rng, x_shape, dtype), _complex(rng, w_shape, dtype)]
    if bias:
        arrays.append(_complex(rng, w_shape[:1], dtype))
    ours = [tp.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    dims = len(x_shape) - 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")     # no ComplexWarning: nothing is cast to real
        y = _conv(F, dims)(*ours, **kwargs)
    yt = _conv(TF, dims)(*theirs, **kwargs)
    _check_against_torch(y, yt, ours, theirs, rng, tol)


@pytest.mark.parametrize("dtype, tol", [(np.complex64, 2e-4), (np.complex128, 1e-12)])
def test_a_transposed_convolution_matches_torch(dtype, tol):
    rng = np.random.default_rng(1)
    arrays = (_complex(rng, (2, 4, 5, 5), dtype), _complex(rng, (4, 3, 3, 3), dtype),
              _complex(rng, (3,), dtype))
    ours = [tp.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    kwargs = dict(stride=2, padding=1, output_padding=1)
    _check_against_torch(F.conv_transpose2d(*ours, **kwargs),
                         TF.conv_transpose2d(*theirs, **kwargs), ours, theirs, rng, tol)


@pytest.mark.parametrize("transposed", [False, True])
def test_gradcheck_and_gradgradcheck_in_complex128(transposed):
    rng = np.random.default_rng(2)
    if transposed:
        shapes = ((1, 3, 3, 3), (3, 2, 3, 3))

        def f(x, w):
            return F.conv_transpose2d(x, w, stride=2)
    else:
        shapes = ((1, 2, 4, 4), (3, 2, 3, 3))

        def f(x, w):
            return F.conv2d(x, w, padding=1)
    args = tuple(tp.tensor(_complex(rng, s, np.complex128), requires_grad=True)
                 for s in shapes)
    assert tp.autograd.gradcheck(f, args)
    assert tp.autograd.gradgradcheck(f, args)


def test_forward_mode_tangent_matches_torch():
    rng = np.random.default_rng(3)
    x, w, tx, tw = (_complex(rng, s, np.complex128)
                    for s in ((1, 2, 4, 4), (3, 2, 3, 3), (1, 2, 4, 4), (3, 2, 3, 3)))
    with fwAD.dual_level():
        y = F.conv2d(fwAD.make_dual(tp.tensor(x), tp.tensor(tx)),
                     fwAD.make_dual(tp.tensor(w), tp.tensor(tw)), padding=1)
        _, tangent = fwAD.unpack_dual(y)
    with torch.autograd.forward_ad.dual_level():
        yt = TF.conv2d(torch.autograd.forward_ad.make_dual(torch.tensor(x), torch.tensor(tx)),
                       torch.autograd.forward_ad.make_dual(torch.tensor(w), torch.tensor(tw)),
                       padding=1)
        _, want = torch.autograd.forward_ad.unpack_dual(yt)
    np.testing.assert_allclose(tangent.numpy(), want.detach().numpy(), rtol=1e-12,
                               atol=1e-12)
