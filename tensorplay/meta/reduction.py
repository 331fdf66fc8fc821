"""Shape/dtype rules of the reductions beyond sum/mean/max/argmax (rules.py): prod,
amax/amin, var/std, norm, logsumexp, all/any, count_nonzero.

Each `rule(op, args)` returns the output's OutSpec (a tuple for several outputs) or
raises a typed error naming the op and the argument.
"""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay.errors import DTypeError
from tensorplay.kernel_support.arguments import integral_to_long, reduced_sizes
from tensorplay.kernel_support.checks import (
    OutSpec, check_nonempty_dim, reduce_dim_list, wrap_dim,
)


def _sizes(t):
    return t._impl.sizes


def check_floating(op, t, dtype=None, arg="self"):
    """`t` (or dtype=, when arg is 'dtype') must be a floating point type."""
    d = dtype or t._impl.dtype
    if not d.is_floating_point:
        what = "input" if arg == "self" else "dtype"
        raise DTypeError(f"{op}(): expected a floating point {what}, but argument '{arg}' "
                         f"{'has dtype' if arg == 'self' else 'is'} {d.name}", op=op, arg=arg)


def check_not_bool(op, t):
    if t._impl.dtype is dt.bool:
        raise DTypeError(f"{op}(): not implemented for bool tensors (argument 'self' is bool)",
                         op=op, arg="self")


# ---- statistics ------------------------------------------------------------------------
def prod(op, args):
    return OutSpec((), integral_to_long(args[0], args[1]))


def prod_dim(op, args):
    self, dim, keepdim, dtype = args
    d = wrap_dim(op, dim, len(_sizes(self)))
    return OutSpec(reduced_sizes(op, _sizes(self), (d,), keepdim), integral_to_long(self, dtype))


def amax(op, args):
    """amax/amin over dims (all when empty); a reduced dim must not be empty."""
    self, dim, keepdim = args
    sizes = _sizes(self)
    out = reduced_sizes(op, sizes, dim, keepdim)
    dims = range(len(sizes)) if not dim else reduce_dim_list(op, dim, len(sizes))
    for d in dims if sizes else ():   # (a 0-dim tensor has one element: never empty)
        check_nonempty_dim(op, self, d)
    return OutSpec(out, self._impl.dtype)


def var(op, args):
    """var/std(self, dim, *, correction, keepdim): floating point only."""
    self, dim, correction, keepdim = args
    check_floating(op, self)
    return OutSpec(reduced_sizes(op, _sizes(self), dim, keepdim), self._impl.dtype)


def norm(op, args):
    self, p, dim, keepdim, dtype = args
    check_floating(op, self)
    if dtype is not None:
        check_floating(op, self, dtype=dtype, arg="dtype")
    return OutSpec(reduced_sizes(op, _sizes(self), dim, keepdim), dtype or self._impl.dtype)


def logsumexp(op, args):
    self, dim, keepdim = args
    d = self._impl.dtype
    return OutSpec(reduced_sizes(op, _sizes(self), dim, keepdim),
                   d if d.is_floating_point else dt.get_default_dtype())


def all_any(op, args):
    """all/any: uint8 stays uint8 (as in PyTorch), everything else gives bool."""
    self = args[0]
    dtype = dt.uint8 if self._impl.dtype is dt.uint8 else dt.bool
    if len(args) == 1:
        return OutSpec((), dtype)
    self, dim, keepdim = args
    return OutSpec(reduced_sizes(op, _sizes(self), [dim], keepdim), dtype)


def count_nonzero(op, args):
    self, dim = args
    return OutSpec(reduced_sizes(op, _sizes(self), dim, False), dt.int64)


