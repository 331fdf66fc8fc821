"""Shape and dtype rules of the logic ops: nan/inf tests, isclose, equal, logical and
bitwise ops. `equal` returns a Python bool decided by the values: on meta it raises a
DataDependentError (see rules.py's DataDependent)."""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay.errors import ArgumentError, DTypeError
from tensorplay.kernel_support.checks import (
    DataDependent, OutSpec, binary, broadcast, check_devices,
)
from tensorplay.meta.pointwise import _finish, unary_same


def _sizes(t):
    return t._impl.sizes


def equal(op, args):
    check_devices(op, [("self", args[0]), ("other", args[1])])
    return DataDependent("self", "the answer (a Python bool)")


def unary_bool_out(op, args):
    """isnan, isinf, isfinite, logical_not: a bool tensor of the input's shape."""
    return OutSpec(_sizes(args[0]), dt.bool)


def _not_integral(t):
    """A float or complex tensor: no bits to combine."""
    return t._impl.dtype.is_floating_point or t._impl.dtype.is_complex


def unary_integral(op, args):
    """bitwise_not: integers and bool only."""
    if _not_integral(args[0]):
        raise DTypeError(f"{op}(): not implemented for {args[0]._impl.dtype.name} tensors "
                         f"(argument 'self'; expected an integer or bool tensor)", op=op,
                         arg="self")
    return unary_same(op, args)


def logical(op, args):
    """logical_and/or/xor: any dtypes, a bool result."""
    return OutSpec(binary(op, args).sizes, dt.bool)


def logical_inplace(op, args):
    """logical_and_ ...: the 0/1 result is written in self's own dtype (every dtype holds
    it), so only the shape must fit."""
    sizes = binary(op, args).sizes if len(args) > 1 else _sizes(args[0])
    return _finish(op, OutSpec(sizes, dt.bool), args[0])


def bitwise(op, args):
    """bitwise_and/or/xor: integers and bool."""
    for name, t in (("self", args[0]), ("other", args[1])):
        if _not_integral(t):
            raise DTypeError(f"{op}(): not implemented for {t._impl.dtype.name} tensors "
                             f"(argument '{name}'; expected an integer or bool tensor)", op=op,
                             arg=name)
    return _finish(op, binary(op, args), args[0])


def isclose(op, args):
    self, other, rtol, atol = args[:4]
    check_devices(op, [("self", self), ("other", other)])
    if self._impl.dtype is not other._impl.dtype:
        raise DTypeError(f"{op}(): 'self' and 'other' must have the same dtype, but got "
                         f"{self._impl.dtype.name} and {other._impl.dtype.name}", op=op,
                         arg="other")
    for name, v in (("rtol", rtol), ("atol", atol)):
        if v < 0:
            raise ArgumentError(f"{op}(): argument '{name}' must be greater than or equal to "
                                f"zero, but got {v}", op=op, arg=name)
    return OutSpec(broadcast(op, [("self", _sizes(self)), ("other", _sizes(other))]), dt.bool)
