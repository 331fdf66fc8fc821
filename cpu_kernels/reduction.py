"""Reductions: sum, mean, max/min (with indices), argmax/argmin."""
from __future__ import annotations

import builtins

import numpy as np

from tensorplay import _dtype as dt
from tensorplay.errors import ArgumentError, ShapeError
from tensorplay.kernel_support.arguments import bincount_dtype, integral_to_long
from tensorplay.kernel_support.checks import (
    check_mean_dtype, check_nonempty_dim, check_nonempty_reduction, reduce_dim_list, reject_bool,
    wrap_dim,
)
from tensorplay.kernel_support.complex_refusals import reject_complex
from tensorplay.kernel_support.ops import shape_rule
from tensorplay.library import kernel
from cpu_kernels._common import accumulate_dtype, out
from cpu_kernels._float_errors import (
    DEFAULT_ERROR_STATE, Ignored, call_ignoring, current_error_state, reset_error_state,
    set_error_state,
)

_SUM_ERRORS = Ignored(invalid="ignore", over="ignore")    # inf + -inf is nan, as in PyTorch
_MEAN_ERRORS = Ignored(invalid="ignore", divide="ignore")  # the mean of nothing is nan


# Every dim of an ndim-d tensor, for a full reduction (`x.sum()`): a lookup instead of
# `tuple(range(ndim))` on every call (0.1 us). NumPy arrays have at most 64 dims.
_ALL_DIMS = tuple(tuple(range(ndim)) for ndim in range(65))


def _dims(op, self, dim):
    ndim = len(self._impl.sizes)
    if dim is None or len(dim) == 0:
        return _ALL_DIMS[ndim] if ndim < len(_ALL_DIMS) else tuple(range(ndim))
    dims = reduce_dim_list(op, dim, ndim)
    # A 0-dim tensor accepts dim 0 or -1 (as PyTorch does) but has no axis to reduce.
    return dims if ndim else ()


def _full_sum_types(d):
    """The result dtype of a sum of dtype `d` with no dtype given (floating and complex
    types keep theirs, bool and integers give int64, as in PyTorch) and the dtype it adds
    in."""
    result = d if d.is_differentiable else dt.int64
    return result, accumulate_dtype(result)


# By the input's dtype: a lookup on every sum instead of the rule.
_FULL_SUM_TYPES = {d: _full_sum_types(d) for d in dt.ALL_DTYPES}


def _sum_dtype(self, dtype):
    return dtype if dtype is not None else _FULL_SUM_TYPES[self._impl.dtype][0]


def sum(self, dtype):  # noqa: A001 - the op's name
    """Every element added up: `sum_dim(self, None, False, dtype)` in one frame.

    A training step's loss is made here, so `sum_dim`'s helpers are written out: both
    dtypes come from `_FULL_SUM_TYPES` (as `_sum_dtype`'s), the error state is set as
    `call_ignoring` sets it, `_add_up`'s two lines run in this frame. np.add.reduce with
    axis None reduces over every axis: the axes `_dims` would give, in the same order."""
    impl = self._impl
    if dtype is None:
        dtype, acc = _FULL_SUM_TYPES[impl.dtype]
    else:
        acc = accumulate_dtype(dtype)
    np_dtype = dtype.np
    a = impl._array
    if a is None:
        a = impl.array()
    state = _SUM_ERRORS.state
    if state is not None and current_error_state() is DEFAULT_ERROR_STATE:
        token = set_error_state(state)
        try:
            r = np.add.reduce(a, None, acc, None, False)
            if acc is not np_dtype:
                r = r.astype(np_dtype)
        finally:
            reset_error_state(token)
    else:
        r = call_ignoring(_SUM_ERRORS, _add_up, a, None, acc, False, np_dtype)
    return out(r, dtype)


def sum_dim(self, dim, keepdim, dtype):
    dtype = _sum_dtype(self, dtype)
    a = self._impl.array()
    axes = _dims("sum", self, dim)
    if _leading_rows(a, axes, dtype):
        return out(call_ignoring(_SUM_ERRORS, _sum_leading_rows, a, len(axes), keepdim),
                   dtype)
    r = call_ignoring(_SUM_ERRORS, _add_up, a, axes, accumulate_dtype(dtype), keepdim,
                      dtype.np)
    return out(r, dtype)


def _leading_rows(a, axes, dtype):
    """Whether the sum over `axes` is a sum of the rows of a row-major float32/float64
    matrix: `axes` the leading dims (not all) of a contiguous, nonempty array that adds
    in its own dtype. A linear layer's bias gradient is one (the sum of grad over every
    dim but the last)."""
    k = len(axes)
    return (0 < k < a.ndim and a.dtype.char in "fd" and dtype.np == a.dtype
            and a.size and axes == _ALL_DIMS[k] and a.flags.c_contiguous)


def _sum_leading_rows(a, k, keepdim):
    """The sum over the first k dims of `a` (see _leading_rows) as a vector-matrix
    product with ones: BLAS adds down the columns 5x faster than np.add.reduce over
    axis 0 (40 us against 7 us for 512 rows of 256). Infinities and NaNs propagate as
    in the sum (x * 1 is x)."""
    rest = a.shape[k:]
    rows = a.size // int(np.prod(rest))      # nonzero: a is nonempty
    r = np.ones(rows, a.dtype) @ a.reshape(rows, -1)
    return r.reshape((1,) * k + rest if keepdim else rest)


def _add_up(a, axes, acc, keepdim, np_dtype):
    """The sum over `axes` in the accumulation dtype `acc`, rounded once to `np_dtype`.

    np.add.reduce is what np.sum runs for an ndarray, without np.sum's Python layer (a
    third of a small sum's time). The rounding happens here, under the caller's error
    state: a half type's float32 total beyond its range becomes inf without NumPy's
    overflow warning, as in PyTorch. `acc` is `np_dtype` itself unless they differ."""
    r = np.add.reduce(a, axes, acc, None, keepdim)
    if acc is not np_dtype:
        r = r.astype(np_dtype)
    return r


def mean(self, dtype):
    return mean_dim(self, None, False, dtype)


def mean_dim(self, dim, keepdim, dtype):
    check_mean_dtype("mean", self, dtype)
    dtype = dtype or self._impl.dtype
    axes = _dims("mean", self, dim)
    a = self._impl.array()
    acc = accumulate_dtype(dtype)
    count = 1
    for axis in axes:
        count *= a.shape[axis]
    # sum / count rather than np.mean, which warns on an empty slice; 0 / 0 is nan,
    # as in PyTorch.
    r = call_ignoring(_MEAN_ERRORS, _sum_over_count, a, axes, keepdim, acc, count)
    return out(r, dtype)


def _sum_over_count(a, axes, keepdim, acc, count):
    return np.true_divide(np.add.reduce(a, axes, acc, None, keepdim), count, dtype=acc)


def max(self):  # noqa: A001
    reject_complex("max", self, kind="max.all")   # NumPy orders complex numbers; PyTorch does not
    check_nonempty_reduction("max", self)
    with np.errstate(invalid="ignore"):   # nan propagates; bfloat16 warns about it
        return out(np.max(self._impl.array()), self._impl.dtype)


def min(self):  # noqa: A001
    reject_complex("min", self, kind="min.all")
    check_nonempty_reduction("min", self)
    with np.errstate(invalid="ignore"):
        return out(np.min(self._impl.array()), self._impl.dtype)


@kernel(family=True)
def max_min_dim(op, self, dim, keepdim):
    """max.dim and min.dim: the extreme values along `dim` and where they are."""
    reject_complex(op, self, kind=f"{op}.dim")
    pick = np.argmax if op == "max" else np.argmin
    sizes = self._impl.sizes
    dim = wrap_dim(op, dim, len(sizes))
    a = self._impl.array()
    if a.ndim == 0:
        # NOTE: copy, as torch does: the values must not alias the 0-dim input.
        return out(a.copy(), self._impl.dtype), out(np.zeros((), np.int64), dt.int64)
    check_nonempty_dim(op, self, dim)
    idx = pick(a, axis=dim, keepdims=True)
    values = np.take_along_axis(a, idx, axis=dim)
    if not keepdim:
        values, idx = np.squeeze(values, dim), np.squeeze(idx, dim)
    return out(values, self._impl.dtype), out(idx, dt.int64)


@kernel(family=True)
def argmax_argmin(op, self, dim, keepdim):
    """argmax and argmin, over everything (dim None) or along `dim`."""
    reject_bool(op, self)
    reject_complex(op, self)
    pick = np.argmax if op == "argmax" else np.argmin
    a = self._impl.array()
    if dim is None:
        check_nonempty_reduction(op, self)
        r = np.asarray(pick(a.reshape(-1)))
        if keepdim:
            r = r.reshape((1,) * a.ndim)
        return out(r, dt.int64)
    dim = wrap_dim(op, dim, a.ndim)
    if a.ndim == 0:
        return out(np.zeros((), np.int64), dt.int64)
    check_nonempty_dim(op, self, dim)
    return out(pick(a, axis=dim, keepdims=keepdim), dt.int64)


def axes_of(op, self, dim):
    """The axes `dim` names (None or [] = all); a 0-dim tensor accepts 0 / -1 but has none."""
    ndim = len(self._impl.sizes)
    if dim is None or len(dim) == 0:
        return tuple(range(ndim))
    dims = reduce_dim_list(op, dim, ndim)
    return dims if ndim else ()


def _acc(self, dtype=None):
    """The tensor's data in the dtype the reduction accumulates in."""
    a = self._impl.array()
    acc = accumulate_dtype(dtype or self._impl.dtype)
    return a if a.dtype == acc else a.astype(acc)


# ---- prod ------------------------------------------------------------------------------
def prod(self, dtype):
    dtype = integral_to_long(self, dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        return out(np.prod(_acc(self, dtype)), dtype)


def prod_dim(self, dim, keepdim, dtype):
    shape_rule("reduction.prod_dim")("prod", (self, dim, keepdim, dtype))
    dtype = integral_to_long(self, dtype)
    axes = axes_of("prod", self, [dim])
    with np.errstate(over="ignore", invalid="ignore"):
        return out(np.prod(_acc(self, dtype), axis=axes, keepdims=keepdim), dtype)


# ---- amax / amin -----------------------------------------------------------------------
@kernel(family=True)
def amax_amin(op, self, dim, keepdim):
    """amax and amin over the dims in `dim` (all of them when empty)."""
    shape_rule("reduction.amax")(op, (self, dim, keepdim))
    pick = np.max if op == "amax" else np.min
    axes = axes_of(op, self, dim)
    with np.errstate(invalid="ignore"):   # nan propagates (bfloat16 warns about it)
        return out(pick(self._impl.array(), axis=axes, keepdims=keepdim), self._impl.dtype)


# ---- variance --------------------------------------------------------------------------
def std(self, dim, correction, keepdim):
    spec = shape_rule("reduction.var")("std", (self, dim, correction, keepdim))
    return out(np.sqrt(_variance(self, dim, correction, keepdim)), spec.dtype)


def var(self, dim, correction, keepdim):
    spec = shape_rule("reduction.var")("var", (self, dim, correction, keepdim))
    return out(_variance(self, dim, correction, keepdim), spec.dtype)


def _variance(self, dim, correction, keepdim):
    """Two passes, as PyTorch: mean first, then the mean squared deviation.

        m = mean(x over dims);  var = sum((x - m)**2) / max(0, N - correction)
    N - correction <= 0 gives inf (or nan for 0/0), as in PyTorch.

    NOTE: real float inputs are computed in float64, as PyTorch's CPU kernel accumulates in
    double: std([1e30, -1.89]) in float32 is 7.07e29, though the variance (5e59) is not
    representable in float32. The caller rounds the result (after sqrt for std) once.
    Like PyTorch's std_var_all_cpu, a float32 reduction to a single value takes its mean
    in float32 first (so [3e38, 3e38] has mean inf and variance inf there, not 0).

    The deviations are taken from the mean as PyTorch's kernel for that reduction has it
    (_deviations): exact for identical values where PyTorch runs Welford's algorithm.

    A complex input's deviations are squared as |d|**2 = re**2 + im**2 (real), so the
    variance is real; complex64 is computed in complex128, as float32 in float64."""
    axes = axes_of("var", self, dim)
    a = _acc(self)
    n = 1
    for axis in axes:
        n *= a.shape[axis]
    correction = 1 if correction is None else correction
    # PyTorch's CPU var/std reduce to a single value (every non-reduced dim of size 1) by
    # two plain passes (std_var_all_cpu) for float, double and (part by part) complex
    # inputs; everything else (a reduction along dims, half types) by Welford's algorithm.
    two_plain_passes = a.size == n and self._impl.dtype.np in _PLAIN_TWO_PASS_DTYPES
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        m = None
        if a.dtype == np.float32 and self._impl.dtype.np == np.float32 and two_plain_passes:
            m = (np.sum(a, axis=axes, keepdims=True) / a.dtype.type(n)).astype(np.float64)
        if a.dtype.kind == "f" and a.dtype.itemsize < 8:
            a = a.astype(np.float64)
        elif a.dtype == np.complex64:
            a = a.astype(np.complex128)
        d = _deviations(a, axes, n, m, refine=not two_plain_passes)
        if d.dtype.kind == "c":
            d = d.real * d.real + d.imag * d.imag    # |d|**2, real
        else:
            np.multiply(d, d, out=d)   # squared in place: one temporary, not two
        divisor = d.dtype.type(builtins.max(0, n - correction))   # (`max` here is a kernel)
        return np.sum(d, axis=axes, keepdims=keepdim) / divisor


_PLAIN_TWO_PASS_DTYPES = (np.float32, np.float64, np.complex64, np.complex128)


def _deviations(a, axes, n, m=None, refine=True):
    """x - mean over `axes` (a new array), the mean `m` (kept dims) or sum / n.

    With `refine`, the mean is corrected once by the mean of the deviations (the
    corrected two-pass algorithm): d -= sum(d) / n. Where PyTorch runs Welford's algorithm
    (mean += (x - mean) / count) the mean of identical values is exactly their value and
    the variance exactly 0, on which std's derivative depends (0 where std is 0: a
    residue of 1e-17 would make it residue / residue, seed 4030154). Here x - m of
    identical values is exact (m is within a few ulps of x), so is the sum of those equal
    deviations and its division by n: the corrected deviations are exactly 0. A
    correction that is not finite (the sum overflowed, or an inf or nan is in the slice)
    is left out: it would turn the deviations into nan where they are inf today."""
    if m is None:
        m = _divide_by_count(np.sum(a, axis=axes, keepdims=True), n)
    d = np.asarray(np.subtract(a, m))   # (a 0-d result is a NumPy scalar: asarray)
    if refine and d.size:
        c = _divide_by_count(np.sum(d, axis=axes, keepdims=True), n)
        np.subtract(d, np.where(np.isfinite(c), c, 0), out=d)
    return d


def _divide_by_count(total, n):
    """total / n, a complex total part by part: NumPy divides a complex number by n + 0j
    as a product with 1 / n, which is not exact where total / n is representable."""
    if total.dtype.kind != "c":
        return total / total.dtype.type(n)
    r = np.empty_like(total)
    np.divide(total.real, n, out=r.real)
    np.divide(total.imag, n, out=r.imag)
    return r


# ---- norm ------------------------------------------------------------------------------
def norm(self, p, dim, keepdim, dtype):
    """Vector p-norm over `dim` (all elements by default).

        p = 2: sqrt(sum(x**2))   p = 1: sum(|x|)   p = inf / -inf: max / min |x|
        p = 0: number of non-zeros   other p: sum(|x|**p) ** (1/p)"""
    spec = shape_rule("reduction.norm")("norm", (self, p, dim, keepdim, dtype))
    dtype = dtype or self._impl.dtype
    axes = axes_of("norm", self, dim)
    a = np.abs(_acc(self, dtype))     # a complex input's |x| is real: so is its norm
    p = 2.0 if p is None else float(p)
    kw = dict(axis=axes, keepdims=keepdim)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if p == 2:
            r = np.sqrt(np.sum(a * a, **kw))
        elif p == 1:
            r = np.sum(a, **kw)
        elif p == np.inf:
            r = np.max(a, initial=0, **kw)
        elif p == -np.inf:
            r = np.min(a, initial=np.inf, **kw)
        elif p == 0:
            r = np.sum(a != 0, dtype=a.dtype, **kw)
        else:
            r = np.power(np.sum(np.power(a, p), **kw), 1.0 / p)
    return out(r, spec.dtype)


# ---- logsumexp -------------------------------------------------------------------------
def logsumexp(self, dim, keepdim):
    """log(sum(exp(x))) without overflow: subtract the max first.

        m = max(x);  m = 0 where m is +-inf (all -inf, or an inf: the answer is m itself)
        result = m + log(sum(exp(x - m)))

    For complex numbers m is the largest real part (|exp(x)| = exp(re x) is what may
    overflow; the imaginary parts only turn it), and the log is the principal one."""
    spec = shape_rule("reduction.logsumexp")("logsumexp", (self, dim, keepdim))
    axes = axes_of("logsumexp", self, dim)
    a = self._impl.array().astype(accumulate_dtype(spec.dtype), copy=False)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        m = np.max(a.real if a.dtype.kind == "c" else a, axis=axes, keepdims=True,
                   initial=-np.inf)
        m = np.where(np.isinf(m), np.zeros((), a.dtype), m)
        r = np.log(np.sum(np.exp(a - m), axis=axes, keepdims=True)) + m
    if not keepdim:
        r = np.squeeze(r, axis=axes)
    return out(r, spec.dtype)


# ---- logic -----------------------------------------------------------------------------
@kernel(family=True)
def all_any(op, self, *params):
    """all and any, over everything or (with params = (dim, keepdim)) along one dim."""
    spec = shape_rule("reduction.all_any")(op, (self,) + params)
    dim, keepdim = params or (None, False)
    axes = axes_of(op, self, None if dim is None else [dim])
    fn = np.all if op == "all" else np.any
    return out(fn(self._impl.array(), axis=axes, keepdims=keepdim), spec.dtype)


def count_nonzero(self, dim):
    shape_rule("reduction.count_nonzero")("count_nonzero", (self, dim))
    axes = axes_of("count_nonzero", self, dim)
    return out(np.count_nonzero(self._impl.array(), axis=axes), dt.int64)


# ---- counting: bincount, histc, the histograms -----------------------------------------------
def bincount(self, weights, minlength):
    """How often each value 0, 1, ..., max(self) occurs (the sum of its weights, with
    weights), at least minlength entries."""
    shape_rule("reduction.bincount")("bincount", (self, weights, minlength))
    a = self._impl.array().astype(np.int64)
    if a.size and a.min() < 0:
        raise ShapeError("bincount(): only supports 1-d non-negative integral inputs, but "
                         "argument 'self' has a negative value", op="bincount", arg="self")
    dtype = bincount_dtype(self, weights)
    if dtype is dt.int64:
        return out(np.bincount(a, minlength=minlength), dt.int64)
    w = weights._impl.array().astype(np.float64)
    return out(np.bincount(a, w, minlength=minlength), dtype)


def torch_linspace(start, end, steps, np_dtype):
    """PyTorch's linspace in the result dtype: start + step * i over the first half,
    end - step * (steps - 1 - i) over the second (so both ends are exact), the step
    computed in that dtype too; histograms compare values against these edges."""
    start, end = np_dtype.type(start), np_dtype.type(end)
    if steps == 1:
        return np.array([start], np_dtype)
    step = (end - start) / np_dtype.type(steps - 1)
    i = np.arange(steps)
    halfway = steps // 2
    with np.errstate(over="ignore", invalid="ignore"):
        return np.where(i < halfway, start + step * i.astype(np_dtype),
                        end - step * (steps - 1 - i).astype(np_dtype)).astype(np_dtype)


def histogram_counts(x, edges, weight, density, local_search=True, binary_search=False):
    """PyTorch's histogramdd kernel: x is [N, D] (one point per row), edges one increasing
    array per dim. A point outside [edges[0], edges[-1]] in any dim (or NaN) is not
    counted; the last bin includes its right edge. The bin along a dim is

        binary_search:  the last i with edges[i] <= v
        else:           trunc((v - lo) * bins / (hi - lo)), in x's dtype, then (local_search)
                        moved by one where that disagrees with the edges

    With density, the counts are divided by their total and by each bin's widths."""
    n, dims = x.shape
    bins = [len(e) - 1 for e in edges]
    keep = np.ones(n, bool)
    flat = np.zeros(n, np.int64)
    with np.errstate(invalid="ignore", over="ignore"):
        for d in range(dims):
            v, e = x[:, d], edges[d]
            lo, hi, last = e[0], e[-1], len(e) - 1
            keep &= (v >= lo) & (v <= hi)
            if binary_search:
                pos = np.searchsorted(e, v, side="right") - 1
            else:
                scaled = (v - lo) * x.dtype.type(last) / (hi - lo)
                pos = np.trunc(np.where(keep, scaled, 0)).astype(np.int64)
                if local_search:
                    pos = np.clip(pos, 0, last - 1)
                    pos = np.where(v < e[pos], pos - 1, pos)
                    pos = np.where(v >= e[np.minimum(pos + 1, last)], pos + 1, pos)
            pos = np.where(pos == last, last - 1, pos)
            flat = flat * bins[d] + np.where(keep, pos, 0)
    w = np.ones(n, np.float64) if weight is None else weight.reshape(n).astype(np.float64)
    total = int(np.prod(bins))
    hist = np.bincount(flat[keep], w[keep], minlength=total)[:total].astype(x.dtype)
    hist = hist.reshape(bins)
    if density:
        with np.errstate(invalid="ignore", divide="ignore"):
            hist = hist / hist.sum(dtype=x.dtype)
            for d in range(dims):
                shape = [1] * dims
                shape[d] = bins[d]
                hist = hist / np.diff(edges[d]).reshape(shape)
    return hist.astype(x.dtype)


def outer_edges(op, x, range_, d, widen):
    """The histogram's first and last edge along dim d: range, else x's min and max; an
    empty range is widened by `widen` each way (1 for histc, 0.5 for histogram)."""
    if range_ is not None:
        lo, hi = range_[2 * d], range_[2 * d + 1]
    elif x.shape[0]:
        lo, hi = float(np.min(x[:, d])), float(np.max(x[:, d]))
    else:
        lo, hi = 0.0, 1.0   # no points: PyTorch's default range
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise ArgumentError(f"{op}(): dimension {d}'s range [{lo}, {hi}] is not finite "
                            f"(argument 'self')", op=op, arg="self")
    if lo > hi:
        raise ArgumentError(f"{op}(): min should not exceed max, but got min {lo} max {hi} "
                            f"for dimension {d} (argument 'range')", op=op, arg="range")
    if lo == hi:
        lo, hi = lo - widen, hi + widen
    return lo, hi


def histc(self, bins, min, max):  # noqa: A002 - PyTorch's argument names
    """`bins` equal bins between min and max (the data's min and max when both are
    equal), values outside not counted."""
    op = "histc"
    shape_rule("reduction.histc")(op, (self, bins, min, max))
    x = self._impl.array().reshape(-1, 1)
    lo, hi = float(min), float(max)
    if lo == hi and x.size:
        lo, hi = float(np.min(x)), float(np.max(x))
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise ArgumentError(f"{op}(): range of [{lo}, {hi}] is not finite (argument 'self')",
                            op=op, arg="self")
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    edges = torch_linspace(lo, hi, bins + 1, x.dtype)
    return out(histogram_counts(x, [edges], None, False, local_search=False),
               self._impl.dtype)


def histogramdd_from_bin_cts(self, bins, range, weight, density):  # noqa: A002
    op = "_histogramdd_from_bin_cts"
    shape_rule("reduction.histogramdd_from_bin_cts")(op, (self, bins, range, weight, density))
    x = self._impl.array()
    x = x.reshape(-1, x.shape[-1])
    edges = [torch_linspace(*outer_edges(op, x, range, d, 0.5), n + 1, x.dtype)
             for d, n in enumerate(bins)]
    w = None if weight is None else weight._impl.array()
    return out(histogram_counts(x, edges, w, density), self._impl.dtype)


def histogramdd_from_bin_tensors(self, bins, weight, density):
    op = "_histogramdd_from_bin_tensors"
    shape_rule("reduction.histogramdd_from_bin_tensors")(op, (self, bins, weight, density))
    x = self._impl.array()
    x = x.reshape(-1, x.shape[-1])
    edges = [b._impl.array().reshape(-1) for b in bins]
    w = None if weight is None else weight._impl.array()
    return out(histogram_counts(x, edges, w, density, binary_search=True), self._impl.dtype)
