"""Elementwise kernels: one NumPy ufunc each, after PyTorch's type promotion.

NumPy broadcasts exactly like PyTorch, so broadcasting needs no code here; a
shape that does not broadcast makes NumPy raise and the op's shape rule turns
that into a ShapeError naming the arguments.
"""
from __future__ import annotations

import numpy as np

from tensorplay import _dtype as dt
from tensorplay._promotion import result_type2
from tensorplay.errors import DTypeError
from cpu_kernels._common import array_as, float_dtype, out


def _binary(self, other):
    dtype = result_type2(self, other)
    return array_as(self, dtype), array_as(other, dtype), dtype


def _scaled(b, alpha):
    return b if alpha == 1 else b * alpha


def add(self, other, alpha):
    a, b, dtype = _binary(self, other)
    return out(np.add(a, _scaled(b, alpha)), dtype)


def sub(self, other, alpha):
    a, b, dtype = _binary(self, other)
    return out(np.subtract(a, _scaled(b, alpha)), dtype)


def mul(self, other):
    a, b, dtype = _binary(self, other)
    return out(np.multiply(a, b), dtype)


def div(self, other):
    dtype = float_dtype(result_type2(self, other))
    with np.errstate(divide="ignore", invalid="ignore"):
        return out(np.true_divide(array_as(self, dtype), array_as(other, dtype)), dtype)


def pow(self, exponent):  # noqa: A001 - the op's name
    a, b, dtype = _binary(self, exponent)
    if not dtype.is_floating_point and np.any(b < 0):
        raise ValueError("Integers to negative integer powers are not allowed.")
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return out(np.power(a, b), dtype)


def maximum(self, other):
    a, b, dtype = _binary(self, other)
    return out(np.maximum(a, b), dtype)


def minimum(self, other):
    a, b, dtype = _binary(self, other)
    return out(np.minimum(a, b), dtype)


def xlogy(self, other):
    dtype = float_dtype(result_type2(self, other))
    a, b = array_as(self, dtype), array_as(other, dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(a == 0, np.zeros((), dtype.np), a * np.log(b))
    return out(np.where(np.isnan(b), b, r), dtype)


def where(condition, self, other):
    if condition._impl.dtype is not dt.bool:
        raise DTypeError(f"where(): argument 'condition' must be a bool tensor, but got "
                         f"{condition._impl.dtype.name}", op="where", arg="condition")
    a, b, dtype = _binary(self, other)
    return out(np.where(condition._impl.array(), a, b), dtype)


def _compare(ufunc):
    def kernel(self, other):
        a, b, _ = _binary(self, other)
        return out(ufunc(a, b), dt.bool)
    return kernel


eq = _compare(np.equal)
ne = _compare(np.not_equal)
lt = _compare(np.less)
le = _compare(np.less_equal)
gt = _compare(np.greater)
ge = _compare(np.greater_equal)
for _name, _fn in (("eq", eq), ("ne", ne), ("lt", lt), ("le", le), ("gt", gt), ("ge", ge)):
    _fn.__name__ = _fn.__qualname__ = _name


def neg(self):
    return out(np.negative(self._impl.array()), self._impl.dtype)


def abs(self):  # noqa: A001
    return out(np.abs(self._impl.array()), self._impl.dtype)


def _unary_float(ufunc):
    def kernel(self):
        dtype = float_dtype(self._impl.dtype)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return out(ufunc(array_as(self, dtype)), dtype)
    return kernel


exp = _unary_float(np.exp)
log = _unary_float(np.log)
sqrt = _unary_float(np.sqrt)
sin = _unary_float(np.sin)
cos = _unary_float(np.cos)
tanh = _unary_float(np.tanh)
for _name, _fn in (("exp", exp), ("log", log), ("sqrt", sqrt), ("sin", sin), ("cos", cos),
                   ("tanh", tanh)):
    _fn.__name__ = _fn.__qualname__ = _name


def sigmoid(self):
    dtype = float_dtype(self._impl.dtype)
    x = array_as(self, dtype)
    # exp of a large positive argument overflows: use exp(-|x|), which never does.
    e = np.exp(-np.abs(x))
    return out(np.where(x >= 0, 1 / (1 + e), e / (1 + e)), dtype)


def relu(self):
    a = self._impl.array()
    return out(np.maximum(a, np.zeros((), a.dtype)), self._impl.dtype)  # keeps NaN, like torch


# ---- in-place: compute into the tensor's own memory ----------------------------------
def _check_inplace_dtype(op, self, dtype):
    if not dt.can_cast(dtype, self._impl.dtype):
        raise DTypeError(f"{op}(): result type {dtype.name} can't be cast to the desired "
                         f"output type {self._impl.dtype.name}", op=op, arg="self")


def _inplace(op, ufunc, self, other, alpha=1):
    dtype = result_type2(self, other)
    _check_inplace_dtype(op, self, dtype)
    target = self._impl.array()
    result = ufunc(array_as(self, dtype), _scaled(array_as(other, dtype), alpha))
    np.copyto(target, result, casting="unsafe")
    return self


def add_(self, other, alpha):
    return _inplace("add_", np.add, self, other, alpha)


def sub_(self, other, alpha):
    return _inplace("sub_", np.subtract, self, other, alpha)


def mul_(self, other):
    return _inplace("mul_", np.multiply, self, other)


def div_(self, other):
    dtype = float_dtype(result_type2(self, other))
    _check_inplace_dtype("div_", self, dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.copyto(self._impl.array(), np.true_divide(array_as(self, dtype),
                                                     array_as(other, dtype)), casting="unsafe")
    return self


def relu_(self):
    a = self._impl.array()
    np.copyto(a, np.maximum(a, np.zeros((), a.dtype)))
    return self


def sign(self):
    return out(np.sign(self._impl.array()), self._impl.dtype)
