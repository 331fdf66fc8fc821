"""Finite differences (diff) and the cumulative trapezoidal rule, composed of narrow,
sub and cumsum; the trapezoid helpers serve reduction.py's trapezoid too."""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay._frontdoor import wrap_dim
from tensorplay._generated import functional as F
from tensorplay.errors import ArgumentError, ShapeError


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
