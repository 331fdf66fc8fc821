"""Numeric helpers from NumPy's vocabulary, composed of existing ops: square, the
NaN-skipping reductions (nansum, nanmean), finite differences (diff), the trapezoidal
rule (trapezoid, cumulative_trapezoid), pointwise helpers (deg2rad, logaddexp, fmax,
sinc, float_power, heaviside, ...) and covariance (cov, corrcoef).

No derivatives.yaml entries: autograd records the ops they call (composite implicit
autograd), so every backend, the Meta one included, runs them unchanged.
"""
from __future__ import annotations

from tensorplay import _creation
from tensorplay._dtype import float64
from tensorplay._generated import functional as F
from tensorplay.composite.pointwise import _as_floating
from tensorplay.composite.scan import _spacing_product, _trapezoid_args
from tensorplay.errors import ArgumentError, DTypeError, fmt_shape, ShapeError


def _nan_to_zero(self):
    """self with its NaNs replaced by 0. NOTE: the gradient is PyTorch's nansum rule,
    grad * (self is not NaN), a product: an infinite incoming gradient (nanmean of a slice
    that is all NaN divides by a count of 0) gives NaN, not 0, at the NaN positions.
    nan_to_num's gradient is grad * isfinite(self), so the infinities are routed around it
    by `where`, whose gradient goes to them unchanged."""
    if not self.is_floating_point():
        return self
    return F.where(F.isinf(self), self, F.nan_to_num(self, 0.0))


def nansum(self, dim, keepdim, dtype):
    """sum with NaNs counted as zero (integers have none)."""
    return F.sum(_nan_to_zero(self), dim, keepdim, dtype=dtype)


def nanmean(self, dim, keepdim, dtype):
    """nansum / the number of non-NaN values (NaN where every value is NaN, as 0 / 0;
    there the gradient is NaN too, as in PyTorch)."""
    if not self.is_floating_point():
        raise DTypeError(f"nanmean(): expected input to have floating point dtype but got "
                         f"{self.dtype.name} (argument 'self')", op="nanmean", arg="self")
    count = F.sum(F.logical_not(F.isnan(self)), dim, keepdim, dtype=dtype or self.dtype)
    return nansum(self, dim, keepdim, dtype) / count


def _trapezoid(y, x, dx, dim):
    """The integral of y along dim by the trapezoidal rule, samples at x (or dx apart)."""
    samples, d = _trapezoid_args("trapezoid", y, x, dim)
    if samples.shape[d] == 0:
        # no interval: new zeros of y's own dtype, outside the graph, as in PyTorch
        return F.sum(y, [d], dtype=y.dtype).detach()
    y = samples
    if x is None:
        # PyTorch's form for a constant spacing: (sum - (first + last) / 2) * dx, so an
        # infinite first or last sample gives inf - inf = NaN, as in PyTorch
        ends = (y.select(d, 0) + y.select(d, -1)) * 0.5
        return (F.sum(y, [d]) - ends) * dx
    return F.sum(_spacing_product(y, d, x, dx), [d])


def trapezoid_x(y, x, dim):
    return _trapezoid(y, x, None, dim)


def trapezoid_dx(y, dx, dim):
    return _trapezoid(y, None, dx, dim)


# ---- covariance --------------------------------------------------------------------------
def _check_weights(name, w, n, integral):
    op = "cov"
    if w.dim() > 1:
        raise ShapeError(f"cov(): expected {name} to have one or fewer dimensions but got "
                         f"{name} with {w.dim()} dimensions (argument '{name}')", op=op, arg=name)
    if w.numel() != n:
        raise ShapeError(f"cov(): expected {name} to have the same numel as there are "
                         f"observations in the input but got {w.numel()} != {n} (argument "
                         f"'{name}')", op=op, arg=name)
    if integral and w.is_floating_point():
        raise DTypeError(f"cov(): expected {name} to have integral dtype but got "
                         f"{w.dtype.name} (argument '{name}')", op=op, arg=name)
    if not integral and not w.is_floating_point():
        raise DTypeError(f"cov(): expected {name} to have floating point dtype but got "
                         f"{w.dtype.name} (argument '{name}')", op=op, arg=name)
    # written as "not all >= 0" so that a NaN weight fails too, as in PyTorch
    if w.device.type != "meta" and not bool((w >= 0).all()):
        raise ArgumentError(f"cov(): {name} cannot be negative (argument '{name}')", op=op,
                            arg=name)


def cov(self, correction, fweights, aweights):
    """The covariance of the variables in self's rows over the observations in its
    columns, PyTorch's (and NumPy's) formula with frequency and observation weights:

        w = fweights * aweights;  avg = sum(x * w) / sum(w)
        cov = (x - avg) * w @ (x - avg)^T / (sum(w) - correction * sum(w * aweights) / sum(w))
    """
    if self.dim() > 2:
        raise ShapeError(f"cov(): expected input to have two or fewer dimensions but got an "
                         f"input with {self.dim()} dimensions (argument 'self')", op="cov",
                         arg="self")
    x = self.reshape([1, -1]) if self.dim() < 2 else self
    x = _as_floating(x)
    n = x.shape[1]
    w = None
    if fweights is not None:
        _check_weights("fweights", fweights, n, integral=True)
        w = fweights
    if aweights is not None:
        _check_weights("aweights", aweights, n, integral=False)
        w = aweights if w is None else w * aweights
    if w is None:
        avg = x.mean([1])
        norm = max(n - correction, 0)
    else:
        # (no conversion of w, as in PyTorch: x * w promotes, and the weights themselves are
        # what that mul saves, so an in-place change of them makes backward raise)
        w_sum = w.sum()
        if w.device.type != "meta" and bool(w_sum == 0):
            raise ArgumentError("cov(): weights sum to zero, can't be normalized (arguments "
                                "'fweights' and 'aweights')", op="cov",
                                arg="aweights" if aweights is not None else "fweights")
        avg = (x * w).sum([1]) / w_sum
        if correction == 0:
            norm = w_sum
        elif aweights is None:
            norm = w_sum - correction
        else:
            norm = w_sum - correction * (w * aweights).sum() / w_sum
        norm = F.clamp_min(norm, 0)
    centered = x - avg.unsqueeze(1)
    weighted = centered if w is None else centered * w
    return (F.mm(weighted, centered.t()) / norm).squeeze()


def corrcoef(self):
    """Pearson correlation coefficients: cov / (std_i std_j), clamped to [-1, 1]."""
    c = cov(self, 1, None, None)
    if c.dim() == 0:
        return c / c
    std = F.sqrt(F.diagonal(c, 0, 0, 1))
    c = c / std.unsqueeze(1) / std.unsqueeze(0)
    return F.clamp(c, -1, 1)


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
    """p="fro": the Frobenius norm, i.e. the 2-norm of the elements (over `dim`);
    p="nuc": the nuclear norm, linalg_matrix_norm's over `dim` (all dims when None: a
    matrix), as PyTorch's torch.norm calls it."""
    if p == "nuc":
        dims = list(dim) if dim is not None and len(dim) else list(range(self.dim()))
        return F.linalg_matrix_norm(self, "nuc", dims, keepdim, dtype=dtype)
    if p != "fro":
        raise ArgumentError(f"norm(): argument 'p' must be a number, 'fro' or 'nuc', but got "
                            f"{p!r}", op="norm", arg="p")
    return F.norm(self, 2, dim, keepdim, dtype=dtype)


def sum_to_size(self, size):
    """Sum self down to `size` (which self must be expandable from): the reverse of
    expand, as the gradient of a broadcast is."""
    size = tuple(size)
    sizes = tuple(self.shape)
    lead = len(sizes) - len(size)
    ok = lead >= 0 and all(s == 1 or s == t for s, t in zip(size, sizes[lead:]))
    if not ok:
        raise ShapeError(f"sum_to_size(): size {fmt_shape(size)} is not expandable to size "
                         f"{fmt_shape(sizes)} (argument 'size')", op="sum_to_size",
                         arg="size")
    out = self
    if lead:
        out = out.sum(list(range(lead)))
    dims = [i for i, s in enumerate(size) if s == 1 and sizes[lead + i] != 1]
    if dims:
        out = out.sum(dims, True)
    return out if out is not self else self.view(sizes)
