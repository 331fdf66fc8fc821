"""The Triton kernels of the special functions (triton_kernels/special.py, their math in
triton_kernels/_special_math.py) against PyTorch, in float32 and float64: across each
function's range (the branches of its approximation: small and large arguments, the
reflection for negative ones, the tails), at its edges (poles, +-inf, nan), and for the
half types, which compute in float32. The host fallbacks (polygamma, igamma) are logged."""
import logging

import numpy as np
import pytest
import torch

from triton_util import CUDA, make  # noqa: F401

import tensorplay as tp
import triton_kernels.special as special

INF, NAN = float("inf"), float("nan")
RNG = np.random.default_rng(29)


def _spread(*ranges):
    """Points across each (low, high) range, log-spaced for wide positive ones."""
    parts = []
    for low, high in ranges:
        if low > 0 and high / low > 100:
            parts.append(np.exp(RNG.uniform(np.log(low), np.log(high), 40)))
        else:
            parts.append(RNG.uniform(low, high, 40))
    return np.concatenate(parts)


GAMMA_EDGES = [0.0, -0.0, 1.0, 2.0, -1.0, -2.0, 3.0, 13.0, 1e-30, 1e30, INF, -INF, NAN]
# torch name -> (tp function, arguments, edge values)
CASES = {
    "lgamma": (tp.lgamma, _spread((-30, 0), (0, 3), (3, 20), (20, 1e10)), GAMMA_EDGES),
    "digamma": (tp.digamma, _spread((-30, -0.01), (0.01, 3), (3, 20), (20, 1e10)), GAMMA_EDGES),
    "erfinv": (tp.erfinv, _spread((-0.7, 0.7), (0.7, 1.0), (-1.0, -0.7)),
               [0.0, -0.0, 1.0, -1.0, 1.5, 1 - 1e-7, INF, NAN]),
    "i0": (tp.i0, _spread((-8, 8), (8, 80), (-80, -8)), [0.0, 8.0, -8.0, INF, -INF, NAN]),
    "special.i0e": (tp.special.i0e, _spread((-8, 8), (8, 1e6), (-1e6, -8)),
                    [0.0, 8.0, INF, -INF, NAN]),
    "special.i1": (tp.special.i1, _spread((-8, 8), (8, 80), (-80, -8)),
                   [0.0, -0.0, 8.0, -8.0, INF, -INF, NAN]),
    "special.i1e": (tp.special.i1e, _spread((-8, 8), (8, 1e6), (-1e6, -8)),
                    [0.0, 8.0, INF, -INF, NAN]),
    "special.erfcx": (tp.special.erfcx, _spread((-9, 0), (0, 4), (4, 1e8)),
                      [0.0, -0.0, 30.0, -30.0, 1e20, INF, -INF, NAN]),
    "special.ndtri": (tp.special.ndtri, _spread((0.02425, 0.97575), (1e-30, 0.02425),
                                                (0.97575, 1.0)),
                      [0.0, 1.0, 0.5, -0.5, 1.5, INF, NAN]),
    "special.log_ndtr": (tp.special.log_ndtr, _spread((-30, -1), (-1, 5), (5, 30)),
                         [0.0, -1.0, -1e5, 1e5, INF, -INF, NAN]),
    "special.entr": (tp.special.entr, _spread((0, 5)), [0.0, -1.0, INF, -INF, NAN]),
}
# (rtol, atol) of float32: the Cephes-style fits are near float32's last digit, but near
# a root of lgamma or digamma the error is absolute (a sum of terms of order 1).
TOLERANCE = {tp.float32: (1e-5, 1e-6), tp.float64: (1e-11, 1e-13)}


def _torch_fn(name):
    module, _, attr = name.rpartition(".")
    return getattr(torch.special if module else torch, attr)


def _compare(got, expected, dtype):
    rtol, atol = TOLERANCE.get(dtype, (2e-2, 2e-2))
    np.testing.assert_allclose(np.asarray(got.cpu()).astype(np.float64),
                               expected.double().numpy(), rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", [tp.float32, tp.float64], ids=lambda d: d.name)
@pytest.mark.parametrize("name", sorted(CASES))
def test_triton_kernel_matches_torch(name, dtype):
    fn, values, edges = CASES[name]
    x = np.concatenate([values, edges])
    with np.errstate(all="ignore"):
        x = x.astype(dtype.np)
    expected = _torch_fn(name)(torch.from_numpy(x.copy()))
    _compare(fn(tp.tensor(x, device="cuda")), expected, dtype)


@pytest.mark.parametrize("name", ["lgamma", "erfinv", "special.i0e"])
def test_half_types_compute_in_float32(name):
    fn, values, _ = CASES[name]
    for dtype, torch_dtype in ((tp.float16, torch.float16), (tp.bfloat16, torch.bfloat16)):
        x = tp.tensor(values[:40], device="cuda").to(dtype)
        got = fn(x)
        assert got.dtype is dtype
        expected = _torch_fn(name)(torch.tensor(x.float().cpu().tolist()).to(torch_dtype))
        _compare(got.float(), expected.float(), dtype)


def test_in_place_forms_write_through_strides():
    base = tp.tensor(_spread((0.5, 5))[:24].reshape(4, 6), device="cuda")
    view = base.t()
    expected = torch.lgamma(torch.tensor(view.cpu().tolist(), dtype=torch.float64))
    assert view.lgamma_() is view
    _compare(view, expected, tp.float64)


def test_each_kernel_is_one_expression_of_the_template():
    text = special.source("special_ndtri")
    assert "_special_math.ndtri(x)" in text and "tl.store" in text


def test_polygamma_and_igamma_run_on_a_host_copy_and_say_so(caplog):
    x = tp.tensor([0.5, 1.5, 4.0], device="cuda")
    with caplog.at_level(logging.INFO, logger="tensorplay.dispatch"):
        got = tp.polygamma(2, x)
        p = tp.igamma(x, x.t())
    assert got.device == CUDA and p.device == CUDA
    t = torch.tensor([0.5, 1.5, 4.0])
    _compare(got, torch.polygamma(2, t), tp.float32)
    _compare(p, torch.igamma(t, t), tp.float32)
    assert "polygamma on cuda: no Triton kernel" in caplog.text
    assert "igamma on cuda: no Triton kernel" in caplog.text
