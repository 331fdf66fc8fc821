"""Numeric helpers from NumPy's vocabulary, composed of existing ops: square, the
NaN-skipping reductions (nansum, nanmean), finite differences (diff), the trapezoidal
rule (trapezoid, cumulative_trapezoid), pointwise helpers (deg2rad, logaddexp, fmax,
sinc, float_power, heaviside, ...) and covariance (cov, corrcoef).

No derivatives.yaml entries: autograd records the ops they call (composite implicit
autograd), so every backend, the Meta one included, runs them unchanged.
"""
from __future__ import annotations

import math

from tensorplay import _dtype as dt
from tensorplay._frontdoor import wrap_dim
from tensorplay._generated import functional as F
from tensorplay.errors import ArgumentError, DTypeError, ShapeError


def square(self):
    """self * self; bool counts as int64, as pow(bool, 2) does in PyTorch."""
    if self.dtype is dt.bool:
        self = self.to(dt.int64)
    return self * self


def square_(self):
    """self *= a copy of self. Not mul_(self, self): that saves self as `other` and then
    overwrites it, so backward always raised. PyTorch's square_ is pow_(2), which saves a
    copy of the original self: a later write into the result goes unnoticed there too."""
    return self.mul_(self.clone())


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


def diff(self, n, dim, prepend, append):
    """The n-th forward difference along dim, after joining prepend and append to self
    (`logical_xor` for bool, as PyTorch does)."""
    op = "diff"
    if self.dim() == 0:
        raise ShapeError("diff(): expects input to be at least one-dimensional (argument "
                         "'self' is 0-dim)", op=op, arg="self")
    if n < 0:
        raise ArgumentError(f"diff(): order must be non-negative but got {n}", op=op, arg="n")
    d = wrap_dim(op, "dim", dim, self.dim())
    pieces = [t for t in (prepend, self, append) if t is not None]
    x = F.cat(pieces, d) if len(pieces) > 1 else self.clone()
    for _ in range(n):
        length = x.shape[d]
        if length == 0:
            break
        after, before = x.narrow(d, 1, length - 1), x.narrow(d, 0, length - 1)
        x = F.logical_xor(after, before) if x.dtype is dt.bool else after - before
    return x


def _spacing_product(y, d, x, dx):
    """(y[i] + y[i+1]) / 2 * spacing over each interval along d."""
    length = y.shape[d]
    mid = (y.narrow(d, 1, length - 1) + y.narrow(d, 0, length - 1)) / 2
    if x is None:
        return mid * dx
    if x.dim() == 1:
        steps = x[1:] - x[:-1]
        shape = [1] * y.dim()
        shape[d] = steps.shape[0]
        return mid * steps.reshape(shape)
    return mid * diff(x, 1, d - y.dim(), None, None)


def _trapezoid_args(op, y, x, dim):
    d = wrap_dim(op, "dim", dim, y.dim())
    if x is not None and x.dim() == 1 and x.shape[0] != y.shape[d]:
        raise ShapeError(f"{op}(): There must be one `x` value for each sample point, but "
                         f"got {x.shape[0]} for 'x' and {y.shape[d]} samples along dim {d}",
                         op=op, arg="x")
    if not y.is_floating_point():
        y = y.to(dt.get_default_dtype())
    return y, d


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


def _cumulative_trapezoid(y, x, dx, dim):
    """The running integral of y along dim (one value fewer than y has samples)."""
    y, d = _trapezoid_args("cumulative_trapezoid", y, x, dim)
    if y.shape[d] == 0:
        return y
    return F.cumsum(_spacing_product(y, d, x, dx), d)


def cumulative_trapezoid_x(y, x, dim):
    return _cumulative_trapezoid(y, x, None, dim)


def cumulative_trapezoid_dx(y, dx, dim):
    return _cumulative_trapezoid(y, None, dx, dim)


# ---- pointwise ---------------------------------------------------------------------------
def _as_floating(self):
    """Integer and bool inputs compute in the default dtype, as PyTorch's float ops do."""
    return self if self.is_floating_point() else self.to(dt.get_default_dtype())


def deg2rad(self):
    return _as_floating(self) * (math.pi / 180.0)


def rad2deg(self):
    return _as_floating(self) * (180.0 / math.pi)


def _check_floating_pair(op, self, other):
    for name, t in (("self", self), ("other", other)):
        if not t.is_floating_point():
            raise DTypeError(f"{op}(): argument '{name}' must be a floating point tensor, but "
                             f"got {t.dtype.name}", op=op, arg=name)


def logaddexp(self, other):
    """log(exp(self) + exp(other)) = max + log1p(exp(min - max)), which cannot overflow;
    two equal infinities give that infinity (not inf - inf)."""
    _check_floating_pair("logaddexp", self, other)
    high, low = F.maximum(self, other), F.minimum(self, other)
    same_inf = F.logical_and(F.isinf(high), F.eq(high, low))
    gap = F.where(same_inf, 0, low - high)
    return F.where(same_inf, high, high + F.log1p(F.exp(gap)))


def logaddexp2(self, other):
    """log2(2 ** self + 2 ** other) = max + log1p(2 ** (min - max)) / ln 2, as logaddexp;
    the operands are promoted (by maximum) before any arithmetic, so a float16 operand of
    a float32 result is not rounded to float16 on the way."""
    _check_floating_pair("logaddexp2", self, other)
    high, low = F.maximum(self, other), F.minimum(self, other)
    same_inf = F.logical_and(F.isinf(high), F.eq(high, low))
    gap = F.where(same_inf, 0, low - high)
    return F.where(same_inf, high, high + F.log1p(F.exp2(gap)) / math.log(2.0))


def fmax(self, other):
    """maximum that ignores a NaN when the other value is not NaN (NumPy's fmax)."""
    return _nan_ignoring(F.maximum(self, other), self, other)


def fmin(self, other):
    return _nan_ignoring(F.minimum(self, other), self, other)


def _nan_ignoring(out, self, other):
    """`out` (maximum or minimum, NaN where either input is) with each NaN replaced by the
    other input's value. NOTE: `where`'s result is laid out like its first argument, so the
    condition is read from `out`: the result keeps the layout a binary op of (self, other)
    has, as PyTorch's fmax does."""
    if not out.is_floating_point():
        return out
    return F.where(F.isnan(out), F.where(F.isnan(other), self, other), out)


def sinc(self):
    """sin(pi x) / (pi x), 1 at 0. NOTE: the division runs on x with its zeros replaced
    by ones, so the branch `where` discards cannot send a NaN into the gradient."""
    x = _as_floating(self)
    zero = F.eq(x, 0)
    safe = F.where(zero, 1, x) * math.pi
    return F.where(zero, 1, F.sin(safe) / safe)


def float_power(self, exponent):
    """self ** exponent in float64 (both operands converted first)."""
    if getattr(exponent, "_impl", None) is not None:
        exponent = exponent.to(dt.float64)
    return self.to(dt.float64) ** exponent


def heaviside(self, values):
    """0 where self < 0, 1 where self > 0, `values` where self == 0."""
    if self.dtype is not values.dtype:
        raise DTypeError(f"heaviside(): is not yet implemented for tensors with different "
                         f"dtypes (argument 'values' is {values.dtype.name}, 'self' is "
                         f"{self.dtype.name})", op="heaviside", arg="values")
    return F.where(F.eq(self, 0), values, F.gt(self, 0).to(self.dtype))


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
