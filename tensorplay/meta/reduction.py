"""Shape/dtype rules of the reductions beyond sum/mean/max/argmax (rules.py): prod,
amax/amin, var/std, norm, logsumexp, all/any, count_nonzero.

Each `rule(op, args)` returns the output's OutSpec (a tuple for several outputs) or
raises a typed error naming the op and the argument.
"""
from __future__ import annotations

import math

from tensorplay import _dtype as dt
from tensorplay.errors import ArgumentError, DTypeError, ShapeError, fmt_shape
from tensorplay.kernel_support.arguments import integral_to_long, reduced_sizes
from tensorplay.kernel_support.checks import (
    DataDependent, OutSpec, check_nonempty_dim, reduce_dim_list, wrap_dim,
)
from tensorplay.kernel_support.complex_refusals import reject_complex


def _sizes(t):
    return t._impl.sizes


def check_floating(op, t, dtype=None, arg="self"):
    """`t` (or dtype=, when arg is 'dtype') must be a floating point type."""
    d = dtype or t._impl.dtype
    if not d.is_floating_point:
        what = "input" if arg == "self" else "dtype"
        raise DTypeError(f"{op}(): expected a floating point {what}, but argument '{arg}' "
                         f"{'has dtype' if arg == 'self' else 'is'} {d.name}", op=op, arg=arg)


def check_floating_or_complex(op, t):
    """Floating point or complex numbers: var/std and the norms (a complex input has a
    real result: the spread, the length of complex numbers), im2col and col2im (their
    windows are copies and sums of the values, complex ones alike)."""
    d = t._impl.dtype
    if not d.is_differentiable:
        raise DTypeError(f"{op}(): expected a floating point or complex input, but argument "
                         f"'self' has dtype {d.name}", op=op, arg="self")


def check_norm_dtype(op, t, dtype):
    """A norm's dtype= is the dtype it computes in: complex for a complex input, real for
    a real one (the result is its real counterpart), as PyTorch requires."""
    if dtype is None:
        return
    d = t._impl.dtype
    if d.is_complex and not dtype.is_complex:
        raise DTypeError(f"{op}(): dtype should be complex for complex inputs, but got "
                         f"{dtype.name} (argument 'dtype')", op=op, arg="dtype")
    if not d.is_complex and dtype.is_complex:
        raise DTypeError(f"{op}(): dtype should be real for real inputs, but got {dtype.name} "
                         f"(argument 'dtype')", op=op, arg="dtype")
    check_floating(op, t, dtype=dtype.to_real(), arg="dtype")


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
    reject_complex(op, self)
    sizes = _sizes(self)
    out = reduced_sizes(op, sizes, dim, keepdim)
    dims = range(len(sizes)) if not dim else reduce_dim_list(op, dim, len(sizes))
    for d in dims if sizes else ():   # (a 0-dim tensor has one element: never empty)
        check_nonempty_dim(op, self, d)
    return OutSpec(out, self._impl.dtype)


def var(op, args):
    """var/std(self, dim, *, correction, keepdim): floating point or complex (whose
    variance, the mean of |x - mean|**2, is real)."""
    self, dim, correction, keepdim = args
    check_floating_or_complex(op, self)
    return OutSpec(reduced_sizes(op, _sizes(self), dim, keepdim), self._impl.dtype.to_real())


def _check_norm_identity(op, self, p, dim):
    """The inf norm is a max, a negative p-norm a sum of x**p that is inf for an empty
    reduction: with no identity, PyTorch refuses to reduce an empty dim (or an empty
    tensor whole) with them."""
    if self._impl.numel() or not (p < 0 or p == math.inf):
        return
    sizes = _sizes(self)
    if not dim:
        raise ShapeError(f"{op}(): argument 'p' ({p}) cannot reduce an empty tensor: the "
                         f"{p} norm has no identity (expected a non-empty tensor, got shape "
                         f"{fmt_shape(sizes)})", op=op, arg="p")
    for d in dim:
        if sizes[wrap_dim(op, d, len(sizes))] == 0:
            raise ShapeError(f"{op}(): argument 'p' ({p}) cannot reduce the empty dimension "
                             f"{d}: the {p} norm has no identity (expected a non-empty "
                             f"dimension, got shape {fmt_shape(sizes)})", op=op, arg="p")


def norm(op, args):
    """The p-norm computes in dtype= (self's by default); a complex one's norm is real."""
    self, p, dim, keepdim, dtype = args
    check_floating_or_complex(op, self)
    check_norm_dtype(op, self, dtype)
    _check_norm_identity(op, self, 2 if p is None else p, dim)
    return OutSpec(reduced_sizes(op, _sizes(self), dim, keepdim),
                   (dtype or self._impl.dtype).to_real())


def logsumexp(op, args):
    self, dim, keepdim = args
    d = self._impl.dtype
    return OutSpec(reduced_sizes(op, _sizes(self), dim, keepdim),
                   d if d.is_differentiable else dt.get_default_dtype())   # complex stays


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




# ---- counting: bincount, histc, the histograms ----------------------------------------------
def bincount(op, args):
    """The counts have max(self) + 1 (at least minlength) entries: a value-dependent size."""
    self, weights, minlength = args
    reject_complex(op, self, kind="bincount.self")   # (complex weights are fine)
    sizes = _sizes(self)
    if len(sizes) != 1 or self._impl.dtype.is_floating_point or self._impl.dtype is dt.bool:
        raise ShapeError(f"{op}(): only supports 1-d non-negative integral inputs, but "
                         f"argument 'self' has shape {fmt_shape(sizes)} and dtype "
                         f"{self._impl.dtype.name}", op=op, arg="self")
    if minlength < 0:
        raise ArgumentError(f"{op}(): minlength should be >= 0, but got {minlength} (argument "
                            f"'minlength')", op=op, arg="minlength")
    if weights is not None and (len(_sizes(weights)) != 1 or _sizes(weights) != sizes):
        raise ShapeError(f"{op}(): weights should be 1-d and have the same length as input, "
                         f"but argument 'weights' has shape {fmt_shape(_sizes(weights))} and "
                         f"'self' {fmt_shape(sizes)}", op=op, arg="weights")
    return DataDependent("self", "the largest value of self")


def check_histogram_input(op, self, weight, min_dims=0, name="self"):
    dtype = self._impl.dtype
    if not dtype.is_floating_point:
        raise DTypeError(f"{op}(): expected a floating point input, but argument '{name}' has "
                         f"dtype {dtype.name}", op=op, arg=name)
    if len(_sizes(self)) < min_dims:
        raise ShapeError(f"{op}(): input tensor should have at least {min_dims} dimensions, "
                         f"but got {len(_sizes(self))} (argument '{name}')", op=op, arg=name)
    if weight is not None:
        expected = _sizes(self)[:-1] if min_dims == 2 else _sizes(self)
        if _sizes(weight) != expected:
            raise ShapeError(f"{op}(): if weight tensor is provided it should have the shape "
                             f"{fmt_shape(expected)}, but argument 'weight' has shape "
                             f"{fmt_shape(_sizes(weight))}", op=op, arg="weight")
        if weight._impl.dtype is not dtype:
            raise DTypeError(f"{op}(): argument 'weight' should have the input's dtype "
                             f"{dtype.name}, but got {weight._impl.dtype.name}", op=op,
                             arg="weight")


def check_bin_counts(op, bins, dims, range_):
    if len(bins) != dims:
        raise ArgumentError(f"{op}(): expected {dims} sequences of bin edges for a "
                            f"{dims}-dimensional histogram but got {len(bins)} (argument "
                            f"'bins')", op=op, arg="bins")
    for d, n in enumerate(bins):
        if n <= 0:
            raise ArgumentError(f"{op}(): bins must be > 0, but got {n} for dimension {d} "
                                f"(argument 'bins')", op=op, arg="bins")
    if range_ is not None and len(range_) != 2 * dims:
        raise ArgumentError(f"{op}(): for a {dims}-dimensional histogram, range should have "
                            f"{2 * dims} elements, but got {len(range_)} (argument 'range')",
                            op=op, arg="range")


def check_bin_tensors(op, self, bins, dims):
    if len(bins) != dims:
        raise ArgumentError(f"{op}(): expected {dims} sequences of bin edges for a "
                            f"{dims}-dimensional histogram but got {len(bins)} (argument "
                            f"'bins')", op=op, arg="bins")
    for d, b in enumerate(bins):
        if len(_sizes(b)) != 1 or _sizes(b)[0] < 1:
            raise ShapeError(f"{op}(): bins tensor should be 1-d with at least 1 element, but "
                             f"got shape {fmt_shape(_sizes(b))} for dimension {d} (argument "
                             f"'bins')", op=op, arg="bins")
        if b._impl.dtype is not self._impl.dtype:
            raise DTypeError(f"{op}(): input tensor and bins tensors should have the same "
                             f"dtype, but got {self._impl.dtype.name} and "
                             f"{b._impl.dtype.name} (argument 'bins')", op=op, arg="bins")


def histc(op, args):
    self, bins, min_, max_ = args
    check_histogram_input(op, self, None)
    if bins <= 0:
        raise ArgumentError(f"{op}(): bins must be > 0, but got {bins} (argument 'bins')",
                            op=op, arg="bins")
    if min_ > max_:
        raise ArgumentError(f"{op}(): max must be larger than min, but got min {min_} and max "
                            f"{max_} (argument 'max')", op=op, arg="max")
    return OutSpec((bins,), self._impl.dtype)


def histogramdd_from_bin_cts(op, args):
    self, bins, range_, weight, density = args
    check_histogram_input(op, self, weight, 2)
    check_bin_counts(op, bins, _sizes(self)[-1], range_)
    return OutSpec(tuple(bins), self._impl.dtype)


def histogramdd_from_bin_tensors(op, args):
    self, bins, weight, density = args
    check_histogram_input(op, self, weight, 2)
    check_bin_tensors(op, self, bins, _sizes(self)[-1])
    return OutSpec(tuple(_sizes(b)[0] - 1 for b in bins), self._impl.dtype)
