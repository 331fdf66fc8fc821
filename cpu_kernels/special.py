"""NumPy kernels of the special functions (family `special`): the gamma family (lgamma,
digamma, polygamma, the incomplete gamma functions igamma/igammac), erfinv, the modified
Bessel functions of order 0 and 1 (i0, i0e, i1, i1e), the normal distribution's
functions (ndtri, log_ndtr), erfcx, entr and xlog1py.

Each is SciPy's `scipy.special` function (Cephes underneath, as in PyTorch's own CPU
kernels) applied to the input converted to a float dtype: integers and bool compute in
the default float dtype, the half types in float32, rounded once at the end, as PyTorch
does. `FUNCTIONS` maps each op to its array function, so that the `cuda` fallbacks of
triton_kernels/special.py compute the same values on a host copy.

Where SciPy's value differs from PyTorch's at an edge, the kernel says so and follows
PyTorch (lgamma(-inf) is inf: C's lgamma).
"""
from __future__ import annotations

import numpy as np
import scipy.special as sc

from tensorplay.kernel_support.complex_refusals import reject_complex
from tensorplay.kernel_support.ops import shape_rule
from tensorplay.kernel_support.overlap import check_inplace_overlap
from cpu_kernels import _libm
from cpu_kernels._common import float_dtype, out_like, out_like2
from cpu_kernels._pointwise_common import arrays, inplace_of, unary_float_kernel


# ---- the array functions (also the `cuda` host fallbacks' ) --------------------------
def lgamma_array(x):
    # log|Gamma(x)|. C's lgamma (PyTorch's) gives +inf at -inf; SciPy's gammaln -inf.
    return np.where(x == -np.inf, np.inf, sc.gammaln(x)).astype(x.dtype, copy=False)


def trigamma_array(x):
    """PyTorch's trigamma (aten's Math.h), in x's dtype (float32 for the half types):
    the reflection -pi^2 / sin(pi x)^2 below 1/2, six steps of the recurrence, then the
    asymptotic series. At a negative integer sin(pi x) is the rounding error of pi x, not
    0, so the value is huge but finite (3.2e14 at -2 in float32), where SciPy's exact
    polygamma gives inf; at 0 it is inf."""
    t = x.dtype.type
    pi = t(np.pi)
    sin_pi_x = _libm.sin(pi * x)        # (sinf for float32, as PyTorch's)
    reflect = x < t(0.5)
    result = np.where(reflect, -((pi * pi) / (sin_pi_x * sin_pi_x)), t(0))
    sign = np.where(reflect, t(-1), t(1))
    x = np.where(reflect, t(1) - x, x)
    for _ in range(6):
        result = result + t(1) / (x * x)
        x = x + t(1)
    ixx = t(1) / (x * x)
    series = ixx * (t(1 / 6) - ixx * (t(1 / 30) - ixx * t(1 / 42)))
    result = result + (t(1) + t(1) / (t(2) * x) + series) / x
    return sign * result


def polygamma_array(n, x):
    # SciPy's polygamma(0, x) is digamma(x); for n >= 2 it is (-1)^(n+1) n! zeta(n+1, x),
    # PyTorch's formula too; trigamma (n = 1) is PyTorch's own series (its poles differ).
    if n == 0:
        return sc.digamma(x)
    if n == 1:
        return trigamma_array(x)
    r = sc.polygamma(n, x).astype(x.dtype, copy=False)
    # PyTorch's edges: trigamma(-inf) is nan (SciPy: inf), and for n >= 2 the zeta
    # function of q = inf is nan (SciPy: 0).
    return np.where(x == (-np.inf if n == 1 else np.inf), np.nan, r).astype(x.dtype, copy=False)


def mvlgamma_array(x, p):
    """The multivariate log-gamma: sum_{j<p} lgamma(x - j/2) + p(p-1)/4 log(pi)."""
    total = sum(lgamma_array(x - x.dtype.type(j / 2)) for j in range(p))
    return total + x.dtype.type(p * (p - 1) / 4 * np.log(np.pi))


def xlog1py_array(x, y):
    # SciPy: 0 where x == 0 unless y is nan, as PyTorch.
    return sc.xlog1py(x, y)


def _igamma_ends(a, x, r, at_zero, at_inf):
    """PyTorch's calc_igamma(c) checks its special values in order before computing, so a
    NaN that the order never reads does not reach the result (SciPy's gives NaN): x = 0
    is `at_zero` and x = inf is `at_inf` whatever a is (a NaN a too), once a and x are not
    negative and a is not 0 or inf; an infinite a with a finite x is `at_zero`."""
    with np.errstate(invalid="ignore"):
        checked = ~((x < 0) | (a < 0) | (a == 0))
        r = np.where(checked & (x == 0), at_zero, r)
        finite_a = checked & (x != 0) & ~np.isinf(a)
        r = np.where(checked & (x != 0) & np.isinf(a) & ~np.isinf(x), at_zero, r)
        r = np.where(finite_a & np.isinf(x), at_inf, r)
    return r


FUNCTIONS = {
    "lgamma": lgamma_array,
    "digamma": sc.digamma,
    "erfinv": sc.erfinv,
    "i0": sc.i0,
    "special_i0e": sc.i0e,
    "special_i1": sc.i1,
    "special_i1e": sc.i1e,
    "special_erfcx": sc.erfcx,
    "special_ndtri": sc.ndtri,
    "special_log_ndtr": sc.log_ndtr,
    "special_entr": sc.entr,
    "igamma": lambda a, x: _igamma_ends(a, x, sc.gammainc(a, x), 0, 1),   # P(a, x)
    "igammac": lambda a, x: _igamma_ends(a, x, sc.gammaincc(a, x), 1, 0),  # Q = 1 - P
    "special_xlog1py": xlog1py_array,
}


# ---- unary: integers and bool compute in the default float dtype ----------------------
lgamma = unary_float_kernel("lgamma", FUNCTIONS["lgamma"])
digamma = unary_float_kernel("digamma", FUNCTIONS["digamma"])
erfinv = unary_float_kernel("erfinv", FUNCTIONS["erfinv"])
i0 = unary_float_kernel("i0", FUNCTIONS["i0"])
special_i0e = unary_float_kernel("special_i0e", FUNCTIONS["special_i0e"])
special_i1 = unary_float_kernel("special_i1", FUNCTIONS["special_i1"])
special_i1e = unary_float_kernel("special_i1e", FUNCTIONS["special_i1e"])
special_entr = unary_float_kernel("special_entr", FUNCTIONS["special_entr"])


def _no_half(name):
    """A float function PyTorch has no half kernel for: the rule refuses float16/bfloat16."""
    compute = unary_float_kernel(name, FUNCTIONS[name])

    def kernel(self):
        shape_rule("special.unary_float_no_half")(name, (self,))
        return compute(self)
    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = compute.__doc__
    return kernel


special_erfcx = _no_half("special_erfcx")
special_ndtri = _no_half("special_ndtri")
special_log_ndtr = _no_half("special_log_ndtr")


def polygamma(n, self):
    """The n-th derivative of digamma (n = 0: digamma itself)."""
    shape_rule("special.polygamma")("polygamma", (n, self))
    if self._impl.dtype.is_complex:   # (PyTorch names digamma's, trigamma's kernel for n < 2)
        reject_complex("polygamma", self, kind=("digamma", "trigamma", "polygamma")[min(n, 2)])
    dtype = float_dtype(self._impl.dtype)
    (x,) = arrays(dtype, self)
    with np.errstate(all="ignore"):
        return out_like(polygamma_array(n, x), dtype, self)


def polygamma_(self, n):
    shape_rule("special.polygamma_")("polygamma_", (self, n))
    check_inplace_overlap("polygamma_", self)
    result = polygamma(n, self)
    np.copyto(self._impl.array(), result._impl.array(), casting="unsafe")
    return self


# ---- binary ---------------------------------------------------------------------------
def _binary(name, rule):
    fn = FUNCTIONS[name]

    def kernel(self, other):
        spec = shape_rule(rule)(name, (self, other))
        a, b = arrays(spec.dtype, self, other)
        with np.errstate(all="ignore"):
            return out_like2(np.asarray(fn(a, b)), spec.dtype, self, other)
    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = f"{name}(self, other) elementwise, broadcasting."
    return kernel


# igamma and igammac have floating kernels only (PyTorch: "not implemented for 'Long'").
igamma = _binary("igamma", "pointwise.binary_floating")
igammac = _binary("igammac", "pointwise.binary_floating")
special_xlog1py = _binary("special_xlog1py", "pointwise.binary_float")


# ---- in place -------------------------------------------------------------------------
lgamma_ = inplace_of(lgamma, "pointwise.unary_float", "lgamma_")
digamma_ = inplace_of(digamma, "pointwise.unary_float", "digamma_")
erfinv_ = inplace_of(erfinv, "pointwise.unary_float", "erfinv_")
i0_ = inplace_of(i0, "pointwise.unary_float", "i0_")
igamma_ = inplace_of(igamma, "pointwise.binary_floating", "igamma_")
igammac_ = inplace_of(igammac, "pointwise.binary_floating", "igammac_")
