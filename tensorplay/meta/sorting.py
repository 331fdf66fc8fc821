"""Shape and dtype rules of sorting and selection: sort, topk, kthvalue, median, mode,
cummax/cummin, unique (whose output size depends on the values: DataDependent)."""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay.errors import ArgumentError, ShapeError, fmt_shape
from tensorplay.kernel_support.arguments import reduced_sizes
from tensorplay.kernel_support.checks import (
    DataDependent, OutSpec, check_nonempty_dim, reject_bool, wrap_dim,
)
from tensorplay.kernel_support.complex_refusals import reject_complex


def _sizes(t):
    return t._impl.sizes


def unique2(op, args):
    reject_complex("unique", args[0], kind="unique.all")   # (tp.unique's inner op: _unique2)
    return DataDependent("self", "the number of distinct values")


def unique_dim(op, args):
    self, dim = args[0], args[1]
    reject_complex(op, self)
    d = wrap_dim(op, dim, max(len(self._impl.sizes), 1))
    # Slices with an empty dim other than `dim` are all equal and all empty: PyTorch
    # refuses to say how many distinct ones there are (and more than one empty dim).
    empty = [i for i, s in enumerate(self._impl.sizes) if s == 0]
    if len(empty) > 1 or (empty and empty[0] != d):
        raise ShapeError(f"{op}(): argument 'self' (shape {fmt_shape(self._impl.sizes)}) has "
                         f"empty dims other than dim {d}, so unique cannot be applied along "
                         f"it", op=op, arg="self")
    return DataDependent("self", f"the number of distinct slices along dim {dim}")


def cummax(op, args):
    self, dim = args
    reject_complex(op, self)
    wrap_dim(op, dim, len(_sizes(self)))
    return OutSpec(_sizes(self), self._impl.dtype), OutSpec(_sizes(self), dt.int64)


# ---- selection and sorting -------------------------------------------------------------
def median(op, args):
    """median() of all elements; of none it is NaN (PyTorch's value; an integer dtype
    gets NaN cast to it, its most negative value)."""
    reject_bool(op, args[0])
    reject_complex(op, args[0], kind="median.all")
    return OutSpec((), args[0]._impl.dtype)


def value_and_index(op, args):
    """median.dim / mode / kthvalue: one value and its index per slice along `dim`."""
    self, dim, keepdim = args[0], args[-2], args[-1]
    reject_complex(op, self, kind=op if op in ("mode", "kthvalue") else "median.dim")
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
    reject_complex(op, self)
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
    reject_complex(op, self)
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
    reject_complex(op, self)
    wrap_dim(op, dim, len(_sizes(self)))
    return OutSpec(_sizes(self), self._impl.dtype), OutSpec(_sizes(self), dt.int64)


def unique_consecutive(op, args):
    self, return_inverse, return_counts, dim = args
    reject_complex(op, self, kind="unique.all")
    if dim is not None:
        sizes = _sizes(self)
        if not sizes:
            raise ArgumentError(f"{op}(): Dimension specified as {dim} but tensor has no "
                                f"dimensions (argument 'dim')", op=op, arg="dim")
        d = wrap_dim(op, dim, len(sizes))
        if 0 in sizes and sizes[d] != 0:
            raise ShapeError(f"{op}(): There are 0 sized dimensions, and they aren't "
                             f"selected, so unique cannot be applied (argument 'self' has "
                             f"shape {fmt_shape(sizes)})", op=op, arg="self")
    return DataDependent("self", "the number of runs of equal values")
