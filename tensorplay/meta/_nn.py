"""The checks the nn families' rules share: a floating input, class indices, the
`reduction` argument, a tensor's expected size."""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay.errors import ArgumentError, DTypeError, ShapeError, fmt_shape


REDUCTIONS = ("none", "mean", "sum")


def _sizes(t):
    return t._impl.sizes


def check_floating(op, t, arg="self"):
    d = t._impl.dtype
    if not d.is_floating_point:
        raise DTypeError(f"{op}(): argument '{arg}' must be a floating point tensor, but got "
                         f"{d.name}", op=op, arg=arg)


def check_index(op, t, arg):
    d = t._impl.dtype
    if d not in (dt.int64, dt.int32):
        raise DTypeError(f"{op}(): argument '{arg}' must be an int64 or int32 tensor of "
                         f"indices, but got {d.name}", op=op, arg=arg)


def check_reduction(op, reduction):
    if reduction not in REDUCTIONS:
        raise ArgumentError(f"{op}(): argument 'reduction' must be one of 'none', 'mean', "
                            f"'sum', but got {reduction!r}", op=op, arg="reduction")


def check_size(op, t, arg, expected, what):
    if t is not None and tuple(_sizes(t)) != tuple(expected):
        raise ShapeError(f"{op}(): argument '{arg}' must have shape {fmt_shape(expected)} "
                         f"({what}), but got {fmt_shape(_sizes(t))}", op=op, arg=arg)
