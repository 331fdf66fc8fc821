"""Shape and dtype rules of the special functions beyond pointwise.py's float rules:
polygamma's order `n` (an argument before self), and the ops PyTorch's CPU kernels
refuse for the half types (erfcx, ndtri, log_ndtr: "not implemented for 'Half'").

Same contract as rules.py: `rule(op, args) -> OutSpec | SELF`, or a typed error that
names the op and the argument.
"""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay.errors import ArgumentError
from tensorplay.meta.pointwise import reject_dtypes, unary_float


def check_order(op, n):
    if n < 0:
        raise ArgumentError(f"{op}(): argument 'n' must be a non-negative integer (the order "
                            f"of the derivative), but got {n}", op=op, arg="n")


def polygamma(op, args):
    """polygamma(n, self): digamma's n-th derivative, a float function of self."""
    n, self = args
    check_order(op, n)
    return unary_float(op, (self,))


def polygamma_(op, args):
    """self.polygamma_(n): the same check, the result written into self."""
    self, n = args
    check_order(op, n)
    return unary_float(op, (self,))


_HALF = (dt.float16, dt.bfloat16)


def unary_float_no_half(op, args):
    """erfcx, ndtri, log_ndtr: a float function, but PyTorch has no half kernel."""
    reject_dtypes(op, "self", args[0], _HALF, "float32, float64 or an integer tensor")
    return unary_float(op, args)
