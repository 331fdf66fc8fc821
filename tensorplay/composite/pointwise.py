"""Pointwise ops of the expansion that PyTorch defines by other ops: aliases (true_divide,
clip) and the Scalar overloads, which wrap the number in a 0-dim tensor and call the
Tensor overload (a wrapped number promotes like a Python scalar; see scalar_ops.py)."""
from __future__ import annotations

from tensorplay._frontdoor import wrap_number
from tensorplay._generated import functional as F


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
