"""tp.linalg's norms, cdist, dist and inner, composed of the `norm` reduction (whose
backward is in derivatives.yaml), abs/sum/amax and tensordot.

    vector_norm(x, ord)      the ord-norm of the elements over dim (all by default)
    matrix_norm(A, ord)      'fro', or the induced 1 / -1 / inf / -inf norms
    norm(A, ord, dim)        vector_norm or matrix_norm, chosen as PyTorch chooses
    cdist(x1, x2, p)         the p-norm distance between every row pair

The spectral norms (ord=2, -2, 'nuc') need singular values, which TensorPlay does not
compute; they raise an error that says so rather than returning something else.
"""
from __future__ import annotations

import math

from tensorplay._frontdoor import wrap_dim
from tensorplay._generated import functional as F
from tensorplay.errors import ArgumentError, DTypeError, ShapeError


def _check_floating(op, self, dtype):
    if not (dtype or self.dtype).is_floating_point:
        raise DTypeError(f"{op}(): Expected a floating point tensor as input. Got "
                         f"{self.dtype.name} (argument 'self')", op=op, arg="self")


def linalg_vector_norm(self, ord, dim, keepdim, dtype):
    _check_floating("linalg_vector_norm", self, dtype)
    if dtype is not None:
        self = self.to(dtype)
    if dim is not None and len(dim) == 0:
        dim = None
    return F.norm(self, ord, dim, keepdim)


def _matrix_dims(op, self, dim):
    if len(dim) != 2:
        raise ArgumentError(f"{op}(): dim must be a 2-tuple. Got {list(dim)}", op=op,
                            arg="dim")
    if self.dim() < 2:
        raise ShapeError(f"{op}(): The input tensor A must have at least 2 dimensions "
                         f"(argument 'self' is {self.dim()}-D).", op=op, arg="self")
    d0, d1 = (wrap_dim(op, "dim", d, self.dim()) for d in dim)
    if d0 == d1:
        raise ArgumentError(f"{op}(): dims must be different. Got ({dim[0]}, {dim[1]})", op=op,
                            arg="dim")
    return d0, d1


def _matrix_norm(self, ord, dim, keepdim, dtype):
    op = "linalg_matrix_norm"
    _check_floating(op, self, dtype)
    if dtype is not None:
        self = self.to(dtype)
    d0, d1 = _matrix_dims(op, self, dim)
    if ord == "fro":
        return F.norm(self, 2, [d0, d1], keepdim)
    if ord in (1, -1, math.inf, -math.inf):
        # 1: the largest column sum of |A| (sum over rows d0); inf: the largest row sum.
        inner, outer = (d0, d1) if abs(ord) == 1 else (d1, d0)
        sums = self.abs().sum([inner], True)
        out = sums.amax([outer], True) if ord > 0 else sums.amin([outer], True)
        return out if keepdim else out.squeeze(max(d0, d1)).squeeze(min(d0, d1))
    if ord in (2, -2, "nuc"):
        raise ArgumentError(f"{op}(): argument 'ord'={ord!r} needs the singular values of A, "
                            f"which TensorPlay does not compute (use 'fro', 1, -1, inf or "
                            f"-inf)", op=op, arg="ord")
    raise ArgumentError(f"{op}(): Order {ord} not supported (argument 'ord').", op=op,
                        arg="ord")


def linalg_matrix_norm(self, ord, dim, keepdim, dtype):
    return _matrix_norm(self, ord, dim, keepdim, dtype)


def linalg_matrix_norm_str(self, ord, dim, keepdim, dtype):
    if ord not in ("fro", "nuc"):
        raise ArgumentError(f"linalg_matrix_norm(): Order {ord} not supported (argument "
                            f"'ord').", op="linalg_matrix_norm", arg="ord")
    return _matrix_norm(self, ord, dim, keepdim, dtype)


def linalg_norm(self, ord, dim, keepdim, dtype):
    """A vector norm over one dim (or over all elements when ord and dim are both None), a
    matrix norm over two; with dim None and an ord, self must be 1-D or 2-D."""
    op = "linalg_norm"
    if dim is not None and len(dim) not in (1, 2):
        raise ArgumentError(f"{op}(): If dim is specified, it must be of length 1 or 2. Got "
                            f"{list(dim)}", op=op, arg="dim")
    if ord is not None and dim is None and self.dim() not in (1, 2):
        raise ShapeError(f"{op}(): If dim is not specified but ord is, the input must be 1D "
                         f"or 2D. Got {self.dim()}D (argument 'self').", op=op, arg="self")
    matrix = (dim is not None and len(dim) == 2) or (dim is None and ord is not None
                                                    and self.dim() == 2)
    if matrix:
        return _matrix_norm(self, "fro" if ord is None else ord,
                            dim if dim is not None else [-2, -1], keepdim, dtype)
    return linalg_vector_norm(self, 2 if ord is None else ord, dim, keepdim, dtype)


def linalg_norm_str(self, ord, dim, keepdim, dtype):
    op = "linalg_norm"
    if dim is not None and len(dim) != 2:
        raise ArgumentError(f"{op}(): If dim is specified, it must be of length 1 or 2. Got "
                            f"{list(dim)}", op=op, arg="dim")
    if dim is None and self.dim() != 2:
        raise ShapeError(f"{op}(): If dim is not specified but ord is, the input must be 1D "
                         f"or 2D. Got {self.dim()}D (argument 'self').", op=op, arg="self")
    return linalg_matrix_norm_str(self, ord, dim if dim is not None else [-2, -1], keepdim,
                                  dtype)


def cdist(x1, x2, p, compute_mode):
    """out[..., i, j] = ||x1[..., i, :] - x2[..., j, :]||_p over broadcast batch dims.

    NOTE: computed from the differences, which is exact; PyTorch's default switches to
    a matrix product for p=2 above 25 rows, faster but less accurate. NaN follows
    PyTorch's cdist kernel, not norm(): p=0 sums min(ceil(|d|), 1), so a NaN gives NaN;
    p=inf keeps a running max from 0 that a NaN never replaces (all NaN gives 0). The
    gradient is derivatives.yaml's cdist_backward."""
    op = "cdist"
    if x1.dim() < 2 or x2.dim() < 2:
        which, t = ("x1", x1) if x1.dim() < 2 else ("x2", x2)
        raise ShapeError(f"cdist(): only supports at least 2D tensors, {which.upper()} got: "
                         f"{t.dim()}D (argument '{which}')", op=op, arg=which)
    if x1.shape[-1] != x2.shape[-1]:
        raise ShapeError(f"cdist(): X1 and X2 must have the same number of columns. X1: "
                         f"{x1.shape[-1]} X2: {x2.shape[-1]} (argument 'x2')", op=op, arg="x2")
    if p < 0:
        raise ArgumentError(f"cdist(): only supports non-negative p values, but got {p}",
                            op=op, arg="p")
    if not x1.is_floating_point() or not x2.is_floating_point():
        raise DTypeError(f"cdist(): only supports floating-point dtypes, X1 got: "
                         f"{x1.dtype.name}, X2 got: {x2.dtype.name}", op=op, arg="x1")
    if x1.dtype != x2.dtype:
        raise DTypeError(f"cdist(): expected x1 and x2 of one dtype, but got "
                         f"{x1.dtype.name} and {x2.dtype.name} (argument 'x2')", op=op,
                         arg="x2")
    d = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    if d.shape[-1] == 0:
        return F.sum(d, [-1])       # no coordinates: every distance is 0
    if p == 0:
        return F.sum(F.clamp_max(F.ceil(F.abs(d)), 1), [-1])
    if math.isinf(p):
        a = F.abs(d)
        return F.clamp_min(F.amax(F.where(F.isnan(a), 0, a), [-1]), 0)
    return F.norm(d, p, [-1], False)


def dist(self, other, p):
    """The p-norm of self - other (broadcast), over all elements."""
    if not self.is_floating_point() or not other.is_floating_point():
        raise DTypeError(f"dist(): input dtype should be floating point, but got "
                         f"{self.dtype.name} and {other.dtype.name} (argument 'self')",
                         op="dist", arg="self")
    return F.norm(self - other, p)


def inner(self, other):
    """Sum over the last dims of both: a dot product for vectors, self @ other.T for
    matrices (a 0-dim operand multiplies)."""
    if self.dim() == 0 or other.dim() == 0:
        return self * other
    if self.shape[-1] != other.shape[-1]:
        raise ShapeError(f"inner(): inner() the last dimension must match on both input "
                         f"tensors but got shapes {list(self.shape)} and "
                         f"{list(other.shape)} (argument 'other')", op="inner", arg="other")
    return F.tensordot(self, other, [self.dim() - 1], [other.dim() - 1])
