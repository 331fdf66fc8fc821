"""Statistical reductions: prod, amax/amin, var/std, norm,
logsumexp, all/any, count_nonzero.

Half types accumulate in float32 and are rounded once at the end, as PyTorch does.
The shape rules (tensorplay/meta/reduction.py) check dims and dtypes first: NumPy would
accept what PyTorch refuses (var of an int tensor, amax over an empty dim with keepdim).
"""
from __future__ import annotations

import numpy as np

from tensorplay import _dtype as dt
from tensorplay.library import kernel
from tensorplay.meta import reduction as rules
from cpu_kernels._common import accumulate_dtype, out


def axes_of(op, self, dim):
    """The axes `dim` names (None or [] = all); a 0-dim tensor accepts 0 / -1 but has none."""
    ndim = len(self._impl.sizes)
    if dim is None or len(dim) == 0:
        return tuple(range(ndim))
    dims = rules.reduce_dim_list(op, dim, ndim)
    return dims if ndim else ()


def _acc(self, dtype=None):
    """The tensor's data in the dtype the reduction accumulates in."""
    a = self._impl.array()
    acc = accumulate_dtype(dtype or self._impl.dtype)
    return a if a.dtype == acc else a.astype(acc)


# ---- prod ------------------------------------------------------------------------------
def prod(self, dtype):
    dtype = rules.integral_to_long(self, dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        return out(np.prod(_acc(self, dtype)), dtype)


def prod_dim(self, dim, keepdim, dtype):
    rules.prod_dim("prod", (self, dim, keepdim, dtype))
    dtype = rules.integral_to_long(self, dtype)
    axes = axes_of("prod", self, [dim])
    with np.errstate(over="ignore", invalid="ignore"):
        return out(np.prod(_acc(self, dtype), axis=axes, keepdims=keepdim), dtype)


# ---- amax / amin -----------------------------------------------------------------------
@kernel(family=True)
def amax_amin(op, self, dim, keepdim):
    """amax and amin over the dims in `dim` (all of them when empty)."""
    rules.amax(op, (self, dim, keepdim))
    pick = np.max if op == "amax" else np.min
    axes = axes_of(op, self, dim)
    with np.errstate(invalid="ignore"):   # nan propagates (bfloat16 warns about it)
        return out(pick(self._impl.array(), axis=axes, keepdims=keepdim), self._impl.dtype)


# ---- variance --------------------------------------------------------------------------
def std(self, dim, correction, keepdim):
    rules.var("std", (self, dim, correction, keepdim))
    return out(np.sqrt(_variance(self, dim, correction, keepdim)), self._impl.dtype)


def var(self, dim, correction, keepdim):
    rules.var("var", (self, dim, correction, keepdim))
    return out(_variance(self, dim, correction, keepdim), self._impl.dtype)


def _variance(self, dim, correction, keepdim):
    """Two passes, as PyTorch: mean first, then the mean squared deviation.

        m = mean(x over dims);  var = sum((x - m)**2) / max(0, N - correction)
    N - correction <= 0 gives inf (or nan for 0/0), as in PyTorch.

    NOTE: real float inputs are computed in float64, as PyTorch's CPU kernel accumulates in
    double: std([1e30, -1.89]) in float32 is 7.07e29, though the variance (5e59) is not
    representable in float32. The caller rounds the result (after sqrt for std) once.
    Like PyTorch's std_var_all_cpu, a float32 reduction to a single value takes its mean
    in float32 first (so [3e38, 3e38] has mean inf and variance inf there, not 0)."""
    axes = axes_of("var", self, dim)
    a = _acc(self)
    n = 1
    for axis in axes:
        n *= a.shape[axis]
    correction = 1 if correction is None else correction
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        m = None
        if a.dtype == np.float32 and self._impl.dtype.np == np.float32 and a.size == n:
            m = (np.sum(a, axis=axes, keepdims=True) / a.dtype.type(n)).astype(np.float64)
        if a.dtype.kind == "f" and a.dtype.itemsize < 8:
            a = a.astype(np.float64)
        if m is None:
            m = np.sum(a, axis=axes, keepdims=True) / a.dtype.type(n)
        d = np.asarray(np.subtract(a, m))   # (a 0-d result is a NumPy scalar: asarray)
        np.multiply(d, d, out=d)   # squared in place: one temporary, not two
        return np.sum(d, axis=axes, keepdims=keepdim) / a.dtype.type(max(0, n - correction))


# ---- norm ------------------------------------------------------------------------------
def norm(self, p, dim, keepdim, dtype):
    """Vector p-norm over `dim` (all elements by default).

        p = 2: sqrt(sum(x**2))   p = 1: sum(|x|)   p = inf / -inf: max / min |x|
        p = 0: number of non-zeros   other p: sum(|x|**p) ** (1/p)"""
    rules.norm("norm", (self, p, dim, keepdim, dtype))
    dtype = dtype or self._impl.dtype
    axes = axes_of("norm", self, dim)
    a = np.abs(_acc(self, dtype))
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
    return out(r, dtype)


# ---- logsumexp -------------------------------------------------------------------------
def logsumexp(self, dim, keepdim):
    """log(sum(exp(x))) without overflow: subtract the max first.

        m = max(x);  m = 0 where m is +-inf (all -inf, or an inf: the answer is m itself)
        result = m + log(sum(exp(x - m)))"""
    spec = rules.logsumexp("logsumexp", (self, dim, keepdim))
    axes = axes_of("logsumexp", self, dim)
    a = self._impl.array().astype(accumulate_dtype(spec.dtype), copy=False)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        m = np.max(a, axis=axes, keepdims=True, initial=-np.inf)
        m = np.where(np.isinf(m), np.zeros((), a.dtype), m)
        r = np.log(np.sum(np.exp(a - m), axis=axes, keepdims=True)) + m
    if not keepdim:
        r = np.squeeze(r, axis=axes)
    return out(r, spec.dtype)


# ---- logic -----------------------------------------------------------------------------
@kernel(family=True)
def all_any(op, self, *params):
    """all and any, over everything or (with params = (dim, keepdim)) along one dim."""
    spec = rules.all_any(op, (self,) + params)
    dim, keepdim = params or (None, False)
    axes = axes_of(op, self, None if dim is None else [dim])
    fn = np.all if op == "all" else np.any
    return out(fn(self._impl.array(), axis=axes, keepdims=keepdim), spec.dtype)


def count_nonzero(self, dim):
    rules.count_nonzero("count_nonzero", (self, dim))
    axes = axes_of("count_nonzero", self, dim)
    return out(np.count_nonzero(self._impl.array(), axis=axes), dt.int64)
