"""The 3x3 convolution by Winograd's F(2x2, 3x3) (cpu_kernels/_conv_winograd.py), which
runs where tp.backends.cpu.allow_winograd allows it: its values against PyTorch's
(float64 to rounding, float32 within the tolerance of a sum of a few hundred terms), the
calls its shape rule gives it and the ones it leaves to the same-size form, the fallback
of a result that is not finite, where the transforms' additions would put NaN in place
of PyTorch's infinities, and why it is off by default."""
import numpy as np
import pytest
import torch

import tensorplay as tp
from cpu_kernels import conv
from cpu_kernels._conv_winograd import winograd_conv

F = tp.nn.functional


@pytest.fixture
def winograd():
    tp.backends.cpu.allow_winograd = True
    yield
    tp.backends.cpu.allow_winograd = False


def _torch_conv(x, w, b=None):
    b = None if b is None else torch.from_numpy(b).double()
    return torch.nn.functional.conv2d(torch.from_numpy(x).double(),
                                      torch.from_numpy(w).double(), b, padding=1).numpy()


def _relative_error(mine, want):
    return np.abs(mine - want).max() / max(np.abs(want).max(), 1e-300)


@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-14), (np.float32, 1e-6)])
@pytest.mark.parametrize("shape, c_out", [
    ((2, 3, 5, 7), 5),          # odd sizes: the last tiles half outside the image
    ((1, 1, 1, 1), 1),          # one pixel: one tile, three quarters padding
    ((3, 4, 6, 2), 8),
    ((2, 8, 4, 9), 3),
])
@pytest.mark.parametrize("bias", [False, True])
def test_winograd_conv_and_its_adjoint_match_the_direct_sum(shape, c_out, dtype, tol, bias):
    """winograd_conv at shapes of every parity, against PyTorch's convolution in float64;
    flip=True against PyTorch's grad_input of the same convolution."""
    rng = np.random.default_rng(sum(shape) + c_out)
    x = rng.standard_normal(shape).astype(dtype)
    w = rng.standard_normal((c_out, shape[1], 3, 3)).astype(dtype)
    b = rng.standard_normal(c_out).astype(dtype) if bias else None
    y = winograd_conv(x, w, b)
    assert y.dtype == dtype and y.shape == (shape[0], c_out) + shape[2:]
    assert _relative_error(y, _torch_conv(x, w, b)) < tol
    g = rng.standard_normal(y.shape).astype(dtype)
    want = torch.nn.grad.conv2d_input(shape, torch.from_numpy(w).double(),
                                      torch.from_numpy(g).double(), padding=1).numpy()
    assert _relative_error(winograd_conv(g, w, flip=True), want) < tol


def test_winograd_conv_reads_strided_arrays():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 6, 5, 4)).transpose(0, 1, 3, 2)       # (3, 6, 4, 5) strided
    w = rng.standard_normal((3, 3, 4, 6)).transpose(2, 3, 0, 1)       # (4, 6, 3, 3) strided
    assert _relative_error(winograd_conv(x, w), _torch_conv(np.ascontiguousarray(x),
                                                            np.ascontiguousarray(w))) < 1e-14


@pytest.mark.parametrize("value", [np.inf, -np.inf, np.nan, 2e38])
def test_a_result_that_is_not_finite_is_left_to_the_direct_form(value):
    """An infinity or NaN in a tile spreads over the tile's block in the transforms (inf -
    inf), and two neighbouring 2e38s overflow there where the direct sum stays finite:
    winograd_conv then returns None, and the kernel gives the same-size form's result,
    PyTorch's."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    w = (rng.standard_normal((4, 3, 3, 3)) * 1e-3).astype(np.float32)
    x[1, 2, 3, 2] = x[1, 2, 3, 3] = value
    assert winograd_conv(x, w) is None
    args = ([1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    mine = conv.convolution_winograd(tp.from_numpy(x), tp.from_numpy(w), None, *args).numpy()
    want = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w),
                                      padding=1).numpy()
    np.testing.assert_allclose(mine, want, rtol=1e-5, atol=1e-6)
    assert np.array_equal(np.isnan(mine), np.isnan(want))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_resnet_convolution_runs_winograd_forward_and_backward(winograd, counting, dtype):
    """32 channels on 16x16, 16 images: the shape rule's calls, forward and grad_input;
    values and all three gradients against PyTorch."""
    rng = np.random.default_rng(7)
    arrays = [rng.standard_normal(s) for s in ((16, 32, 16, 16), (32, 32, 3, 3), (32,))]
    ours = [tp.tensor(a, dtype=getattr(tp, dtype), requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=True)
              for a in arrays]
    y, ty = F.conv2d(*ours, padding=1), torch.nn.functional.conv2d(*theirs, padding=1)
    g = rng.standard_normal(tuple(ty.shape))
    y.backward(tp.tensor(g, dtype=y.dtype))
    ty.backward(torch.tensor(g, dtype=ty.dtype))
    tol = 1e-5 if dtype == "float32" else 1e-13
    for mine, want in [(y, ty)] + [(a.grad, b.grad) for a, b in zip(ours, theirs)]:
        assert _relative_error(mine.detach().numpy(), want.detach().numpy()) < tol
    assert set(counting()["convolution"].kernels) == {"cpu_kernels.conv.convolution_winograd"}
    assert set(counting()["convolution_backward"].kernels) == {
        "cpu_kernels.conv.convolution_backward_winograd"}


@pytest.mark.parametrize("shape, c_out", [
    ((16, 16, 16, 16), 32),     # 16 input channels: the products' inner dimension too short
    ((2, 64, 28, 28), 64),      # an image's transforms take 1.6 MiB, more than the cache
    ((1, 32, 16, 16), 32),      # one image: 64 tiles
])
def test_the_same_size_form_keeps_what_winograd_measured_slower_at(winograd, counting, shape,
                                                                  c_out):
    x = tp.rand(*shape)
    tp.dispatch.kernel_selection.bump_version()     # a cache miss, where rejections count
    F.conv2d(x, tp.rand(c_out, shape[1], 3, 3), padding=1)
    row = counting()["convolution"]
    assert set(row.kernels) == {"cpu_kernels.conv.convolution_same"}
    assert list(row.rejected["cpu_kernels.conv.convolution_winograd"]) == [
        f"shape rule '{conv.WINOGRAD.description}' not met"]


def test_grad_input_of_few_output_channels_stays_direct(winograd, counting):
    """The backward's grad_input convolves the gradient's C_out channels: 16 of them keep
    the same-size backward, while the forward (32 input channels) runs Winograd."""
    x = tp.rand(16, 32, 16, 16, requires_grad=True)
    F.conv2d(x, tp.rand(16, 32, 3, 3), padding=1).sum().backward()
    assert set(counting()["convolution"].kernels) == {"cpu_kernels.conv.convolution_winograd"}
    assert set(counting()["convolution_backward"].kernels) == {
        "cpu_kernels.conv.convolution_backward_same"}


def test_it_is_off_by_default(counting):
    """The switch is off: a ResNet convolution takes the same-size form, whose rounding is
    per window."""
    assert tp.backends.cpu.allow_winograd is False
    F.conv2d(tp.rand(16, 32, 16, 16), tp.rand(32, 32, 3, 3), padding=1)
    assert set(counting()["convolution"].kernels) == {"cpu_kernels.conv.convolution_same"}


def test_why_it_is_off_by_default():
    """Its float32 error is relative to each 4x4 tile's largest input: values 1e6 times
    their neighbours cost the neighbours' outputs digits that the direct sum keeps (the
    error measured against each output's own scale, sum |w| |x| over its window)."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((4, 32, 16, 16)).astype(np.float32)
    w = (rng.standard_normal((32, 32, 3, 3)) * 0.1).astype(np.float32)
    x.flat[rng.integers(0, x.size, 50)] = 1e6
    truth = _torch_conv(x, w)
    scale = _torch_conv(np.abs(x), np.abs(w))
    winograd = (np.abs(winograd_conv(x, w) - truth) / scale).max()
    direct = (np.abs(conv.conv_same(x, w, None, (1, 1), (1, 1)) - truth) / scale).max()
    assert direct < 1e-5 and winograd > 50 * direct
