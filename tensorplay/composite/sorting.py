"""Searching: searchsorted and bucketize (binary search in sorted tensors), isin and
msort, composed of comparisons and sort; quantile and nanquantile (a sort, then a read at
each quantile's rank) and unique_consecutive's tuple.

For each value v, the insertion index into a sorted sequence s is a count:

    left  (first i with s[i] >= v):  how many s[i] are not >= v
    right (first i with s[i] >  v):  how many s[i] are not >  v

Counting "not >=" rather than "<" is what PyTorch's binary search computes, so a NaN
value (and NaNs sorted to the end of s) land where PyTorch puts them. The comparison
builds an (..., values, sequence) boolean tensor: O(M * N) work instead of a binary
search's O(M log N), but made of ops every backend has, and exact.
"""
from __future__ import annotations

from tensorplay import _creation
from tensorplay import _dtype as dt
from tensorplay._frontdoor import wrap_dim, wrap_number
from tensorplay._tensor import Tensor
from tensorplay._generated import functional as F
from tensorplay.errors import ArgumentError, DTypeError, ShapeError, fmt_shape
from tensorplay.kernel_support.complex_refusals import reject_complex


def _insertion_counts(seq, values, right, out_int32):
    """Counts over the last dim of `seq` for every element of `values`."""
    if seq.dim() == 1:
        seq = seq.reshape([1] * values.dim() + [seq.shape[0]])
    else:
        seq = seq.unsqueeze(-2)
    v = values.unsqueeze(-1)
    after = F.gt(seq, v) if right else F.ge(seq, v)
    return F.sum(F.logical_not(after), [-1], dtype=dt.int32 if out_int32 else dt.int64)


def _check(op, seq, values, side, right, sorter, scalar):
    reject_complex(op, seq, arg="sorted_sequence")    # complex numbers have no order
    reject_complex(op, values)
    if side is not None and side not in ("left", "right"):
        raise ArgumentError(f"{op}(): argument 'side' can only be 'left' or 'right' but got "
                            f"{side!r}", op=op, arg="side")
    if side is not None and right and side == "left":
        raise ArgumentError(f"{op}(): side and right can't be set to opposites, got side of "
                            f"left while right was True (argument 'side')", op=op, arg="side")
    if seq.dim() == 0:
        raise ShapeError(f"{op}(): boundaries tensor should have positive dimension, but got "
                         f"0 dimension (argument 'sorted_sequence')", op=op,
                         arg="sorted_sequence")
    if scalar and seq.dim() != 1:
        raise ShapeError(f"{op}(): input value can be a scalar only when boundaries tensor "
                         f"dimension is 1, but we got boundaries tensor dim("
                         f"{seq.dim()}) (argument 'self')", op=op, arg="self")
    if seq.dim() > 1 and (seq.dim() != values.dim() or seq.shape[:-1] != values.shape[:-1]):
        raise ShapeError(f"{op}(): boundaries tensor should be 1 dimension or the first N-1 "
                         f"dimensions of boundaries tensor and input value tensor must match, "
                         f"but we got boundaries tensor {fmt_shape(seq.shape)} and input "
                         f"value tensor {fmt_shape(values.shape)} (argument 'self')", op=op,
                         arg="self")
    if sorter is not None:
        if sorter.dtype is not dt.int64:
            raise DTypeError(f"{op}(): sorter must be a tensor of long dtype but got dtype "
                             f"{sorter.dtype.name} (argument 'sorter')", op=op, arg="sorter")
        if tuple(sorter.shape) != tuple(seq.shape):
            raise ShapeError(f"{op}(): boundary and sorter must have the same size, but got "
                             f"boundary tensor {fmt_shape(seq.shape)}and got sorter tensor "
                             f"{fmt_shape(sorter.shape)} (argument 'sorter')", op=op,
                             arg="sorter")


def _searchsorted(seq, values, out_int32, right, side, sorter, scalar):
    op = "searchsorted"
    _check(op, seq, values, side, right, sorter, scalar)
    if sorter is not None:
        seq = F.gather(seq, -1, sorter)
    return _insertion_counts(seq, values, right or side == "right", out_int32)


def searchsorted(sorted_sequence, self, out_int32, right, side, sorter):
    return _searchsorted(sorted_sequence, self, out_int32, right, side, sorter, False)


def searchsorted_scalar(sorted_sequence, self, out_int32, right, side, sorter):
    value = wrap_number(self, sorted_sequence)
    return _searchsorted(sorted_sequence, value, out_int32, right, side, sorter, True)


def bucketize(self, boundaries, out_int32, right):
    """The bucket of each element: i with boundaries[i-1] < x <= boundaries[i] (right=False),
    boundaries[i-1] <= x < boundaries[i] (right=True)."""
    reject_complex("bucketize", self)              # complex numbers have no order
    reject_complex("bucketize", boundaries, arg="boundaries")
    if boundaries.dim() != 1:
        raise ShapeError(f"bucketize(): boundaries tensor must be 1 dimension, but got dim("
                         f"{boundaries.dim()}) (argument 'boundaries')", op="bucketize",
                         arg="boundaries")
    return _insertion_counts(boundaries, self, right, out_int32)


def bucketize_scalar(self, boundaries, out_int32, right):
    value = wrap_number(self, boundaries)
    return bucketize(value, boundaries, out_int32, right)


def isin(elements, test_elements, assume_unique, invert):
    """Whether each element occurs in test_elements (an element-by-element comparison;
    assume_unique changes nothing here). PyTorch refuses complex numbers (its isin
    sorts); so do we, though comparing for equality would work."""
    reject_complex("isin", elements, arg="elements")
    reject_complex("isin", test_elements, arg="test_elements")
    _reject_bool(elements, "elements")
    _reject_bool(test_elements, "test_elements")
    tests = test_elements.reshape([-1])
    hits = F.any(F.eq(elements.unsqueeze(-1), tests), -1)
    return F.logical_not(hits) if invert else hits


def _reject_bool(t, arg):
    """PyTorch's isin has no bool kernel (its sort-based and element-wise paths both)."""
    if t.dtype is dt.bool:
        raise DTypeError(f"isin(): argument '{arg}' must not be bool (PyTorch's isin has no "
                         f"kernel for it), but got a bool tensor", op="isin", arg=arg)


def isin_scalar_test(elements, test_element, assume_unique, invert):
    reject_complex("isin", elements, arg="elements")
    _reject_bool(elements, "elements")
    # PyTorch allocates isin's result row-major whatever the layout of elements.
    hits = F.eq(elements, test_element).contiguous()
    return F.logical_not(hits) if invert else hits


def isin_scalar_element(element, test_elements, assume_unique, invert):
    return isin(wrap_number(element, test_elements), test_elements, assume_unique, invert)


def msort(self):
    """self sorted along its first dim."""
    reject_complex("msort", self)     # (sort would refuse it, under sort's name)
    return F.sort(self, 0)[0]


def argsort(self, dim, descending):
    reject_complex("argsort", self)
    return F.sort(self, dim, descending)[1]


def argsort_stable(self, stable, dim, descending):
    reject_complex("argsort", self)
    return F.sort(self, dim, descending)[1]


# ---- quantile, nanquantile -----------------------------------------------------------------
_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile_checks(op, self, q, scalar, interpolation):
    if self.numel() == 0:
        raise ShapeError(f"{op}(): input tensor must be non-empty (argument 'self' has shape "
                         f"{fmt_shape(self.shape)})", op=op, arg="self")
    if self.dtype not in (dt.float32, dt.float64):
        raise DTypeError(f"{op}(): input tensor must be either float or double dtype, got "
                         f"{self.dtype.name} (argument 'self')", op=op, arg="self")
    if scalar:
        if not 0 <= q <= 1:
            raise ArgumentError(f"{op}(): q must be in the range [0, 1] but got {q} (argument "
                                f"'q')", op=op, arg="q")
    else:
        if q.dim() > 1:
            raise ShapeError(f"{op}(): q must be a scalar or 1D tensor, got shape "
                             f"{fmt_shape(q.shape)} (argument 'q')", op=op, arg="q")
        if q.dtype is not self.dtype:
            raise DTypeError(f"{op}(): q tensor must be same dtype as the input tensor "
                             f"({self.dtype.name}), got {q.dtype.name} (argument 'q')", op=op,
                             arg="q")
        in_range = F.all(F.logical_and(F.ge(q, 0), F.le(q, 1)))
        if q.numel() and not q.is_meta and not bool(in_range):
            raise ArgumentError(f"{op}(): q values must be in the range [0, 1] (argument "
                                f"'q')", op=op, arg="q")
    if interpolation not in _INTERPOLATIONS:
        raise ArgumentError(f"{op}(): interpolation must be one of linear, lower, higher, "
                            f"midpoint or nearest, but got {interpolation} (argument "
                            f"'interpolation')", op=op, arg="interpolation")


def _quantile(op, self, q, dim, keepdim, interpolation, ignore_nan):
    """PyTorch's quantile_impl: sort each slice (NaN last), then read each quantile at its
    rank r = q * (n - 1) in the sorted slice (n: the slice's count of non-NaN values for
    nanquantile), interpolating between the values at floor(r) and ceil(r):

        linear: lerp(v[floor r], v[ceil r], r - floor r)     midpoint: weight 0.5
        lower / higher / nearest: v[floor r] / v[ceil r] / v[round r]

    quantile of a slice with a NaN is NaN (its rank is moved to the last, NaN, value);
    nanquantile of an all-NaN slice too (rank 0). The gradient flows through sort's values
    and lerp, to the (one or two) elements each quantile was read from."""
    scalar = not isinstance(q, Tensor)
    _quantile_checks(op, self, q, scalar, interpolation)
    ndim = self.dim()
    if dim is None:
        rows = self.reshape([1] * ndim + [-1]) if keepdim else self.reshape([-1])
    else:
        d = wrap_dim(op, "dim", dim, ndim)
        rows = self.reshape([1]) if ndim == 0 else self.movedim(d, -1)
        if keepdim and ndim:
            rows = rows.unsqueeze(d)
    ordered = F.sort(rows, -1)[0]
    qs = _creation.tensor([q], dtype=self.dtype, device=self.device) if scalar \
        else q.reshape([-1])
    last = ordered.shape[-1] - 1
    nan = F.isnan(ordered)
    if ignore_nan:
        counts = F.sum(F.logical_not(nan), [-1], True, dtype=self.dtype)
        ranks = F.clamp_min(qs * (counts - 1), 0)
    else:
        ranks = F.where(F.any(nan, -1, True), float(last), qs * last)
        ranks = ranks.expand(list(ordered.shape[:-1]) + [qs.shape[0]])
    if interpolation == "lower":
        ranks = F.floor(ranks)
    elif interpolation == "higher":
        ranks = F.ceil(ranks)
    elif interpolation == "nearest":
        ranks = F.round(ranks)
    below = ranks.to(dt.int64)
    values = F.gather(ordered, -1, below)
    if interpolation in ("linear", "midpoint"):
        above = F.gather(ordered, -1, F.ceil(ranks).to(dt.int64))
        weights = _creation.full_like(ranks, 0.5) if interpolation == "midpoint" else ranks - below
        values = F.lerp(values, above, weights)
    if scalar or q.dim() == 0:
        return values.squeeze(-1)
    return values.movedim(-1, 0)


def quantile(self, q, dim, keepdim, interpolation):
    return _quantile("quantile", self, q, dim, keepdim, interpolation, False)


def quantile_scalar(self, q, dim, keepdim, interpolation):
    return _quantile("quantile", self, q, dim, keepdim, interpolation, False)


def nanquantile(self, q, dim, keepdim, interpolation):
    return _quantile("nanquantile", self, q, dim, keepdim, interpolation, True)


def nanquantile_scalar(self, q, dim, keepdim, interpolation):
    return _quantile("nanquantile", self, q, dim, keepdim, interpolation, True)


def unique_consecutive(self, return_inverse, return_counts, dim):
    """torch.unique_consecutive: the values alone, or a tuple with the inverse indices
    and the counts when asked for (as torch.unique)."""
    values, inverse, counts = F._unique_consecutive(self, return_inverse, return_counts, dim)
    if not return_inverse and not return_counts:
        return values
    return (values,) + ((inverse,) if return_inverse else ()) + \
        ((counts,) if return_counts else ())
