"""Pointwise ops defined by other ops (the seed registers xlog1py this way)."""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay._generated import functional as F
from tensorplay._promotion import result_type
from tensorplay.meta.rules import broadcast, check_devices


def _check_args(op, self, other):
    """Shape and device errors name the op the user called, not the op it is made of."""
    if self._impl.sizes != other._impl.sizes:
        broadcast(op, [("self", self._impl.sizes), ("other", other._impl.sizes)])
    if self._impl.device is not other._impl.device:
        check_devices(op, [("self", self), ("other", other)])


def xlog1py(self, other):
    """self * log1p(other), 0 where self == 0 (even if log1p(other) is inf or nan)."""
    # `other + 1` is rounded once, so compute it in the result's dtype, not in `other`'s:
    # float16 self with bfloat16 other gives float32, and bfloat16(other + 1) would lose
    # most of what log1p is for.
    _check_args("xlog1py", self, other)
    dtype = result_type(self, other)
    if not dtype.is_floating_point:
        dtype = dt.get_default_dtype()
    return F.xlogy(self, F.add(other.to(dtype), 1))


def max_other(self, other):
    _check_args("max", self, other)
    return F.maximum(self, other)


def min_other(self, other):
    _check_args("min", self, other)
    return F.minimum(self, other)
