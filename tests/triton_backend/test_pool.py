"""Pooling, upsampling and padding on `cuda` (triton_kernels/pooling.py, resample.py,
padding.py) against PyTorch, for what the operator database does not reach: shapes
that take several programs, non-contiguous and half inputs, overlapping max windows
whose gradients meet on one pixel, more than three padded dims, bad indices."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

from triton_util import CUDA, host, make

import tensorplay as tp
from tensorplay.errors import DimError
from triton_kernels import pooling as pool

F = tp.nn.functional
TOL = {tp.float32: 1e-5, tp.float64: 1e-12, tp.float16: 1e-2, tp.bfloat16: 2e-2}


def torch_of(t):
    x = torch.from_numpy(host(t))
    return x.to(getattr(torch, t.dtype.name)) if t.dtype.is_floating_point else x


def forward_backward(tp_fn, torch_fn, x, tol=None, seed=7):
    """Run fn on x (a CPU tensor moved to cuda) in TensorPlay and PyTorch; compare the
    result and the gradient for a random grad_output."""
    tol = TOL[x.dtype] if tol is None else tol
    xc = x.to(CUDA).detach().requires_grad_()
    got = tp_fn(xc)
    xt = torch_of(x).requires_grad_()
    expected = torch_fn(xt)
    assert got.device == CUDA and tuple(got.shape) == tuple(expected.shape)
    np.testing.assert_allclose(host(got), expected.detach().double().numpy(), rtol=tol,
                               atol=tol)
    grad = make(tuple(got.shape), x.dtype, seed=seed)
    got.backward(grad.to(CUDA))
    expected.backward(torch_of(grad))
    assert xc.grad.dtype == x.dtype
    np.testing.assert_allclose(host(xc.grad), xt.grad.double().numpy(), rtol=tol, atol=tol)
    return got


BIG = make((2, 3, 45, 47), seed=1)    # several programs of pool.BLOCK outputs


def test_big_input_takes_several_programs():
    assert BIG.numel() > 2 * pool.BLOCK
    forward_backward(lambda x: F.max_pool2d(x, 2, 1), lambda x: TF.max_pool2d(x, 2, 1), BIG)
    forward_backward(lambda x: F.avg_pool2d(x, 3, 1, 1), lambda x: TF.avg_pool2d(x, 3, 1, 1),
                     BIG)
    forward_backward(lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"),
                     lambda x: TF.interpolate(x, scale_factor=2, mode="bilinear"), BIG)


@pytest.mark.parametrize("ceil_mode", [False, True])
def test_max_pool_overlapping_windows_ceil_mode_and_padding(ceil_mode):
    # Kernel 3, stride 2 / 1: neighbouring windows share pixels, so one pixel is the
    # argmax of several outputs and its gradient is their sum (atomic adds).
    x = make((2, 3, 8, 9), seed=2)
    for kernel, stride, padding, dilation in ((3, 2, 1, 1), (3, 1, 1, 1), (2, 2, 1, 2)):
        def run(fn, t):
            return fn(t, kernel, stride, padding, dilation, ceil_mode=ceil_mode)
        forward_backward(lambda t: run(F.max_pool2d, t), lambda t: run(TF.max_pool2d, t), x)
    # Ties: a constant plane makes every window pick its first pixel.
    ones = tp.ones((1, 1, 5, 5))
    forward_backward(lambda t: F.max_pool2d(t, 3, 1), lambda t: TF.max_pool2d(t, 3, 1), ones)
    _, idx = F.max_pool2d(x.to(CUDA), 3, 1, 1, ceil_mode=ceil_mode, return_indices=True)
    _, expected = TF.max_pool2d(torch_of(x), 3, 1, 1, ceil_mode=ceil_mode,
                                return_indices=True)
    np.testing.assert_array_equal(host(idx), expected.numpy())


@pytest.mark.parametrize("ceil_mode", [False, True])
@pytest.mark.parametrize("count_include_pad", [False, True])
def test_avg_pool_padding_modes(ceil_mode, count_include_pad):
    x = make((2, 7, 8), seed=3)       # (C, H, W): no batch dim
    for divisor in (None, 4):
        def run(fn, t):
            return fn(t, (3, 2), (2, 3), (1, 1), ceil_mode, count_include_pad, divisor)
        forward_backward(lambda t: run(F.avg_pool2d, t), lambda t: run(TF.avg_pool2d, t), x)


def test_non_contiguous_inputs():
    x = make((3, 2, 9, 7), seed=4).permute(1, 0, 3, 2)      # (2, 3, 7, 9), transposed
    assert not x.is_contiguous()
    forward_backward(lambda t: F.max_pool2d(t, 3, 2, 1), lambda t: TF.max_pool2d(t, 3, 2, 1), x)
    forward_backward(lambda t: F.adaptive_avg_pool2d(t, (4, 5)),
                     lambda t: TF.adaptive_avg_pool2d(t, (4, 5)), x)
    forward_backward(lambda t: F.adaptive_max_pool2d(t, (3, 4)),
                     lambda t: TF.adaptive_max_pool2d(t, (3, 4)), x)
    forward_backward(lambda t: F.interpolate(t, size=(10, 4), mode="nearest"),
                     lambda t: TF.interpolate(t, size=(10, 4), mode="nearest"), x)
    forward_backward(lambda t: F.pad(t, (2, 1, 0, 3), mode="reflect"),
                     lambda t: TF.pad(t, (2, 1, 0, 3), mode="reflect"), x)


@pytest.mark.parametrize("dtype", [tp.float16, tp.bfloat16, tp.float64], ids=lambda d: d.name)
def test_half_and_double(dtype):
    x = make((1, 2, 6, 7), seed=5).to(dtype)
    forward_backward(lambda t: F.avg_pool2d(t, 2, 2, 1), lambda t: TF.avg_pool2d(t, 2, 2, 1), x)
    forward_backward(lambda t: F.max_pool2d(t, 3, 1), lambda t: TF.max_pool2d(t, 3, 1), x)
    for align in (False, True):
        forward_backward(
            lambda t: F.interpolate(t, size=(9, 5), mode="bilinear", align_corners=align),
            lambda t: TF.interpolate(t, size=(9, 5), mode="bilinear", align_corners=align), x)
    forward_backward(lambda t: F.pad(t, (1, 2, 2, 1), mode="replicate"),
                     lambda t: TF.pad(t, (1, 2, 2, 1), mode="replicate"), x)


def test_upsample_scale_factors():
    x = make((1, 2, 5, 6), seed=6)
    for scale in (1.5, 0.6, (2.0, 0.5)):
        for mode in ("nearest", "bilinear"):
            forward_backward(lambda t: F.interpolate(t, scale_factor=scale, mode=mode),
                             lambda t: TF.interpolate(t, scale_factor=scale, mode=mode), x)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_pad_modes_with_border_reads(mode):
    # Pads as wide as the mode allows: border pixels are read several times and their
    # gradients added (replicate: left + 1 times).
    x = make((2, 3, 4, 5), seed=8)
    pads = (4, 4, 3, 3) if mode == "reflect" else (5, 4, 4, 3)     # (H, W) = (4, 5)
    forward_backward(lambda t: F.pad(t, pads, mode=mode), lambda t: TF.pad(t, pads, mode=mode),
                     x)


@pytest.mark.parametrize("dtype", [tp.float32, tp.int64, tp.bool], ids=lambda d: d.name)
def test_constant_pad_more_than_three_dims(dtype):
    x = make((2, 3, 2, 3, 2), dtype, seed=9).permute(4, 3, 2, 1, 0)
    pads = (1, 0, -1, 2, 0, 1, 2, 1, 1, 1)          # five dims: two rounds of the kernel
    value = True if dtype is tp.bool else 3
    got = F.pad(x.to(CUDA), pads, value=value)
    expected = TF.pad(torch_of(x), pads, value=value)
    np.testing.assert_array_equal(host(got), expected.numpy())
    if dtype is tp.float32:
        forward_backward(lambda t: F.pad(t, pads, value=2.5),
                         lambda t: TF.pad(t, pads, value=2.5), x)


def test_max_pool_backward_rejects_bad_indices():
    x = make((1, 1, 4, 4)).to(CUDA)
    grad = tp.ones((1, 1, 2, 2), device=CUDA)
    for bad in (16, -1):
        idx = tp.tensor([[[[0, 1], [2, bad]]]], dtype=tp.int64).to(CUDA)
        with pytest.raises(DimError, match=r"max_pool2d_with_indices_backward\(\): argument "
                                           r"'indices' holds a position outside"):
            tp.max_pool2d_with_indices_backward(grad, x, [2, 2], [2, 2], [0, 0], [1, 1],
                                                False, idx)


def test_explain_shows_the_triton_launch():
    x = make((1, 1, 4, 4)).to(CUDA)
    with tp.dispatch.explain(file=False) as ex:
        F.max_pool2d(x, 2)
    assert any("triton" in line and "max_pool2d_with_indices" in line for line in ex.lines)


BIG3 = make((2, 3, 5, 22, 20), seed=4)    # 3-D: several programs too


def test_3d_pools_take_several_programs_and_overlapping_windows():
    assert BIG3.numel() > 2 * pool.BLOCK
    forward_backward(lambda x: F.max_pool3d(x, 2, 1, 1, ceil_mode=True),
                     lambda x: TF.max_pool3d(x, 2, 1, 1, ceil_mode=True), BIG3)
    forward_backward(lambda x: F.avg_pool3d(x, 2, 1, 1, count_include_pad=False),
                     lambda x: TF.avg_pool3d(x, 2, 1, 1, count_include_pad=False), BIG3)
    forward_backward(lambda x: F.adaptive_avg_pool3d(x, (4, 7, 5)),
                     lambda x: TF.adaptive_avg_pool3d(x, (4, 7, 5)), BIG3)
    forward_backward(lambda x: F.adaptive_max_pool3d(x, (4, 7, 5)),
                     lambda x: TF.adaptive_max_pool3d(x, (4, 7, 5)), BIG3)


@pytest.mark.parametrize("dtype", [tp.float16, tp.bfloat16])
def test_fractional_max_pool_half_inputs(dtype):
    """Half inputs: windows placed with float32 arithmetic (PyTorch's CUDA kernel's), the
    gradients summed in float32 and rounded once."""
    x = make((2, 3, 9, 8), dtype, seed=5)
    u = torch.rand(2, 3, 2, generator=torch.Generator().manual_seed(0))
    samples = tp.tensor(u.numpy(), dtype=dtype)
    t_samples = u.to(getattr(torch, dtype.name)).float()
    forward_backward(
        lambda t: F.fractional_max_pool2d(t, 2, output_size=(5, 4),
                                          _random_samples=samples.to(CUDA)),
        lambda t: TF.fractional_max_pool2d(t.float(), 2, output_size=(5, 4),
                                           _random_samples=t_samples).to(t.dtype), x)


def test_fractional_max_pool_backward_rejects_bad_indices():
    x = make((1, 2, 5, 5), seed=6).to(CUDA)
    g = tp.ones((1, 2, 2, 2), device=CUDA)
    bad = tp.full((1, 2, 2, 2), 25, dtype=tp.int64, device=CUDA)
    with pytest.raises(DimError, match=r"fractional_max_pool2d_backward\(\): argument "
                                       r"'indices' holds a position outside"):
        tp.fractional_max_pool2d_backward(g, x, [2, 2], [2, 2], bad)
