"""Shape/dtype rules of the reduction family: statistics (prod, var, norm, ...), scans,
sorting and selection. Linear algebra and shape ops: reduction_linalg.py and
reduction_shape.py next to this file.

Each `rule(op, args)` returns the output's OutSpec (a tuple for several outputs) or
raises a typed error naming the op and the argument.
"""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay.errors import ArgumentError, DTypeError, ShapeError, fmt_shape
from tensorplay.meta.overlap import assert_no_internal_overlap
from tensorplay.meta.rules import (
    OutSpec, SELF, check_nonempty_dim, check_nonempty_reduction, reduce_dim_list, reject_bool,
    wrap_dim,
)


def _sizes(t):
    return t._impl.sizes


def reduced_sizes(op, sizes, dims, keepdim):
    """`sizes` with `dims` (None or [] = all) removed, or kept as 1 with keepdim."""
    if dims is None or len(dims) == 0:
        dims = range(len(sizes))
    else:
        dims = reduce_dim_list(op, dims, len(sizes))   # a 0-dim tensor accepts 0 / -1
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(sizes))
    return tuple(s for i, s in enumerate(sizes) if i not in dims)


def integral_to_long(t, dtype=None):
    """sum/prod/cumsum's result dtype: dtype= if given, else integers and bool widen to int64."""
    if dtype is not None:
        return dtype
    d = t._impl.dtype
    return d if d.is_floating_point else dt.int64


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


# ---- scans -----------------------------------------------------------------------------
def cumsum(op, args):
    self, dim, dtype = args
    wrap_dim(op, dim, len(_sizes(self)))
    return OutSpec(_sizes(self), integral_to_long(self, dtype))


def cumsum_(op, args):
    self, dim, dtype = args
    wrap_dim(op, dim, len(_sizes(self)))
    # PyTorch has no in-place bool scan (it lets inputs with <= 1 element through untouched)
    if self._impl.dtype is dt.bool and self._impl.numel() > 1:
        raise DTypeError(f"{op}(): not implemented for bool tensors: the result (int64) can't "
                         f"be written into argument 'self'", op=op, arg="self")
    if dtype is not None and dtype is not self._impl.dtype:
        raise DTypeError(f"{op}(): argument 'dtype' ({dtype.name}) must match the dtype of "
                         f"'self' ({self._impl.dtype.name}) for an in-place scan", op=op,
                         arg="dtype")
    assert_no_internal_overlap(op, self)     # each element reads the one written before it
    return SELF


def cummax(op, args):
    self, dim = args
    wrap_dim(op, dim, len(_sizes(self)))
    return OutSpec(_sizes(self), self._impl.dtype), OutSpec(_sizes(self), dt.int64)


# ---- selection and sorting -------------------------------------------------------------
def median(op, args):
    """median() of all elements; of none it is NaN (PyTorch's value; an integer dtype
    gets NaN cast to it, its most negative value)."""
    reject_bool(op, args[0])
    return OutSpec((), args[0]._impl.dtype)


def value_and_index(op, args):
    """median.dim / mode / kthvalue: one value and its index per slice along `dim`."""
    self, dim, keepdim = args[0], args[-2], args[-1]
    sizes = _sizes(self)
    d = wrap_dim(op, dim, len(sizes))
    if sizes:
        check_nonempty_dim(op, self, d)
    out = reduced_sizes(op, sizes, (d,), keepdim) if sizes else ()
    return OutSpec(out, self._impl.dtype), OutSpec(out, dt.int64)


def median_dim(op, args):
    reject_bool(op, args[0])
    return value_and_index(op, args)


def kthvalue(op, args):
    self, k, dim, keepdim = args
    reject_bool(op, self)
    sizes = _sizes(self)
    d = wrap_dim(op, dim, len(sizes))
    n = sizes[d] if sizes else 1
    if not 1 <= k <= n:
        raise ArgumentError(f"{op}(): argument 'k' ({k}) must be in range [1, {n}], the size "
                            f"of dimension {d} of 'self' (shape {fmt_shape(sizes)})", op=op,
                            arg="k")
    return value_and_index(op, (self, dim, keepdim))


def topk(op, args):
    self, k, dim, largest, sorted_ = args
    reject_bool(op, self)
    sizes = _sizes(self)
    d = wrap_dim(op, dim, len(sizes))
    n = sizes[d] if sizes else 1
    if not 0 <= k <= n:
        raise ArgumentError(f"{op}(): argument 'k' ({k}) is out of range: selected index k "
                            f"must be in [0, {n}] for dimension {d} of 'self' (shape "
                            f"{fmt_shape(sizes)})", op=op, arg="k")
    out = tuple(k if i == d else s for i, s in enumerate(sizes))
    return OutSpec(out, self._impl.dtype), OutSpec(out, dt.int64)


def sort(op, args):
    self, dim = args[0], args[-2]
    wrap_dim(op, dim, len(_sizes(self)))
    return OutSpec(_sizes(self), self._impl.dtype), OutSpec(_sizes(self), dt.int64)


# ---- the gather/scatter pair the selection backwards use -----------------------------
def _check_index(op, self, dim, index):
    if index._impl.dtype is not dt.int64:
        raise DTypeError(f"{op}(): argument 'index' must be an int64 tensor, but got "
                         f"{index._impl.dtype.name}", op=op, arg="index")
    if len(_sizes(index)) != len(_sizes(self)):
        raise ShapeError(f"{op}(): argument 'index' (shape {fmt_shape(_sizes(index))}) must "
                         f"have as many dims as 'self' (shape {fmt_shape(_sizes(self))})",
                         op=op, arg="index")
    return wrap_dim(op, dim, len(_sizes(self)))


def gather_along(op, args):
    self, dim, index = args
    _check_index(op, self, dim, index)
    return OutSpec(_sizes(index), self._impl.dtype)


def scatter_add_along(op, args):
    self, dim, index, sizes = args
    if len(sizes) != len(_sizes(self)) or _sizes(index) != _sizes(self):
        raise ShapeError(f"{op}(): 'self' (shape {fmt_shape(_sizes(self))}), 'index' (shape "
                         f"{fmt_shape(_sizes(index))}) and 'sizes' {list(sizes)} must have "
                         f"the same rank, and 'self' the shape of 'index'", op=op, arg="index")
    _check_index(op, self, dim, index)
    return OutSpec(tuple(sizes), self._impl.dtype)
