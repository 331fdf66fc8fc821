"""Reductions PyTorch defines from others: var/std with `unbiased`, var_mean/std_mean, norm with a
string p, argsort from sort. Autograd records the ops they call (composite implicit
autograd), except var_mean/std_mean, which have derivatives.yaml entries (PyTorch's
formulas, saving what PyTorch's save); the Meta backend runs them unchanged."""
from __future__ import annotations

from tensorplay import _creation
from tensorplay._generated import functional as F
from tensorplay.errors import ArgumentError
from tensorplay._dtype import float64


def var_unbiased(self, dim, unbiased, keepdim):
    return F.var(self, dim, correction=1 if unbiased else 0, keepdim=keepdim)


def std_unbiased(self, dim, unbiased, keepdim):
    return F.std(self, dim, correction=1 if unbiased else 0, keepdim=keepdim)


def var_mean(self, dim, correction, keepdim):
    return _in_double(F.var, self, dim, keepdim, correction=correction), \
        _welford_mean(self, dim, keepdim)


def std_mean(self, dim, correction, keepdim):
    return _in_double(F.std, self, dim, keepdim, correction=correction), \
        _welford_mean(self, dim, keepdim)


def _welford_mean(self, dim, keepdim):
    """The mean as PyTorch's one-pass (Welford) var_mean leaves it.

    NOTE: Welford's update subtracts the running mean from each next value, so once an
    infinity is in, the next value makes it inf - inf: the mean is NaN whenever an
    infinity comes before the last value (in row-major order over the reduced dims),
    where mean() alone would give the infinity."""
    mean = _in_double(F.mean, self, dim, keepdim)
    if not self.dtype.is_floating_point or self.dtype.is_complex or self.dim() == 0:
        return mean
    n = self.dim()
    dims = list(range(n)) if not dim else sorted(d % n for d in dim)
    kept = [d for d in range(n) if d not in dims]
    flat = self.permute(kept + dims).reshape([self.shape[d] for d in kept] + [-1])
    if flat.shape[-1] <= 1:
        return mean
    early_inf = F.any(F.isinf(flat.narrow(-1, 0, flat.shape[-1] - 1)), -1)
    # Added, not selected by where: the mean's gradient still flows through every
    # element (PyTorch's var_mean backward is mean_backward whatever the value)
    nan = _creation.zeros_like(mean.detach()).masked_fill(early_inf.reshape(mean.shape),
                                                           float("nan"))
    return mean + nan


def _in_double(reduce, self, dim, keepdim, **kwargs):
    """`reduce` as var_mean/std_mean compute it: PyTorch takes both in one float64 pass
    (Welford), so for float32 [3e38, 3e38] the mean is 3e38 and the variance 0, though
    mean() alone overflows to inf (and var() alone, which starts from that mean, too)."""
    dtype = self.dtype
    if not dtype.is_floating_point or dtype.is_complex or dtype == float64:
        return reduce(self, dim, keepdim=keepdim, **kwargs)
    return reduce(self.to(float64), dim, keepdim=keepdim, **kwargs).to(dtype)


def norm_str(self, p, dim, keepdim, dtype):
    """p="fro": the Frobenius norm, i.e. the 2-norm of the elements (over `dim`)."""
    if p != "fro":
        raise ArgumentError(f"norm(): argument 'p' must be a number or 'fro', but got {p!r} "
                            f"('nuc' needs a singular value decomposition, which TensorPlay "
                            f"does not have)", op="norm", arg="p")
    return F.norm(self, 2, dim, keepdim, dtype=dtype)


def argsort(self, dim, descending):
    return F.sort(self, dim, descending)[1]


def argsort_stable(self, stable, dim, descending):
    return F.sort(self, dim, descending)[1]
