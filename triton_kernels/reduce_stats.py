"""Statistical reductions on the `cuda` device: prod, amax/amin, all/any, count_nonzero
run the reduction kernel of triton_kernels/reduction.py; var/std, norm and logsumexp
are written with the backend's own ops (pointwise kernels and reductions), in the
accumulation dtype (float32 for half types, rounded once at the end) as on the CPU.

Results and errors follow the shape rules of tensorplay/meta/reduction.py.
"""
from __future__ import annotations

import math

from tensorplay import _dtype as dt
from tensorplay._generated import functional as F
from tensorplay.library import kernel
from tensorplay.meta import reduction as rules
from triton_kernels import reduction
from triton_kernels._launch import operands


def _dims(dim):
    """A reduction's dims as the core's list (None = all)."""
    if dim is None:
        return None
    return [dim] if isinstance(dim, int) else list(dim)


def _count(self, dims):
    sizes = self._impl.sizes
    if not sizes or not dims:
        return self._impl.numel()
    n = 1
    for d in rules.reduce_dim_list("reduce", dims, len(sizes)):
        n *= sizes[d]
    return n


def _accumulate(t):
    """Half types are computed in float32 and rounded once at the end."""
    return t.to(dt.float32) if t.dtype in (dt.float16, dt.bfloat16) else t


# ---- the reduction kernel --------------------------------------------------------------
def prod(self, dtype):
    rules.prod("prod", (self, dtype))
    out_dtype = rules.integral_to_long(self, dtype)
    return reduction.reduce_any("prod", "prod", self, None, False, out_dtype, out_dtype)


def prod_dim(self, dim, keepdim, dtype):
    rules.prod_dim("prod", (self, dim, keepdim, dtype))
    out_dtype = rules.integral_to_long(self, dtype)
    return reduction.reduce_any("prod", "prod", self, [dim], keepdim, out_dtype, out_dtype)


@kernel(family=True)
def amax_amin(op, self, dim, keepdim):
    """amax and amin over the dims in `dim` (all of them when empty)."""
    rules.amax(op, (self, dim, keepdim))
    dtype = self._impl.dtype
    return reduction.reduce_any(op, op[1:], self, _dims(dim), keepdim, dtype, dtype)


@kernel(family=True)
def all_any(op, self, *params):
    """all and any, over everything or (with params = (dim, keepdim)) along one dim: the
    min (all) or max (any) of `self != 0`."""
    spec = rules.all_any(op, (self,) + params)
    dim, keepdim = params or (None, False)
    operands(op, self=self)
    nonzero = F.ne(self, 0)
    pick = "min" if op == "all" else "max"
    return reduction.reduce_any(op, pick, nonzero, None if dim is None else [dim], keepdim,
                                spec.dtype, dt.bool)


def count_nonzero(self, dim):
    rules.count_nonzero("count_nonzero", (self, dim))
    operands("count_nonzero", self=self)
    return F.sum(F.ne(self, 0), _dims(dim) or [], dtype=dt.int64)


# ---- built from the backend's ops ------------------------------------------------------
def _variance(op, self, dim, correction, keepdim):
    """Two passes, as on the CPU: m = mean(x over dims); sum((x - m)**2) / (N - correction)."""
    rules.var(op, (self, dim, correction, keepdim))
    operands(op, self=self)
    dims = _dims(dim) or []
    x = _accumulate(self)
    centered = F.sub(x, F.mean(x, dims, keepdim=True))
    total = F.sum(F.mul(centered, centered), dims, keepdim=keepdim)
    n = _count(self, dims)
    correction = 1 if correction is None else correction
    return F.div(total, max(0, n - correction))


def var(self, dim, correction, keepdim):
    return _variance("var", self, dim, correction, keepdim).to(self._impl.dtype)


def std(self, dim, correction, keepdim):
    return F.sqrt(_variance("std", self, dim, correction, keepdim)).to(self._impl.dtype)


def norm(self, p, dim, keepdim, dtype):
    """Vector p-norm: p = 2 sqrt(sum x**2), 1 sum |x|, inf / -inf max / min |x|, 0 the
    number of non-zeros, else sum(|x|**p) ** (1/p)."""
    spec = rules.norm("norm", (self, p, dim, keepdim, dtype))
    operands("norm", self=self)
    dims = _dims(dim) or []
    a = F.abs(_accumulate(self.to(spec.dtype)))
    p = 2.0 if p is None else float(p)
    if p == 2:
        r = F.sqrt(F.sum(F.mul(a, a), dims, keepdim=keepdim))
    elif p == 1:
        r = F.sum(a, dims, keepdim=keepdim)
    elif p == math.inf:
        r = F.amax(a, dims, keepdim=keepdim) if a.numel() else F.sum(a, dims, keepdim=keepdim)
    elif p == -math.inf:
        r = F.amin(a, dims, keepdim=keepdim)
    elif p == 0:
        r = F.sum(F.ne(a, 0), dims, keepdim=keepdim, dtype=a.dtype)
    else:
        r = F.pow(F.sum(F.pow(a, p), dims, keepdim=keepdim), 1.0 / p)
    return r.to(spec.dtype)


def logsumexp(self, dim, keepdim):
    """m + log(sum(exp(x - m))), m the max (0 where it is infinite), without overflow."""
    spec = rules.logsumexp("logsumexp", (self, dim, keepdim))
    operands("logsumexp", self=self)
    dims = _dims(dim) or []
    x = _accumulate(self.to(spec.dtype))
    if x.numel() == 0:
        return F.log(F.sum(F.exp(x), dims, keepdim=keepdim)).to(spec.dtype)
    m = F.amax(x, dims, keepdim=True)
    m = F.where(F.isinf(m), 0.0, m)
    r = F.add(F.log(F.sum(F.exp(F.sub(x, m)), dims, keepdim=True)), m)
    if not keepdim:
        r = r.view(rules.reduced_sizes("logsumexp", self._impl.sizes, dims, False))
    return r.to(spec.dtype)
