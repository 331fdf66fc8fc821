"""Backward helpers for the pointwise ops (see derivatives.yaml).

Written with TensorPlay ops only, so they can themselves be differentiated.
"""
from __future__ import annotations

from tensorplay._generated import functional as F


def logit_backward(grad, self, eps):
    """d/dp log(p / (1 - p)) = 1 / (p (1 - p)); with eps, 0 where p was clamped. Without
    eps, nan outside [0, 1] (PyTorch's choice: logit is undefined there)."""
    dp = grad / (self * (1 - self))
    if eps is None:
        outside = F.logical_or(self < 0, self > 1)
        return F.where(outside, float("nan"), dp)
    return F.where(F.logical_or(self < eps, self > 1 - eps), 0.0, dp)


def div_mode_backward_self(grad, other, rounding_mode):
    """A rounded quotient is piecewise constant: zero gradient (PyTorch's choice too)."""
    if rounding_mode is None:
        return grad / other
    return grad * 0


def div_mode_backward_other(grad, self, other, rounding_mode):
    if rounding_mode is None:
        return -grad * self / (other * other)
    return grad * 0


def rounded_quotient(self, other, rounding_mode):
    """self / other rounded as in remainder ('floor') or fmod ('trunc'): their derivative
    with respect to other is -quotient."""
    return F.div(self, other, rounding_mode=rounding_mode)


def clamp_backward(grad, self, min, max):  # noqa: A002 - the schema's names
    """The gradient flows where self was inside [min, max] (bounds included)."""
    if min is not None and max is not None:
        inside = F.logical_and(self >= min, self <= max)
    elif min is not None:
        inside = self >= min
    else:
        inside = self <= max
    return F.where(inside, grad, 0.0)


def clamp_backward_self(grad, self, min, max):  # noqa: A002
    inside = self >= min
    if max is not None:
        inside = F.logical_and(inside, self <= max)
    return F.where(inside, grad, 0.0)


def clamp_backward_min(grad, self, min, max):  # noqa: A002
    """Where self < min the output is min (unless max cut it), so min gets the gradient.
    NOTE: like PyTorch, with min > max both bounds may receive it."""
    return F.where(F.logical_not(self >= min), grad, 0.0)


def clamp_backward_max(grad, self, min, max):  # noqa: A002
    return F.where(F.logical_not(self <= max), grad, 0.0)
