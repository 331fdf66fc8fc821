"""The range random_ draws from, as PyTorch derives it from `from_`, `to` and the dtype
(aten/src/ATen/native/DistributionTemplates.h): shared by the shape rule
(tensorplay/meta/random.py), which checks it, and the kernels, which draw from it."""
from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np

from tensorplay import _dtype as dt
from tensorplay.errors import ArgumentError

INT64_MIN = -2 ** 63
# The integers a float dtype holds exactly: up to 2^digits.
_DIGITS = {dt.float16: 11, dt.bfloat16: 8, dt.float32: 24, dt.float64: 53}
# random_(from_=int64 min, to=None) draws whole 64-bit words for these dtypes only.
FULL_64_BITS = (dt.int64, dt.float64, dt.float32, dt.bfloat16)


def random_bounds(op, dtype, from_, to):
    """[low, high) of random_, as PyTorch derives it: `to=None` is the dtype's largest
    integer (2^digits for a float), inclusive; for a float dtype both ends move to values
    it holds exactly (update_from / update_to); both must lie in the dtype's range.
    Returns (low, None) for every int64 (from_ = int64 min, to = None)."""
    floating = dtype.is_floating_point
    if to is None:
        if from_ == INT64_MIN and dtype in FULL_64_BITS:
            return from_, None
        to_inc = (1 << _DIGITS[dtype]) if floating else (1 if dtype is dt.bool else
                                                          _int_limits(dtype)[1])
        if floating:
            from_ = _update_from(from_, dtype)
            if not from_ < to_inc:
                raise ArgumentError(f"{op}(): expects 'from_' casted to dtype to be less than "
                                    f"or equal to 'to_inc' casted to dtype, but got "
                                    f"from_={from_} > to_inc={to_inc}", op=op, arg="from_")
        _check_in_range(op, dtype, from_, to_inc)
        return from_, to_inc + 1
    if not from_ < to:
        raise ArgumentError(f"{op}(): expects 'from_' to be less than 'to', but got "
                            f"from_={from_} >= to={to}", op=op, arg="from_")
    if floating:
        from_, to = _update_from(from_, dtype), _update_to(to, dtype)
        if not from_ < to:
            raise ArgumentError(f"{op}(): expects 'from_' casted to dtype to be less than 'to' "
                                f"casted to dtype, but got from_={from_} >= to={to}", op=op,
                                arg="from_")
    _check_in_range(op, dtype, from_, to - 1)
    return from_, to


def _int_limits(dtype):
    if dtype is dt.bool:
        return 0, 1
    bits = dtype.itemsize * 8
    if dtype is dt.uint8:
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def _check_in_range(op, dtype, from_, to_inc):
    """Both ends within the dtype's values (an error); for a float dtype, a warning past
    2^digits, where not every integer is a value (PyTorch's checks)."""
    if dtype.is_floating_point:
        low, high = -float(ml_dtypes.finfo(dtype.np).max), float(ml_dtypes.finfo(dtype.np).max)
    else:
        low, high = _int_limits(dtype)
    if not low <= from_ <= high:
        raise ArgumentError(f"{op}(): 'from_' is out of bounds for {dtype.name} (from_={from_})",
                            op=op, arg="from_")
    if not low <= to_inc <= high:
        raise ArgumentError(f"{op}(): 'to' - 1 is out of bounds for {dtype.name} "
                            f"(to - 1={to_inc})", op=op, arg="to")
    if dtype.is_floating_point:
        limit = 1 << _DIGITS[dtype]
        for name, value in (("from_", from_), ("to - 1", to_inc)):
            if not -limit <= value <= limit:
                warnings.warn(f"{op}(): {name} is out of bounds [-(2^{_DIGITS[dtype]}), "
                              f"2^{_DIGITS[dtype]}]: {dtype.name} holds only some of the "
                              f"integers there, so the draws are not uniform over them")


def _as_dtype_int(value, dtype):
    return int(np.asarray(value, np.float64).astype(dtype.np).astype(np.float64))


def _update_from(from_, dtype):
    """The smallest integer >= from_ that the float dtype holds (PyTorch's update_from)."""
    from_plus_1 = _as_dtype_int(from_ + 1, dtype)
    if from_plus_1 < from_:
        n = abs(from_ + 1).bit_length() - 1
        from_ = from_plus_1 + (1 << (n - _DIGITS[dtype] + 1))
    return from_


def _update_to(to, dtype):
    """The largest integer <= to that the float dtype holds (PyTorch's update_to)."""
    to_minus_1 = _as_dtype_int(to - 1, dtype)
    if to_minus_1 >= to:
        n = abs(to - 1).bit_length() - 1
        to = to_minus_1 - (1 << (n - _DIGITS[dtype] + 1))
    return to
