"""The pointwise ops of the OPS table (triton_kernels/pointwise_expressions.py) on `cuda`
against the CPU backend: float functions, rounding, the division family, blends, logic
and bitwise ops, activations, in-place forms, and the Philox random fills."""
import numpy as np
import pytest

from triton_util import CUDA, assert_same, make

import tensorplay as tp
import triton_kernels
from tensorplay.errors import ArgumentError
from triton_kernels import pointwise

X = make((3, 4), seed=1)                          # values in [-2, 2)
POSITIVE = make((3, 4), low=0.1, high=3.0, seed=2)
UNIT = make((3, 4), low=-0.95, high=0.95, seed=3)
PROB = make((3, 4), low=0.05, high=0.95, seed=4)
ROW = make((4,), seed=5)
INTS = make((3, 4), tp.int64, low=-5, high=5, seed=6)
DIVISORS = tp.tensor([1, -2, 3, -4])
SPECIAL = tp.tensor([float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1.0, -3.5, 40.0])


def check(fn, *args, rtol=None, atol=None):
    expected = fn(*args)
    got = fn(*[a.cuda() if isinstance(a, tp.Tensor) else a for a in args])
    if isinstance(expected, bool):
        assert got == expected
    else:
        assert_same(got, expected, rtol=rtol, atol=atol)


FLOAT_FUNCTIONS = {
    "reciprocal": POSITIVE, "rsqrt": POSITIVE, "exp2": X, "expm1": X, "log2": POSITIVE,
    "log10": POSITIVE, "log1p": POSITIVE, "tan": UNIT, "asin": UNIT, "acos": UNIT,
    "atan": X * 3, "sinh": X * 3, "cosh": X * 3, "erf": X, "erfc": X * 2,
    "floor": X * 3, "ceil": X * 3, "trunc": X * 3, "round": X * 3, "frac": X * 3,
}


@pytest.mark.parametrize("name", sorted(FLOAT_FUNCTIONS))
def test_float_functions(name):
    fn = getattr(tp, name)
    check(fn, FLOAT_FUNCTIONS[name], rtol=2e-6, atol=1e-6)
    check(fn, FLOAT_FUNCTIONS[name].to(tp.bfloat16).t())       # half types, strided


@pytest.mark.parametrize("name", ["exp2", "floor", "round", "sinh", "log1p", "reciprocal"])
def test_integer_inputs_and_special_values(name):
    fn = getattr(tp, name)
    check(fn, INTS.abs() + 1 if name in ("log1p", "reciprocal") else INTS)
    check(fn, SPECIAL, rtol=2e-6, atol=1e-6)


def test_rounding_half_to_even_and_decimals():
    halves = tp.tensor([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 3.7])
    check(tp.round, halves)
    check(lambda t: tp.round(t, decimals=2), X * 10)
    check(lambda t: tp.round(t, decimals=-1), X * 100)
    check(tp.logit, PROB)
    check(lambda t: tp.logit(t, 0.2), PROB)


@pytest.mark.parametrize("mode", [None, "trunc", "floor"])
def test_division_with_rounding_modes(mode):
    check(lambda a, b: tp.div(a, b, rounding_mode=mode), X, ROW)
    check(lambda a, b: tp.div(a, b, rounding_mode=mode), INTS, DIVISORS)


@pytest.mark.parametrize("name", ["floor_divide", "remainder", "fmod"])
def test_division_family_follows_python_and_c(name):
    fn = getattr(tp, name)
    check(fn, X, ROW)
    check(fn, INTS, DIVISORS)
    check(fn, INTS, -DIVISORS)
    with pytest.raises(ArgumentError, match="integer division by zero"):
        fn(INTS.cuda(), tp.tensor([1, 0, 1, 1], device="cuda"))
    assert tp.floor_divide(tp.tensor([1.0], device="cuda"), 0.1).item() == 9.0   # divmod


@pytest.mark.filterwarnings("ignore:overflow encountered in hypot")   # the CPU kernel
def test_atan2_hypot_and_blends():
    check(tp.atan2, X, ROW)
    check(tp.atan2, tp.tensor([0.0, -0.0, 1.0, -1.0]), tp.tensor([-1.0, -1.0, 0.0, 0.0]))
    check(tp.hypot, X, ROW)
    check(tp.hypot, tp.tensor([3e38, float("inf"), float("nan")]), tp.tensor([3e38, 1.0, 1.0]))
    check(lambda t: tp.clamp(t, -0.5, 0.7), X)
    check(lambda t: tp.clamp(t, min=-0.5), SPECIAL)
    check(lambda t: tp.clamp(t, max=2.5), INTS)
    check(lambda t, lo, hi: tp.clamp(t, lo, hi), X, ROW * 0 - 0.5, ROW * 0 + 0.5)
    check(lambda t, hi: tp.clamp_max(t, hi), X, ROW)
    check(lambda a, b: tp.lerp(a, b, 0.3), X, X * 2)
    check(lambda a, b, w: tp.lerp(a, b, w), X, X * 2, PROB)
    check(lambda a, b, c: tp.addcmul(a, b, c, value=0.5), X, ROW, X)
    check(lambda a, b, c: tp.addcdiv(a, b, c, value=2), X, ROW, POSITIVE)
    check(tp.nan_to_num, SPECIAL)
    check(tp.nan_to_num, SPECIAL.double())
    check(tp.nan_to_num, SPECIAL.to(tp.bfloat16))
    check(lambda t: tp.nan_to_num(t, 1.0, 2.0, -3.0), SPECIAL)


def test_tests_logic_and_bitwise():
    for name in ("isnan", "isinf", "isfinite", "logical_not"):
        check(getattr(tp, name), SPECIAL)
        check(getattr(tp, name), INTS)
    check(tp.isclose, X, X + 1e-6)
    check(lambda a, b: tp.isclose(a, b, equal_nan=True), SPECIAL, SPECIAL)
    check(tp.isclose, INTS, INTS + 1)
    for name in ("logical_and", "logical_or", "logical_xor"):
        check(getattr(tp, name), X, INTS)
    bools = make((4,), tp.bool), make((4,), tp.bool, seed=9)
    for name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        check(getattr(tp, name), INTS, DIVISORS)
        check(getattr(tp, name), *bools)
    check(tp.bitwise_not, INTS)
    check(tp.bitwise_not, bools[0])
    check(tp.equal, X, X)
    check(tp.equal, X, X + 1)
    check(tp.equal, X, ROW)


ACTIVATIONS = {
    "leaky_relu": lambda t: tp.leaky_relu(t, 0.2), "elu": lambda t: tp.elu(t, 1.5),
    "gelu": tp.gelu, "gelu_tanh": lambda t: tp.gelu(t, approximate="tanh"), "silu": tp.silu,
    "mish": tp.mish, "softplus": lambda t: tp.softplus(t, 2, 3),
    "hardtanh": lambda t: tp.hardtanh(t, -0.5, 0.5), "hardsigmoid": tp.hardsigmoid,
    "hardswish": tp.hardswish, "threshold": lambda t: tp.threshold(t, 0.1, 20.0),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activations_and_their_backward(name):
    fn = ACTIVATIONS[name]
    check(fn, X * 3, rtol=2e-6, atol=1e-6)
    check(fn, SPECIAL[3:], rtol=2e-6, atol=1e-6)

    def grad(device):
        leaf = (X * 3).to(device).requires_grad_()
        fn(leaf).sum().backward()
        return leaf.grad

    assert_same(grad("cuda"), grad("cpu"), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["exp_", "sin_", "neg_", "abs_", "floor_", "gelu_",
                                  "logical_not_", "hardtanh_", "clamp_", "addcmul_",
                                  "bitwise_xor_", "remainder_"])
def test_inplace_forms_write_through_views(name):
    def apply(t):
        base = (t * 1).t()         # a non-contiguous target
        if name == "clamp_":
            out = base.clamp_(-0.5, 0.5)
        elif name == "addcmul_":
            out = base.addcmul_(base, base, value=0.5)
        elif name in ("bitwise_xor_", "remainder_"):
            base = (t.to(tp.int64) * 1).t()
            out = getattr(base, name)(tp.tensor(3, device=base.device))
        elif hasattr(base, name):
            out = getattr(base, name)()
        else:
            out = getattr(tp, name)(base)
        assert out is base
        return base
    check(apply, X * 3)


def test_source_of_an_ops_table_kernel():
    text = triton_kernels.source("hardsigmoid")
    assert "result = _math.minimum(_math.maximum(x + 3.0, 0.0), 6.0) / 6.0" in text
    assert "def hardsigmoid_kernel_rank1(" in tp.cuda.source("hardsigmoid")
    with pytest.raises(ValueError, match="depends on the call"):
        pointwise.source("gelu")       # 'none' or 'tanh': two expressions


# ---- random fills: Philox at (seed, offset), reproducible -----------------------------
def test_random_fills_are_reproducible_and_have_the_right_statistics():
    tp.manual_seed(0)
    a = tp.empty(20000, device="cuda").uniform_(-1.0, 3.0)
    b = tp.empty(20000, device="cuda").normal_(2.0, 0.5)
    tp.manual_seed(0)
    a2 = tp.empty(20000, device="cuda").uniform_(-1.0, 3.0)
    assert a.tolist() == a2.tolist()                         # same seed, same numbers
    c = tp.empty(20000, device="cuda").uniform_(-1.0, 3.0)
    assert a.tolist() != c.tolist()                          # the offset moved on
    ha, hb = np.asarray(a.cpu()), np.asarray(b.cpu())
    assert -1.0 <= ha.min() and ha.max() < 3.0 and abs(ha.mean() - 1.0) < 0.05
    assert abs(hb.mean() - 2.0) < 0.02 and abs(hb.std() - 0.5) < 0.02
    e = np.asarray(tp.empty(20000, device="cuda").exponential_(2.0).cpu())
    assert e.min() >= 0 and abs(e.mean() - 0.5) < 0.02


def test_bernoulli_forms():
    tp.manual_seed(1)
    p = tp.full((20000,), 0.3, device="cuda")
    draws = np.asarray(tp.bernoulli(p).cpu())
    assert set(np.unique(draws)) <= {0.0, 1.0} and abs(draws.mean() - 0.3) < 0.02
    assert abs(np.asarray(tp.bernoulli(p, 0.8).cpu()).mean() - 0.8) < 0.02
    ints = tp.zeros(20000, dtype=tp.int64, device="cuda").bernoulli_(0.5)
    assert abs(np.asarray(ints.cpu()).mean() - 0.5) < 0.02 and ints.dtype is tp.int64
    probs = tp.tensor([0.0, 1.0] * 5, device="cuda")
    assert tp.zeros(10, device="cuda").bernoulli_(probs).tolist() == [0.0, 1.0] * 5
    g = tp.Generator().manual_seed(5)
    first = tp.empty(8, device="cuda").normal_(generator=g).tolist()
    g.manual_seed(5)
    assert tp.empty(8, device="cuda").normal_(generator=g).tolist() == first
    assert CUDA == p.device
