"""Pointwise ops that PyTorch defines by other ops: xlog1py, max/min with a second
tensor, aliases (true_divide, clip), clamp_min/clamp_max, allclose, and the Scalar
overloads, which wrap the number in a 0-dim tensor and call the Tensor overload (a
wrapped number promotes like a Python scalar; see scalar_ops.py)."""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay._frontdoor import wrap_number
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


def true_divide(self, other):
    return F.div(self, other)


def true_divide_scalar(self, other):
    return F.div(self, wrap_number(other, self))


def true_divide_(self, other):
    return self.div_(other)


def true_divide__scalar(self, other):
    return self.div_(wrap_number(other, self))


def div_scalar_mode(self, other, rounding_mode):
    return F.div(self, wrap_number(other, self), rounding_mode=rounding_mode)


def div__scalar_mode(self, other, rounding_mode):
    return self.div_(wrap_number(other, self), rounding_mode=rounding_mode)


def floor_divide_scalar(self, other):
    return F.floor_divide(self, wrap_number(other, self))


def floor_divide__scalar(self, other):
    return self.floor_divide_(wrap_number(other, self))


def remainder_scalar(self, other):
    return F.remainder(self, wrap_number(other, self))


def remainder_scalar_tensor(self, other):
    """remainder(number, tensor): the number wrapped, as in `5 % t`."""
    return F.remainder(wrap_number(self, other), other)


def remainder__scalar(self, other):
    return self.remainder_(wrap_number(other, self))


def fmod_scalar(self, other):
    return F.fmod(self, wrap_number(other, self))


def fmod__scalar(self, other):
    return self.fmod_(wrap_number(other, self))


def clip(self, min, max):  # noqa: A002 - the schema's names
    return F.clamp(self, min, max)


def clip_tensor(self, min, max):  # noqa: A002
    return F.clamp(self, min, max)


def clip_(self, min, max):  # noqa: A002
    return F.clamp_(self, min, max)


def clip_tensor_(self, min, max):  # noqa: A002
    return F.clamp_(self, min, max)


def clamp_min(self, min):  # noqa: A002
    return F.clamp(self, min, None)


def clamp_min_(self, min):  # noqa: A002
    return F.clamp_(self, min, None)


def clamp_max(self, max):  # noqa: A002
    return F.clamp(self, None, max)


def clamp_max_(self, max):  # noqa: A002
    return F.clamp_(self, None, max)


def allclose(self, other, rtol, atol, equal_nan):
    """isclose() for every element, as a Python bool."""
    close = F.isclose(self, other, rtol, atol, equal_nan)
    return close.sum().item() == close.numel()


def bitwise_and_scalar(self, other):
    return F.bitwise_and(self, wrap_number(other, self))


def bitwise_or_scalar(self, other):
    return F.bitwise_or(self, wrap_number(other, self))


def bitwise_xor_scalar(self, other):
    return F.bitwise_xor(self, wrap_number(other, self))


def bitwise_and__scalar(self, other):
    return self.bitwise_and_(wrap_number(other, self))


def bitwise_or__scalar(self, other):
    return self.bitwise_or_(wrap_number(other, self))


def bitwise_xor__scalar(self, other):
    return self.bitwise_xor_(wrap_number(other, self))
