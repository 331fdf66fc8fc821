"""allclose (isclose, then all) and the bitwise ops with a number: the Tensor overload
with the number wrapped in a 0-dim tensor, as pointwise.py's Scalar overloads."""
from __future__ import annotations

from tensorplay import _creation, _dtype as dt
from tensorplay._frontdoor import wrap_number
from tensorplay._generated import functional as F
from tensorplay.kernel_support.layout import clone_strides


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


def isreal(self):
    """Every element of a real tensor is real: all True (a new tensor laid out as self,
    PyTorch's ones_like); a complex number is real when its imaginary part is 0 (PyTorch:
    imag == 0, so a nan imaginary part is not real)."""
    if self._impl.dtype.is_complex:
        return F.eq(F.imag(self), 0)
    sizes = tuple(self.shape)
    result = _creation.empty_strided(sizes, clone_strides(sizes, tuple(self.stride())),
                                     dtype=dt.bool, device=self.device)
    return result.fill_(True)


# The bit shifts with a number: the Tensor overload with the number wrapped.
def bitwise_left_shift_tensor_scalar(self, other):
    return F.bitwise_left_shift(self, wrap_number(other, self))


def bitwise_left_shift__tensor_scalar(self, other):
    return self.bitwise_left_shift_(wrap_number(other, self))


def bitwise_left_shift_scalar_tensor(self, other):
    return F.bitwise_left_shift(wrap_number(self, other), other)


def bitwise_right_shift_tensor_scalar(self, other):
    return F.bitwise_right_shift(self, wrap_number(other, self))


def bitwise_right_shift__tensor_scalar(self, other):
    return self.bitwise_right_shift_(wrap_number(other, self))


def bitwise_right_shift_scalar_tensor(self, other):
    return F.bitwise_right_shift(wrap_number(self, other), other)
