"""Finite differences (diff, gradient) and the cumulative trapezoidal rule, composed of
narrow, sub and cumsum; the trapezoid helpers serve reduction.py's trapezoid too."""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay._frontdoor import wrap_dim, wrap_dims
from tensorplay._tensor import Tensor
from tensorplay._generated import functional as F
from tensorplay.errors import ArgumentError, DTypeError, ShapeError, fmt_shape


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
    if n > 0 and prepend is None and append is None and self.shape[d] == 0:
        # PyTorch clips n to the dim's length, 0 here, and returns self itself
        return self
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
    pairs = y.narrow(d, 1, length - 1) + y.narrow(d, 0, length - 1)
    if x is None:
        return pairs / 2 * dx
    if x.dim() == 1:
        steps = x[1:] - x[:-1]
        shape = [1] * y.dim()
        shape[d] = steps.shape[0]
        steps = steps.reshape(shape)
    else:
        steps = diff(x, 1, d - y.dim(), None, None)
    # the spacing times the pair first, then halved (exact): integer samples promote
    # with the spacing's dtype, as in PyTorch
    return steps * pairs / 2


def _trapezoid_args(op, y, x, dim):
    d = wrap_dim(op, "dim", dim, y.dim())
    # (trapezoid of no samples is 0 before PyTorch looks at x; cumulative_trapezoid checks)
    checked = not (op == "trapezoid" and y.shape[d] == 0)
    if checked and x is not None and x.dim() == 1 and x.shape[0] != y.shape[d]:
        raise ShapeError(f"{op}(): There must be one `x` value for each sample point, but "
                         f"got {x.shape[0]} for 'x' and {y.shape[d]} samples along dim {d}",
                         op=op, arg="x")
    for name, t in (("y", y), ("x", x)):
        if t is not None and t.dtype is dt.bool:
            which = "`y`" if x is None else "`x` or `y`"
            raise DTypeError(f"{op}(): received a bool input for {which}, but bool is not "
                             f"supported (argument '{name}')", op=op, arg=name)
    # integers integrate in the default float, unless floating sample points x are given:
    # then (as PyTorch's x * (y[i] + y[i+1])) the integers promote with x's dtype (a
    # bfloat16 x gives a bfloat16 result)
    if not y.dtype.is_differentiable and (x is None or not x.dtype.is_differentiable):
        y = y.to(dt.get_default_dtype())
    return y, d


# ---- gradient: finite differences of sampled values -----------------------------------------
def _gradient_checks(self, spacing_len, dims_given, dims, edge_order):
    op = "gradient"
    if spacing_len is not None and not dims_given and spacing_len != self.dim():
        raise ArgumentError(f"{op}(): expected spacing to be unspecified, a scalar, or a list "
                            f"of length equal to 'self.dim() = {self.dim()}', since dim "
                            f"argument was not given, but got a list of length {spacing_len} "
                            f"(argument 'spacing')", op=op, arg="spacing")
    if spacing_len is not None and dims_given and spacing_len != len(dims):
        raise ArgumentError(f"{op}(): expected spacing to be unspecified, a scalar or it's "
                            f"spacing and dim arguments to have the same length, but got a "
                            f"spacing argument of length {spacing_len} and a dim argument of "
                            f"length {len(dims)} (argument 'spacing')", op=op, arg="spacing")
    if edge_order not in (1, 2):
        raise ArgumentError(f"{op}(): only supports edge_order=1 and edge_order=2, got "
                            f"{edge_order} (argument 'edge_order')", op=op, arg="edge_order")
    if self.dtype in (dt.uint8, dt.bool):
        raise DTypeError(f"{op}(): only supports dtypes float, double, long, int, short and "
                         f"int8, got {self.dtype.name} (argument 'self')", op=op, arg="self")
    wrapped = wrap_dims(op, "dim", dims, self.dim())
    for d in wrapped:
        if self.dim() == 0 or self.shape[d] < edge_order + 1:
            raise ShapeError(f"{op}(): expected each dimension size to be at least "
                             f"edge_order+1 ({edge_order + 1}), but dim {d} of 'self' (shape "
                             f"{fmt_shape(self.shape)}) is smaller", op=op, arg="self")
    return wrapped


def _uniform_gradient(self, d, h, edge_order):
    """Samples h apart: (y[i+1] - y[i-1]) / 2h inside; at the ends the one-sided first
    (edge_order 1) or second order (2: -1.5 y0 + 2 y1 - 0.5 y2) differences."""
    n = self.shape[d]

    def s(start, length):
        return self.narrow(d, start, length)
    middle = (s(2, n - 2) - s(0, n - 2)) / h / 2
    if edge_order == 1:
        first = (s(1, 1) - s(0, 1)) / h
        last = (s(n - 1, 1) - s(n - 2, 1)) / h
    else:
        first = (s(0, 1) * -1.5 + s(1, 1) * 2 - s(2, 1) * 0.5) / h
        last = (s(n - 3, 1) * 0.5 + s(n - 2, 1) * -2 + s(n - 1, 1) * 1.5) / h
    return F.cat([first, middle, last], d)


def _coordinate_gradient(self, d, x, edge_order):
    """Samples at the coordinates x (1-D, one per sample): the second-order accurate
    weights of uneven steps h1 = x[i] - x[i-1], h2 = x[i+1] - x[i] (PyTorch's, NumPy's):

        y'[i] = (-h2 / (h1 (h1 + h2))) y[i-1] + ((h2 - h1) / (h1 h2)) y[i]
                + (h1 / (h2 (h1 + h2))) y[i+1]"""
    n = self.shape[d]
    shape = [1] * self.dim()
    shape[d] = -1

    def s(start, length):
        return self.narrow(d, start, length)
    h = x[1:] - x[:-1]
    h1, h2 = h[:-1], h[1:]
    a = (-h2 / (h1 * (h1 + h2))).reshape(shape)
    b = ((h2 - h1) / (h1 * h2)).reshape(shape)
    c = (h1 / (h2 * (h1 + h2))).reshape(shape)
    middle = a * s(0, n - 2) + b * s(1, n - 2) + c * s(2, n - 2)
    if edge_order == 1:
        first = (s(1, 1) - s(0, 1)) / h[0]
        last = (s(n - 1, 1) - s(n - 2, 1)) / h[-1]
    else:
        h0, h1_ = h[0], h[1]
        first = (-(2.0 * h0 + h1_) / (h0 * (h0 + h1_)) * s(0, 1)
                 + (h0 + h1_) / (h0 * h1_) * s(1, 1) - h0 / (h1_ * (h0 + h1_)) * s(2, 1))
        hl, hm = h[-1], h[-2]
        last = (hl / (hm * (hl + hm)) * s(n - 3, 1) - (hl + hm) / (hl * hm) * s(n - 2, 1)
                + (2 * hl + hm) / (hl * (hl + hm)) * s(n - 1, 1))
    return F.cat([first, middle, last], d)


def _gradient(self, spacing, dim, edge_order, spacing_len=None):
    """`spacing`: None (1 everywhere), a number, or a list (numbers or coordinate
    tensors), one per dim of `dim` (all dims when dim is None)."""
    dims_given = dim is not None
    dims = list(range(self.dim())) if dim is None else [dim] if isinstance(dim, int) \
        else list(dim)
    dims = _gradient_checks(self, spacing_len, dims_given, dims, edge_order)
    if spacing is None or not isinstance(spacing, (list, tuple)):
        spacing = [1 if spacing is None else spacing] * len(dims)
    # An integer self is not cast first: its differences divided by the spacing promote
    # as PyTorch's do (by a number: the default dtype; by float16 coordinates: float16)
    out = []
    for d, h in zip(dims, spacing):
        if isinstance(h, Tensor):
            if h.dim() != 1 or h.shape[0] != self.shape[d]:
                raise ShapeError(f"gradient(): expected each tensor of 'spacing' to be 1-D "
                                 f"with one coordinate per sample ({self.shape[d]} along dim "
                                 f"{d}), got shape {fmt_shape(h.shape)}", op="gradient",
                                 arg="spacing")
            out.append(_coordinate_gradient(self, d, h, edge_order))
        else:
            out.append(_uniform_gradient(self, d, h, edge_order))
    return tuple(out)


def gradient_scalarint(self, spacing, dim, edge_order):
    return _gradient(self, spacing, dim, edge_order)


def gradient_scalararray(self, spacing, dim, edge_order):
    return _gradient(self, spacing, dim, edge_order)


def gradient_array(self, dim, edge_order):
    return _gradient(self, None, dim, edge_order)


def gradient_scalarrayint(self, spacing, dim, edge_order):
    return _gradient(self, list(spacing), dim, edge_order, len(spacing))


def gradient_scalarrayarray(self, spacing, dim, edge_order):
    return _gradient(self, list(spacing), dim, edge_order, len(spacing))


def gradient_tensorarrayint(self, spacing, dim, edge_order):
    return _gradient(self, list(spacing), dim, edge_order, len(spacing))


def gradient_tensorarray(self, spacing, dim, edge_order):
    return _gradient(self, list(spacing), dim, edge_order, len(spacing))
