"""One-pass statistics on `cuda` (triton_kernels/reduction.py, stats_kernel) against
PyTorch: var / std by Welford's update and Chan's merge, logsumexp by an online max and
sum; a row split over programs (the two-level merge of partial statistics); column
reductions over wide tiles of the contiguous kept dim; special values, corrections,
empty and 0-dim inputs, half types, gradients."""
import numpy as np
import pytest
import torch

from triton_util import CUDA, host, make

import tensorplay as tp
from triton_kernels import reduction

TORCH = {tp.float32: torch.float32, tp.float16: torch.float16, tp.bfloat16: torch.bfloat16,
         tp.float64: torch.float64}
TOL = {tp.float32: 2e-5, tp.float16: 2e-3, tp.bfloat16: 1.6e-2, tp.float64: 1e-12}


def torch_of(t):
    return torch.tensor(host(t), dtype=TORCH[t.dtype])


def check(fn, x, tol=None, grad=True):
    """fn on x (cuda) against fn on PyTorch's x: values, and the input's gradient."""
    tol = TOL[x.dtype] if tol is None else tol
    xc = x.cuda().requires_grad_(grad)
    xt = torch_of(x).requires_grad_(grad)
    out, ref = fn(xc), fn(xt)
    assert out.device == CUDA and out.dtype is x.dtype and tuple(out.shape) == tuple(ref.shape)
    np.testing.assert_allclose(host(out), ref.detach().double().numpy(), rtol=tol, atol=tol,
                               equal_nan=True)
    if grad and out.numel():
        out.sum().backward()
        ref.sum().backward()
        np.testing.assert_allclose(host(xc.grad), xt.grad.double().numpy(), rtol=tol,
                                   atol=tol, equal_nan=True)


STATS = {
    "var": lambda dim, keepdim: lambda t: t.var(dim, keepdim=keepdim),
    "std": lambda dim, keepdim: lambda t: t.std(dim, keepdim=keepdim),
    "var0": lambda dim, keepdim: lambda t: t.var(dim, correction=0, keepdim=keepdim),
    "logsumexp": lambda dim, keepdim: lambda t: t.logsumexp(dim, keepdim=keepdim),
}


@pytest.mark.parametrize("stat", sorted(STATS))
def test_over_any_dims(stat):
    x = make((4, 7, 5), seed=1) * 3 + 1
    for dim, keepdim in ((-1, False), (1, True), (0, False), ((0, 2), False)):
        check(STATS[stat](dim, keepdim), x)


@pytest.mark.parametrize("dtype", [tp.float16, tp.bfloat16, tp.float64], ids=lambda d: d.name)
def test_half_types_accumulate_in_float32(dtype):
    x = make((3, 50), dtype, seed=2) + 100      # a large mean: a naive sum of squares fails
    check(lambda t: t.var(1), x, grad=False)
    check(lambda t: t.std(0), x, grad=False)
    check(lambda t: t.logsumexp(1), x, grad=False)


def test_a_split_row_merges_partial_statistics(monkeypatch):
    monkeypatch.setattr(reduction, "MIN_PROGRAMS", 16)    # a GPU's policy: split long rows
    monkeypatch.setattr(reduction, "MAX_BLOCK_N", 256)
    block_m, block_n, split, _ = reduction.plan(2, 3000)
    assert split > 1
    x = make((2, 3000), seed=3) * 5 + 50
    check(lambda t: t.var(1), x)
    check(lambda t: t.std(), x)
    check(lambda t: t.logsumexp(1), x, tol=1e-4)


def test_column_reductions_read_wide_tiles():
    block_m, block_n, _, _ = reduction.plan(300, 4000, columns=True)
    assert block_m == reduction.COLUMN_BLOCK_M and block_n * block_m <= reduction.TILE
    assert reduction.plan(300, 4000)[0] * 16 <= block_m   # a row plan's few rows a tile
    x = make((40, 300), seed=4)
    check(lambda t: t.sum(0), x)
    check(lambda t: t.var(0), x)
    check(lambda t: t.logsumexp(0), x)
    check(lambda t: t.amax(0), x, grad=False)
    check(lambda t: t.max(0)[1].to(t.dtype), x, grad=False)
    check(lambda t: t.mean((0, 2)), make((6, 70, 5), seed=5))        # kept dim strided


def test_special_values():
    inf, nan = float("inf"), float("nan")
    # (no [1e30, -1e30, 0]: PyTorch's CPU var accumulates float32 in float64, its CUDA
    # kernel and this one in float32, where the squared deviations overflow)
    x = tp.tensor([[1.0, inf, 2.0], [-inf, -inf, -inf], [nan, 1.0, 2.0], [inf, -inf, 1.0],
                   [3.0, 3.0, 3.0], [1e18, -1e18, 0.0]])
    for fn in (lambda t: t.logsumexp(1), lambda t: t.var(1), lambda t: t.std(1)):
        check(fn, x, grad=False)


def test_corrections_empty_and_zero_dim():
    x = make((3, 4), seed=6)
    with pytest.warns(UserWarning):       # PyTorch warns of a divisor <= 0; ours is silent
        check(lambda t: t.var(1, correction=5), x, grad=False)
    check(lambda t: t.var(1, correction=2), x)
    check(lambda t: t.var(), make((1,), seed=7), grad=False)               # 0 / 0
    for fn in (lambda t: t.var(1), lambda t: t.logsumexp(1), lambda t: t.std(0)):
        check(fn, tp.zeros((3, 0)), grad=False)
    check(lambda t: t.logsumexp(0), tp.tensor(2.5))
    check(lambda t: t.var(0, correction=0), tp.tensor(2.5), grad=False)
