"""Helpers shared by the distributions, as torch.distributions.utils has them: broadcasting
parameters, converting between probabilities and logits, and a cached property.

Two special functions TensorPlay has no op for yet live here as composites of existing
ops (ops.yaml is left alone): `lgamma` (Lanczos' series) and `erfinv` (a rational start
refined by Newton steps on `erf`). Both are built from differentiable ops, so
gradients flow through them."""
from __future__ import annotations

import math
import numbers
from functools import update_wrapper

import tensorplay as tp


def euler_constant():
    return 0.57721566490153286060


def _is_tensor(x):
    return isinstance(x, tp.Tensor)


def broadcast_all(*values):
    """Turn numbers into tensors and broadcast everything to one shape (PyTorch's
    `broadcast_all`): numbers take the dtype of the first tensor, else the default."""
    if not all(_is_tensor(v) or isinstance(v, numbers.Number) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number, "
                         "torch.Tensor or objects implementing __torch_function__.")
    if not all(_is_tensor(v) for v in values):
        dtype = tp.get_default_dtype()
        for v in values:
            if _is_tensor(v):
                dtype = v.dtype
                break
        values = [v if _is_tensor(v) else tp.tensor(v, dtype=dtype) for v in values]
    return tp.broadcast_tensors(*values)


def _standard_normal(shape, dtype, device):
    return tp.randn(*shape, dtype=dtype, device=device) if len(shape) else \
        tp.randn((), dtype=dtype, device=device)


def _sum_rightmost(value, dim):
    """Sum out the `dim` rightmost dimensions of `value`."""
    if dim == 0:
        return value
    return value.reshape(*value.shape[:-dim], -1).sum(-1)


def clamp_probs(probs):
    """Keep probabilities inside (0, 1) by the dtype's eps (PyTorch's clamp)."""
    eps = tp.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def logits_to_probs(logits, is_binary=False):
    if is_binary:
        return tp.sigmoid(logits)
    return tp.softmax(logits, dim=-1)


def probs_to_logits(probs, is_binary=False):
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return tp.log(ps_clamped) - tp.log1p(-ps_clamped)
    return tp.log(ps_clamped)


class lazy_property:
    """Computed on first access, then stored on the instance (so `probs` and `logits`
    can each be derived from the other only when asked for)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with tp.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    """Seen on the class, a lazy_property looks like a property (for docs and checks)."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)


def tril_matrix_to_vec(mat, diag=0):
    n = mat.shape[-1]
    rows, cols = tp.tril_indices(n, n, offset=diag)
    return mat[..., rows, cols]


# ---- composites for special functions TensorPlay has no op for --------------------

# Lanczos' approximation, g = 7, nine coefficients: about 15 correct digits for x >= 0.5.
_LANCZOS_G = 7.0
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028,
            771.32342877765313, -176.61502916214059, 12.507343278686905,
            -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7)


def _lgamma_positive(x):
    # log Γ(x) for x >= 0.5 from Γ(z+1) = sqrt(2π) t^(z+1/2) e^-t A(z), z = x-1, t = z+g+1/2
    z = x - 1
    a = tp.full_like(x, _LANCZOS[0])
    for k, c in enumerate(_LANCZOS[1:], start=1):
        a = a + c / (z + k)
    t = z + _LANCZOS_G + 0.5
    return 0.5 * math.log(2 * math.pi) + (z + 0.5) * tp.log(t) - t + tp.log(a)


def lgamma(x):
    """log|Γ(x)|, a composite (TensorPlay has no lgamma op): Lanczos for x >= 0.5, and
    the reflection formula log π - log|sin πx| - log Γ(1-x) below it."""
    if hasattr(tp, "lgamma"):
        return tp.lgamma(x)
    small = x < 0.5
    # Each branch sees only arguments valid for it, so neither leaks NaN into the gradient.
    x_big = tp.where(small, tp.ones_like(x), x)
    x_small = tp.where(small, x, tp.full_like(x, 0.25))
    big = _lgamma_positive(x_big)
    reflected = (math.log(math.pi) - tp.log(tp.abs(tp.sin(math.pi * x_small)))
                 - _lgamma_positive(1 - x_small))
    return tp.where(small, reflected, big)


def erfinv(y):
    """The inverse of erf, a composite (TensorPlay has no erfinv op). Giles' single
    precision approximation, then Newton steps on erf(x) = y computed without gradient;
    a last Newton step from the detached root carries the gradient exactly:
    d erfinv(y)/dy = sqrt(π)/2 · exp(x²)."""
    if hasattr(tp, "erfinv"):
        return tp.erfinv(y)
    with tp.no_grad():
        y64 = y.detach().to(tp.float64)
        edge = tp.abs(y64) == 1               # erfinv(±1) = ±inf: set apart, no Newton there
        yd = tp.where(edge, tp.zeros_like(y64), y64)
        w = -tp.log((1 - yd) * (1 + yd))
        central = w < 5
        wc = w - 2.5
        pc = 2.81022636e-08
        for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                  -0.00125372503, -0.00417768164, 0.246640727, 1.50140941):
            pc = c + pc * wc
        wt = tp.sqrt(w.clamp(min=5)) - 3
        pt = -0.000200214257
        for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                  -0.0076224613, 0.00943887047, 1.00167406, 2.83297682):
            pt = c + pt * wt
        x = tp.where(central, pc, pt) * yd
        for _ in range(3):
            x = x - (tp.erf(x) - yd) / (2 / math.sqrt(math.pi) * tp.exp(-x * x))
        infinity = tp.full_like(x, math.inf)
        x = tp.where(edge, tp.where(y64 > 0, infinity, -infinity), x).to(y.dtype)
        finite = ~edge
        x_safe = tp.where(finite, x, tp.zeros_like(x))
    # One step from the detached root: the value is unchanged to rounding, and its
    # derivative in y is 1/erf'(x).
    step = x_safe - (tp.erf(x_safe) - y) / (2 / math.sqrt(math.pi) * tp.exp(-x_safe * x_safe))
    return tp.where(finite, step, x)
