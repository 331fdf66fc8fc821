"""Pointwise kernels that combine several inputs or bounds: clamp (number or tensor
bounds), lerp, addcmul, addcdiv, nan_to_num, and their in-place forms."""
from __future__ import annotations

import ml_dtypes
import numpy as np

from tensorplay.meta import pointwise as rules
from cpu_kernels._common import out_like, scalar_as
from cpu_kernels._pointwise_common import arrays, compute_np, inplace_of, promoted


def clamp(self, min, max):  # noqa: A002 - the schema's names
    """min(max(self, min), max) with number bounds; a nan input stays nan.

        for each i:  out[i] = self[i] < min ? min : (self[i] > max ? max : self[i])
    """
    spec = rules.clamp_scalar("clamp", (self, min, max))
    (x,) = arrays(spec.dtype, self)
    return out_like(_clamp(x, min, max), spec.dtype, self)


def clamp_tensor(self, min, max):  # noqa: A002
    """clamp.Tensor: bounds are tensors that broadcast with self (either may be None)."""
    rules.clamp("clamp" if min is not None else "clamp_max", (self, min, max))
    dtype, arrs = promoted(*[t for t in (self, min, max) if t is not None])
    it = iter(arrs[1:])
    lo = next(it) if min is not None else None
    hi = next(it) if max is not None else None
    return out_like(_clamp(arrs[0], lo, hi), dtype, self)


def _clamp(x, lo, hi):
    # np.maximum/np.minimum propagate nan from either side, as torch.clamp does.
    # A number bound is converted to the tensor's dtype first, wrapping like a C cast
    # (PyTorch: clamp(uint8, -1, 1) uses 255 as the lower bound).
    if lo is not None:
        x = np.maximum(x, np.array(lo).astype(x.dtype))
    if hi is not None:
        x = np.minimum(x, np.array(hi).astype(x.dtype))
    return x


def lerp_scalar(self, end, weight):
    """self + weight * (end - self), with a number weight."""
    spec = rules.lerp("lerp", (self, end, weight))
    a, b = arrays(spec.dtype, self, end)
    w = np.asarray(weight, a.dtype)
    # One weight: choose PyTorch's formula once instead of computing both per element.
    diff = b - a
    if abs(float(weight)) < 0.5:
        return out_like(a + w * diff, spec.dtype, self, end)
    return out_like(b - diff * (1 - w), spec.dtype, self, end)


def lerp_tensor(self, end, weight):
    spec = rules.lerp("lerp", (self, end, weight))
    a, b, w = arrays(spec.dtype, self, end, weight)
    return out_like(_lerp(a, b, w), spec.dtype, self, end, weight)


def _lerp(a, b, w):
    # PyTorch's form: exact at both ends (w = 0 gives a, w = 1 gives b) and monotone.
    return np.where(np.abs(w) < 0.5, a + w * (b - a), b - (b - a) * (1 - w))


def addcmul(self, tensor1, tensor2, value):
    """self + value * tensor1 * tensor2."""
    spec = rules.addcmul("addcmul", (self, tensor1, tensor2, value))
    a, t1, t2 = arrays(spec.dtype, self, tensor1, tensor2)
    value = scalar_as(value, spec.dtype)
    r = a + value * (t1 * t2) if value != 1 else a + t1 * t2
    return out_like(r, spec.dtype, self, tensor1, tensor2)


def addcdiv(self, tensor1, tensor2, value):
    """self + value * tensor1 / tensor2."""
    spec = rules.addcdiv("addcdiv", (self, tensor1, tensor2, value))
    a, t1, t2 = arrays(spec.dtype, self, tensor1, tensor2)
    with np.errstate(all="ignore"):
        return out_like(a + value * (t1 / t2), spec.dtype, self, tensor1, tensor2)


def nan_to_num(self, nan, posinf, neginf):
    """nan -> `nan` (0), +inf -> `posinf` (the dtype's largest), -inf -> `neginf`
    (the dtype's lowest). Integers and bool have none of these: a copy."""
    dtype = self._impl.dtype
    a = self._impl.array()
    if not dtype.is_floating_point:
        return out_like(a.copy(), dtype, self)
    info = ml_dtypes.finfo(dtype.np)   # (np.finfo does not know bfloat16)
    big = info.max if posinf is None else posinf
    small = info.min if neginf is None else neginf
    x = a.astype(compute_np(dtype))
    r = np.where(np.isnan(x), 0.0 if nan is None else nan, x)
    r = np.where(np.isposinf(x), big, np.where(np.isneginf(x), small, r))
    return out_like(r.astype(x.dtype), dtype, self)


# ---- in-place forms -----------------------------------------------------------------
clamp_ = inplace_of(clamp, rules.clamp_scalar, "clamp_")
clamp_tensor_ = inplace_of(clamp_tensor, rules.clamp, "clamp_")
lerp_scalar_ = inplace_of(lerp_scalar, rules.lerp, "lerp_")
lerp_tensor_ = inplace_of(lerp_tensor, rules.lerp, "lerp_")
addcmul_ = inplace_of(addcmul, rules.addcmul, "addcmul_")
addcdiv_ = inplace_of(addcdiv, rules.addcdiv, "addcdiv_")
_nan_to_num_float_ = inplace_of(nan_to_num, rules.unary_same, "nan_to_num_")


def nan_to_num_(self, nan, posinf, neginf):
    """In place. Integers and bool have no nan or inf: PyTorch copies self onto itself,
    which writes nothing (so an expanded integer tensor is no overlap to refuse)."""
    if self._impl.dtype.is_floating_point:
        return _nan_to_num_float_(self, nan, posinf, neginf)
    rules.unary_same("nan_to_num_", (self, nan, posinf, neginf))
    return self


def clamp_max_tensor(self, max):  # noqa: A002
    """clamp_max.Tensor: min(self, max), broadcasting (clamp.Tensor needs a `min`)."""
    return clamp_tensor(self, None, max)


clamp_max_tensor_ = inplace_of(clamp_max_tensor, rules.clamp_max, "clamp_max_")
