"""random_, cauchy_, log_normal_, geometric_, poisson and binomial: on the CPU, PyTorch's
own numbers after the same seed (tensorplay/_random_draws.py consumes the mt19937 stream
as PyTorch's kernels do); on `cuda` (Philox, and host copies for poisson and binomial),
reproducible under tp.manual_seed and drawn from the right distribution: a two-sample
Kolmogorov-Smirnov test against PyTorch's samples, fixed seeds (so deterministic)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats

import tensorplay as tp
from opinfo.core import TORCH_DTYPE, available_devices

CUDA = "cuda" in available_devices()
DTYPES = (tp.float64, tp.float32, tp.float16, tp.bfloat16, tp.int64, tp.int32, tp.int8,
          tp.uint8, tp.bool)


def _fills():
    """(name, dtypes, fill(tensor, generator)), the same call in both libraries."""
    return [
        ("random_()", DTYPES, lambda t, g: t.random_(generator=g)),
        ("random_(to)", DTYPES[:-1], lambda t, g: t.random_(9, generator=g)),
        ("random_(from, to)", DTYPES[:-2], lambda t, g: t.random_(-4, 20, generator=g)),
        ("random_(from, None)", DTYPES[:-2], lambda t, g: t.random_(-3, None, generator=g)),
        ("random_(0, 2**40)", (tp.float64, tp.int64),
         lambda t, g: t.random_(0, 2 ** 40, generator=g)),
        ("random_(int64 min, None)", (tp.int64, tp.float64),
         lambda t, g: t.random_(-2 ** 63, None, generator=g)),
        ("cauchy_", DTYPES[:4], lambda t, g: t.cauchy_(0.5, 2.0, generator=g)),
        ("log_normal_", DTYPES[:4], lambda t, g: t.log_normal_(0.5, 0.75, generator=g)),
        ("geometric_", DTYPES[:-1], lambda t, g: t.geometric_(0.2, generator=g)),
    ]


def _np(t):
    return t.float().numpy() if isinstance(t, torch.Tensor) and t.dtype is torch.bfloat16 \
        else np.asarray(t.float().cpu() if t.dtype is tp.bfloat16 else t.cpu())


@pytest.mark.parametrize("name, dtypes, fill", _fills(), ids=[f[0] for f in _fills()])
def test_cpu_draws_are_pytorchs(name, dtypes, fill):
    for dtype in dtypes:
        torch.manual_seed(11)
        expected = fill(torch.empty(6, 7, dtype=TORCH_DTYPE[dtype]).t(), None)
        tp.manual_seed(11)
        got = fill(tp.empty(6, 7, dtype=dtype).t(), None)    # a transposed tensor: the
        np.testing.assert_array_equal(_np(got), _np(expected), err_msg=f"{name} {dtype}")
        # ...visiting order is PyTorch's; and the streams stay aligned afterwards
        assert tp.rand(3).tolist() == torch.rand(3).tolist(), f"{name} {dtype}: stream moved"
        g, tg = tp.Generator().manual_seed(5), torch.Generator().manual_seed(5)
        np.testing.assert_array_equal(_np(fill(tp.empty(40, dtype=dtype), g)),
                                      _np(fill(torch.empty(40, dtype=TORCH_DTYPE[dtype]), tg)))


def test_cpu_poisson_and_binomial_are_pytorchs():
    # Both samplers of each: poisson below and above rate 10, binomial by inversion
    # (count * p < 10) and by BTRS, with p on both sides of 0.5.
    rates = [0.0, 0.3, 4.0, 9.99, 10.0, 37.5, 1e3, 2e5] * 25
    counts = [0, 3, 10, 25, 60, 200, 1000, 5, 1e4] * 20
    probs = [0.4, 0.5, 0.9, 0.3, 0.75, 0.05, 0.5, 1.0, 0.999] * 20
    for dtype in (tp.float64, tp.float32):
        tdtype = TORCH_DTYPE[dtype]
        torch.manual_seed(3)
        expected = (torch.poisson(torch.tensor(rates, dtype=tdtype)),
                    torch.binomial(torch.tensor(counts, dtype=tdtype),
                                   torch.tensor(probs, dtype=tdtype)))
        tp.manual_seed(3)
        got = (tp.poisson(tp.tensor(rates, dtype=dtype)),
               tp.binomial(tp.tensor(counts, dtype=dtype), tp.tensor(probs, dtype=dtype)))
        for g, e in zip(got, expected):
            np.testing.assert_array_equal(_np(g), _np(e))
        assert tp.rand(2).tolist() == torch.rand(2).tolist()


def test_the_draws_have_no_gradient():
    x = tp.ones(5, requires_grad=True)
    for fill in (lambda t: t.cauchy_(), lambda t: t.log_normal_(), lambda t: t.geometric_(0.5),
                 lambda t: t.random_(0, 3)):
        y = x.clone()
        fill(y)
        (y * 3).sum().backward()
        assert x.grad.tolist() == [0.0] * 5
        x.grad = None
    rates = tp.full((4,), 3.0, requires_grad=True)
    tp.poisson(rates).sum().backward()
    assert rates.grad.tolist() == [0.0] * 4


# ---- cuda ---------------------------------------------------------------------------------
N = 4096
cuda_only = pytest.mark.skipif(not CUDA, reason="no cuda device (nor the Triton interpreter)")


def _cuda_cases():
    """(name, a tp draw on cuda, the same distribution drawn by PyTorch on the CPU)."""
    return [
        ("cauchy_", lambda: tp.empty(N, device="cuda").cauchy_(0.5, 2.0),
         lambda: torch.empty(N).cauchy_(0.5, 2.0)),
        ("log_normal_", lambda: tp.empty(N, device="cuda").log_normal_(0.5, 0.75),
         lambda: torch.empty(N).log_normal_(0.5, 0.75)),
        ("geometric_", lambda: tp.empty(N, device="cuda").geometric_(0.2),
         lambda: torch.empty(N).geometric_(0.2)),
        ("random_(from, to)", lambda: tp.empty(N, device="cuda").random_(-4, 20),
         lambda: torch.empty(N).random_(-4, 20)),
        ("random_(0, 2**40)", lambda: tp.empty(N, dtype=tp.int64, device="cuda")
         .random_(0, 2 ** 40), lambda: torch.empty(N, dtype=torch.int64).random_(0, 2 ** 40)),
        ("random_() int8", lambda: tp.empty(N, dtype=tp.int8, device="cuda").random_(),
         lambda: torch.empty(N, dtype=torch.int8).random_()),
        ("poisson", lambda: tp.poisson(tp.full((512,), 12.5, device="cuda")),
         lambda: torch.poisson(torch.full((512,), 12.5))),
        ("binomial", lambda: tp.binomial(tp.full((512,), 40.0, device="cuda"),
                                         tp.full((512,), 0.3, device="cuda")),
         lambda: torch.binomial(torch.full((512,), 40.0), torch.full((512,), 0.3))),
    ]


@cuda_only
@pytest.mark.parametrize("name, draw, reference", _cuda_cases(),
                         ids=[c[0] for c in _cuda_cases()])
def test_cuda_draws(name, draw, reference):
    tp.manual_seed(21)
    first = draw()
    assert first.device.type == "cuda"
    tp.manual_seed(21)
    again = draw()
    np.testing.assert_array_equal(_np(first), _np(again), err_msg="manual_seed must replay")
    assert not np.array_equal(_np(draw()), _np(first)), "the generator moves on"
    torch.manual_seed(21)
    p = stats.ks_2samp(_np(first).astype(np.float64), reference().double().numpy()).pvalue
    assert p > 1e-3, f"{name}: the cuda draws do not follow PyTorch's distribution (p={p})"
