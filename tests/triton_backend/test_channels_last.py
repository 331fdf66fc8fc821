"""channels_last on `cuda`: max, average and adaptive average pooling and the batch_norm
forward have NHWC kernels, convolution (forward and backward, any groups, transposed too)
one implicit-GEMM kernel that reads any strides and lays out its results as PyTorch; the
others (adaptive max pooling) are NCHW kernels, so a channels_last call reaches them
through the layout-conversion fallback of kernel selection, which lays the results out
channels_last again. Values, gradients and
strides (of results and gradients) against PyTorch with channels_last inputs, and against
the same call on NCHW inputs."""
import numpy as np
import pytest
import torch

from triton_util import CUDA, host

import tensorplay as tp

CASES = {
    "conv2d": (lambda F, x, w: F.conv2d(x, w, padding=1), (4, 3, 3, 3)),
    "max_pool2d": (lambda F, x, w: F.max_pool2d(x, 2), None),
    "avg_pool2d": (lambda F, x, w: F.avg_pool2d(x, 2), None),
    "batch_norm": (lambda F, x, w: F.batch_norm(x, None, None, training=True), None),
}


def same_strides(mine, theirs):
    """Strides equal where they matter: a dim of size 1 may have any stride."""
    return tuple(mine.shape) == tuple(theirs.shape) and all(
        a == b for a, b, n in zip(mine.stride(), theirs.stride(), mine.shape) if n != 1)


@pytest.mark.parametrize("case", sorted(CASES))
def test_channels_last_on_cuda_matches_torch_and_nchw(case):
    fn, w_shape = CASES[case]
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((2, 3, 4, 6)).astype(np.float32)
    x = tp.from_numpy(x_np).to(CUDA).to(memory_format=tp.channels_last).requires_grad_()
    plain = tp.from_numpy(x_np).to(CUDA).requires_grad_()
    tx = torch.from_numpy(x_np).to(memory_format=torch.channels_last).requires_grad_()
    w = tw = None
    if w_shape is not None:
        w_np = rng.standard_normal(w_shape).astype(np.float32)
        w = tp.from_numpy(w_np).to(CUDA).requires_grad_()
        tw = torch.from_numpy(w_np).requires_grad_()
    y, y_plain = fn(tp.nn.functional, x, w), fn(tp.nn.functional, plain, w)
    ty = fn(torch.nn.functional, tx, tw)
    assert same_strides(y, ty) and y_plain.is_contiguous()
    np.testing.assert_allclose(host(y.detach()), host(y_plain.detach()), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(host(y.detach()), ty.detach().numpy(), rtol=1e-4, atol=1e-5)
    g_np = rng.standard_normal(ty.shape).astype(np.float32)
    (y * tp.from_numpy(g_np).to(CUDA)).sum().backward()
    (ty * torch.from_numpy(g_np)).sum().backward()
    assert same_strides(x.grad, tx.grad)
    np.testing.assert_allclose(host(x.grad), tx.grad.numpy(), rtol=1e-4, atol=1e-4)
    if w is not None:
        assert same_strides(w.grad, tw.grad)
        np.testing.assert_allclose(host(w.grad), tw.grad.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("training", [True, False])
def test_nhwc_batch_norm_kernel_runs_and_matches_torch(training):
    rng = np.random.default_rng(1)
    x_np = rng.standard_normal((3, 5, 4, 3)).astype(np.float32)
    stats_np = [rng.standard_normal(5).astype(np.float32),
                rng.uniform(0.5, 2, 5).astype(np.float32)]
    w_np, b_np = rng.standard_normal(5).astype(np.float32), rng.standard_normal(5).astype(
        np.float32)
    x = tp.from_numpy(x_np).to(CUDA).to(memory_format=tp.channels_last)
    tx = torch.from_numpy(x_np).to(memory_format=torch.channels_last)
    rm, rv = (tp.from_numpy(s.copy()).to(CUDA) for s in stats_np)
    trm, trv = (torch.from_numpy(s.copy()) for s in stats_np)
    tp.dispatch.reset_stats()
    tp.dispatch.enable_stats()
    try:
        y = tp.nn.functional.batch_norm(x, rm, rv, tp.from_numpy(w_np).to(CUDA),
                                        tp.from_numpy(b_np).to(CUDA), training=training)
        ran = tp.dispatch.cache_stats()["native_batch_norm"]
    finally:
        tp.dispatch.enable_stats(False)
    ty = torch.nn.functional.batch_norm(tx, trm, trv, torch.from_numpy(w_np),
                                        torch.from_numpy(b_np), training=training)
    assert ran.kernels == {"triton_kernels.normalization.native_batch_norm_nhwc": 1}
    assert not ran.fallbacks
    assert same_strides(y, ty)
    np.testing.assert_allclose(host(y), ty.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(host(rm), trm.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(host(rv), trv.numpy(), rtol=1e-5, atol=1e-6)


NHWC_POOLS = {
    "max 3 s2 p1 ceil": lambda F, x: F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True),
    "max dilated": lambda F, x: F.max_pool2d(x, 2, stride=1, dilation=2),
    "avg 3 s2 p1 no pad count": lambda F, x: F.avg_pool2d(x, 3, stride=2, padding=1,
                                                          count_include_pad=False),
    "avg divisor": lambda F, x: F.avg_pool2d(x, 2, divisor_override=3),
    "adaptive avg (3, 4)": lambda F, x: F.adaptive_avg_pool2d(x, (3, 4)),
}
NHWC_OPS = {"max": "max_pool2d_with_indices", "avg": "avg_pool2d",
            "adaptive": "adaptive_avg_pool2d"}


@pytest.mark.parametrize("dtype, tol", [(np.float32, 1e-5), (np.float16, 1e-2)])
@pytest.mark.parametrize("case", sorted(NHWC_POOLS))
def test_nhwc_pool_kernels_run_and_match_torch(case, dtype, tol):
    """Values, indices, gradients and their strides; the NHWC kernels ran, forward and
    backward, with no layout fallback."""
    fn = NHWC_POOLS[case]
    x_np = np.random.default_rng(len(case)).standard_normal((2, 5, 7, 6)).astype(dtype)
    x = tp.from_numpy(x_np).to(CUDA).to(memory_format=tp.channels_last).requires_grad_()
    tx = torch.from_numpy(x_np.astype(np.float32)).to(memory_format=torch.channels_last) \
        .requires_grad_()
    tp.dispatch.reset_stats()
    tp.dispatch.enable_stats()
    try:
        y = fn(tp.nn.functional, x)
        g_np = np.random.default_rng(3).standard_normal(tuple(y.shape)).astype(dtype)
        (y * tp.from_numpy(g_np).to(CUDA)).sum().backward()
        stats = tp.dispatch.cache_stats()
    finally:
        tp.dispatch.enable_stats(False)
    ty = fn(torch.nn.functional, tx)
    (ty * torch.from_numpy(g_np.astype(np.float32))).sum().backward()
    assert same_strides(y, ty) and same_strides(x.grad, tx.grad)
    assert y.dtype == x.dtype and x.grad.dtype == x.dtype
    np.testing.assert_allclose(host(y.detach()).astype(np.float32), ty.detach().numpy(),
                               rtol=tol, atol=tol)
    np.testing.assert_allclose(host(x.grad).astype(np.float32), tx.grad.numpy(), rtol=tol,
                               atol=tol)
    op = NHWC_OPS[case.split()[0]]
    for name in (op, op + "_backward"):
        assert stats[name].kernels == {f"triton_kernels.pooling.{name}_nhwc": 1}, name
        assert not stats[name].fallbacks


def test_nhwc_max_pool_indices_match_torch():
    x_np = np.random.default_rng(4).integers(0, 3, (2, 4, 6, 5)).astype(np.float32)
    x_np[1, 2, 3, 3] = np.nan
    x = tp.from_numpy(x_np).to(CUDA).to(memory_format=tp.channels_last)
    tx = torch.from_numpy(x_np).to(memory_format=torch.channels_last)
    v, i = tp.nn.functional.max_pool2d(x, 3, stride=2, padding=1, return_indices=True)
    tv, ti = torch.nn.functional.max_pool2d(tx, 3, stride=2, padding=1, return_indices=True)
    assert same_strides(i, ti) and same_strides(v, tv)
    np.testing.assert_array_equal(host(i), ti.numpy())
    np.testing.assert_array_equal(host(v), tv.numpy())


NHWC_CONVS = [  # (conv2d keywords, weight shape, bias, dtype, tolerance)
    (dict(padding=1), (5, 3, 3, 3), True, np.float32, 1e-4),
    (dict(stride=2, dilation=(1, 2), padding=(2, 1)), (4, 3, 2, 3), False, np.float32, 1e-4),
    (dict(stride=(3, 2)), (4, 3, 2, 2), False, np.float32, 1e-4),   # pixels no window reads
    (dict(), (20, 19, 1, 1), True, np.float16, 5e-2),   # channels over one K tile
]


@pytest.mark.parametrize("kwargs, w_shape, has_bias, dtype, tol", NHWC_CONVS)
def test_nhwc_conv2d_kernel_runs_and_matches_torch(kwargs, w_shape, has_bias, dtype, tol):
    """Forward and backward run the implicit GEMM on the NHWC memory (no layout
    fallback): values, gradients and strides against PyTorch."""
    rng = np.random.default_rng(2)
    x_np = rng.standard_normal((2, w_shape[1], 7, 6)).astype(dtype)
    w_np = rng.standard_normal(w_shape).astype(dtype)
    b_np = rng.standard_normal(w_shape[0]).astype(dtype) if has_bias else None
    x = tp.from_numpy(x_np).to(CUDA).to(memory_format=tp.channels_last).requires_grad_()
    w = tp.from_numpy(w_np).to(CUDA).requires_grad_()
    b = tp.from_numpy(b_np).to(CUDA).requires_grad_() if has_bias else None
    tx = torch.from_numpy(x_np.astype(np.float32)).to(memory_format=torch.channels_last) \
        .requires_grad_()
    tw = torch.from_numpy(w_np.astype(np.float32)).requires_grad_()
    tb = torch.from_numpy(b_np.astype(np.float32)).requires_grad_() if has_bias else None
    g_np = rng.standard_normal(tuple(
        torch.nn.functional.conv2d(tx, tw, tb, **kwargs).shape)).astype(dtype)
    tp.dispatch.reset_stats()
    tp.dispatch.enable_stats()
    try:
        y = tp.nn.functional.conv2d(x, w, b, **kwargs)
        (y * tp.from_numpy(g_np).to(CUDA)).sum().backward()
        stats = tp.dispatch.cache_stats()
    finally:
        tp.dispatch.enable_stats(False)
    for name in ("convolution", "convolution_backward"):
        assert set(stats[name].kernels) == {f"triton_kernels.conv.{name}"}, name
        assert not stats[name].fallbacks
    ty = torch.nn.functional.conv2d(tx, tw, tb, **kwargs)
    (ty * torch.from_numpy(g_np.astype(np.float32))).sum().backward()
    assert same_strides(y, ty) and same_strides(x.grad, tx.grad)
    assert y.dtype == x.dtype and x.grad.dtype == w.grad.dtype == x.dtype
    for mine, theirs in ((y.detach(), ty.detach()), (x.grad, tx.grad), (w.grad, tw.grad)) + \
            (((b.grad, tb.grad),) if has_bias else ()):
        np.testing.assert_allclose(host(mine).astype(np.float32), theirs.numpy(), rtol=tol,
                                   atol=tol)


def test_nhwc_grouped_conv2d_needs_no_layout_fallback():
    rng = np.random.default_rng(3)
    x_np = rng.standard_normal((1, 4, 5, 5)).astype(np.float32)
    w_np = rng.standard_normal((4, 2, 3, 3)).astype(np.float32)
    x = tp.from_numpy(x_np).to(CUDA).to(memory_format=tp.channels_last)
    tp.dispatch.reset_stats()
    tp.dispatch.enable_stats()
    try:
        y = tp.nn.functional.conv2d(x, tp.from_numpy(w_np).to(CUDA), groups=2)
        ran = tp.dispatch.cache_stats()["convolution"]
    finally:
        tp.dispatch.enable_stats(False)
    assert set(ran.kernels) == {"triton_kernels.conv.convolution"} and not ran.fallbacks
    assert y.is_contiguous(memory_format=tp.channels_last)
    ty = torch.nn.functional.conv2d(torch.from_numpy(x_np), torch.from_numpy(w_np), groups=2)
    np.testing.assert_allclose(host(y), ty.numpy(), rtol=1e-4, atol=1e-4)
