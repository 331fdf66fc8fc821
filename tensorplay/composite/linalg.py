"""Linear algebra written with other ops: matmul with NumPy/PyTorch rank rules (mm, bmm),
norms, trace, kron, and tp.linalg's raising forms and products."""
from __future__ import annotations

import math

from tensorplay import _creation
from tensorplay._frontdoor import wrap_dim
from tensorplay._generated import functional as F
from tensorplay.composite.views import make_view
from tensorplay.errors import ArgumentError, DimError, DTypeError, fmt_shape, ShapeError
from tensorplay.kernel_support.checks import broadcast
from tensorplay.meta.linalg import check_rank, check_square


def matmul(self, other):
    a, b = self.dim(), other.dim()
    if a == 0 or b == 0:
        arg = "self" if a == 0 else "other"
        raise ShapeError(f"matmul(): both arguments need at least 1 dimension, but got "
                         f"{a}D and {b}D tensors (argument '{arg}' is 0-D)", op="matmul", arg=arg)
    if a == 1 and b == 1:
        if self.shape[0] != other.shape[0]:
            raise ShapeError(f"matmul(): 1D tensors expected to have the same size, but got "
                             f"{self.shape[0]} ('self') and {other.shape[0]} ('other')",
                             op="matmul", arg="other")
        return self.unsqueeze(0).mm(other.unsqueeze(1)).view(())
    if a == 2 and b == 2:
        return self.mm(other)
    if a == 1 and b == 2:
        return self.unsqueeze(0).mm(other).squeeze(0)
    if a == 2 and b == 1:
        return self.mm(other.unsqueeze(1)).squeeze(1)
    # Batched: move vectors to matrices, broadcast the batch dims, flatten them for bmm.
    x = self.unsqueeze(0) if a == 1 else self
    y = other.unsqueeze(-1) if b == 1 else other
    if x.shape[-1] != y.shape[-2]:
        raise ShapeError(f"matmul(): shapes {fmt_shape(self.shape)} ('self') and "
                         f"{fmt_shape(other.shape)} ('other') cannot be multiplied "
                         f"({x.shape[-1]} vs {y.shape[-2]})", op="matmul", arg="other")
    batch = broadcast("matmul", [("self", tuple(x.shape[:-2])), ("other", tuple(y.shape[:-2]))])
    n, k, m = x.shape[-2], x.shape[-1], y.shape[-1]
    size = 1
    for s in batch:
        size *= s
    x3 = x.expand(batch + (n, k)).reshape((size, n, k))
    y3 = y.expand(batch + (k, m)).reshape((size, k, m))
    out = x3.bmm(y3).view(batch + (n, m))
    if a == 1:
        out = out.squeeze(-2)
    if b == 1:
        out = out.squeeze(-1)
    return out


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


def outer(self, vec2):
    """out[i, j] = self[i] * vec2[j]."""
    check_rank("outer", "self", self, (1,), "a vector (1-D)")
    check_rank("outer", "vec2", vec2, (1,), "a vector (1-D)")
    return self.unsqueeze(1) * vec2.unsqueeze(0)


def tensordot(self, other, dims_self, dims_other):
    """Contract dims_self of self with dims_other of other: move them last (first), flatten
    to two matrices and multiply, as PyTorch does."""
    if len(dims_self) != len(dims_other):
        raise ShapeError(f"tensordot(): arguments 'dims_self' and 'dims_other' must have the "
                         f"same length, but got {list(dims_self)} and {list(dims_other)}",
                         op="tensordot", arg="dims_other")
    da = [wrap_dim("tensordot", "dims_self", d, self.dim()) for d in dims_self]
    db = [wrap_dim("tensordot", "dims_other", d, other.dim()) for d in dims_other]
    for a, b in zip(da, db):
        if self.shape[a] != other.shape[b]:
            raise ShapeError(f"tensordot(): contracted dimensions need to match, but dim {a} "
                             f"of 'self' has size {self.shape[a]} and dim {b} of 'other' has "
                             f"size {other.shape[b]} (argument 'dims_other')",
                             op="tensordot", arg="dims_other")
    keep_a = [d for d in range(self.dim()) if d not in da]
    keep_b = [d for d in range(other.dim()) if d not in db]
    k = 1
    for d in da:
        k *= self.shape[d]
    a = self.permute(keep_a + da).reshape([-1 if keep_a else 1, k])
    b = other.permute(db + keep_b).reshape([k, -1 if keep_b else 1])
    sizes = [self.shape[d] for d in keep_a] + [other.shape[d] for d in keep_b]
    return a.mm(b).reshape(sizes)


def tensordot_dims(self, other, dims):
    if dims < 0 or dims > min(self.dim(), other.dim()):
        raise ShapeError(f"tensordot(): argument 'dims' ({dims}) must be between 0 and the "
                         f"smaller rank of 'self' ({self.dim()}) and 'other' ({other.dim()})",
                         op="tensordot", arg="dims")
    return tensordot(self, other, list(range(self.dim() - dims, self.dim())),
                     list(range(dims)))


def diagonal(self, offset, dim1, dim2):
    """A view of the diagonal `offset` of the (dim1, dim2) planes, appended as the last dim.

    Stepping along a diagonal moves one step in both dims: its stride is the sum of their
    strides, and it starts `offset` columns right (or -offset rows down)."""
    impl = self._impl
    n = len(impl.sizes)
    d1 = wrap_dim("diagonal", "dim1", dim1, n)
    d2 = wrap_dim("diagonal", "dim2", dim2, n)
    if d1 == d2:
        raise DimError(f"diagonal(): arguments 'dim1' and 'dim2' cannot be identical, but got "
                       f"{dim1} and {dim2}", op="diagonal", arg="dim2")
    s1, s2 = impl.sizes[d1], impl.sizes[d2]
    length = max(0, min(s1, s2 - offset) if offset >= 0 else min(s1 + offset, s2))
    start = impl.offset
    if length > 0:
        start += offset * impl.strides[d2] if offset >= 0 else -offset * impl.strides[d1]
    keep = [d for d in range(n) if d not in (d1, d2)]
    sizes = [impl.sizes[d] for d in keep] + [length]
    strides = [impl.strides[d] for d in keep] + [impl.strides[d1] + impl.strides[d2]]
    return make_view(self, sizes, strides, start)


def trace(self):
    if self.dim() != 2:
        raise ShapeError(f"trace(): argument 'self' must be a matrix (2-D), but got "
                         f"{self.dim()}-D shape {fmt_shape(self.shape)}", op="trace", arg="self")
    return F.sum(self.diagonal())


def kron(self, other):
    """out[i0*b0 + j0, i1*b1 + j1, ...] = self[i0, i1, ...] * other[j0, j1, ...]: interleave
    the dims of both (self's then other's, pairwise) and merge each pair.

    As in PyTorch, the operands multiplied are `_unsafe_view`s of self and other (PyTorch
    gets contiguous ones; we make them so): the product saves them, not views, so writing
    into self or other after kron does not make backward raise."""
    n = max(self.dim(), other.dim())
    a_sizes, b_sizes = [], []
    for d in range(n):
        a_sizes += [self.shape[d - n + self.dim()] if d >= n - self.dim() else 1, 1]
        b_sizes += [1, other.shape[d - n + other.dim()] if d >= n - other.dim() else 1]
    a = F._unsafe_view(self.contiguous(), a_sizes)    # a: [a0, 1, a1, 1, ...]
    b = F._unsafe_view(other.contiguous(), b_sizes)   # b: [1, b0, 1, b1, ...]
    return F._unsafe_view(a * b, [a_sizes[2 * d] * b_sizes[2 * d + 1] for d in range(n)])


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
        return _spectral_norm(self, ord, d0, d1, keepdim)
    raise ArgumentError(f"{op}(): Order {ord} not supported (argument 'ord').", op=op,
                        arg="ord")


def _spectral_norm(self, ord, d0, d1, keepdim):
    """2: the largest singular value, -2: the smallest, 'nuc': their sum (PyTorch's: the
    two dims moved last, svdvals, and moved back with keepdim)."""
    perm = [d for d in range(self.dim()) if d not in (d0, d1)] + [d0, d1]
    s = F.linalg_svdvals(self.permute(perm))
    if ord == "nuc":
        out = s.sum([-1], keepdim)
    else:
        out = s.amax([-1], keepdim) if ord > 0 else s.amin([-1], keepdim)
    if keepdim:
        out = out.unsqueeze(-1).permute([perm.index(d) for d in range(len(perm))])
    return out


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




# ---- inverses, determinants, factorizations: the forms that raise --------------------
# Each checks its input under its own name, then runs the `_ex` kernel with check_errors,
# which raises LinAlgError for a bad matrix as PyTorch's does (a read of LAPACK's info:
# under vmap, of the whole physical batch).
def linalg_inv(A):
    check_square("linalg_inv", A)
    return F.linalg_inv_ex(A, check_errors=True)[0]


def inverse(self):
    check_square("inverse", self, "self")
    return F.linalg_inv_ex(self, check_errors=True)[0]


def slogdet(self):
    check_square("slogdet", self, "self")
    return F.linalg_slogdet(self)


def logdet(self):
    """log det A: nan where the determinant is negative (PyTorch's, real case)."""
    check_square("logdet", self, "self")
    sign, logabsdet = F.linalg_slogdet(self)
    return F.where(sign == -1, math.nan, logabsdet)


def linalg_cholesky(A, upper):
    check_square("linalg_cholesky", A)
    return F.linalg_cholesky_ex(A, upper=upper, check_errors=True)[0]


def cholesky(self, upper):
    check_square("cholesky", self, "self")
    return F.linalg_cholesky_ex(self, upper=upper, check_errors=True)[0]


# ---- tp.linalg's products --------------------------------------------------------------
def linalg_matmul(self, other):
    return F.matmul(self, other)


def linalg_diagonal(A, offset, dim1, dim2):
    return F.diagonal(A, offset, dim1, dim2)


def linalg_vecdot(x, y, dim):
    """The dot product of vectors along `dim` (x conjugated, once complex numbers exist)."""
    for name, t in (("x", x), ("y", y)):
        if not t.dtype.is_floating_point:
            raise DTypeError(f"linalg_vecdot(): expected a floating point tensor as input "
                             f"('{name}'), but got {t.dtype.name}", op="linalg_vecdot",
                             arg=name)
    if x.dtype is not y.dtype:
        raise DTypeError(f"linalg_vecdot(): expected 'x' and 'y' to have the same dtype, but "
                         f"got {x.dtype.name} and {y.dtype.name}", op="linalg_vecdot", arg="y")
    return F.sum(x * y, dim)


def linalg_matrix_power(self, n):
    return _matrix_power("linalg_matrix_power", self, n)


def matrix_power(self, n):
    return _matrix_power("matrix_power", self, n)


def _matrix_power(op, A, n):
    """A^n by repeated squaring, in PyTorch's order of products (so its rounding too); n < 0
    is the inverse's power, n = 0 the identity."""
    if A.dim() < 2 or A.shape[-1] != A.shape[-2]:
        raise ShapeError(f"{op}(): 'self' must be batches of square matrices, but got shape "
                         f"{fmt_shape(A.shape)}", op=op, arg="self")
    if n == 0:
        # the identity written over a copy of A: recorded (its gradient is zero), as PyTorch's
        eye = _creation.eye(A.shape[-1], dtype=A.dtype, device=A.device)
        return A.clone().copy_(eye.expand(A.shape))
    if n < 0:
        check_square(op, A, "self")
        A, n = linalg_inv(A), -n
    if n == 1:
        return A.clone()
    if n == 2:
        return A.matmul(A)
    if n == 3:
        return A.matmul(A).matmul(A)
    square = result = None
    while n > 0:
        bit, n = n % 2, n // 2
        square = A if square is None else square.matmul(square)
        if bit:
            result = square if result is None else result.matmul(square)
    return result


def linalg_multi_dot(tensors):
    """The product of a chain of matrices in the cheapest order (PyTorch's choice: the
    rule for three, the dynamic program for more); a first or last 1-D tensor is a row or
    a column vector, and its dim is dropped from the result."""
    op, n = "linalg_multi_dot", len(tensors)
    if n < 2:
        raise ArgumentError(f"{op}(): expected at least 2 tensors in 'tensors' but got {n}",
                            op=op, arg="tensors")
    first, last = tensors[0].dim(), tensors[-1].dim()
    for i, t in enumerate(tensors):
        allowed = (1, 2) if i in (0, n - 1) else (2,)
        if t.dim() not in allowed:
            which = "first" if i == 0 else "last" if i == n - 1 else f"tensor {i}"
            raise ShapeError(f"{op}(): the {which} tensor must be "
                             f"{'1D or 2D' if len(allowed) == 2 else '2D'} but got "
                             f"{t.dim()}D ('tensors')", op=op, arg="tensors")
        if t.dtype is not tensors[0].dtype:
            raise DTypeError(f"{op}(): all tensors must have the same dtype, but tensor 0 is "
                             f"{tensors[0].dtype.name} and tensor {i} is {t.dtype.name} "
                             f"('tensors')", op=op, arg="tensors")
    chain = list(tensors)
    if first == 1:
        chain[0] = chain[0].unsqueeze(0)
    if last == 1:
        chain[-1] = chain[-1].unsqueeze(-1)
    for i in range(n - 1):
        if chain[i].shape[-1] != chain[i + 1].shape[0]:
            raise ShapeError(f"{op}(): tensors {i} and {i + 1} with shapes "
                             f"{fmt_shape(tensors[i].shape)} and "
                             f"{fmt_shape(tensors[i + 1].shape)} cannot be multiplied "
                             f"('tensors')", op=op, arg="tensors")
    result = _chain_product(chain)
    if first == 1 and last == 1:
        return result.view(())
    if first == 1:
        return result.squeeze(0)
    return result.squeeze(-1) if last == 1 else result


def _chain_product(chain):
    n = len(chain)
    if n == 2:
        return chain[0].mm(chain[1])
    dims = [chain[0].shape[0]] + [t.shape[1] for t in chain]
    if n == 3:
        a, b, c, d = dims
        if a * c * (b + d) > b * d * (a + c):       # (AB)C costs more than A(BC)
            return chain[0].mm(chain[1].mm(chain[2]))
        return chain[0].mm(chain[1]).mm(chain[2])
    # cost[i][j]: the fewest multiplications for chain[i..j]; split[i][j]: where it splits
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k

    def product(i, j):
        if i == j:
            return chain[i]
        k = split[i][j]
        return product(i, k).mm(product(k + 1, j))
    return product(0, n - 1)
