"""Pointwise math kernels: float functions (exp2, log1p, asin, erf...), rounding, and the
division family (floor_divide, remainder, fmod, div with rounding_mode, atan2, hypot).

Every op has an in-place form built by `inplace_of`; the shape/dtype checks live in
tensorplay/meta/pointwise.py.
"""
from __future__ import annotations

import numpy as np

from tensorplay.errors import ArgumentError
from tensorplay.meta import pointwise as rules
from cpu_kernels import _erf
from cpu_kernels._common import float_dtype, out_like
from cpu_kernels._pointwise_common import arrays, inplace_of, promoted, unary_float_kernel



def _rsqrt(x):
    return 1 / np.sqrt(x)


# ---- float functions: integers and bool compute in the default float dtype -----------
reciprocal = unary_float_kernel("reciprocal", lambda x: 1 / x)
rsqrt = unary_float_kernel("rsqrt", _rsqrt)
exp2 = unary_float_kernel("exp2", np.exp2)
expm1 = unary_float_kernel("expm1", np.expm1)
log2 = unary_float_kernel("log2", np.log2)
log10 = unary_float_kernel("log10", np.log10)
log1p = unary_float_kernel("log1p", np.log1p)
tan = unary_float_kernel("tan", np.tan)
asin = unary_float_kernel("asin", np.arcsin)
acos = unary_float_kernel("acos", np.arccos)
atan = unary_float_kernel("atan", np.arctan)
sinh = unary_float_kernel("sinh", np.sinh)
cosh = unary_float_kernel("cosh", np.cosh)
erf = unary_float_kernel("erf", _erf.erf)     # NumPy has none: see _erf.py
erfc = unary_float_kernel("erfc", _erf.erfc)


def logit(self, eps):
    """log(p / (1 - p)), with p clamped to [eps, 1 - eps] when eps is given."""
    dtype = float_dtype(self._impl.dtype)
    (p,) = arrays(dtype, self)
    if eps is not None:
        # The bounds in the input's own dtype, as PyTorch's kernel takes them (scalar_t):
        # for bfloat16, 1 - 1e-6 is 1, so p = 1 stays 1 and its logit is inf
        store = (dtype.np if self._impl.dtype.is_floating_point else np.dtype(np.float32)).type
        lo = store(eps)
        hi = store(store(1) - lo)
        p = np.clip(p, float(lo), float(hi))
    with np.errstate(all="ignore"):
        return out_like(np.log(p / (1 - p)), dtype, self)


# ---- rounding: integers are already whole (a copy); bool is refused -------------------
def _rounding(name, fn):
    def kernel(self):
        rules.unary_no_bool(name, (self,))
        a = self._impl.array()
        if not self._impl.dtype.is_floating_point:
            return out_like(a.copy(), self._impl.dtype, self)
        (x,) = arrays(self._impl.dtype, self)
        return out_like(fn(x), self._impl.dtype, self)
    kernel.__name__ = kernel.__qualname__ = name
    return kernel


floor = _rounding("floor", np.floor)
ceil = _rounding("ceil", np.ceil)
trunc = _rounding("trunc", np.trunc)
round = _rounding("round", np.rint)   # noqa: A001 - half to even, like torch.round


def round_decimals(self, decimals):
    """round(x * 10**d) / 10**d (half to even), as PyTorch computes it; integers only
    with decimals == 0."""
    rules.unary_floating("round", (self,))
    (x,) = arrays(self._impl.dtype, self)
    with np.errstate(all="ignore"):
        if decimals >= 0:
            scale = 10.0 ** decimals
            r = np.rint(x * scale) / scale
        else:
            scale = 10.0 ** -decimals
            r = np.rint(x / scale) * scale
    return out_like(r, self._impl.dtype, self)


def frac(self):
    rules.unary_floating("frac", (self,))
    (x,) = arrays(self._impl.dtype, self)
    with np.errstate(invalid="ignore"):   # frac(inf) is inf - inf = nan, as in torch
        return out_like(x - np.trunc(x), self._impl.dtype, self)


# ---- the division family ------------------------------------------------------------
def _check_int_divisor(op, dtype, b):
    # NumPy returns 0 (with a warning) for an integer division by zero; PyTorch refuses.
    if not dtype.is_floating_point and np.any(b == 0):
        raise ArgumentError(f"{op}(): integer division by zero (argument 'other' has a zero "
                            f"element)", op=op, arg="other")


def floor_divide(self, other):
    """floor(self / other). Floats follow Python's divmod (exact, unlike floor(a / b))."""
    rules.binary_no_bool("floor_divide", (self, other))
    dtype, (a, b) = promoted(self, other)
    _check_int_divisor("floor_divide", dtype, b)
    with np.errstate(all="ignore"):
        return out_like(np.floor_divide(a, b), dtype, self, other)


def _trunc_divide(a, b):
    """Integer division rounded toward zero: the floor quotient, plus one where the signs
    differ and the division is not exact."""
    q = np.floor_divide(a, b)
    return q + ((np.remainder(a, b) != 0) & ((a < 0) != (b < 0)))


def div_mode(self, other, rounding_mode):
    """div.Tensor_mode: true division, or rounded toward zero ('trunc') or down ('floor')."""
    rules.div_mode("div", (self, other, rounding_mode))
    if rounding_mode is None:
        dtype = float_dtype(rules.binary("div", (self, other)).dtype)
        a, b = arrays(dtype, self, other)
        with np.errstate(all="ignore"):
            return out_like(a / b, dtype, self, other)
    dtype, (a, b) = promoted(self, other)
    _check_int_divisor("div", dtype, b)
    with np.errstate(all="ignore"):
        if rounding_mode == "floor":
            return out_like(np.floor_divide(a, b), dtype, self, other)
        if dtype.is_floating_point:
            return out_like(np.trunc(a / b), dtype, self, other)
        return out_like(_trunc_divide(a, b), dtype, self, other)


def remainder(self, other):
    """self - floor(self / other) * other: the sign of the divisor, like Python's %."""
    rules.binary_no_bool("remainder", (self, other))
    dtype, (a, b) = promoted(self, other)
    _check_int_divisor("remainder", dtype, b)
    with np.errstate(all="ignore"):
        return out_like(np.remainder(a, b), dtype, self, other)


def fmod(self, other):
    """self - trunc(self / other) * other: the sign of the dividend, like C's fmod."""
    rules.binary_no_bool("fmod", (self, other))
    dtype, (a, b) = promoted(self, other)
    _check_int_divisor("fmod", dtype, b)
    with np.errstate(all="ignore"):
        return out_like(np.fmod(a, b), dtype, self, other)


def atan2(self, other):
    dtype = float_dtype(rules.binary("atan2", (self, other)).dtype)
    a, b = arrays(dtype, self, other)
    return out_like(np.arctan2(a, b), dtype, self, other)


def hypot(self, other):
    """sqrt(self**2 + other**2) without overflow in the squares (np.hypot scales)."""
    rules.binary_floating("hypot", (self, other))
    dtype, (a, b) = promoted(self, other)
    return out_like(np.hypot(a, b), dtype, self, other)


# ---- in-place forms -----------------------------------------------------------------
reciprocal_ = inplace_of(reciprocal, rules.unary_float, "reciprocal_")
rsqrt_ = inplace_of(rsqrt, rules.unary_float, "rsqrt_")
exp2_ = inplace_of(exp2, rules.unary_float, "exp2_")
expm1_ = inplace_of(expm1, rules.unary_float, "expm1_")
log2_ = inplace_of(log2, rules.unary_float, "log2_")
log10_ = inplace_of(log10, rules.unary_float, "log10_")
log1p_ = inplace_of(log1p, rules.unary_float, "log1p_")
tan_ = inplace_of(tan, rules.unary_float, "tan_")
asin_ = inplace_of(asin, rules.unary_float, "asin_")
acos_ = inplace_of(acos, rules.unary_float, "acos_")
atan_ = inplace_of(atan, rules.unary_float, "atan_")
sinh_ = inplace_of(sinh, rules.unary_float, "sinh_")
cosh_ = inplace_of(cosh, rules.unary_float, "cosh_")
erf_ = inplace_of(erf, rules.unary_float, "erf_")
erfc_ = inplace_of(erfc, rules.unary_float, "erfc_")
logit_ = inplace_of(logit, rules.unary_float, "logit_")
floor_ = inplace_of(floor, rules.unary_no_bool, "floor_")
ceil_ = inplace_of(ceil, rules.unary_no_bool, "ceil_")
trunc_ = inplace_of(trunc, rules.unary_no_bool, "trunc_")
round_ = inplace_of(round, rules.unary_no_bool, "round_")
round_decimals_ = inplace_of(round_decimals, rules.unary_floating, "round_")
frac_ = inplace_of(frac, rules.unary_floating, "frac_")
floor_divide_ = inplace_of(floor_divide, rules.binary_no_bool, "floor_divide_")
div_mode_ = inplace_of(div_mode, rules.div_mode, "div_")
remainder_ = inplace_of(remainder, rules.binary_no_bool, "remainder_")
fmod_ = inplace_of(fmod, rules.binary_no_bool, "fmod_")
atan2_ = inplace_of(atan2, rules.binary_float, "atan2_")
hypot_ = inplace_of(hypot, rules.binary_floating, "hypot_")
