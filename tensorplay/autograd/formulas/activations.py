"""Backward helpers of the activations (see derivatives.yaml): elu, leaky_relu,
gelu and silu second derivatives, mish, hardswish, prelu.

Written with TensorPlay ops only, so they can be differentiated again.
"""
from __future__ import annotations

from tensorplay._generated import functional as F
from tensorplay.autograd.formulas.core import sum_to
from tensorplay.errors import AutogradError

_INV_SQRT_2PI = 0.3989422804014327
_SQRT_2_OVER_PI = 0.7978845608028654


def elu_backward(grad, self, alpha, scale, input_scale):
    """scale for x > 0; scale * alpha * input_scale * exp(input_scale * x) elsewhere.

    At x == 0 the slope takes the exp branch (its value there is the same), but its own
    derivative is PyTorch's elu_double_backward: masked by x < 0, so the second
    derivative at exactly 0 is 0. `where(self < 0, self, 0)` (not clamp, whose gradient
    passes at the boundary) gives the exponent that mask when differentiated again."""
    negative_part = F.where(self < 0, self, 0.0)
    neg = grad * (scale * alpha * input_scale) * (negative_part * input_scale).exp()
    return F.where(self <= 0, neg, grad * scale)   # nan takes the x > 0 branch, as in torch


def elu_backward_of_result(grad, result, alpha, scale, input_scale):
    """elu_'s gradient from its result r: where r <= 0, r = scale alpha (exp(input_scale x)
    - 1), so the slope scale alpha input_scale exp(input_scale x) is input_scale (r + scale
    alpha). r <= 0 tells the branch only for alpha >= 0: PyTorch refuses the others.
    Differentiated again in r, the slope is masked by r < 0 (PyTorch's elu_double_backward
    with is_result): 0 at r == 0."""
    _in_place_slope_check("elu_", "alpha", "elu", alpha)
    neg = grad * input_scale * (F.where(result < 0, result, 0.0) + scale * alpha)
    return F.where(result <= 0, neg, grad * scale)


def leaky_relu_backward_of_result(grad, result, negative_slope):
    """leaky_relu_'s gradient from its result: the sign of the result is the sign of self
    for a non-negative slope only (PyTorch refuses the others)."""
    _in_place_slope_check("leaky_relu_", "negative_slope", "leakyReLu", negative_slope)
    return F.where(result > 0, grad, grad * negative_slope)


def _in_place_slope_check(op, arg, name, slope):
    """PyTorch's refusal (at backward, with its message) of a negative slope."""
    if slope < 0:
        raise AutogradError(
            f"In-place {name} backward calculation is triggered with a negative slope which "
            f"is not supported. This is caused by calling in-place forward function with a "
            f"negative slope, please call out-of-place version instead.",
            op=op, arg=arg)


def gelu_second_derivative(self, approximate):
    """d2/dx2 of x Phi(x): phi(x) (2 - x^2). With 'tanh', of f (1 + tanh(u)), f = x / 2,
    u = k (x + c x^3): f' g h + (f' g h + f g' h + f g h') with g = 1 - tanh(u)^2 = sech^2,
    h = u'. NOTE: g' = -2 sech(u)^2 tanh(u) h is written with 1 / cosh, as PyTorch does:
    1 - tanh^2 loses every digit in float32 where tanh(u) rounds to +-1."""
    if approximate == "tanh":
        inner = _SQRT_2_OVER_PI * (self + 0.044715 * self * self * self)
        t = inner.tanh()
        sech = 1 / inner.cosh()
        f = 0.5 * self
        g = 1 - t * t
        h = _SQRT_2_OVER_PI * (1 + 3 * 0.044715 * self * self)
        g_prime = (2 * sech) * (-sech * t) * h
        h_prime = 6 * 0.044715 * _SQRT_2_OVER_PI * self
        return 2 * (0.5 * g * h) + f * h * g_prime + f * g * h_prime
    pdf = _INV_SQRT_2PI * (-0.5 * self * self).exp()
    return pdf * (2 - self * self)


def silu_second_derivative(self):
    """d2/dx2 of x sigmoid(x): s (1 - s) (2 + x (1 - 2 s)), s = sigmoid(x)."""
    s = self.sigmoid()
    return s * (1 - s) * (2 + self * (1 - 2 * s))


def mish_backward(grad, self):
    """d/dx x tanh(sp(x)) = tanh(sp) + x sigmoid(x) (1 - tanh(sp)^2), sp = softplus."""
    t = F.softplus(self).tanh()
    return grad * (t + self * self.sigmoid() * (1 - t * t))


def hardswish_backward(grad, self):
    """0 up to -3, x / 3 + 1/2 on (-3, 3), 1 from 3 on (PyTorch's choice at the kinks)."""
    middle = F.where(self < 3, grad * (self / 3 + 0.5), grad)
    return F.where(self <= -3, 0.0, middle)


def prelu_backward(grad, self, weight):
    """(grad_self, grad_weight) of prelu, PyTorch's formula, which reads (and so saves)
    both: grad where self > 0, grad * weight elsewhere; the weight's, self * grad where
    self <= 0, summed over every dim but the channel's."""
    if weight.numel() == 1:
        w = weight.reshape([])
    else:
        shape = [1] * self.dim()
        shape[1] = weight.numel()
        w = weight.reshape(shape)
    positive = self > 0
    grad_self = F.where(positive, grad, grad * w)
    # Chosen per element, not multiplied by a 0 mask: a NaN or inf grad where self > 0
    # must not reach the weight's sum (NaN * 0 is NaN), as PyTorch's kernel selects too.
    grad_weight = sum_to(F.where(positive, 0, grad * self), tuple(w.shape))
    return grad_self, grad_weight.reshape(tuple(weight.shape))
