"""Backward helpers of the special functions (see derivatives.yaml), PyTorch's formulas
(torch/csrc/autograd/FunctionsManual.cpp) written with TensorPlay ops, so that they can
themselves be differentiated.
"""
from __future__ import annotations

import math

from tensorplay import _creation, _dtype as dt
from tensorplay._generated import functional as F
from tensorplay.autograd.formulas.core import sum_to

_EPS = {dt.float16: 2.0 ** -10, dt.bfloat16: 2.0 ** -7, dt.float32: 2.0 ** -23,
        dt.float64: 2.0 ** -52}


def mvlgamma_backward(grad, self, p):
    """d/dx sum_j lgamma(x - j/2) = sum_j digamma(x - j/2)."""
    shifts = _creation.arange(-p * 0.5 + 0.5, 0.5, 0.5, dtype=self.dtype, device=self.device)
    return grad * F.sum(F.digamma(F.add(self.unsqueeze(-1), shifts)), -1)


def erfinv_backward(grad, self):
    """d/dy erfinv(y) = sqrt(pi) / 2 * exp(erfinv(y)^2)."""
    x = F.erfinv(self)
    return 0.5 * math.sqrt(math.pi) * F.exp(x * x) * grad


def _safe(self):
    """(|self| > eps, self with its tiny elements replaced by eps): I1(x)/x and its kin
    are 0/0 at x = 0, where PyTorch puts the limit of the derivative, 1/2, instead."""
    eps = _EPS.get(self.dtype, 2.0 ** -23)
    not_tiny = F.abs(self) > eps
    return not_tiny, F.where(not_tiny, self, eps)


def i1_backward(grad, self, result):
    """d/dx I1(x) = I0(x) - I1(x) / x, and 1/2 at x = 0."""
    not_tiny, safe = _safe(self)
    dx = F.i0(safe) - result * F.reciprocal(safe)
    return grad * F.where(not_tiny, dx, 0.5)


def i1e_backward(grad, self, result):
    """d/dx I1e(x) = I0e(x) - I1e(x) (sign(x) + 1 / x), and 1/2 at x = 0."""
    not_tiny, safe = _safe(self)
    dx = F.special_i0e(safe) - result * (F.sign(safe) + F.reciprocal(safe))
    return grad * F.where(not_tiny, dx, 0.5)


def igamma_other_derivative(self, other):
    """d/dx P(a, x) = x^(a-1) e^(-x) / Gamma(a), through logs (no overflow)."""
    return F.exp((self - 1) * F.log(other) - other - F.lgamma(self))


def igamma_other_backward(grad, self, other):
    return sum_to(grad * igamma_other_derivative(self, other), tuple(other.shape))


def igammac_other_backward(grad, self, other):
    """Q(a, x) = 1 - P(a, x): the negative of igamma's."""
    return sum_to(-grad * igamma_other_derivative(self, other), tuple(other.shape))


def special_xlog1py_self_backward(grad, self, other):
    """log1p(other), and 0 where self == 0 and other <= -1 (PyTorch's masked_fill)."""
    out = F.special_xlog1py(grad, other)
    out = F.where(F.logical_and(self == 0, other <= -1), 0.0, out)
    return sum_to(out, tuple(self.shape))


def special_xlog1py_other_backward(grad, self, other):
    return sum_to(grad * self / (other + 1), tuple(other.shape))
