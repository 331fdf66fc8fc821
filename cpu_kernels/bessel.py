"""tp.special's Bessel and Airy functions, the Hurwitz zeta function and the classical
orthogonal polynomials, on the CPU.

The functions of one variable are SciPy's (`scipy.special`: the same Cephes algorithms
PyTorch ports), computed in float64 and rounded once to the result's dtype (but
float32's I and K past their series, where PyTorch's float32 exp overflows or runs
through the subnormals: _float32_exp_form). The
polynomials are PyTorch's own recurrences (aten/src/ATen/native/Math.h), written with
NumPy over whole arrays, because their conventions are PyTorch's, not SciPy's:

    n                 is truncated toward zero to an integer (n = 2.7 is 2, n = -0.5 is 0);
                      n < 0, nan or +-inf (or past int64) gives 0
    |x| == 1          (T, U, V, W, P) the closed-form values at the ends of [-1, 1]
    |x| < 1, n large  (T, U, V, W) the trigonometric form, cos(n acos x) and its kin
    otherwise         the three-term recurrence, n - 1 steps, stopped early where an
                      element became nan (x outside [-1, 1] overflows to inf, then nan)
    H, He             nan past n = 128 (float32) or n = 512 (float64)

All of them compute in the result's dtype, float32 or float64 (integers and bool in the
default dtype; the half types are refused by the shape rule, tensorplay/meta/bessel.py).
"""
from __future__ import annotations


import numpy as np
import scipy.special as sc

from tensorplay._fma import fma
from tensorplay.kernel_support.ops import shape_rule
from cpu_kernels import _libm
from cpu_kernels._common import array_as, out_like

# ---- functions of one variable -------------------------------------------------------


def _spherical_j0(x):
    # sin(x) / x, with its Taylor series near 0 (PyTorch's) and 0 at +-inf.
    with np.errstate(all="ignore"):
        small = 1.0 + x * x * (-1.0 / 6.0 + x * x * (1.0 / 120.0 + x * x * (
            -1.0 / 5040.0 + x * x * (1.0 / 362880.0 + x * x * (
                -1.0 / 39916800.0 + x * x * (1.0 / 6227020800.0))))))
        r = np.where(np.abs(x) < 0.5, small, np.sin(x) / x)
    return np.where(np.isinf(x), 0.0, r)


# kernel name -> the function of a float64 array
UNARY = {
    # (PyTorch's: NaN at an infinity, 0 past x = 103.892 where SciPy's overflows to NaN)
    "special_airy_ai": lambda x: np.where(np.isinf(x), np.nan,
                                          np.where(x > 103.892, 0, sc.airy(x)[0])),
    "special_bessel_j0": sc.j0,
    "special_bessel_j1": sc.j1,
    "special_bessel_y0": sc.y0,
    "special_bessel_y1": sc.y1,
    "special_modified_bessel_i0": sc.i0,
    "special_modified_bessel_i1": sc.i1,
    "special_modified_bessel_k0": sc.k0,
    "special_modified_bessel_k1": sc.k1,
    "special_scaled_modified_bessel_k0": sc.k0e,
    "special_scaled_modified_bessel_k1": sc.k1e,
    "special_spherical_bessel_j0": _spherical_j0,
}


# PyTorch's modified Bessel functions I and K past their series (|x| > 8 for I, x > 2
# for K) are exp(+-|x|) * chbevl(...) / sqrt(|x|), and in float32 that exp is float32's:
# it overflows to inf past |x| = 88.72 (I is inf there up to |x| = 91.9, where its float64
# value, rounded, is still finite) and runs through the subnormals before it reaches 0
# (K). So in float32 these take PyTorch's three steps in float32, the Chebyshev factor
# exp(-+|x|) f(x) sqrt(|x|) from SciPy's exponentially scaled function in float64.
# name -> (the exponentially scaled function, the sign of the exponent, where the
# asymptotic form starts, odd in x)
_EXP_FORM = {
    "special_modified_bessel_i0": (sc.i0e, 1, 8.0, False),
    "special_modified_bessel_i1": (sc.i1e, 1, 8.0, True),
    "special_modified_bessel_k0": (sc.k0e, -1, 2.0, False),
    "special_modified_bessel_k1": (sc.k1e, -1, 2.0, False),
}


def _float32_exp_form(name, x, r):
    """r (float32, rounded from float64) with the asymptotic region of UNARY[name]
    recomputed as PyTorch's float32 kernel computes it."""
    scaled, sign, start, odd = _EXP_FORM[name]
    ax = np.abs(x) if sign > 0 else x
    where = (ax > start) & np.isfinite(ax)   # (+-inf: the float64 path's value)
    if not where.any():
        return r
    a = ax[where].astype(np.float32)
    cheb = (scaled(a.astype(np.float64)) * np.sqrt(a.astype(np.float64))).astype(np.float32)
    value = np.exp(np.float32(sign) * a) * cheb / np.sqrt(a)
    if odd:
        value = np.where(x[where] < 0, -value, value)
    r = np.array(r)      # (a copy; a 0-dim result is a NumPy scalar)
    r[where] = value
    return r


def unary_arrays(name, x):
    """UNARY[name] of the array `x`, in float64, rounded back to x's dtype (float32's
    exp overflow and underflow of I and K as in PyTorch, _float32_exp_form)."""
    with np.errstate(all="ignore"):
        r = UNARY[name](x.astype(np.float64)).astype(x.dtype)
        if x.dtype == np.float32 and name in _EXP_FORM:
            r = _float32_exp_form(name, x, r)
        return r


def _unary_kernel(name):
    def kernel(x):
        spec = shape_rule("bessel.unary")(name, (x,))
        return out_like(unary_arrays(name, array_as(x, spec.dtype)), spec.dtype, x)
    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = f"torch.special.{name[len('special_'):]}, elementwise (SciPy)."
    return kernel


# The eight of PyTorch's schemas that name their argument `self` get a kernel with that
# parameter name (the dispatcher checks it against the schema).
def _self_named(name):
    inner = _unary_kernel(name)

    def kernel(self):
        return inner(self)
    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = inner.__doc__
    return kernel


special_airy_ai = _unary_kernel("special_airy_ai")
special_bessel_j0 = _self_named("special_bessel_j0")
special_bessel_j1 = _self_named("special_bessel_j1")
special_bessel_y0 = _self_named("special_bessel_y0")
special_bessel_y1 = _self_named("special_bessel_y1")
special_modified_bessel_i0 = _self_named("special_modified_bessel_i0")
special_modified_bessel_i1 = _self_named("special_modified_bessel_i1")
special_modified_bessel_k0 = _self_named("special_modified_bessel_k0")
special_modified_bessel_k1 = _self_named("special_modified_bessel_k1")
special_scaled_modified_bessel_k0 = _unary_kernel("special_scaled_modified_bessel_k0")
special_scaled_modified_bessel_k1 = _unary_kernel("special_scaled_modified_bessel_k1")
special_spherical_bessel_j0 = _unary_kernel("special_spherical_bessel_j0")


# ---- the Hurwitz zeta function -------------------------------------------------------
def zeta_arrays(x, q):
    """zeta(x, q) = sum over k >= 0 of (k + q) ** -x, with PyTorch's (Cephes') domain:
    inf at x == 1, nan for x < 1; for q <= 0, inf at an integer q and nan for a
    non-integer x. Computed in float64 (PyTorch accumulates float32 in double too).
    Where its terms vanish at once (q = +inf, or x = +inf with q > 1) Cephes' series
    test 0 / 0 and its tail 0 * inf give nan, where SciPy gives the limit 0."""
    x64, q64 = np.broadcast_arrays(x.astype(np.float64), q.astype(np.float64))
    with np.errstate(all="ignore"):
        r = sc.zeta(x64, q64)
        r = np.where((q64 == np.inf) | ((x64 == np.inf) & (q64 > 1)), np.nan, r)
        r = np.where((q64 <= 0) & (x64 != np.floor(x64)), np.nan, r)
        r = np.where((q64 <= 0) & (q64 == np.floor(q64)), np.inf, r)
        r = np.where(x64 < 1, np.nan, r)
        r = np.where(x64 == 1, np.inf, r)
    return r.astype(x.dtype)


def special_zeta(self, other):
    spec = shape_rule("bessel.zeta")("special_zeta", (self, other))
    x, q = array_as(self, spec.dtype), array_as(other, spec.dtype)
    return out_like(zeta_arrays(x, q), spec.dtype, self, other)


# ---- the orthogonal polynomials ------------------------------------------------------
_INT64_MIN = np.iinfo(np.int64).min


def degrees(n):
    """n as PyTorch's `static_cast<int64_t>(n)` makes it: truncated toward zero; nan,
    +-inf and values past int64 become int64's minimum (what x86 gives), so negative."""
    n = np.asarray(n)
    if n.dtype.kind in "iub":
        return n.astype(np.int64)
    inside = np.isfinite(n) & (np.abs(n) < 2.0 ** 63)
    with np.errstate(invalid="ignore"):
        return np.where(inside, np.trunc(np.where(inside, n, 0)), _INT64_MIN).astype(np.int64)


def _recurrence(x, p, q, step, first_k, last, where_nan_stops=True):
    """Run `r = step(k, p, q); p, q = q, r` for k = first_k .. last (inclusive, `last` an
    array: each element's own count), on the elements that still run; q at the end. An
    element whose q is nan stops (PyTorch's `!isnan(q)`), keeping its nan. Elements whose
    value comes from elsewhere (a closed form) get a `last` below first_k: no steps."""
    k = first_k
    while True:
        active = k <= last
        if where_nan_stops:
            active &= ~np.isnan(q)
        if not active.any():
            return q
        with np.errstate(all="ignore"):
            r = step(np.asarray(k, dtype=x.dtype), p, q)
        p = np.where(active, q, p)
        q = np.where(active, r, q)
        k += 1


def _chebyshev(kind, x, n, shifted):
    """T, U, V or W (kind 't', 'u', 'v', 'w') of degree n at x; the shifted ones are the
    same polynomials at y = 2x - 1, with their special values keyed on x itself."""
    one = x.dtype.type(1)
    y = (x + x - one) if shifted else x
    nf = n.astype(x.dtype)
    # libm's functions, as PyTorch's kernel calls them: NumPy's float32 ones (and its
    # float64 arccos) are a unit off now and then, which cos(n acos x) multiplies by n
    # (seed 93759: W of degree 1542841 at 0.25 was -0.55, PyTorch -0.1535)
    cos, sin = _libm.cos, _libm.sin
    with np.errstate(all="ignore"):
        theta = _libm.acos(y)
        # the first two terms, and the trigonometric form
        if kind == "t":
            first, trig = y, cos(nf * theta)
        elif kind == "u":
            first = y + y
            s = sin(theta)
            trig = np.where(s != 0, sin((nf + 1) * theta) / s,
                            (nf + 1) * cos((nf + 1) * theta) / y)
        elif kind == "v":
            first = (y + y - one)
            alternating = np.where(n % 2 == 0, 2 * nf + 1, -(2 * nf + 1))
            trig = np.where(sin(theta / 2) != 1,
                            cos((nf + x.dtype.type(0.5)) * theta) / cos(theta / 2),
                            alternating)
        else:
            first = (y + y + one)
            at_end = np.where(n % 2 == 0, 1, -1)
            if not shifted:      # (the shifted W's fallback has no y > 0 case)
                at_end = np.where(y > 0, 2 * nf + 1, at_end)
            trig = np.where(cos(theta / 2) != 1,
                            sin((nf + x.dtype.type(0.5)) * theta) / sin(theta / 2),
                            at_end)
    # where the trigonometric form applies (y inside (-1, 1), n past a threshold), and
    # the special values at the ends (PyTorch checks them first)
    threshold = {("t", False): 6, ("u", False): 8, ("v", False): 8, ("w", False): 8,
                 ("t", True): 6, ("u", True): 6, ("v", True): 6, ("w", True): 4}[kind, shifted]
    use_trig = (n > threshold) & (np.abs(y) < 1)
    at_ends = ((x == 1) | (x == 0)) if shifted else (np.abs(x) == 1)
    two_y = y + y
    q = _recurrence(x, np.ones_like(x), first, lambda k, p, q: fma(two_y, q, -p),
                    2, np.where(use_trig | at_ends, 0, n))
    r = np.where(n == 0, one, np.where(n == 1, first, q))
    r = np.where(use_trig, trig, r)
    r = np.where(at_ends, _end_values(kind, x, n, nf, shifted), r)
    return np.where(n < 0, 0, r).astype(x.dtype)


def _end_values(kind, x, n, nf, shifted):
    """The values at the ends: for the shifted polynomials at x == 1 and x == 0 (y = +-1),
    for the others at x == +-1."""
    top = (x == 1) if shifted else (x > 0)
    even = n % 2 == 0
    if kind == "t":
        at_top, at_bottom = 1, np.where(even, 1, -1)
    elif kind == "u":
        at_top, at_bottom = nf + 1, np.where(even, nf + 1, -(nf + 1))
    elif kind == "v":
        at_top, at_bottom = 1, np.where(even, 2 * nf + 1, -(2 * nf + 1))
    else:
        at_top, at_bottom = 2 * nf + 1, np.where(even, 1, -1)
    return np.where(top, at_top, at_bottom)


def _hermite_limit(dtype):
    return 128 if dtype == np.float32 else 512


def _hermite_h(x, n):
    two_x = x + x
    # r = 2x q - k p for k = 2, 4, ..., 2n - 2 (step j = 1 .. n-1 uses k = 2j)
    limit = _hermite_limit(x.dtype)
    q = _recurrence(x, np.ones_like(x), two_x, lambda j, p, q: fma(two_x, q, -((j + j) * p)),
                    1, np.where(n > limit, 0, np.maximum(n, 1) - 1), where_nan_stops=False)
    r = np.where(n == 0, 1, np.where(n == 1, two_x, q))
    r = np.where(n > limit, np.nan, r)
    return np.where(n < 0, 0, r).astype(x.dtype)


def _hermite_he(x, n):
    limit = _hermite_limit(x.dtype)
    q = _recurrence(x, np.ones_like(x), x, lambda k, p, q: fma(x, q, -(k * p)),
                    1, np.where(n > limit, 0, np.maximum(n, 1) - 1), where_nan_stops=False)
    r = np.where(n == 0, 1, np.where(n == 1, x, q))
    r = np.where(n > limit, np.nan, r)
    return np.where(n < 0, 0, r).astype(x.dtype)


def _laguerre(x, n):
    one = x.dtype.type(1)
    q = _recurrence(x, np.ones_like(x), one - x,
                    lambda k, p, q: fma((k + k) + (one - x), q, -(k * p)) / (k + 1),
                    1, np.where(x == 0, 0, np.maximum(n, 1) - 1))
    r = np.where(n == 0, one, np.where(n == 1, one - x, q))
    r = np.where(np.abs(x) == 0, one, r)
    return np.where(n < 0, 0, r).astype(x.dtype)


def _legendre(x, n):
    q = _recurrence(x, np.ones_like(x), x,
                    lambda k, p, q: fma((k + k + 1) * x, q, -(k * p)) / (k + 1),
                    1, np.where(np.abs(x) == 1, 0, np.maximum(n, 1) - 1))
    r = np.where(n == 0, 1, np.where(n == 1, x, q))
    r = np.where(np.abs(x) == 1, np.where((x > 0) | (n % 2 == 0), 1, -1), r)
    return np.where(n < 0, 0, r).astype(x.dtype)


POLYNOMIALS = {
    "special_chebyshev_polynomial_t": lambda x, n: _chebyshev("t", x, n, False),
    "special_chebyshev_polynomial_u": lambda x, n: _chebyshev("u", x, n, False),
    "special_chebyshev_polynomial_v": lambda x, n: _chebyshev("v", x, n, False),
    "special_chebyshev_polynomial_w": lambda x, n: _chebyshev("w", x, n, False),
    "special_shifted_chebyshev_polynomial_t": lambda x, n: _chebyshev("t", x, n, True),
    "special_shifted_chebyshev_polynomial_u": lambda x, n: _chebyshev("u", x, n, True),
    "special_shifted_chebyshev_polynomial_v": lambda x, n: _chebyshev("v", x, n, True),
    "special_shifted_chebyshev_polynomial_w": lambda x, n: _chebyshev("w", x, n, True),
    "special_hermite_polynomial_h": _hermite_h,
    "special_hermite_polynomial_he": _hermite_he,
    "special_laguerre_polynomial_l": _laguerre,
    "special_legendre_polynomial_p": _legendre,
}


def polynomial_arrays(name, x, n):
    """POLYNOMIALS[name] at x (float32 or float64) of degree n (an array of x's dtype:
    PyTorch converts n to the common dtype first, then truncates it)."""
    x, n = np.broadcast_arrays(x, n)
    return np.asarray(POLYNOMIALS[name](np.ascontiguousarray(x), degrees(n)), dtype=x.dtype)


def _polynomial_kernel(name):
    def kernel(x, n):
        spec = shape_rule("bessel.polynomial")(name, (x, n))
        a, b = array_as(x, spec.dtype), array_as(n, spec.dtype)
        return out_like(polynomial_arrays(name, a, b), spec.dtype, x, n)
    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = f"torch.special.{name[len('special_'):]}(x, n), elementwise."
    return kernel


special_chebyshev_polynomial_t = _polynomial_kernel("special_chebyshev_polynomial_t")
special_chebyshev_polynomial_u = _polynomial_kernel("special_chebyshev_polynomial_u")
special_chebyshev_polynomial_v = _polynomial_kernel("special_chebyshev_polynomial_v")
special_chebyshev_polynomial_w = _polynomial_kernel("special_chebyshev_polynomial_w")
special_shifted_chebyshev_polynomial_t = _polynomial_kernel(
    "special_shifted_chebyshev_polynomial_t")
special_shifted_chebyshev_polynomial_u = _polynomial_kernel(
    "special_shifted_chebyshev_polynomial_u")
special_shifted_chebyshev_polynomial_v = _polynomial_kernel(
    "special_shifted_chebyshev_polynomial_v")
special_shifted_chebyshev_polynomial_w = _polynomial_kernel(
    "special_shifted_chebyshev_polynomial_w")
special_hermite_polynomial_h = _polynomial_kernel("special_hermite_polynomial_h")
special_hermite_polynomial_he = _polynomial_kernel("special_hermite_polynomial_he")
special_laguerre_polynomial_l = _polynomial_kernel("special_laguerre_polynomial_l")
special_legendre_polynomial_p = _polynomial_kernel("special_legendre_polynomial_p")
