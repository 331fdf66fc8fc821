"""Numeric helpers from NumPy's vocabulary, composed of existing ops: square, the
NaN-skipping reductions (nansum, nanmean), finite differences (diff) and the trapezoidal
rule (trapezoid, cumulative_trapezoid).

No derivatives.yaml entries: autograd records the ops they call (composite implicit
autograd), so every backend, the Meta one included, runs them unchanged.
"""
from __future__ import annotations

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
    return self.mul_(self)


def _nan_to_zero(self):
    if not self.is_floating_point():
        return self
    return F.where(F.logical_not(F.isnan(self)), self, 0)


def nansum(self, dim, keepdim, dtype):
    """sum with NaNs counted as zero (integers have none). NOTE: the NaN positions get a
    zero gradient, as in PyTorch (`where` routes the gradient to the kept values only)."""
    return F.sum(_nan_to_zero(self), dim, keepdim, dtype=dtype)


def nanmean(self, dim, keepdim, dtype):
    """nansum / the number of non-NaN values (NaN where every value is NaN, as 0 / 0).

    NOTE: where every value is NaN, PyTorch's gradient is NaN (it multiplies the incoming
    infinite gradient by the zero mask); here it is 0 (`where` routes no gradient there)."""
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
    if samples.shape[d] == 0:   # no interval: zeros of y's own dtype, as in PyTorch
        return F.sum(y, [d], dtype=y.dtype)
    y = samples
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
