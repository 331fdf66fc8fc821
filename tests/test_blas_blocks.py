"""Products cut into column blocks, or blocks of their inner dimension, for OpenBLAS's
small-matrix kernels (cpu_kernels/_blas.py): the widths the rules give, that a blocked
product is the whole product, and that a same-size convolution run in blocks (forward,
grad_input, grad_weight) matches PyTorch's, whichever BLAS this machine has."""
import numpy as np
import pytest
import torch

import tensorplay as tp
from cpu_kernels import _blas, _conv_same

F = tp.nn.functional


@pytest.fixture(params=[True, False], ids=["small-kernels", "plain-blas"])
def blas_kind(request, monkeypatch):
    """Run as on a BLAS with small-matrix kernels, and as on one without."""
    monkeypatch.setattr(_blas, "small_kernels", lambda: request.param)
    return request.param


@pytest.mark.parametrize("rows, depth, columns, width, width64", [
    # a ResNet 3x3 layer's image: three blocks within 100^3, 96 + 96 + 64 columns (a
    # multiple of a 64-byte cache line: 16 float32 columns, 8 float64) in place of 86 each
    (32, 288, 256, 96, 88),
    (16, 288, 256, 128, 128),      # its grad_input into 16 channels: two blocks
    (32, 289, 256, 96, 88),        # with a bias column
    (32, 288, 257, 96, 88),        # the last block narrower
    (32, 144, 64, None, None),     # the digits CNN's 8x8 images: 295k, within 100^3 already
    (64, 576, 196, None, None),    # 64 channels: blocks of 27 columns would cost more than save
])
def test_the_widths_the_rule_gives(blas_kind, rows, depth, columns, width, width64):
    for dtype, want in ((np.float32, width), (np.float64, width64)):
        got = _blas.column_block(rows, depth, columns, dtype)
        assert got == (want if blas_kind else None)
        if got is not None:
            assert rows * depth * got <= _blas.SMALL_PRODUCT and got >= _blas.NARROWEST
            assert got * np.dtype(dtype).itemsize % _blas.CACHE_LINE == 0
    # no small-matrix kernels for complex products: those run whole
    assert _blas.column_block(rows, depth, columns, np.complex64) is None


@pytest.mark.parametrize("rows, depth, columns, width", [
    (145, 1024, 32, 205),    # the digits CNN's conv2 weight gradient, 16 images a chunk
    (289, 4096, 32, 108),    # a ResNet layer's (32 channels, 16x16, 16 images)
    (10, 2048, 16, None),    # conv1's: 327k, within 100^3 already
    (577, 4096, 64, None),   # blocks of 27 positions would cost more than save
])
def test_the_depth_widths_the_rule_gives(blas_kind, rows, depth, columns, width):
    got = _blas.depth_block(rows, depth, columns, np.float32)
    assert got == (width if blas_kind else None)
    if got is not None:
        assert rows * got * columns <= _blas.SMALL_PRODUCT and got >= _blas.NARROWEST
    assert _blas.depth_block(rows, depth, columns, np.complex128) is None


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("width", [None, 33, 100, 300])
def test_a_product_in_depth_blocks_is_the_whole_product(dtype, width):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((9, 257)).astype(dtype)[:, :250]   # rows strided, as cols[:, s:]
    b = rng.standard_normal((250, 7)).astype(dtype)
    got = _blas.matmul_by_depth(a, b, width)
    want = a.astype(np.float64) @ b.astype(np.float64)
    assert got.dtype == dtype and got.shape == (9, 7)
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12,
                               atol=1e-4 if dtype == np.float32 else 1e-11)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("width", [None, 33, 86, 300])
def test_a_product_in_column_blocks_is_the_whole_product(dtype, width):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((8, 40)).astype(dtype)
    b = rng.standard_normal((3, 40, 257)).astype(dtype)
    out = np.full((3, 8, 257), np.nan, dtype)
    _blas.matmul_by_columns(a, b, out, width)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(out, want, rtol=1e-5 if dtype == np.float32 else 1e-12,
                               atol=1e-4 if dtype == np.float32 else 1e-11)


def _same_size_conv_matches_torch(seed, x_shape, w_shape, bias):
    """A 3x3 convolution with padding 1 (the same-size form): its values, and the
    gradients of a random upstream gradient, against PyTorch's."""
    rng = np.random.default_rng(seed)
    arrays = (rng.standard_normal(x_shape).astype(np.float32),
              rng.standard_normal(w_shape).astype(np.float32) * 0.1,
              rng.standard_normal(w_shape[0]).astype(np.float32))
    x, w, b = (tp.tensor(a, requires_grad=True) for a in arrays)
    xt, wt, bt = (torch.tensor(a, requires_grad=True) for a in arrays)
    y = F.conv2d(x, w, b if bias else None, padding=1)
    yt = torch.nn.functional.conv2d(xt, wt, bt if bias else None, padding=1)
    np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy(), rtol=1e-4, atol=1e-4)
    g = rng.standard_normal(y.shape).astype(np.float32)
    y.backward(tp.tensor(g))
    yt.backward(torch.tensor(g))
    for mine, theirs in ((x, xt), (w, wt)) + (((b, bt),) if bias else ()):
        np.testing.assert_allclose(mine.grad.numpy(), theirs.grad.numpy(), rtol=1e-4,
                                   atol=1e-3)


@pytest.mark.parametrize("batch", [1, 3])
def test_a_blocked_same_size_convolution_matches_torch(blas_kind, batch):
    """32 channels on 16x16 (blocks of 96, 96 and 64 columns where the BLAS has small
    kernels), with a bias: values and gradients against PyTorch."""
    _same_size_conv_matches_torch(1, (batch, 32, 16, 16), (32, 32, 3, 3), True)


@pytest.mark.parametrize("batch, bias", [(32, True), (17, False), (1, True)])
def test_the_weight_gradient_in_depth_blocks_matches_torch(blas_kind, batch, bias,
                                                          monkeypatch):
    """The digits CNN's second layer (16 -> 32 channels, 8x8): its weight gradient runs in
    blocks of positions against g laid out position-major where the BLAS has small
    kernels (two chunks at batch 32, an uneven last chunk at 17), whole otherwise. (The
    forward keeps no columns here, so that the backward copies them again in blocks:
    tests/test_conv_kept_columns.py tests the kept ones.)"""
    monkeypatch.setattr(_conv_same, "KEEP_WORK", float("inf"))
    _same_size_conv_matches_torch(3, (batch, 16, 8, 8), (32, 16, 3, 3), bias)


def test_the_blas_is_asked_once():
    """small_kernels() reads the loaded libraries once per process (functools.cache): a
    convolution call does not scan them again."""
    _blas.small_kernels()
    before = _blas.small_kernels.cache_info()
    _blas.column_block(32, 288, 256, np.float32)
    after = _blas.small_kernels.cache_info()
    assert (after.hits, after.misses) == (before.hits + 1, before.misses)


@pytest.mark.parametrize("stride, padding", [(2, 1), (1, 0)])
def test_a_blocked_strided_or_valid_convolution_matches_torch(blas_kind, stride, padding):
    """The general form's per-image products (cpu_kernels/conv.py, per_image_product): a
    stride-2 layer (ResNet's downsampling, 16x16 outputs of 32 channels: blocks where the
    BLAS has small kernels) and one without padding (14x14)."""
    rng = np.random.default_rng(2)
    arrays = (rng.standard_normal((2, 32, 32 if stride == 2 else 16,
                                   32 if stride == 2 else 16)).astype(np.float32),
              rng.standard_normal((32, 32, 3, 3)).astype(np.float32) * 0.1)
    x, w = (tp.tensor(a, requires_grad=True) for a in arrays)
    xt, wt = (torch.tensor(a, requires_grad=True) for a in arrays)
    y = F.conv2d(x, w, stride=stride, padding=padding)
    yt = torch.nn.functional.conv2d(xt, wt, stride=stride, padding=padding)
    np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy(), rtol=1e-4,
                               atol=1e-4)
    y.sum().backward()
    yt.sum().backward()
    for mine, theirs in ((x, xt), (w, wt)):
        np.testing.assert_allclose(mine.grad.numpy(), theirs.grad.numpy(), rtol=1e-4,
                                   atol=1e-3)
