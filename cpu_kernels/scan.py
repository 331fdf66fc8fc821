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
    with np.errstate(over="ignore", invalid="ignore"):
        r = np.logaddexp.accumulate(_as_1d_if_scalar(a).astype(acc, copy=False), axis=d)
    return out(r.reshape(a.shape), spec.dtype)
