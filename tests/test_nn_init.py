"""tp.nn.init against torch.nn.init: the fan and gain rules exactly, the deterministic fills
exactly, and the random ones by their statistics over a 256 x 512 tensor (the two
libraries draw from different generators, so values cannot be compared one by one)."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.errors import ShapeError
from tensorplay.nn import init

SHAPE = (256, 512)


def values(t):
    return np.asarray(t.detach().cpu()).astype(np.float64)


def both(fn_name, shape=SHAPE, *args, **kwargs):
    """Fill a tp and a torch tensor of `shape` with the same rule; their values as NumPy."""
    tp.manual_seed(0)       # seeded, so a run cannot flake; the tolerances allow any seed
    torch.manual_seed(0)
    t = tp.empty(shape)
    out = getattr(init, fn_name)(t, *args, **kwargs)
    assert out is t
    r = torch.empty(shape)
    getattr(torch.nn.init, fn_name)(r, *args, **kwargs)
    return values(t), r.numpy().astype(np.float64)


# ---- gains and fans ------------------------------------------------------------------

GAINS = [("linear", None), ("conv1d", None), ("conv2d", None), ("conv3d", None),
         ("conv_transpose1d", None), ("conv_transpose2d", None), ("conv_transpose3d", None),
         ("sigmoid", None), ("tanh", None), ("relu", None), ("leaky_relu", None),
         ("leaky_relu", 0.2), ("leaky_relu", 0), ("leaky_relu", math.sqrt(5)), ("selu", None)]


@pytest.mark.parametrize("nonlinearity, param", GAINS)
def test_calculate_gain_matches_torch(nonlinearity, param):
    assert init.calculate_gain(nonlinearity, param) == pytest.approx(
        torch.nn.init.calculate_gain(nonlinearity, param), rel=1e-15)


def test_calculate_gain_errors():
    with pytest.raises(ValueError, match="calculate_gain.*unsupported nonlinearity 'gelu'"):
        init.calculate_gain("gelu")
    with pytest.raises(ValueError, match="calculate_gain.*'param'.*True"):
        init.calculate_gain("leaky_relu", True)
    with pytest.raises(ValueError, match="calculate_gain.*'param'"):
        init.calculate_gain("leaky_relu", "0.1")


@pytest.mark.parametrize("shape", [(3, 4), (7, 1), (8, 3, 5), (8, 3, 3, 3), (4, 2, 1, 2, 3),
                                   (0, 3), (5, 0, 3)])
def test_fans_match_torch(shape):
    expected = torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(shape))
    assert init._calculate_fan_in_and_fan_out(tp.empty(shape)) == expected


@pytest.mark.parametrize("shape", [(5,), ()])
def test_fans_need_two_dims(shape):
    with pytest.raises(ShapeError, match=r"fewer than 2 dimensions.*shape \["):
        init._calculate_fan_in_and_fan_out(tp.empty(shape))
    with pytest.raises(ValueError):   # ShapeError is a ValueError, as torch's error
        init.xavier_uniform_(tp.empty(shape))


# ---- random fills: statistics --------------------------------------------------------

def assert_stats(got, ref, std, mean=0.0, bound=None):
    """Same mean and std as the theory and as torch's draws (within sampling error), and
    inside the bound when there is one."""
    n = got.size
    # The sample std of n normal draws has a relative spread of about 1/sqrt(2n); allow
    # 5 of those (3.5% for a 32x16x5x5 weight), or 7 for the difference of two samples.
    spread = 1 / math.sqrt(2 * n)
    assert abs(got.mean() - mean) < 5 * std / math.sqrt(n) + 1e-12
    assert got.std() == pytest.approx(std, rel=max(5 * spread, 0.01))
    assert got.std() == pytest.approx(ref.std(), rel=max(7 * spread, 0.015))
    if bound is not None:
        assert np.abs(got - mean).max() <= bound * (1 + 1e-6)
        assert np.abs(got - mean).max() > 0.99 * bound   # the whole range is used


def test_uniform_and_normal():
    got, ref = both("uniform_", SHAPE, -0.5, 1.5)
    assert_stats(got, ref, 2 / math.sqrt(12), mean=0.5, bound=1.0)
    got, ref = both("normal_", SHAPE, 3.0, 0.25)
    assert_stats(got, ref, 0.25, mean=3.0)


@pytest.mark.parametrize("shape, gain", [((256, 512), 1.0), ((64, 32, 3, 3), 2.0)])
def test_xavier(shape, gain):
    fan_in, fan_out = init._calculate_fan_in_and_fan_out(tp.empty(shape))
    std = gain * math.sqrt(2 / (fan_in + fan_out))
    got, ref = both("xavier_uniform_", shape, gain=gain)
    assert_stats(got, ref, std, bound=math.sqrt(3) * std)
    got, ref = both("xavier_normal_", shape, gain=gain)
    assert_stats(got, ref, std)


KAIMING = [dict(), dict(a=math.sqrt(5)), dict(mode="fan_out", nonlinearity="relu"),
           dict(mode="FAN_IN", nonlinearity="tanh"), dict(a=0.1, mode="fan_out")]


@pytest.mark.parametrize("kwargs", KAIMING)
@pytest.mark.parametrize("shape", [(256, 512), (32, 16, 5, 5)])
def test_kaiming(kwargs, shape):
    t = tp.empty(shape)
    fan_in, fan_out = init._calculate_fan_in_and_fan_out(t)
    fan = fan_out if kwargs.get("mode", "fan_in").lower() == "fan_out" else fan_in
    std = init.calculate_gain(kwargs.get("nonlinearity", "leaky_relu"), kwargs.get("a", 0))
    std /= math.sqrt(fan)
    got, ref = both("kaiming_uniform_", shape, **kwargs)
    assert_stats(got, ref, std, bound=math.sqrt(3) * std)
    got, ref = both("kaiming_normal_", shape, **kwargs)
    assert_stats(got, ref, std)


def test_kaiming_errors_and_empty_tensor():
    with pytest.raises(ValueError, match="kaiming_uniform_.*'mode'.*'fan_avg'"):
        init.kaiming_uniform_(tp.empty(3, 4), mode="fan_avg")
    with pytest.raises(ValueError, match="kaiming_normal_.*'mode'"):
        init.kaiming_normal_(tp.empty(3, 4), mode=None)
    t = tp.empty(0, 4)
    with pytest.warns(UserWarning, match="zero-element"):
        assert init.kaiming_uniform_(t) is t


@pytest.mark.parametrize("mean, std, a, b", [(0.0, 1.0, -2.0, 2.0), (0.5, 2.0, -1.0, 3.0),
                                             (0.0, 0.02, -0.04, 0.04), (1.0, 1.0, 1.5, 4.0)])
def test_trunc_normal(mean, std, a, b):
    got, ref = both("trunc_normal_", SHAPE, mean, std, a, b)
    assert got.min() >= a and got.max() <= b
    assert got.min() < a + 0.01 * (b - a) and got.max() > b - 0.01 * (b - a)
    # The truncated normal's mean and std, in closed form.
    alpha, beta = (a - mean) / std, (b - mean) / std
    pdf = lambda x: math.exp(-x * x / 2) / math.sqrt(2 * math.pi)   # noqa: E731
    cdf = lambda x: (1 + math.erf(x / math.sqrt(2))) / 2            # noqa: E731
    z = cdf(beta) - cdf(alpha)
    t_mean = mean + std * (pdf(alpha) - pdf(beta)) / z
    t_var = std ** 2 * (1 + (alpha * pdf(alpha) - beta * pdf(beta)) / z
                        - ((pdf(alpha) - pdf(beta)) / z) ** 2)
    assert_stats(got, ref, math.sqrt(t_var), mean=t_mean)


def test_trunc_normal_float64_tails_and_warning():
    # Bounds far in the tail: the inverse-CDF method (not rejection) still lands inside.
    t = tp.empty(1000, dtype=tp.float64)
    with pytest.warns(UserWarning, match="more than 2 std"):   # as torch: mean < a - 2 std
        init.trunc_normal_(t, 0.0, 1.0, 4.0, 4.5)
    v = values(t)
    assert v.min() >= 4.0 and v.max() <= 4.5 and np.isfinite(v).all()
    assert v.mean() == pytest.approx(4.2, abs=0.05)   # the density falls fast past 4
    with pytest.warns(UserWarning, match="more than 2 std"):
        init.trunc_normal_(tp.empty(10), mean=10.0, std=1.0, a=-2.0, b=2.0)


def test_erfinv_helper_precision():
    y = np.linspace(-0.999999, 0.999999, 2001)
    got = values(init._erfinv_(tp.tensor(y)))
    np.testing.assert_allclose(got, torch.erfinv(torch.tensor(y)).numpy(), rtol=1e-12,
                               atol=1e-12)
    edge = values(init._erfinv_(tp.tensor([-1.0, 0.0, 1.0])))
    assert edge[0] == -np.inf and edge[1] == 0 and edge[2] == np.inf


def test_generator_makes_draws_reproducible():
    for fn in ("uniform_", "normal_", "xavier_uniform_", "kaiming_normal_", "trunc_normal_",
               "orthogonal_"):
        a = getattr(init, fn)(tp.empty(6, 5), generator=tp.Generator().manual_seed(3))
        b = getattr(init, fn)(tp.empty(6, 5), generator=tp.Generator().manual_seed(3))
        c = getattr(init, fn)(tp.empty(6, 5), generator=tp.Generator().manual_seed(4))
        np.testing.assert_array_equal(values(a), values(b))
        assert not np.array_equal(values(a), values(c)), fn


def test_parameters_stay_leaves():
    w = tp.nn.Parameter(tp.empty(4, 3))
    for fn in (init.kaiming_uniform_, init.xavier_normal_, init.trunc_normal_,
               init.orthogonal_, init.zeros_, init.eye_):
        assert fn(w) is w
        assert w.requires_grad and w.is_leaf and w.grad_fn is None
    (w * 2).sum().backward()
    np.testing.assert_array_equal(values(w.grad), np.full((4, 3), 2.0))


# ---- deterministic fills -------------------------------------------------------------

def test_constant_ones_zeros_eye():
    for fn, args in (("constant_", (0.3,)), ("ones_", ()), ("zeros_", ())):
        got, ref = both(fn, (3, 4, 2), *args)
        np.testing.assert_array_equal(got, ref)
    for shape in ((3, 5), (5, 3), (4, 4)):
        got, ref = both("eye_", shape)
        np.testing.assert_array_equal(got, ref)
    with pytest.raises(ShapeError, match=r"eye_\(\).*2 dimensions.*\[2, 3, 4\]"):
        init.eye_(tp.empty(2, 3, 4))


@pytest.mark.parametrize("shape, groups", [((4, 4, 3), 1), ((6, 2, 3, 3), 2),
                                           ((3, 5, 2, 2), 1), ((4, 2, 3, 2, 3), 2),
                                           ((6, 1, 3, 3), 3)])
def test_dirac_matches_torch(shape, groups):
    got, ref = both("dirac_", shape, groups)
    np.testing.assert_array_equal(got, ref)


def test_dirac_is_identity_conv_and_errors():
    w = init.dirac_(tp.empty(3, 3, 3, 3))
    x = tp.randn(1, 3, 5, 5)
    np.testing.assert_allclose(values(tp.nn.functional.conv2d(x, w, padding=1)), values(x))
    with pytest.raises(ShapeError, match=r"dirac_\(\).*3, 4, or 5 dimensions"):
        init.dirac_(tp.empty(3, 3))
    with pytest.raises(ValueError, match=r"dirac_\(\).*\(5\).*'groups' \(2\)"):
        init.dirac_(tp.empty(5, 2, 3), groups=2)


# ---- orthogonal and sparse -----------------------------------------------------------

@pytest.mark.parametrize("shape, gain", [((64, 64), 1.0), ((20, 50), 1.0), ((50, 20), 2.0),
                                         ((6, 3, 2, 2), 0.5), ((1, 5), 1.0)])
def test_orthogonal(shape, gain):
    t = tp.empty(shape)
    assert init.orthogonal_(t, gain) is t
    w = values(t).reshape(shape[0], -1)
    if w.shape[0] <= w.shape[1]:
        np.testing.assert_allclose(w @ w.T, gain ** 2 * np.eye(w.shape[0]), atol=1e-5)
    else:
        np.testing.assert_allclose(w.T @ w, gain ** 2 * np.eye(w.shape[1]), atol=1e-5)


def test_orthogonal_is_sign_corrected():
    # Without the sign correction, LAPACK's Householder QR makes Q[0, 0] always negative;
    # a uniform (Haar) orthogonal matrix has either sign with probability 1/2, as torch's.
    firsts = [values(init.orthogonal_(tp.empty(3, 3)))[0, 0] for _ in range(200)]
    torch_firsts = [torch.nn.init.orthogonal_(torch.empty(3, 3))[0, 0].item()
                    for _ in range(200)]
    assert 0.3 < np.mean(np.array(firsts) > 0) < 0.7
    assert 0.3 < np.mean(np.array(torch_firsts) > 0) < 0.7


def test_orthogonal_edge_cases():
    with pytest.raises(ShapeError, match=r"orthogonal_\(\).*2 or more dimensions.*\[4\]"):
        init.orthogonal_(tp.empty(4))
    t = tp.empty(0, 3)
    assert init.orthogonal_(t) is t
    t = init.orthogonal_(tp.empty(5, 5, dtype=tp.float64))
    assert t.dtype == tp.float64
    np.testing.assert_allclose(values(t) @ values(t).T, np.eye(5), atol=1e-12)


def test_sparse():
    t = tp.empty(40, 30)
    assert init.sparse_(t, 0.25, std=0.5) is t
    v = values(t)
    assert ((v == 0).sum(axis=0) == math.ceil(0.25 * 40)).all()
    assert v[v != 0].std() == pytest.approx(0.5, rel=0.1)
    r = torch.nn.init.sparse_(torch.empty(40, 30), 0.25, std=0.5).numpy()
    assert ((r == 0).sum(axis=0) == (v == 0).sum(axis=0)).all()
    with pytest.raises(ShapeError, match=r"sparse_\(\).*2 dimensions"):
        init.sparse_(tp.empty(2, 3, 4), 0.5)


# ---- on the cuda device ----------------------------------------------------------------

@pytest.fixture
def cuda():
    pytest.importorskip("triton")
    if not (tp.cuda.is_available() or tp.cuda.is_interpreted()):
        pytest.skip("no GPU and no Triton interpreter")
    return tp.device("cuda")


def test_init_on_cuda(cuda):
    shape = (64, 128)
    std = 1 / math.sqrt(128)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t = init.kaiming_uniform_(tp.empty(shape, device=cuda), nonlinearity="linear")
    assert t.device == cuda
    v = values(t)
    assert v.std() == pytest.approx(std, rel=0.05) and np.abs(v).max() <= math.sqrt(3) * std
    t = init.trunc_normal_(tp.empty(shape, device=cuda), std=0.5, a=-0.5, b=0.5)
    v = values(t)
    assert t.device == cuda and v.min() >= -0.5 and v.max() <= 0.5
    assert v.std() == pytest.approx(0.5 * 0.5379, rel=0.05)   # std of N(0,1) cut at +-1
    t = init.orthogonal_(tp.empty(8, 12, device=cuda))
    assert t.device == cuda
    np.testing.assert_allclose(values(t) @ values(t).T, np.eye(8), atol=1e-5)
    t = init.dirac_(tp.empty(2, 2, 3, device=cuda))
    np.testing.assert_array_equal(values(t), torch.nn.init.dirac_(torch.empty(2, 2, 3)))
