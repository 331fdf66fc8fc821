"""Backward helpers for the pointwise ops (see derivatives.yaml), and the tangent helpers
(forward mode) of pow, div with a rounding mode and clamp.

Written with TensorPlay ops only, so they can themselves be differentiated.
"""
from __future__ import annotations

import math

from tensorplay import _creation
from tensorplay._generated import functional as F
from tensorplay.autograd.formulas.core import sum_to


def logit_backward(grad, self, eps):
    """d/dp log(p / (1 - p)) = 1 / (p (1 - p)); with eps, 0 where p was clamped. Without
    eps, nan outside [0, 1] (PyTorch's choice: logit is undefined there)."""
    dp = grad / (self * (1 - self))
    if eps is None:
        outside = F.logical_or(self < 0, self > 1)
        return F.where(outside, float("nan"), dp)
    return F.where(F.logical_or(self < eps, self > 1 - eps), 0.0, dp)


def div_mode_backward_self(grad, other, rounding_mode):
    """A rounded quotient is piecewise constant: zero gradient (PyTorch's choice too),
    zeros rather than grad * 0, which is NaN where grad is infinite or NaN."""
    if rounding_mode is None:
        return grad / other.conj()      # (div's formula: conj for a complex other)
    return _creation.zeros_like(grad)


def div_mode_backward_other(grad, self, other, rounding_mode):
    if rounding_mode is None:
        return -grad * ((self / other) / other).conj()     # PyTorch's order (see div.Tensor)
    return _creation.zeros_like(grad)


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
    NOTE: PyTorch's exact choices (clamp_backward_min_max): with both bounds, min gets it
    only where self < min and min < max; where min >= max the output is max, so max gets
    the gradient there (at min == max too), and min none. A nan self sends it to neither
    bound unless max < min."""
    if max is None:
        return F.where(self < min, grad, 0.0)
    return F.where(F.logical_and(self < min, min < max), grad, 0.0)


def clamp_backward_max(grad, self, min, max):  # noqa: A002
    if min is None:
        return F.where(self > max, grad, 0.0)
    return F.where(F.logical_or(self > max, max < min), grad, 0.0)


# NOTE: sinc and xlog1py run a composite forward, but differentiate with PyTorch's own
# formulas, so that they save what PyTorch's save (self; self and other), and an in-place
# change of those before backward raises alike.
def sinc_backward(grad, self):
    """(pi x cos(pi x) - sin(pi x)) / (pi x**2), and 0 where pi x**2 is 0 (PyTorch's form)."""
    x_pi = self * math.pi
    x_squared_pi = self * self * math.pi
    out = grad * (x_pi * F.cos(x_pi) - F.sin(x_pi)) / x_squared_pi
    return F.where(x_squared_pi == 0, 0.0, out)


def xlog1py_self_backward(grad, self, other):
    """log1p(other), 0 where grad is 0, and 0 where self == 0 and other <= -1."""
    out = F.where(F.logical_and(self == 0, other <= -1), 0.0, F.xlog1py(grad, other))
    return sum_to(out, tuple(self.shape)).to(self.dtype)


def xlog1py_other_backward(grad, self, other):
    return sum_to(grad * self / (other + 1), tuple(other.shape)).to(other.dtype)




def copysign_self_backward(grad, self, result):
    """grad * result / self, the sign flip (+1 or -1), and 0 where self is 0 (PyTorch's
    copysign_tensor_self_backward), summed to self's shape."""
    ratio = F.where(self == 0, 0.0, result / self)
    return sum_to(grad * ratio, tuple(self.shape))


# ---- tangents (forward mode) ----------------------------------------------------------
def unless_rounded(term, rounding_mode):
    """A term of div's tangent, (d self - d other * self / other) / other, or zeros when
    the quotient is rounded: piecewise constant, its tangent is zeros (the gradient's
    choice above). derivatives.yaml writes the tangent as one such term per input, so a
    missing tangent's term is left out as PyTorch's zero tensor leaves it (no 0 * inf)."""
    if rounding_mode is not None:
        return _creation.zeros_like(term)
    return term


def clamp_jvp(self_p, self_t, min_p, min_t, max_p, max_t):  # noqa: A002
    """The tangent of whichever of self, min and max the output took (PyTorch's
    clamp_jvp): max's where min > max (clamp then gives max everywhere), else min's below
    min, max's above max, self's in between. NOTE: at a tie with one bound only, the
    bound's tangent, while the gradient above goes to self: PyTorch's two choices."""
    if max_p is None:
        return F.where(self_p > min_p, self_t, min_t)
    if min_p is None:
        return F.where(self_p < max_p, self_t, max_t)
    inside = F.where(self_p < min_p, min_t, F.where(self_p > max_p, max_t, self_t))
    return F.where(min_p > max_p, max_t, inside)
