"""erf and erfc for the NumPy kernels (NumPy has neither).

float64 gets math.erf/math.erfc, correctly rounded but applied element by element (a
Python loop: exact, slow). float32 and the half types, which are what training runs in,
get a vectorised formula accurate to about one float32 ulp:

    |x| < 0.5:  erf(x) = 2/sqrt(pi) * sum_n (-1)^n x^(2n+1) / (n! (2n+1))   (8 terms)
    otherwise:  erfc(|x|) = t exp(-x^2 + P(t)),  t = 1 / (1 + |x|/2)
                (the Chebyshev fit of Numerical Recipes' erfcc, relative error < 1.2e-7),
                erf(x) = sign(x) (1 - erfc(|x|)),  erfc(-|x|) = 2 - erfc(|x|)

The series covers small |x|, where 1 - erfc would lose the relative precision of erf.
Both are evaluated in float64 and rounded once by the caller.
"""
from __future__ import annotations

import math

import numpy as np

_exact_erf = np.frompyfunc(math.erf, 1, 1)
_exact_erfc = np.frompyfunc(math.erfc, 1, 1)
# The series as a polynomial in x^2 (highest degree first, for Horner's rule):
# erf(x) = x * sum_n a_n x^(2n),  a_n = 2/sqrt(pi) (-1)^n / (n! (2n+1)),  n = 0..7.
_SERIES = tuple(2.0 / math.sqrt(math.pi) * (-1) ** n / (math.factorial(n) * (2 * n + 1))
                for n in reversed(range(8)))
# P(t) of the erfc fit, highest degree first.
_ERFC_POLY = (0.17087277, -0.82215223, 1.48851587, -1.13520398, 0.27886807, -0.18628806,
              0.09678418, 0.37409196, 1.00002368, -1.26551223)


def _horner(coefficients, x):
    total = np.full_like(x, coefficients[0])
    for c in coefficients[1:]:
        total *= x
        total += c
    return total


def _erfc_abs(z):
    """erfc(z) for z >= 0, to ~1.2e-7 relative error; exp(-z^2) underflows to 0 cleanly."""
    t = 1.0 / (1.0 + 0.5 * z)
    with np.errstate(over="ignore", invalid="ignore"):
        return t * np.exp(_horner(_ERFC_POLY, t) - z * z)


def _erf_series(x):
    return x * _horner(_SERIES, x * x)


def _split(x):
    """(x in float64, mask of |x| < 0.5): each formula runs only on its own elements."""
    x64 = x.astype(np.float64)
    return x64, np.abs(x64) < 0.5


def erf(x):
    """erf of a float array, in x's dtype (float32 for the half types)."""
    if x.dtype == np.float64:
        return np.asarray(_exact_erf(x), np.float64)
    x64, small = _split(x)
    r = np.empty_like(x64)
    r[small] = _erf_series(x64[small])
    tail = x64[~small]
    r[~small] = np.sign(tail) * (1.0 - _erfc_abs(np.abs(tail)))
    return r.astype(x.dtype)


def erfc(x):
    """erfc of a float array, in x's dtype; accurate in the right tail (no 1 - erf)."""
    if x.dtype == np.float64:
        return np.asarray(_exact_erfc(x), np.float64)
    x64, small = _split(x)
    r = np.empty_like(x64)
    r[small] = 1.0 - _erf_series(x64[small])   # erf is small here: 1 - erf loses nothing
    tail = x64[~small]
    fit = _erfc_abs(np.abs(tail))
    r[~small] = np.where(tail < 0, 2.0 - fit, fit)
    return r.astype(x.dtype)
