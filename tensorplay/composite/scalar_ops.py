"""Scalar overloads (`add.Scalar`, `eq.Scalar`, ...) as their Tensor overload with the
number wrapped in a 0-dim tensor. A wrapped number promotes like a Python scalar
(`int_tensor + 2.5` is float32, `half_tensor + 2.5` stays float16), so one kernel
per op serves both overloads, and autograd sees only the Tensor overload."""
from __future__ import annotations

from tensorplay import _tensor_factory as factory   # _creation: it imports this module
from tensorplay._frontdoor import SCALAR_TYPES, wrap_number
from tensorplay._generated import functional as F
from tensorplay._generated import ops
from tensorplay._tensor_base import TensorBase
from tensorplay.errors import ShapeError, fmt_shape

# add, sub, mul and div and their in-place forms with a Python int, float or bool (`x * 2`,
# `y + 1`, `x.add_(1.0)`) enter the Tensor overload's handle themselves (`_with_number`):
# it is what the front door `F.mul(self, number)` does for a Tensor `self`, without its
# argument checks (`self` is tested here; anything else goes through the door, and its
# errors).


def _with_number(handle, self, number, *rest):
    """`handle` (a Tensor overload) on `self` and `number` wrapped as a 0-dim tensor."""
    wrapped = factory.wrapped_scalar(number, self._impl._device)
    return handle.call(self._impl.keys | wrapped._impl.keys, self, wrapped, *rest)


def add_scalar(self, other, alpha):
    if type(other) in SCALAR_TYPES and type(alpha) in SCALAR_TYPES \
            and isinstance(self, TensorBase):
        return _with_number(ops.add_Tensor, self, other, alpha)
    return F.add(self, wrap_number(other, self), alpha=alpha)


def add__scalar(self, other, alpha):
    if type(other) in SCALAR_TYPES and type(alpha) in SCALAR_TYPES \
            and isinstance(self, TensorBase):
        return _with_number(ops.add__Tensor, self, other, alpha)
    return F.add_(self, wrap_number(other, self), alpha=alpha)


def sub_scalar(self, other, alpha):
    if type(other) in SCALAR_TYPES and type(alpha) in SCALAR_TYPES \
            and isinstance(self, TensorBase):
        return _with_number(ops.sub_Tensor, self, other, alpha)
    return F.sub(self, wrap_number(other, self), alpha=alpha)


def sub__scalar(self, other, alpha):
    if type(other) in SCALAR_TYPES and type(alpha) in SCALAR_TYPES \
            and isinstance(self, TensorBase):
        return _with_number(ops.sub__Tensor, self, other, alpha)
    return F.sub_(self, wrap_number(other, self), alpha=alpha)


def mul_scalar(self, other):
    if type(other) in SCALAR_TYPES and isinstance(self, TensorBase):
        return _with_number(ops.mul_Tensor, self, other)
    return F.mul(self, wrap_number(other, self))


def mul__scalar(self, other):
    if type(other) in SCALAR_TYPES and isinstance(self, TensorBase):
        return _with_number(ops.mul__Tensor, self, other)
    return F.mul_(self, wrap_number(other, self))


def div_scalar(self, other):
    if type(other) in SCALAR_TYPES and isinstance(self, TensorBase):
        return _with_number(ops.div_Tensor, self, other)
    return F.div(self, wrap_number(other, self))


def div__scalar(self, other):
    if type(other) in SCALAR_TYPES and isinstance(self, TensorBase):
        return _with_number(ops.div__Tensor, self, other)
    return F.div_(self, wrap_number(other, self))


def pow_tensor_scalar(self, exponent):
    return F.pow(self, wrap_number(exponent, self))


def xlogy_scalar(self, other):
    return F.xlogy(self, wrap_number(other, self))


def where_scalar_other(condition, self, other):
    return F.where(condition, self, wrap_number(other, self))


def where_scalar_self(condition, self, other):
    return F.where(condition, wrap_number(self, other), other)


def eq_scalar(self, other):
    return F.eq(self, wrap_number(other, self))


def ne_scalar(self, other):
    return F.ne(self, wrap_number(other, self))


def lt_scalar(self, other):
    return F.lt(self, wrap_number(other, self))


def le_scalar(self, other):
    return F.le(self, wrap_number(other, self))


def gt_scalar(self, other):
    return F.gt(self, wrap_number(other, self))


def ge_scalar(self, other):
    return F.ge(self, wrap_number(other, self))


def zero_(self):
    return F.fill_(self, 0)


def fill__tensor(self, value):
    """fill_ with a 0-dim tensor: a broadcasting copy_, which never reads the value (a meta
    `value` has none) and passes the gradient on to it, as PyTorch's fill_.Tensor does."""
    if value.dim() != 0:
        raise ShapeError(f"fill_(): argument 'value' must be a 0-dim tensor, but got a "
                         f"{value.dim()}-dim tensor of shape {fmt_shape(value.shape)}",
                         op="fill_", arg="value")
    # A value that is a view of self is read before self is written (so `x.fill_(x[1])`
    # is no overlapping copy), as PyTorch's fill_ clones it.
    storage = getattr(self._impl, "storage", None)
    if storage is not None and getattr(value._impl, "storage", None) is storage:
        value = value.clone()
    return self.copy_(value)
