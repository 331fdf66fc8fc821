"""NHWC kernels (issue 14): pooling of channels_last inputs on CPU. Values, max indices,
result and gradient strides and gradients against PyTorch with channels_last inputs, and
the kernel that ran: the NHWC candidate, with no layout-conversion fallback."""
import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.dispatch import explain


def same_strides(mine, theirs):
    """Strides equal where they matter: a dim of size 1 may have any stride."""
    return tuple(mine.shape) == tuple(theirs.shape) and all(
        a == b for a, b, n in zip(mine.stride(), theirs.stride(), mine.shape) if n != 1)


CASES = {
    "max 2": lambda F, x: F.max_pool2d(x, 2),
    "max 3 s2 p1 ceil": lambda F, x: F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True),
    "max dilated": lambda F, x: F.max_pool2d(x, (2, 3), stride=(1, 2), dilation=(2, 1)),
    "avg 3 s1 p1": lambda F, x: F.avg_pool2d(x, 3, stride=1, padding=1),
    "avg ceil no pad count": lambda F, x: F.avg_pool2d(x, 3, stride=2, padding=1,
                                                       ceil_mode=True, count_include_pad=False),
    "avg divisor": lambda F, x: F.avg_pool2d(x, 2, divisor_override=3),
    "adaptive avg (2, 3)": lambda F, x: F.adaptive_avg_pool2d(x, (2, 3)),
    "adaptive avg 1": lambda F, x: F.adaptive_avg_pool2d(x, 1),
}
KERNELS = {"max": "max_pool2d_with_indices", "avg": "avg_pool2d",
           "adaptive": "adaptive_avg_pool2d"}
# PyTorch's adaptive_avg_pool2d to 1 x 1 is a mean (composite/pooling.py's
# adaptive_avg_pool), so no pooling kernel runs there.
MEAN_CASES = {"adaptive avg 1"}


def _cl_pair(shape, seed, dtype=np.float32):
    x_np = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    x = tp.from_numpy(x_np).to(memory_format=tp.channels_last).requires_grad_()
    tx = torch.from_numpy(x_np).to(memory_format=torch.channels_last).requires_grad_()
    return x, tx


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", sorted(CASES))
def test_nhwc_pooling_matches_torch_and_runs_the_nhwc_kernel(counting, case, dtype):
    fn = CASES[case]
    x, tx = _cl_pair((2, 16, 7, 6), seed=len(case), dtype=dtype)
    y, ty = fn(tp.nn.functional, x), fn(torch.nn.functional, tx)
    assert same_strides(y, ty) and y.dtype == {np.float32: tp.float32,
                                               np.float64: tp.float64}[dtype]
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-6)
    g = np.random.default_rng(1).standard_normal(ty.shape).astype(dtype)
    (y * tp.from_numpy(g)).sum().backward()
    (ty * torch.from_numpy(g)).sum().backward()
    assert same_strides(x.grad, tx.grad)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)
    op = KERNELS[case.split()[0]]
    if case in MEAN_CASES:
        assert op not in counting() and "mean.dim" in counting()
        return
    for name in (op, op + "_backward"):
        row = counting()[name]
        assert set(row.kernels) == {f"cpu_kernels.pooling.{name}_nhwc"} and not row.fallbacks


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("channels", [3, 16])
def test_nhwc_max_pool_indices_ties_and_nan_match_torch(channels, dtype):
    """Indices are flat (H, W) plane positions laid out channels_last, as PyTorch returns
    them; ties take the first maximum, a NaN the last NaN (PyTorch's CPU rule)."""
    x_np = np.random.default_rng(3).integers(0, 3, (2, channels, 6, 5)).astype(dtype)
    x_np[0, 1, 2, 3] = x_np[1, 2, 0, 0] = x_np[1, 2, 1, 1] = np.nan
    x = tp.from_numpy(x_np).to(memory_format=tp.channels_last)
    tx = torch.from_numpy(x_np).to(memory_format=torch.channels_last)
    for args in ((3, 2, 1, 1, False), (2, 1, 0, 2, True), ((2, 3), (1, 2), 1, (2, 1), False)):
        v, i = tp.nn.functional.max_pool2d(x, *args, return_indices=True)
        tv, ti = torch.nn.functional.max_pool2d(tx, *args, return_indices=True)
        assert same_strides(i, ti) and same_strides(v, tv) and i.dtype == tp.int64
        np.testing.assert_array_equal(i.numpy(), ti.numpy())
        np.testing.assert_array_equal(v.numpy(), tv.numpy())


def test_nhwc_max_pool_of_integers_matches_torch():
    x_np = np.random.default_rng(4).integers(-50, 50, (1, 16, 5, 5)).astype(np.int32)
    x = tp.from_numpy(x_np).to(memory_format=tp.channels_last)
    tx = torch.from_numpy(x_np).to(memory_format=torch.channels_last)
    v, i = tp.nn.functional.max_pool2d(x, 2, padding=1, return_indices=True)
    tv, ti = torch.nn.functional.max_pool2d(tx, 2, padding=1, return_indices=True)
    assert v.dtype == tp.int32 and same_strides(v, tv)
    np.testing.assert_array_equal(v.numpy(), tv.numpy())
    np.testing.assert_array_equal(i.numpy(), ti.numpy())


def test_explain_shows_the_nhwc_pooling_candidate_chosen():
    x, _ = _cl_pair((1, 3, 4, 4), seed=5)
    tp.dispatch.kernel_selection.bump_version()          # a cache miss, so the choice is shown
    with explain(file=False) as ex:
        tp.nn.functional.avg_pool2d(x.detach(), 2)
    assert "cache     miss (float32; channels_last) -> cpu_kernels.pooling.avg_pool2d_nhwc" \
        in ex.text
    assert "rejected, an NCHW kernel: channels_last inputs" in ex.text
    assert "fallback" not in ex.text


def test_nhwc_max_pool_of_few_channels_runs_the_nhwc_kernel(counting):
    """The NHWC max's loop runs along the channels; at 3 of them it still beats the NCHW
    kernel with the layout fallback's two copies, so it runs at every width."""
    x, tx = _cl_pair((1, 3, 4, 4), seed=6)
    y, ty = tp.nn.functional.max_pool2d(x, 2), torch.nn.functional.max_pool2d(tx, 2)
    assert same_strides(y, ty)
    np.testing.assert_array_equal(y.detach().numpy(), ty.detach().numpy())
    row = counting()["max_pool2d_with_indices"]
    assert set(row.kernels) == {"cpu_kernels.pooling.max_pool2d_with_indices_nhwc"}
    assert not row.fallbacks


@pytest.mark.parametrize("nhwc", [True, False])
def test_max_pool_backward_rejects_indices_outside_the_plane(nhwc):
    from cpu_kernels import pooling
    x = tp.rand(1, 16, 4, 4)
    if nhwc:
        x = x.to(memory_format=tp.channels_last)
    v, i = pooling.max_pool2d_with_indices_nhwc(x, (2, 2), (2, 2), (0, 0), (1, 1), False)
    bad = (i + 16).contiguous(memory_format=tp.channels_last if nhwc else tp.contiguous_format)
    backward = pooling.max_pool2d_with_indices_backward_nhwc if nhwc else \
        pooling.max_pool2d_with_indices_backward
    with pytest.raises(tp.errors.DimError, match="indices.*outside the 4 x 4 input plane"):
        backward(v, x, (2, 2), (2, 2), (0, 0), (1, 1), False, bad)
