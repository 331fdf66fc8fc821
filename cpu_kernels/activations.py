"""Activation kernels: leaky_relu, elu, gelu, silu, mish, softplus, hardtanh, hardsigmoid,
hardswish, threshold, and their in-place forms; gelu's and silu's backward. (relu6, selu,
celu, softsign, glu and prelu are compositions: tensorplay/composite/activations.py.)

Everything that exponentiates does it on a non-positive argument, so nothing overflows
for large |x|: softplus(x) = max(x, 0) + log1p(exp(-|x|)), sigmoid via exp(-|x|).
"""
from __future__ import annotations

import math

import numpy as np

from tensorplay.kernel_support.ops import shape_rule
from cpu_kernels._common import array_as, out, out_like
from cpu_kernels._erf import erf as _erf
from cpu_kernels._erf import erfc as _erfc
from cpu_kernels._loops import loop
from cpu_kernels._pointwise_common import arrays, inplace_of

_SQRT_HALF = math.sqrt(0.5)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2PI = 1 / math.sqrt(2.0 * math.pi)


def _input(op, self):
    """The input as a float array in its compute dtype (floating dtypes only)."""
    shape_rule("pointwise.unary_floating")(op, (self,))
    (x,) = arrays(self._impl.dtype, self)
    return x


def _sigmoid(x):
    """1 / (1 + exp(-x)), PyTorch's formula and rounding: exp(-x) overflows to inf for
    x < -88 (float32) and the result is 0, where e / (1 + e) would give a subnormal."""
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-x))


def _softplus(x):
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


def leaky_relu(self, negative_slope):
    """x if x > 0 else negative_slope * x."""
    x = _input("leaky_relu", self)
    return out_like(np.where(x > 0, x, x * negative_slope), self._impl.dtype, self)


def elu(self, alpha, scale, input_scale):
    """scale * (x if x > 0 else alpha * (exp(input_scale * x) - 1)); selu and celu are
    elu with particular constants."""
    x = _input("elu", self)
    with np.errstate(over="ignore", invalid="ignore"):
        neg = alpha * np.expm1(np.minimum(x, 0) * input_scale)
    return out_like(scale * np.where(x > 0, x, neg), self._impl.dtype, self)


def gelu(self, approximate):
    """x * Phi(x), Phi the standard normal CDF: exact ('none', with erf) or PyTorch's
    tanh approximation ('tanh')."""
    shape_rule("activations.gelu")("gelu", (self, approximate))
    (x,) = arrays(self._impl.dtype, self)
    if approximate == "tanh":
        inner = _SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)
        with np.errstate(over="ignore", invalid="ignore"):
            return out_like(0.5 * x * (1 + np.tanh(inner)), self._impl.dtype, self)
    cdf = 0.5 * (1 + _erf(x * _SQRT_HALF))
    return out_like(x * cdf, self._impl.dtype, self)


def silu(self):
    """x * sigmoid(x)."""
    x = _input("silu", self)
    with np.errstate(invalid="ignore"):   # inf * 0 at -inf: nan, as in torch
        return out_like(x * _sigmoid(x), self._impl.dtype, self)


def _pair(op, rule, grad_output, self, *extra):
    """(grad, x, result dtype) of an activation backward, in its compute dtype (`rule`:
    the op's shape rule, by its ops.yaml name)."""
    spec = shape_rule(rule)(op, (grad_output, self, *extra))
    g, x = arrays(spec.dtype, grad_output, self)
    return g, x, spec.dtype


# gelu's derivative crosses zero at x = -0.7518 (exact and tanh forms alike): there its
# two terms (about 0.23 each) cancel, and their float32 rounding becomes 1e-4 of the
# result (PyTorch's fused float32 kernel rounds them less). The inputs within the window
# are computed again in float64 (|derivative| > 0.02 outside it; about 3% of standard
# normal inputs), and so are those of the tanh form's left tail, where 1 + tanh(u) and
# 1 - tanh(u)^2 cancel (the exact form's Phi(x) is 0.5 erfc(-x / sqrt 2) there: no
# 1 + erf to cancel). Float32 and below only (fuzz seed 615305: 1e30 gradients).
_GELU_ROOT, _GELU_WINDOW, _GELU_TANH_TAIL = -0.7518, 0.05, -2.2


def _gelu_derivative(x, approximate):
    if approximate == "tanh":
        t = np.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x * x * x))
        du = _SQRT_2_OVER_PI * (1 + 3 * 0.044715 * x * x)
        return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * du
    return 0.5 * _erfc(-x * _SQRT_HALF) + x * _INV_SQRT_2PI * np.exp(-0.5 * x * x)


def _refined_near_root(d, x, approximate):
    """d with the inputs within _GELU_WINDOW of the root (and the tanh form's tail)
    computed again in float64. (Two
    comparisons and flat indices into C-ordered copies: np.nonzero's index tuples and
    boolean indexing cost three times as much.)"""
    near = (x > _GELU_ROOT - _GELU_WINDOW) & (x < _GELU_ROOT + _GELU_WINDOW)
    if approximate == "tanh":
        near |= x < _GELU_TANH_TAIL
    if np.ndim(d) == 0:
        return _gelu_derivative(x.astype(np.float64), approximate).astype(d.dtype) if near else d
    flat = np.flatnonzero(near)
    if flat.size:
        d = np.ascontiguousarray(d)
        d.reshape(-1)[flat] = _gelu_derivative(
            x.reshape(-1)[flat].astype(np.float64), approximate)
    return d


def gelu_backward(grad_output, self, approximate):
    """grad * d/dx x Phi(x) = grad * (Phi(x) + x phi(x)); with 'tanh', the derivative of
    0.5 x (1 + tanh(u)), u = sqrt(2 / pi) (x + 0.044715 x^3)."""
    g, x, dtype = _pair("gelu_backward", "activations.gelu_backward", grad_output, self,
                        approximate)
    with np.errstate(over="ignore", invalid="ignore"):
        d = _gelu_derivative(x, approximate)
        if d.dtype != np.float64:
            d = _refined_near_root(d, x, approximate)
        return out_like(g * d, dtype, grad_output, self)


def silu_backward(grad_output, self):
    """grad * s * (1 + x * (1 - s)), s = sigmoid(x)."""
    g, x, dtype = _pair("silu_backward", "activations.activation_backward", grad_output, self)
    s = _sigmoid(x)
    with np.errstate(invalid="ignore"):
        return out_like(g * s * (1 + x * (1 - s)), dtype, grad_output, self)


def mish(self):
    """x * tanh(softplus(x))."""
    x = _input("mish", self)
    with np.errstate(invalid="ignore"):
        return out_like(x * np.tanh(_softplus(x)), self._impl.dtype, self)


def softplus(self, beta, threshold):
    """log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold (PyTorch's
    linear regime; the two agree there to far below float precision)."""
    x = _input("softplus", self)
    bx = x * beta
    return out_like(np.where(bx > threshold, x, _softplus(bx) / beta), self._impl.dtype, self)


def hardtanh(self, min_val, max_val):
    """min(max(x, min_val), max_val), for integers too."""
    shape_rule("activations.hardtanh")("hardtanh", (self, min_val, max_val))
    (x,) = arrays(self._impl.dtype, self)
    lo, hi = np.array(min_val).astype(x.dtype), np.array(max_val).astype(x.dtype)
    return out_like(np.minimum(np.maximum(x, lo), hi), self._impl.dtype, self)


def hardsigmoid(self):
    """relu6(x + 3) / 6: 0 below -3, 1 above 3, linear between."""
    x = _input("hardsigmoid", self)
    return out_like(np.clip(x + 3, 0, 6) / 6, self._impl.dtype, self)


def hardswish(self):
    """x * relu6(x + 3) / 6."""
    x = _input("hardswish", self)
    with np.errstate(invalid="ignore"):
        return out_like(x * np.clip(x + 3, 0, 6) / 6, self._impl.dtype, self)


def threshold(self, threshold, value):
    """value if x <= threshold else x (so nan stays nan)."""
    shape_rule("pointwise.unary_no_bool")("threshold", (self,))
    (x,) = arrays(self._impl.dtype, self)
    r = np.where(x <= threshold, np.array(value).astype(x.dtype), x)
    return out_like(r, self._impl.dtype, self)


leaky_relu_ = inplace_of(leaky_relu, "pointwise.unary_floating", "leaky_relu_")
elu_ = inplace_of(elu, "pointwise.unary_floating", "elu_")
gelu_ = inplace_of(gelu, "pointwise.unary_floating", "gelu_")
silu_ = inplace_of(silu, "pointwise.unary_floating", "silu_")
mish_ = inplace_of(mish, "pointwise.unary_floating", "mish_")
hardtanh_ = inplace_of(hardtanh, "activations.hardtanh", "hardtanh_")
hardsigmoid_ = inplace_of(hardsigmoid, "pointwise.unary_floating", "hardsigmoid_")
hardswish_ = inplace_of(hardswish, "pointwise.unary_floating", "hardswish_")
threshold_ = inplace_of(threshold, "pointwise.unary_no_bool", "threshold_")


def threshold_backward(grad_output, self, threshold):
    """grad_output where self > threshold (or is NaN), else 0: relu's and threshold's
    backward, broadcasting and promoting like a binary op.

        out[i] = 0 if self[i] <= threshold else grad_output[i]

    NOTE: np.where with a mask that changes every few elements runs ~15x slower than
    arithmetic, and grad * keep would turn an infinite gradient at a dropped position
    into NaN. So floats are selected bitwise: drop (1 or 0) minus 1 is 0 or all ones,
    and grad's bits `and` that are the gradient or +0.0, exactly.
    """
    gi, si = grad_output._impl, self._impl
    if gi.sizes == si.sizes and gi.sizes and gi.dtype is si.dtype and si.is_contiguous \
            and gi.dtype.is_floating_point:
        # The backward of a relu in a network: one shape (not 0-d: NumPy compares those
        # to a scalar), one float dtype, a row-major input (the result is laid out as it).
        # Nothing to check, promote, broadcast or lay out: the selection alone.
        g, x = grad_output._impl.array(), self._impl.array()
        if g.dtype.type in (np.float32, np.float64):
            result = np.empty(g.shape, g.dtype)
            # (the threshold rounded to the dtype first, as NumPy compares a Python number;
            # a strided gradient, such as sum's expanded one, read through a row-major copy:
            # the loop over a strided array runs scalar code, 20x slower than the copy)
            _threshold_backward_loop(np.ascontiguousarray(g).reshape(-1), x.reshape(-1),
                                     result.reshape(-1), g.dtype.type(threshold),
                                     g.dtype.type(0))
            return out(result, gi.dtype)
        if gi.is_contiguous:                    # a half type
            with np.errstate(invalid="ignore"):     # (ml_dtypes' NaN comparison flags it)
                drop = np.less_equal(array_as(self, si.dtype), threshold)
            return out(_select(array_as(grad_output, gi.dtype), drop, True), gi.dtype)
    spec = shape_rule("activations.threshold_backward")(
        "threshold_backward", (grad_output, self, threshold))
    g = array_as(grad_output, spec.dtype)
    x = array_as(self, spec.dtype)
    with np.errstate(invalid="ignore"):
        drop = np.less_equal(x, threshold)
    g, drop = np.broadcast_arrays(g, drop)
    # NOTE: laid out like self first, then grad_output: PyTorch's binary-op iterator
    # takes them in that order (its threshold_backward is threshold(self, ..., grad)).
    return out_like(_select(g, drop, spec.dtype.is_floating_point), spec.dtype, self,
                    grad_output)


@loop
def _threshold_backward_loop(g, x, result, threshold, zero):
    for i in range(g.size):
        result[i] = zero if x[i] <= threshold else g[i]     # a NaN in x keeps g



def _select(g, drop, floating):
    """g where not drop, else 0 (g and drop of one shape; `floating`: g holds floats)."""
    bits = _BITS.get(g.dtype.itemsize) if floating else None
    if bits is None:           # integers (and bool): the product is exact
        result = np.multiply(g, ~drop, dtype=g.dtype)
    else:
        # drop (1 or 0) minus 1 is 0 or all ones; one gradient-sized array, reused for
        # the result.
        mask = drop.astype(bits)
        mask -= 1
        result = np.bitwise_and(g.view(bits), mask, out=mask).view(g.dtype)
    return result


# Same-width integers, to select a float or its +0.0 with a bitwise and.
_BITS = {2: np.int16, 4: np.int32, 8: np.int64}
