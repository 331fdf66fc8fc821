"""Linear algebra written with other ops: matmul with NumPy/PyTorch rank rules (mm, bmm),
norms, trace, kron, tp.linalg's raising forms and products, and the remaining composites
(cross, vander, tensorinv, tensorsolve, chain_matmul, addr, ger, matrix_exp's forms)."""
from __future__ import annotations

import math
import os
import sys
import warnings

from tensorplay import _creation, _dtype as dt
from tensorplay._frontdoor import wrap_dim
from tensorplay._memory_format import contiguous_format
from tensorplay._generated import functional as F
from tensorplay.composite.views import make_view
from tensorplay.errors import (
    ArgumentError, DimError, DTypeError, fmt_shape, LinAlgError, ShapeError,
)
from tensorplay.kernel_support.checks import broadcast
from tensorplay.meta import linalg as linalg_rules
from tensorplay.meta.linalg import check_matrix_exp, check_rank, check_square
from tensorplay.meta.reduction import check_norm_dtype


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
    if a >= 3 and b <= 2 and _should_fold(self, other):
        # PyTorch's fold: a batch of matrices times one matrix (or vector) is one mm of
        # the batch's rows, (B * n, k) @ (k, m). One large BLAS call instead of B small
        # ones (a linear layer's input gradient on a (batch, seq, features) input, an
        # RNN's input projection over (steps, batch, features): 2-3x faster here).
        y = other.unsqueeze(-1) if b == 1 else other
        if self.shape[-1] != y.shape[0]:
            raise ShapeError(f"matmul(): shapes {fmt_shape(self.shape)} ('self') and "
                             f"{fmt_shape(other.shape)} ('other') cannot be multiplied "
                             f"({self.shape[-1]} vs {y.shape[0]})", op="matmul",
                             arg="other")
        lead = tuple(self.shape[:-1])
        rows = 1
        for s in lead:
            rows *= s
        folded = F._unsafe_view(self.reshape((rows, self.shape[-1])).mm(y),
                                lead + (y.shape[1],))
        return folded.squeeze(-1) if b == 1 else folded
    # Batched: move vectors to matrices, broadcast the batch dims, flatten them for bmm.
    x = self.unsqueeze(0) if a == 1 else self
    y = other.unsqueeze(-1) if b == 1 else other
    if x.shape[-1] != y.shape[-2]:
        raise ShapeError(f"matmul(): shapes {fmt_shape(self.shape)} ('self') and "
                         f"{fmt_shape(other.shape)} ('other') cannot be multiplied "
                         f"({x.shape[-1]} vs {y.shape[-2]})", op="matmul", arg="other")
    if a <= 2 and b >= 3 and (self.requires_grad
                              or (a == 1 and _should_fold(other.mT, self))):
        return _fold_transposed(self, other)
    batch = broadcast("matmul", [("self", tuple(x.shape[:-2])), ("other", tuple(y.shape[:-2]))])
    n, k, m = x.shape[-2], x.shape[-1], y.shape[-1]
    size = 1
    for s in batch:
        size *= s
    x3 = x.expand(batch + (n, k)).reshape((size, n, k))
    y3 = y.expand(batch + (k, m)).reshape((size, k, m))
    # `_unsafe_view`, as PyTorch's matmul: the result is not a view of the bmm's output
    # (a view would make an in-place op on it rewrite that output's history, and inside a
    # kernel, pinv's, a view of a temporary that autograd never saw)
    out = F._unsafe_view(x3.bmm(y3), batch + (n, m))
    if a == 1:
        out = out.squeeze(-2)
    if b == 1:
        out = out.squeeze(-1)
    return out


def _fold_transposed(self, other):
    """PyTorch's fold the other way round: a vector or matrix `self` times a stack
    `other` (3-D or more) is (other^T folded to rows) @ self^T, transposed back; taken
    when self requires grad (its gradient is one mm) or, for a vector self, on
    _should_fold's terms. The fold reshapes other^T, a copy where its rows do not merge,
    so its backward saves that copy rather than `other`, as PyTorch's does (an in-place
    write to `other` after the call leaves the backward working)."""
    t1 = other.mT                                     # (..., m, k)
    lead = tuple(t1.shape[:-1])
    rows = 1
    for s in lead:
        rows *= s
    t1_folded = t1.reshape((rows, t1.shape[-1]))
    if self.dim() == 1:
        return F._unsafe_view(t1_folded.mv(self), lead)
    out = F._unsafe_view(t1_folded.mm(self.t()), lead + (self.shape[0],))
    return out.mT.contiguous()


def linear_backward(grad_output, input, weight, output_mask):  # noqa: A002
    """_linear_backward composed of mm and sum, the batch dims flattened into rows (the
    CPU kernel's formulas, cpu_kernels/linalg.py) for the backends without a kernel."""
    specs = linalg_rules.linear_backward("_linear_backward",
                                         (grad_output, input, weight, output_mask))
    g = _rows(grad_output)
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        grad_input = g.mm(weight.conj()).reshape(specs[0].sizes)
    if output_mask[1]:
        grad_weight = g.transpose(0, 1).mm(_rows(input).conj())
    if output_mask[2]:
        grad_bias = g.sum(0)
    return grad_input, grad_weight, grad_bias


def _rows(t):
    """t as a (rows, last dim) matrix. The row count is computed, not reshape's -1, which
    an empty last dim (in_features or out_features 0) leaves ambiguous and refuses."""
    return t.reshape((math.prod(t.shape[:-1]), t.shape[-1]))


def _should_fold(self, other):
    """PyTorch's should_fold for a stack `self` (3-D or more) times a matrix or vector:
    fold when `other` requires grad (its gradient is then one mm too), when self is
    empty, or when self's leading dims merge without a copy (each stride the next one's
    times its size); otherwise the bmm, which reads self as it is."""
    if other.requires_grad or self.numel() == 0:
        return True
    sizes, strides = self.shape, self.stride()
    return all(strides[i] == strides[i + 1] * sizes[i + 1] for i in range(len(sizes) - 2))


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
    """A norm's input is floating or complex (its norm is real); dtype=, the dtype it
    computes in, is complex exactly when the input is (reduction.check_norm_dtype)."""
    if not self.dtype.is_differentiable:
        raise DTypeError(f"{op}(): Expected a floating point or complex tensor as input. Got "
                         f"{self.dtype.name} (argument 'self')", op=op, arg="self")
    check_norm_dtype(op, self, dtype)


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
        # Each reduction drops its dim unless keepdim (PyTorch's order: a squeeze after
        # would make the result a view, which detach_() then refuses, fuzz seed 10012316)
        sums = self.abs().sum([inner], keepdim)
        if not keepdim and inner < outer:
            outer -= 1
        if ord > 0 and sums.shape[outer] == 0:
            # the largest of no sums: 0, a constant as PyTorch gives it (no graph; its
            # amin of none still raises)
            return sums.sum([outer], keepdim).detach()
        return sums.amax([outer], keepdim) if ord > 0 else sums.amin([outer], keepdim)
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
    elif ord > 0 and s.shape[-1] == 0:
        out = s.sum([-1], keepdim).detach()    # no singular values: 0, a constant (PyTorch's)
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
    # (masked_fill, not where(c, nan, x): where's tangent would take the Python number's
    # float64 zero into a 0-dim float32 result's tangent, PyTorch's stays float32)
    return logabsdet.masked_fill(sign == -1, math.nan)


def linalg_cholesky(A, upper):
    check_square("linalg_cholesky", A)
    return F.linalg_cholesky_ex(A, upper=upper, check_errors=True)[0]


def cholesky(self, upper):
    if self.numel() == 0:      # PyTorch's deprecated cholesky returns before its checks
        return self.clone(memory_format=contiguous_format)   # (in the graph, as theirs)
    check_square("cholesky", self, "self")
    return F.linalg_cholesky_ex(self, upper=upper, check_errors=True)[0]


# ---- tp.linalg's products --------------------------------------------------------------
def linalg_matmul(self, other):
    return F.matmul(self, other)


def linalg_diagonal(A, offset, dim1, dim2):
    return F.diagonal(A, offset, dim1, dim2)


def linalg_vecdot(x, y, dim):
    """The dot product of vectors along `dim`: sum(conj(x) * y), x conjugated as in vdot
    (conj of a real tensor is the tensor itself)."""
    for name, t in (("x", x), ("y", y)):
        if not t.dtype.is_differentiable:
            raise DTypeError(f"linalg_vecdot(): expected a floating point or complex tensor as "
                             f"input ('{name}'), but got {t.dtype.name}", op="linalg_vecdot",
                             arg=name)
    if x.dtype is not y.dtype:
        raise DTypeError(f"linalg_vecdot(): expected 'x' and 'y' to have the same dtype, but "
                         f"got {x.dtype.name} and {y.dtype.name}", op="linalg_vecdot", arg="y")
    return F.sum(x.conj() * y, dim)


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
        return A.clone(memory_format=contiguous_format).copy_(eye.expand(A.shape))
    if n == 1:
        return A.clone(memory_format=contiguous_format)   # row-major, as PyTorch's copy
    if n < 0:
        check_square(op, A, "self")
        A, n = linalg_inv(A), -n
        if n == 1:
            return A             # the inverse as LAPACK laid it out, as PyTorch's
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
    return _multi_dot("linalg_multi_dot", tensors)


def _multi_dot(op, tensors, arg="tensors"):
    """The product of a chain of matrices in the cheapest order (PyTorch's choice: the
    rule for three, the dynamic program for more); a first or last 1-D tensor is a row or
    a column vector, and its dim is dropped from the result. (`op` names the caller in
    errors, `arg` its list: linalg_multi_dot's tensors or chain_matmul's matrices.)"""
    n = len(tensors)
    if n < 2:
        raise ArgumentError(f"{op}(): expected at least 2 tensors in '{arg}' but got {n}",
                            op=op, arg=arg)
    first, last = tensors[0].dim(), tensors[-1].dim()
    for i, t in enumerate(tensors):
        allowed = (1, 2) if i in (0, n - 1) else (2,)
        if t.dim() not in allowed:
            which = "first" if i == 0 else "last" if i == n - 1 else f"tensor {i}"
            raise ShapeError(f"{op}(): the {which} tensor must be "
                             f"{'1D or 2D' if len(allowed) == 2 else '2D'} but got "
                             f"{t.dim()}D ('{arg}')", op=op, arg=arg)
        if t.dtype is not tensors[0].dtype:
            raise DTypeError(f"{op}(): all tensors must have the same dtype, but tensor 0 is "
                             f"{tensors[0].dtype.name} and tensor {i} is {t.dtype.name} "
                             f"('{arg}')", op=op, arg=arg)
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
                             f"('{arg}')", op=op, arg=arg)
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


# ---- cross products, Vandermonde matrices, tensor inverses and solves, chains, addr ------
# All written with other ops, so their gradients record themselves (and differentiate
# again): each is a few elementwise products, a reshape around inv/solve, or an mm.
_WARNED = set()      # PyTorch's TORCH_WARN_ONCE: each deprecation warns once per process
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _warn_once(key, message):
    """Warn at the user's line: the first frame outside tensorplay (the dispatcher's frames
    lie between it and the composite)."""
    if key in _WARNED:
        return
    _WARNED.add(key)
    level, frame = 2, sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, UserWarning, stacklevel=level)


def linalg_cross(self, other, dim):
    return _cross("linalg_cross", self, other, dim)


def cross(self, other, dim):
    """PyTorch's older form: with dim=None, the first dim of size 3 of 'self' (deprecated
    there, with a warning once; the values are the same)."""
    if dim is None:
        _warn_once("cross", "Using tp.cross without specifying the dim arg is deprecated "
                   "(as torch.cross is).\nPlease either pass the dim explicitly or simply use "
                   "tp.linalg.cross.\nThe default value of dim will change to agree with that "
                   "of linalg.cross in a future release.")
        dim = next((d for d, size in enumerate(self.shape) if size == 3), None)
        if dim is None:
            raise ShapeError(f"cross(): no dimension of size 3 in input (argument 'self' has "
                             f"shape {fmt_shape(self.shape)})", op="cross", arg="self")
    _check_cross("cross", self, other, dim)
    return F.linalg_cross(self, other, dim=dim)


def _check_cross(op, self, other, dim):
    """The operands' checks, in the caller's name; the dim wrapped."""
    if self.dim() != other.dim():
        raise ShapeError(f"{op}(): inputs must have the same number of dimensions, but "
                         f"'self' is {self.dim()}-D and 'other' is {other.dim()}-D",
                         op=op, arg="other")
    if self.dim() == 0:
        raise DimError(f"{op}(): Dimension specified as {dim} but tensor has no dimensions "
                       f"(argument 'self')", op=op, arg="self")
    d = wrap_dim(op, "dim", dim, self.dim())
    if self.shape[d] != 3 or other.shape[d] != 3:
        raise ShapeError(f"{op}(): inputs dimension {dim} must have length 3. Got "
                         f"{self.shape[d]} ('self') and {other.shape[d]} ('other')", op=op,
                         arg="self" if self.shape[d] != 3 else "other")
    if self.dtype is not other.dtype:
        raise DTypeError(f"{op}(): expected 'self' and 'other' to have the same dtype, but "
                         f"got {self.dtype.name} and {other.dtype.name}", op=op, arg="other")
    if self.dtype is dt.bool:
        raise DTypeError(f"{op}(): not implemented for 'bool' (argument 'self')", op=op,
                         arg="self")
    broadcast(op, [("self", tuple(self.shape)), ("other", tuple(other.shape))])
    return d


def _cross(op, self, other, dim):
    """out_i = self_{i+1} * other_{i+2} - self_{i+2} * other_{i+1} (indices mod 3) along
    `dim`, the batch dims broadcast: the same products and difference as PyTorch's kernel
    (so its rounding and integer wrap-around), each operand rolled along `dim`. roll, mul
    and sub run on every device and dtype; the gradient is derivatives.yaml's (PyTorch's
    formula, which saves the operands themselves, not their rolled copies)."""
    d = _check_cross(op, self, other, dim)
    a1, a2 = self.roll(-1, d), self.roll(-2, d)       # a1[i] = self[i+1], a2[i] = self[i+2]
    b1, b2 = other.roll(-1, d), other.roll(-2, d)
    return a1 * b2 - a2 * b1


def linalg_vander(x, N):
    """Columns x^0, x^1, ..., x^(N-1) along a new last dim: a row of ones and a cumulative
    product (no pow, so a zero in x differentiates as PyTorch's does). Integers become
    int64, as PyTorch's cumprod makes them; floating and complex numbers keep their dtype."""
    op = "linalg_vander"
    if x.dtype is dt.bool or (x.dtype.is_floating_point and x.dtype.itemsize < 4):
        raise DTypeError(f"{op}(): linalg.vander supports floating point, complex, and "
                         f"integer tensors, but got {x.dtype.name} (argument 'x')", op=op,
                         arg="x")
    if x.dim() == 0:
        x = x.unsqueeze(-1)
    n = x.shape[-1] if N is None else N
    if n <= 1:
        raise ArgumentError(f"{op}(): N must be greater than 1 (argument 'N' is {n}"
                            f"{', the size of the last dim of x' if N is None else ''})",
                            op=op, arg="N")
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        x = x.to(dt.int64)
    sizes = list(x.shape)
    powers = F.cumprod(x.unsqueeze(-1).expand(sizes + [n - 1]), -1)
    return F.cat([powers.new_ones(sizes + [1]), powers], -1)


def _raising_as(op, fn, *args, **kwargs):
    """fn(*args) with a LinAlgError of the op it calls reworded as `op`'s own (tensorinv,
    tensorsolve: the matrix PyTorch inverts or solves is theirs, reshaped)."""
    try:
        return fn(*args, **kwargs)
    except LinAlgError as e:
        message = str(e)
        raise LinAlgError(f"{op}(): {message.split('(): ', 1)[-1]}", op=op) from None


def _prod(sizes):
    p = 1
    for s in sizes:
        p *= s
    return p


def linalg_tensorinv(self, ind):
    """The inverse of self read as a matrix: the dims self[:ind] are its rows, self[ind:]
    its columns; the result has the shape self[ind:] + self[:ind] (PyTorch's reshape,
    inv, reshape)."""
    op = "linalg_tensorinv"
    if ind <= 0:
        raise ArgumentError(f"{op}(): Expected a strictly positive integer for 'ind', but got "
                            f"{ind}", op=op, arg="ind")
    if ind > self.dim():
        raise ArgumentError(f"{op}(): 'ind' ({ind}) must be at most the number of dims of "
                            f"'self' ({self.dim()})", op=op, arg="ind")
    rows, cols = list(self.shape[:ind]), list(self.shape[ind:])
    if _prod(cols) != _prod(rows):
        raise ShapeError(f"{op}(): Expected self to satisfy the requirement "
                         f"prod(self.shape[ind:]) == prod(self.shape[:ind]), but got "
                         f"{_prod(cols)} != {_prod(rows)} (argument 'self' has shape "
                         f"{fmt_shape(self.shape)})", op=op, arg="self")
    matrix = self.reshape([_prod(rows), _prod(cols)])
    check_square(op, matrix, "self")
    inverse = _raising_as(op, F.linalg_inv_ex, matrix, check_errors=True)[0]
    return inverse.reshape(cols + rows)


def linalg_tensorsolve(self, other, dims):
    """X with tensordot(self, X, X.dim()) = other: the dims in `dims` move last, self
    becomes a (numel(other), numel(X)) matrix and other a vector (PyTorch's reshape,
    solve, reshape; only the element counts are checked, as PyTorch does)."""
    op = "linalg_tensorsolve"
    for name, t in (("self", self), ("other", other)):
        if not t.dtype.is_floating_point:
            raise DTypeError(f"{op}(): expected a floating point tensor as input ('{name}'), "
                             f"but got {t.dtype.name}", op=op, arg=name)
    if self.dtype is not other.dtype:
        raise DTypeError(f"{op}(): expected 'self' and 'other' to have the same dtype, but "
                         f"got {self.dtype.name} and {other.dtype.name}", op=op, arg="other")
    A = self
    if dims is not None:
        n, k = self.dim(), len(dims)
        A = F.movedim(A, [wrap_dim(op, "dims", d, n) for d in dims], list(range(n - k, n)))
    if other.dim() > A.dim():
        raise ShapeError(f"{op}(): 'other' ({other.dim()}-D) cannot have more dims than "
                         f"'self' ({A.dim()}-D)", op=op, arg="other")
    result_sizes = list(A.shape[other.dim():])
    rows, cols = _prod(other.shape), _prod(result_sizes)
    if rows != cols:
        raise ShapeError(f"{op}(): Expected self to satisfy the requirement "
                         f"prod(self.shape[other.ndim:]) == prod(self.shape[:other.ndim]), "
                         f"but got {cols} != {rows} (argument 'other' has shape "
                         f"{fmt_shape(other.shape)})", op=op, arg="other")
    check_square(op, A.reshape([rows, cols]), "self")
    x = _raising_as(op, F.linalg_solve, A.reshape([rows, cols]), other.flatten())
    return x.reshape(result_sizes)


def chain_matmul(matrices):
    """PyTorch's deprecated form of linalg.multi_dot: matrices only (2-D), one or more."""
    op = "chain_matmul"
    _warn_once(op, "tp.chain_matmul is deprecated (as torch.chain_matmul is, to be removed "
               "in a future PyTorch release). Use tp.linalg.multi_dot instead, which accepts a "
               "list of two or more tensors rather than multiple parameters.")
    for i, t in enumerate(matrices):
        if t.dim() != 2:
            raise ShapeError(f"{op}(): Expected 2-D tensors in 'matrices', but tensor {i} is "
                             f"{t.dim()}-D", op=op, arg="matrices")
    if not matrices:
        raise ArgumentError(f"{op}(): Expected one or more matrices (argument 'matrices' is "
                            f"empty)", op=op, arg="matrices")
    if len(matrices) == 1:
        return matrices[0].clone()
    return _multi_dot(op, matrices, "matrices")


def addr(self, vec1, vec2, beta, alpha):
    return _addr("addr", self, vec1, vec2, beta, alpha)


def addr_(self, vec1, vec2, beta, alpha):
    return _addr("addr_", self, vec1, vec2, beta, alpha)


def _check_addr_scalar(op, dtype, value, name):
    if isinstance(value, bool) and dtype is not dt.bool:
        raise DTypeError(f"{op}(): Boolean {name} only supported for Boolean results "
                         f"(argument '{name}')", op=op, arg=name)
    if not (dtype.is_floating_point or dtype.is_complex) and not isinstance(value, (bool, int)):
        raise DTypeError(f"{op}(): For integral input tensors, argument {name} must not be a "
                         f"floating point number (argument '{name}' is {value!r})", op=op,
                         arg=name)


def _addr(op, self, vec1, vec2, beta, alpha):
    """beta * self + alpha * outer(vec1, vec2): addmm with the vectors as a column and a
    row (one term per element; beta=0 ignores self, nan included, as addmm does). The
    three promote to one dtype, as PyTorch's addr; bool is (beta and self) or (alpha and
    vec1 and vec2)."""
    inplace = op.endswith("_")
    check_rank(op, "vec1", vec1, (1,), "a vector (1-D)")
    check_rank(op, "vec2", vec2, (1,), "a vector (1-D)")
    size = [vec1.shape[0], vec2.shape[0]]
    if inplace and list(self.shape) != size:
        raise ShapeError(f"{op}(): 'self' must have the shape {fmt_shape(size)} of "
                         f"outer(vec1, vec2), but got {fmt_shape(self.shape)}", op=op,
                         arg="self")
    if not inplace and (self.dim() > 2 or any(
            s not in (1, n) for s, n in zip(reversed(self.shape), reversed(size)))):
        raise ShapeError(f"{op}(): argument 'self' (shape {fmt_shape(self.shape)}) does not "
                         f"broadcast to the shape {fmt_shape(size)} of outer(vec1, vec2)",
                         op=op, arg="self")
    dtype = dt.promote_types(dt.promote_types(self.dtype, vec1.dtype), vec2.dtype)
    _check_addr_scalar(op, dtype, beta, "beta")
    _check_addr_scalar(op, dtype, alpha, "alpha")
    if inplace and not dt.can_cast(dtype, self.dtype):
        raise DTypeError(f"{op}(): result type {dtype.name} can't be cast to the desired "
                         f"output type {self.dtype.name} (argument 'self')", op=op, arg="self")
    column, row = vec1.to(dtype).unsqueeze(1), vec2.to(dtype).unsqueeze(0)
    if dtype is dt.bool:
        product = column & row if alpha else _creation.zeros(
            size, dtype=dt.bool, device=self.device)
        result = (self | product) if beta else product.expand(size).clone()
        return self.copy_(result) if inplace else result
    if inplace and dtype is self.dtype:
        return self.addmm_(column, row, beta=beta, alpha=alpha)
    result = F.addmm(self.to(dtype), column, row, beta=beta, alpha=alpha)
    return self.copy_(result) if inplace else result


def ger(self, vec2):
    """An alias of outer (PyTorch's deprecated name), checked under its own name."""
    check_rank("ger", "self", self, (1,), "a vector (1-D)")
    check_rank("ger", "vec2", vec2, (1,), "a vector (1-D)")
    return outer(self, vec2)


def matrix_exp(self):
    """The top-level and method form of linalg.matrix_exp (its kernel and gradient)."""
    check_matrix_exp("matrix_exp", self, "self")
    return F.linalg_matrix_exp(self)
