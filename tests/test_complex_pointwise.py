"""Complex tensors in the pointwise ops, against PyTorch (the OpInfo database compares
each op's values and gradients; this file checks what cuts across ops):

    promotion        Python complex numbers with tensors of every dtype, in both operand
                     orders, with add/sub's alpha
    refusals         every op PyTorch refuses for complex raises a DTypeError that quotes
                     PyTorch's own message (read from torch here), names the op and the
                     argument, on cpu and on meta
    in place         a complex result cannot be written into a real tensor (can_cast)
    conversions      complex -> real keeps the real part with PyTorch's warning; a complex
                     fill value must be real for a real tensor
    factories        zeros/ones/full/empty and rand/randn with a complex dtype (the same
                     numbers as PyTorch's for a seed)
    real inputs      the gradient of a real input of a complex computation is real
    nan and inf      isnan/isinf/isfinite/nan_to_num/isclose with nan or inf in either part
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import tensorplay as tp
import tensorplay.nn.functional as F
from tensorplay.errors import DTypeError
from opinfo.core import TORCH_DTYPE

COMPLEX = (tp.complex64, tp.complex128)
ALL = (tp.bool, tp.uint8, tp.int32, tp.int64, tp.float32, tp.float64) + COMPLEX


def _pair(dtype, shape=(2, 3), seed=0):
    """The same values as a TensorPlay tensor and a torch tensor."""
    rng = np.random.default_rng(seed)
    if dtype is tp.bool:
        a = rng.random(shape) < 0.5
    elif dtype.is_complex:
        a = rng.uniform(-2, 2, shape) + 1j * rng.uniform(-2, 2, shape)
    elif dtype.is_floating_point:
        a = rng.uniform(-2, 2, shape)
    else:
        a = rng.integers(1, 5, shape)
    a = np.asarray(a).astype(dtype.np)
    return tp.tensor(a), torch.tensor(a)


def _same(ours, theirs, rtol=1e-6, atol=1e-6):
    assert ours.dtype is {v: k for k, v in TORCH_DTYPE.items()}[theirs.dtype], \
        f"dtype {ours.dtype} != torch's {theirs.dtype}"
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().resolve_conj().numpy(),
                               rtol=rtol, atol=atol)


# ---- promotion with Python complex numbers ------------------------------------------------
BINARY = {
    "x + c": lambda x, c: x + c, "c + x": lambda x, c: c + x,
    "x - c": lambda x, c: x - c, "c - x": lambda x, c: c - x,
    "x * c": lambda x, c: x * c, "c * x": lambda x, c: c * x,
    "x / c": lambda x, c: x / c, "c / x": lambda x, c: c / x,
    "x ** c": lambda x, c: x ** c,
}


@pytest.mark.parametrize("dtype", ALL, ids=lambda d: d.name)
@pytest.mark.parametrize("expr", list(BINARY))
def test_python_complex_number_promotes_like_torch(dtype, expr):
    if dtype is tp.bool and "-" in expr:
        pytest.skip("bool subtraction is refused (tests/opinfo: errors_sub)")
    x, tx = _pair(dtype)
    fn = BINARY[expr]
    _same(fn(x, 1.5 - 0.5j), fn(tx, 1.5 - 0.5j), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", (tp.int64, tp.float32, tp.float64) + COMPLEX,
                         ids=lambda d: d.name)
def test_complex_zero_dim_tensor_and_complex_tensor_promote_like_torch(dtype):
    x, tx = _pair(dtype)
    z0, tz0 = tp.tensor(2 - 1j, dtype=tp.complex128), torch.tensor(2 - 1j, dtype=torch.complex128)
    _same(x * z0, tx * tz0)      # a 0-dim complex128 tensor: category above, its kind wins
    w, tw = _pair(tp.complex64, seed=1)
    _same(x + w, tx + tw)


def test_complex_alpha():
    z, tz = _pair(tp.complex128)
    w, tw = _pair(tp.complex128, seed=1)
    _same(tp.add(z, w, alpha=2 - 1j), torch.add(tz, tw, alpha=2 - 1j))
    _same(tp.sub(z, w, alpha=0.5), torch.sub(tz, tw, alpha=0.5))
    x, _ = _pair(tp.float32)
    with pytest.raises(Exception):
        torch.add(torch.ones(2), torch.ones(2), alpha=1j)
    with pytest.raises(DTypeError, match=r"add\(\): For non-complex input tensors, argument "
                                         r"alpha must not be a complex number") as e:
        tp.add(x, x, alpha=1j)
    assert e.value.arg == "alpha"


# ---- ops PyTorch refuses for complex tensors ---------------------------------------------
# (name, our call, torch's call) on a complex tensor z (and a second one, w)
REFUSED = [
    ("lt", lambda m, z, w: m.lt(z, w)), ("le", lambda m, z, w: m.le(z, w)),
    ("gt", lambda m, z, w: m.gt(z, w)), ("ge", lambda m, z, w: m.ge(z, w)),
    ("lt", lambda m, z, w: z < 1), ("ge", lambda m, z, w: z >= w),
    ("lt_", lambda m, z, w: z.lt_(w)),
    ("maximum", lambda m, z, w: m.maximum(z, w)), ("minimum", lambda m, z, w: m.minimum(z, w)),
    ("max", lambda m, z, w: m.max(z, w)), ("min", lambda m, z, w: m.min(z, w)),
    ("fmax", lambda m, z, w: m.fmax(z, w)), ("fmin", lambda m, z, w: m.fmin(z, w)),
    ("clamp", lambda m, z, w: m.clamp(z, 0, 1)), ("clamp", lambda m, z, w: m.clamp(z, w, w)),
    ("clamp_", lambda m, z, w: z.clamp_(0, 1)),
    ("clamp_min", lambda m, z, w: m.clamp_min(z, 0)),
    ("clamp_max", lambda m, z, w: m.clamp_max(z, 1)),
    ("floor", lambda m, z, w: m.floor(z)), ("ceil", lambda m, z, w: m.ceil(z)),
    ("trunc", lambda m, z, w: m.trunc(z)), ("round", lambda m, z, w: m.round(z)),
    ("round", lambda m, z, w: m.round(z, decimals=1)), ("frac", lambda m, z, w: m.frac(z)),
    ("floor_", lambda m, z, w: z.floor_()),
    ("sign", lambda m, z, w: m.sign(z)), ("sign_", lambda m, z, w: z.sign_()),
    ("signbit", lambda m, z, w: m.signbit(z)),
    ("fmod", lambda m, z, w: m.fmod(z, w)), ("fmod", lambda m, z, w: m.fmod(z, 2)),
    ("remainder", lambda m, z, w: m.remainder(z, w)), ("remainder", lambda m, z, w: z % 2),
    ("floor_divide", lambda m, z, w: m.floor_divide(z, w)),
    ("floor_divide", lambda m, z, w: z // 2),
    ("div", lambda m, z, w: m.div(z, w, rounding_mode="floor")),
    ("div", lambda m, z, w: m.div(z, w, rounding_mode="trunc")),
    ("div_", lambda m, z, w: z.div_(w, rounding_mode="floor")),
    ("relu", lambda m, z, w: m.relu(z)), ("relu_", lambda m, z, w: m.relu_(z)),
    ("erf", lambda m, z, w: m.erf(z)), ("erfc", lambda m, z, w: m.erfc(z)),
    ("erf_", lambda m, z, w: z.erf_()),
    ("erfinv", lambda m, z, w: m.erfinv(z)), ("lgamma", lambda m, z, w: m.lgamma(z)),
    ("digamma", lambda m, z, w: m.digamma(z)), ("i0", lambda m, z, w: m.i0(z)),
    ("logit", lambda m, z, w: m.logit(z)), ("atan2", lambda m, z, w: m.atan2(z, w)),
    ("hypot", lambda m, z, w: m.hypot(z, w)), ("copysign", lambda m, z, w: m.copysign(z, w)),
    ("xlogy", lambda m, z, w: m.xlogy(z, w)), ("nextafter", lambda m, z, w: m.nextafter(z, w)),
    ("heaviside", lambda m, z, w: m.heaviside(z, w)),
    ("isposinf", lambda m, z, w: m.isposinf(z)), ("isneginf", lambda m, z, w: m.isneginf(z)),
    ("deg2rad", lambda m, z, w: m.deg2rad(z)), ("rad2deg", lambda m, z, w: m.rad2deg(z)),
    ("logaddexp2", lambda m, z, w: m.logaddexp2(z, w)),
    ("abs_", lambda m, z, w: z.abs_()),
    # the special functions are real
    ("polygamma", lambda m, z, w: m.polygamma(1, z)),
    ("special_i0e", lambda m, z, w: m.special.i0e(z)),
    ("special_entr", lambda m, z, w: m.special.entr(z)),
    ("special_erfcx", lambda m, z, w: m.special.erfcx(z)),
    ("special_bessel_j0", lambda m, z, w: m.special.bessel_j0(z)),
    ("special_chebyshev_polynomial_t", lambda m, z, w: m.special.chebyshev_polynomial_t(z, 2)),
    ("special_zeta", lambda m, z, w: m.special.zeta(z, w)),
]
# torch.nn.functional's activations, same shape of entry
REFUSED_NN = [
    ("hardtanh", lambda m, z: m.hardtanh(z)), ("leaky_relu", lambda m, z: m.leaky_relu(z)),
    ("elu", lambda m, z: m.elu(z)), ("selu", lambda m, z: m.selu(z)),
    ("gelu", lambda m, z: m.gelu(z)), ("softplus", lambda m, z: m.softplus(z)),
    ("mish", lambda m, z: m.mish(z)), ("hardsigmoid", lambda m, z: m.hardsigmoid(z)),
    ("hardswish", lambda m, z: m.hardswish(z)), ("hardshrink", lambda m, z: m.hardshrink(z)),
    ("threshold", lambda m, z: m.threshold(z, 0.0, 0.0)),
]


def _torch_message(call):
    with pytest.raises(Exception) as e:
        call()
    return str(e.value).splitlines()[0]


def _check_refusal(name, ours, theirs):
    message = _torch_message(theirs)
    with pytest.raises(DTypeError) as e:
        ours()
    text = str(e.value)
    assert text.startswith(f"{name}("), f"the message does not start with '{name}(': {text}"
    assert message in text, f"PyTorch's message {message!r} is not in ours: {text!r}"
    assert e.value.op == name and e.value.arg is not None
    assert f"'{e.value.arg}'" in text, f"the message does not name argument {e.value.arg!r}"


@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda d: d.name)
@pytest.mark.parametrize("name, call", REFUSED, ids=[f"{i}-{n}" for i, (n, _) in
                                                     enumerate(REFUSED)])
def test_refused_ops_raise_torchs_message(name, call, dtype):
    z, tz = _pair(dtype)
    w, tw = _pair(dtype, seed=1)
    _check_refusal(name, lambda: call(tp, z, w), lambda: call(torch, tz, tw))


@pytest.mark.parametrize("name, call", REFUSED_NN, ids=[n for n, _ in REFUSED_NN])
def test_refused_activations_raise_torchs_message(name, call):
    z, tz = _pair(tp.complex64)
    _check_refusal(name, lambda: call(F, z), lambda: call(TF, tz))


# the ops with a shape rule of their own (a Meta kernel): it refuses a complex meta tensor
ON_META = ("lt", "ge", "maximum", "floor", "round", "sign", "fmod", "relu", "erf", "atan2",
           "signbit", "clamp")


@pytest.mark.parametrize("name, call", [r for r in REFUSED if r[0] in ON_META],
                         ids=[f"{i}-{n}" for i, (n, _) in enumerate(REFUSED) if n in ON_META])
def test_refused_ops_refuse_a_meta_tensor_alike(name, call):
    z, tz = _pair(tp.complex64)
    w, tw = _pair(tp.complex64, seed=1)
    message = _torch_message(lambda: call(torch, tz, tw))
    with pytest.raises(DTypeError) as e:
        call(tp, z.to("meta"), w.to("meta"))
    assert message in str(e.value)


def test_a_real_tensor_with_a_complex_number_is_refused_where_the_result_is_complex():
    x, tx = _pair(tp.float32)
    _check_refusal("fmod", lambda: tp.fmod(x, 1j), lambda: torch.fmod(tx, 1j))
    _check_refusal("lt", lambda: x < 1j, lambda: tx < 1j)


# ---- in place: no complex result in a real tensor ----------------------------------------
INPLACE = {
    "add_": lambda x, z: x.add_(z), "sub_": lambda x, z: x.sub_(z),
    "mul_": lambda x, z: x.mul_(z), "div_": lambda x, z: x.div_(z),
    "pow_": lambda x, z: x.pow_(z), "add_ number": lambda x, z: x.add_(1j),
    "mul_ number": lambda x, z: x.mul_(2j), "+=": lambda x, z: x.__iadd__(1j),
}


@pytest.mark.parametrize("dtype", (tp.int64, tp.float32, tp.float64), ids=lambda d: d.name)
@pytest.mark.parametrize("name", list(INPLACE))
def test_inplace_complex_result_into_real_tensor_is_refused(dtype, name):
    x, tx = _pair(dtype)
    z, tz = _pair(tp.complex64, seed=1)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        INPLACE[name](tx, tz)
    op = name.split()[0] if name != "+=" else "add_"
    with pytest.raises(DTypeError, match=rf"{op}\(\): result type complex(64|128) can't be "
                                         rf"cast to the desired output type {dtype.name}"):
        INPLACE[name](x, z)
    np.testing.assert_array_equal(x.numpy(), tx.numpy())     # untouched


def test_inplace_into_a_complex_tensor_takes_any_operand():
    z, tz = _pair(tp.complex64)
    x, tx = _pair(tp.float64, seed=1)
    for fn in (lambda a, b: a.add_(b), lambda a, b: a.mul_(b), lambda a, b: a.div_(b),
               lambda a, b: a.sub_(b, alpha=2j), lambda a, b: a.exp_(), lambda a, b: a.sigmoid_()):
        _same(fn(z.clone(), x), fn(tz.clone(), tx), rtol=1e-5, atol=1e-5)


# ---- conversions and fills ---------------------------------------------------------------
CASTS = {
    "to(float64)": lambda z, m: z.to(m.float64), "float()": lambda z, m: z.float(),
    "long()": lambda z, m: z.long(),
    "copy_ into float32": lambda z, m: m.zeros(z.shape).copy_(z),
}


@pytest.mark.parametrize("name", list(CASTS))
def test_complex_to_real_keeps_the_real_part_and_warns(name):
    z, tz = _pair(tp.complex128)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = CASTS[name](tz, torch)
    with pytest.warns(UserWarning, match="Casting complex values to real discards the "
                                         "imaginary part"):
        got = CASTS[name](z, tp)
    _same(got, expected)


def test_complex_to_bool_is_nonzero_without_a_warning():
    z = tp.tensor([1j, 0j, 2 + 0j, 0.5])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert z.to(tp.bool).tolist() == [True, False, True, True]


FILLS = {
    "fill_": lambda m, x, v: x.fill_(v),
    "masked_fill": lambda m, x, v: x.masked_fill(x == x, v),
    "full": lambda m, x, v: m.full((2,), v, dtype=x.dtype),
}


@pytest.mark.parametrize("name", list(FILLS))
def test_a_complex_fill_value_must_be_real_for_a_real_tensor(name):
    x, tx = _pair(tp.float32)
    with pytest.raises(RuntimeError, match="cannot be converted"):
        FILLS[name](torch, tx.clone(), 1 + 2j)
    with pytest.raises(DTypeError, match="cannot be converted to float32 without overflow"):
        FILLS[name](tp, x.clone(), 1 + 2j)
    with warnings.catch_warnings():
        warnings.simplefilter("error")       # a real complex number fills quietly
        _same(FILLS[name](tp, x.clone(), 3 + 0j), FILLS[name](torch, tx.clone(), 3 + 0j))
    z, tz = _pair(tp.complex64)
    _same(FILLS[name](tp, z.clone(), 1 + 2j), FILLS[name](torch, tz.clone(), 1 + 2j))


# ---- factories ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda d: d.name)
def test_factories_make_complex_tensors(dtype):
    td = TORCH_DTYPE[dtype]
    _same(tp.zeros(2, 3, dtype=dtype), torch.zeros(2, 3, dtype=td))
    _same(tp.ones(4, dtype=dtype), torch.ones(4, dtype=td))
    _same(tp.full((2,), 1 - 2j, dtype=dtype), torch.full((2,), 1 - 2j, dtype=td))
    assert tp.empty(3, dtype=dtype).dtype is dtype
    z, tz = _pair(dtype)
    _same(tp.zeros_like(z), torch.zeros_like(tz))
    _same(tp.ones_like(z), torch.ones_like(tz))
    assert tp.full((2,), 1j).dtype is tp.complex64      # a complex fill value's own dtype


@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda d: d.name)
@pytest.mark.parametrize("n", (3, 40))    # (PyTorch draws 16 or more normals in blocks)
def test_rand_and_randn_draw_torchs_complex_numbers(dtype, n):
    td = TORCH_DTYPE[dtype]
    for ours, theirs in ((tp.rand, torch.rand), (tp.randn, torch.randn)):
        tp.manual_seed(7)
        torch.manual_seed(7)
        _same(ours(2, n, dtype=dtype), theirs(2, n, dtype=td), rtol=1e-6, atol=1e-7)


def test_randn_complex_parts_have_variance_one_half():
    tp.manual_seed(0)
    z = tp.randn(200_000, dtype=tp.complex128).numpy()
    assert abs(z.real.var() - 0.5) < 0.01 and abs(z.imag.var() - 0.5) < 0.01
    z = tp.rand(200_000, dtype=tp.complex64).numpy()
    assert 0 <= z.real.min() and z.real.max() < 1 and 0 <= z.imag.min() and z.imag.max() < 1
    with pytest.raises(DTypeError, match="randint"):
        tp.randint(0, 3, (2,), dtype=tp.complex64)


# ---- the gradient of a real input is real -------------------------------------------------
REAL_IN_COMPLEX_OUT = {
    "x * 1j": lambda x, w: x * (1 - 2j), "x + z": lambda x, w: x + w,
    "z / x": lambda x, w: w / x, "x ** z": lambda x, w: x.abs() ** w,
    "z ** x": lambda x, w: w ** x, "exp(x * z)": lambda x, w: (x * w).exp(),
    "where": lambda x, w: w.where(x > 0, x * 1j),
}


@pytest.mark.parametrize("name", list(REAL_IN_COMPLEX_OUT))
def test_a_real_input_of_a_complex_computation_gets_a_real_gradient(name):
    fn = REAL_IN_COMPLEX_OUT[name]
    x, tx = _pair(tp.float64)
    w, tw = _pair(tp.complex128, seed=1)
    x.requires_grad_(True)
    w.requires_grad_(True)
    tx.requires_grad_(True)
    tw.requires_grad_(True)
    out, tout = fn(x, w), fn(tx, tw)
    rng = np.random.default_rng(3)
    g = rng.standard_normal(tuple(out.shape) + (2,))
    (tp.view_as_real(out) * tp.tensor(g)).sum().backward()
    (torch.view_as_real(tout) * torch.tensor(g)).sum().backward()
    _same(x.grad, tx.grad)
    if tw.grad is None:     # (w unused)
        assert w.grad is None
    else:
        _same(w.grad, tw.grad)


# ---- nan and inf in either part ----------------------------------------------------------
def _edges(dtype):
    nan, inf = float("nan"), float("inf")
    values = [complex(nan, 1), complex(1, nan), complex(inf, 0), complex(0, -inf),
              complex(inf, nan), complex(1, 2), 0j]
    return tp.tensor(values, dtype=dtype), torch.tensor(values, dtype=TORCH_DTYPE[dtype])


@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda d: d.name)
def test_nan_and_inf_tests_look_at_both_parts(dtype):
    z, tz = _edges(dtype)
    for name in ("isnan", "isinf", "isfinite"):
        _same(getattr(tp, name)(z), getattr(torch, name)(tz))
    _same(tp.nan_to_num(z), torch.nan_to_num(tz))
    _same(tp.nan_to_num(z, nan=1.5, posinf=9.0, neginf=-9.0),
          torch.nan_to_num(tz, nan=1.5, posinf=9.0, neginf=-9.0))


@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda d: d.name)
def test_isclose_and_equal_compare_complex_numbers(dtype):
    z, tz = _pair(dtype)
    w, tw = z + 1e-9j, tz + 1e-9j
    _same(tp.isclose(z, w), torch.isclose(tz, tw))
    _same(tp.isclose(z, z * 1.1), torch.isclose(tz, tz * 1.1))
    assert tp.allclose(z, w) == torch.allclose(tz, tw)
    assert tp.equal(z, z.clone()) and not tp.equal(z, z + 1e-3j)
    e, te = _edges(dtype)
    _same(tp.isclose(e, e, equal_nan=True), torch.isclose(te, te, equal_nan=True))
    _same(tp.isclose(e, e), torch.isclose(te, te))
    _same(z == w, tz == tw)
    _same(z != 1j, tz != 1j)


def test_abs_and_angle_of_complex_are_real():
    for dtype in COMPLEX:
        z, tz = _pair(dtype)
        _same(z.abs(), tz.abs())
        _same(z.angle(), tz.angle())
        assert tp.abs(z.to("meta")).dtype is dtype.to_real()
        assert tp.angle(z.to("meta")).dtype is dtype.to_real()
        assert tp.exp(z.to("meta")).dtype is dtype


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("op", ["add", "sub", "add_", "sub_", "add_alpha"])
def test_complex_add_and_sub_multiply_b_by_alpha_as_pytorch(op, dtype):
    """PyTorch's complex add computes a + alpha * b, alpha a complex number even when it is
    1: an inf or NaN part of b makes the other part NaN (0 * inf), and 1 - 0j + 1 - 0j has
    a +0 imaginary part. Fuzzer seed 8308262: view_as_complex(x).add_ of a NaN real part."""
    values = [complex(float("nan"), -0.05), complex(1, 2), complex(float("inf"), 1),
              complex(1, float("-inf")), complex(1, -0.0), complex(-0.0, -0.0)]
    x = torch.tensor(values, dtype=getattr(torch, dtype))
    y = torch.tensor(values[::-1], dtype=getattr(torch, dtype))
    a, b = tp.tensor(x.numpy()), tp.tensor(y.numpy())
    fns = {"add": lambda lib, p, q: p + q, "sub": lambda lib, p, q: p - q,
           "add_": lambda lib, p, q: p.clone().add_(q),
           "sub_": lambda lib, p, q: p.clone().sub_(q),
           "add_alpha": lambda lib, p, q: lib.add(p, q, alpha=2)}
    want = fns[op](torch, x, y).numpy()
    got = fns[op](tp, a, b).numpy()
    for part in (np.real, np.imag):
        np.testing.assert_array_equal(part(got), part(want))
        numbers = ~np.isnan(part(want))
        np.testing.assert_array_equal(np.signbit(part(got))[numbers],
                                      np.signbit(part(want))[numbers])
