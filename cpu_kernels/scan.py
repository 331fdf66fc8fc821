"""Scans: cumsum and cumprod, out of place or in place (cummax and cummin, which carry
the index of the running extreme, are sorting.py's). A 0-dim tensor is scanned as a
1-element vector."""
from __future__ import annotations

import numpy as np

from tensorplay import _dtype as dt
from tensorplay.kernel_support.checks import wrap_dim
from tensorplay.kernel_support.ops import shape_rule
from tensorplay.library import kernel
from cpu_kernels._common import accumulate_dtype, out
from cpu_kernels.sorting import _as_1d_if_scalar


# ---- cumsum / cumprod ------------------------------------------------------------------
@kernel(family=True)
def cumsum_cumprod(op, self, dim, dtype):
    """cumsum and cumprod, out of place (in `dtype` when given) or in place."""
    inplace = op.endswith("_")
    if inplace:
        shape_rule("scan.cumsum_")(op, (self, dim, dtype))
        dtype = None
    spec = shape_rule("scan.cumsum")(op, (self, dim, dtype))
    a = self._impl.array()
    d = wrap_dim(op, dim, a.ndim) if a.ndim else 0
    # PyTorch's CPU scans carry float32 in double (an intermediate product or sum may
    # leave float32's range and come back: [1e30, 1e30, 1e-30] ends at 1e30, not inf).
    acc = np.float64 if spec.dtype is dt.float32 else accumulate_dtype(spec.dtype)
    ufunc = np.add if op.startswith("cumsum") else np.multiply
    with np.errstate(over="ignore", invalid="ignore"):
        r = ufunc.accumulate(_as_1d_if_scalar(a).astype(acc, copy=False), axis=d)
        r = r.reshape(a.shape).astype(spec.dtype.np, copy=False)    # inf past the range
    if inplace:
        np.copyto(a, r, casting="unsafe")
        return self
    return out(r, spec.dtype)


# ---- logcumsumexp ------------------------------------------------------------------------
def logcumsumexp(self, dim):
    """log(cumsum(exp(x))) without overflow: np.logaddexp.accumulate, whose step
    max(a, b) + log1p(exp(-|a - b|)) never exponentiates a large number (half types run
    in float32)."""
    spec = shape_rule("scan.logcumsumexp")("logcumsumexp", (self, dim))
    a = self._impl.array()
    d = wrap_dim("logcumsumexp", dim, a.ndim) if a.ndim else 0
    acc = accumulate_dtype(spec.dtype)
    x = _as_1d_if_scalar(a).astype(acc, copy=False)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        r = _complex_logcumsumexp(x, d) if x.dtype.kind == "c" else \
            np.logaddexp.accumulate(x, axis=d)
    return out(r.reshape(a.shape), spec.dtype)


def _complex_logcumsumexp(x, d):
    """logcumsumexp of complex numbers (NumPy's logaddexp is real only): one step at a
    time along axis d, each step PyTorch's

        log(e^a + e^b) = a + log1p(e^(b - a)),   a the one with the larger real part

    so that e^(b - a) has modulus <= 1 and cannot overflow. The running total starts at
    -inf + 0j (the log of an empty sum), and a number with a -inf real part (e^x = 0,
    whatever its imaginary part) leaves the total as it is: PyTorch's results, -inf + 0j
    for a run of them. A NaN in either part makes both parts NaN from there on."""
    x = np.moveaxis(x, d, 0)
    r = np.empty_like(x)
    total = np.full(x.shape[1:], complex(-np.inf, 0), x.dtype)
    for k in range(x.shape[0]):
        first = total.real >= x[k].real
        big, small = np.where(first, total, x[k]), np.where(first, x[k], total)
        total = np.where(np.isneginf(small.real), big, big + np.log1p(np.exp(small - big)))
        total = np.where(np.isnan(small) | np.isnan(big), complex(np.nan, np.nan), total)
        r[k] = total
    return np.moveaxis(r, 0, d)
