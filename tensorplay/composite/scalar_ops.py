"""Scalar overloads (`add.Scalar`, `eq.Scalar`, ...) as their Tensor overload with the
number wrapped in a 0-dim tensor. A wrapped number promotes like a Python scalar
(`int_tensor + 2.5` is float32, `half_tensor + 2.5` stays float16), so one kernel
per op serves both overloads, and autograd sees only the Tensor overload."""
from __future__ import annotations

from tensorplay import _tensor_factory as factory   # _creation: it imports this module
from tensorplay._frontdoor import SCALAR_TYPES, observers, wrap_number
from tensorplay._generated import functional as F
from tensorplay._generated import ops
from tensorplay._tensor_base import TensorBase
from tensorplay.autograd.grad_mode import grad_state
from tensorplay.dispatch.tls import local_keys
from tensorplay.errors import ShapeError, fmt_shape

# add, sub, mul and div and their in-place forms with a Python int, float or bool (`x * 2`,
# `y + 1`, `x.add_(1.0)`) call their Tensor overload's route themselves (`_tensor_route`):
# it is what the front door `F.mul(self, number)` does for a Tensor `self` and a fresh
# wrapped number when nothing observes the call. That door checks that `self` is a Tensor
# and `alpha` a number (tested here: anything else goes through it, and its errors).
# While explain() or a profiler listens (`observers.active`) the door itself runs, so
# they show the same hops as before: mul.Scalar -> CompositeImplicit -> mul.Tensor -> ...


def _tensor_route(handle, impl, number):
    """Where `handle`'s front door sends (a Tensor of) `impl` and a fresh wrapped `number`:
    the key set is the two impls' keys; the number never requires grad, so only `impl`
    decides whether the autograd hop runs; then the thread's masks."""
    ks = impl.keys | number._impl.keys
    if not (impl.requires_grad and grad_state.enabled):
        ks &= handle.no_grad_keys
    masks = local_keys.mask_pair
    return handle.routes[(ks | masks[0]) & ~masks[1]]


def add_scalar(self, other, alpha):
    if type(other) in SCALAR_TYPES and type(alpha) in SCALAR_TYPES \
            and isinstance(self, TensorBase) and not observers.active:
        number = factory.wrapped_scalar(other, self._impl._device)
        return _tensor_route(ops.add_Tensor, self._impl, number)(self, number, alpha)
    return F.add(self, wrap_number(other, self), alpha=alpha)


def add__scalar(self, other, alpha):
    if type(other) in SCALAR_TYPES and type(alpha) in SCALAR_TYPES \
            and isinstance(self, TensorBase) and not observers.active:
        number = factory.wrapped_scalar(other, self._impl._device)
        return _tensor_route(ops.add__Tensor, self._impl, number)(self, number, alpha)
    return F.add_(self, wrap_number(other, self), alpha=alpha)


def sub_scalar(self, other, alpha):
    if type(other) in SCALAR_TYPES and type(alpha) in SCALAR_TYPES \
            and isinstance(self, TensorBase) and not observers.active:
        number = factory.wrapped_scalar(other, self._impl._device)
        return _tensor_route(ops.sub_Tensor, self._impl, number)(self, number, alpha)
    return F.sub(self, wrap_number(other, self), alpha=alpha)


def sub__scalar(self, other, alpha):
    if type(other) in SCALAR_TYPES and type(alpha) in SCALAR_TYPES \
            and isinstance(self, TensorBase) and not observers.active:
        number = factory.wrapped_scalar(other, self._impl._device)
        return _tensor_route(ops.sub__Tensor, self._impl, number)(self, number, alpha)
    return F.sub_(self, wrap_number(other, self), alpha=alpha)


def mul_scalar(self, other):
    if type(other) in SCALAR_TYPES and isinstance(self, TensorBase) and not observers.active:
        number = factory.wrapped_scalar(other, self._impl._device)
        return _tensor_route(ops.mul_Tensor, self._impl, number)(self, number)
    return F.mul(self, wrap_number(other, self))


def mul__scalar(self, other):
    if type(other) in SCALAR_TYPES and isinstance(self, TensorBase) and not observers.active:
        number = factory.wrapped_scalar(other, self._impl._device)
        return _tensor_route(ops.mul__Tensor, self._impl, number)(self, number)
    return F.mul_(self, wrap_number(other, self))


def div_scalar(self, other):
    if type(other) in SCALAR_TYPES and isinstance(self, TensorBase) and not observers.active:
        number = factory.wrapped_scalar(other, self._impl._device)
        return _tensor_route(ops.div_Tensor, self._impl, number)(self, number)
    return F.div(self, wrap_number(other, self))


def div__scalar(self, other):
    if type(other) in SCALAR_TYPES and isinstance(self, TensorBase) and not observers.active:
        number = factory.wrapped_scalar(other, self._impl._device)
        return _tensor_route(ops.div__Tensor, self._impl, number)(self, number)
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
