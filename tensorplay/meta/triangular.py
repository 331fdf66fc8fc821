"""Shape/dtype rules of the triangular factorizations and solves: LU, LDL^T, triangular
and Cholesky solves (the kernels are cpu_kernels/triangular.py).

Results are laid out as PyTorch lays them out: LAPACK's factors and solutions are
row-major batches of column-major matrices (`lapack_strides`); linalg.lu, lu_unpack and
a right-hand lu_solve are row-major. Pivots and info are int32, one row of pivots and one
info per matrix.
"""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay.errors import DTypeError, ShapeError, fmt_shape
from tensorplay.kernel_support.checks import OutSpec, broadcast, check_devices
from tensorplay.kernel_support.layout import lapack_strides
from tensorplay.meta.linalg import check_lapack_dtype, check_square, same_dtype
from tensorplay.meta.linalg import solve as linalg_solve_rule


def _sizes(t):
    return tuple(t._impl.sizes)


def check_stack(op, A, name):
    """A stack of matrices: at least 2 dims."""
    sizes = _sizes(A)
    if len(sizes) < 2:
        raise ShapeError(f"{op}(): the input tensor '{name}' must have at least 2 "
                         f"dimensions, but got shape {fmt_shape(sizes)}", op=op, arg=name)


def check_matrix(op, A, name, *, empty_ok=False):
    """A stack of float32/float64 matrices (LAPACK's types), square or not."""
    check_stack(op, A, name)
    check_lapack_dtype(op, A, name, empty_ok=empty_ok)


def _check_pivots(op, pivots, name, batch, k, shape=True, int64_ok=False):
    """int32 pivots, one row of k per matrix (PyTorch's dtype: LAPACK's; ldl_solve takes
    int64 ones too, as PyTorch's)."""
    if pivots._impl.dtype is not dt.int32 and not (int64_ok and pivots._impl.dtype is dt.int64):
        raise DTypeError(f"{op}(): '{name}' is expected to be a tensor of int32 dtype (the "
                         f"pivots linalg.lu_factor returns), but got {pivots._impl.dtype.name}",
                         op=op, arg=name)
    wrong = _sizes(pivots)[-1:] != (k,) or len(_sizes(pivots)) != len(batch) + 1
    if shape and wrong:
        raise ShapeError(f"{op}(): '{name}' must have shape {fmt_shape(batch + (k,))} for a "
                         f"factor of batch {fmt_shape(batch)}, but got shape "
                         f"{fmt_shape(_sizes(pivots))}", op=op, arg=name)


def _solve_sizes(op, a_name, A, b_name, B, left=True, same_dtypes=True):
    """The result of solving with the (square) A for B: B's own matrices, over A's and
    B's batch dims broadcast. B must be a matrix (PyTorch has no vector case here)."""
    if len(_sizes(B)) < 2:
        raise ShapeError(f"{op}(): the input tensor '{b_name}' must have at least 2 "
                         f"dimensions, but got shape {fmt_shape(_sizes(B))}", op=op,
                         arg=b_name)
    if same_dtypes:
        same_dtype(op, [(a_name, A), (b_name, B)])
    check_devices(op, [(a_name, A), (b_name, B)])
    n = _sizes(A)[-1]
    rows = _sizes(B)[-2] if left else _sizes(B)[-1]
    if rows != n:
        raise ShapeError(f"{op}(): incompatible shapes of '{a_name}' and '{b_name}' for the "
                         f"equation {'AX = B' if left else 'XA = B'} ({fmt_shape(_sizes(A))} "
                         f"and {fmt_shape(_sizes(B))})", op=op, arg=b_name)
    batch = broadcast(op, [(a_name, _sizes(A)[:-2]), (b_name, _sizes(B)[:-2])])
    return tuple(batch) + _sizes(B)[-2:]


# ---- LU ------------------------------------------------------------------------------------
def lu_factor(op, args):
    """linalg_lu_factor_ex(A, pivot, check_errors): (LU, pivots, info)."""
    A = args[0]
    check_matrix(op, A, "A", empty_ok=True)     # (PyTorch: any empty A)
    sizes = _sizes(A)
    batch, k = sizes[:-2], min(sizes[-2:])
    return (OutSpec(sizes, A._impl.dtype, lapack_strides(sizes)),
            OutSpec(batch + (k,), dt.int32), OutSpec(batch, dt.int32))


def lu_unpack(op, args):
    """lu_unpack(LU_data, LU_pivots, unpack_data, unpack_pivots): P m x m, L m x k, U k x n
    (row-major); what is not unpacked is an empty 1-D tensor."""
    LU, pivots, unpack_data, unpack_pivots = args
    # Any dtype, as PyTorch's: unpacking only moves LU's entries (tril, triu) and builds
    # the permutation of 0s and 1s.
    check_stack(op, LU, "LU_data")
    sizes = _sizes(LU)
    batch, (m, n) = sizes[:-2], sizes[-2:]
    k = min(m, n)
    if unpack_pivots:     # (PyTorch reads the pivots only to unpack them)
        # With no pivots to read (k = 0) PyTorch returns the identity before it checks
        # their shape (their dtype it does check).
        _check_pivots(op, pivots, "LU_pivots", batch, k, shape=k > 0)
    check_devices(op, [("LU_data", LU), ("LU_pivots", pivots)])
    dtype = LU._impl.dtype
    empty = OutSpec((0,), dtype)
    return (OutSpec(batch + (m, m), dtype) if unpack_pivots else empty,
            OutSpec(batch + (m, k), dtype) if unpack_data else empty,
            OutSpec(batch + (k, n), dtype) if unpack_data else empty)


def lu_solve(op, args):
    """linalg_lu_solve(LU, pivots, B, left, adjoint): LAPACK's layout for AX = B, row-major
    for XA = B (solved transposed), as PyTorch."""
    LU, pivots, B, left, _adjoint = args
    check_square(op, LU, "LU")
    _check_pivots(op, pivots, "pivots", _sizes(LU)[:-2], _sizes(LU)[-1])
    sizes = _solve_sizes(op, "LU", LU, "B", B, left)
    return OutSpec(sizes, LU._impl.dtype, lapack_strides(sizes) if left else None)


def solve_ex(op, args):
    """linalg_solve_ex(A, B, left, check_errors): linalg_solve's result, and info per
    matrix of A (A's batch: PyTorch factors A before broadcasting it)."""
    A, B, left, _check_errors = args
    result = linalg_solve_rule(op, (A, B, left))
    return result, OutSpec(_sizes(A)[:-2], dt.int32)


# ---- triangular and Cholesky solves -----------------------------------------------------------
def solve_triangular(op, args):
    """linalg_solve_triangular(self, B, upper, left, unitriangular)."""
    A, B, _upper, left, _unit = args
    check_square(op, A, "self")
    # B of any dtype: PyTorch copies it into a result of A's dtype, then solves in place
    # (its other solves refuse mixed dtypes).
    sizes = _solve_sizes(op, "self", A, "B", B, left, same_dtypes=False)
    return OutSpec(sizes, A._impl.dtype, lapack_strides(sizes))


def triangular_solve(op, args):
    """triangular_solve(self, A, ...): (solution, A broadcast to the batch and copied)."""
    B, A = args[0], args[1]
    check_square(op, A, "A")
    check_matrix(op, B, "self")
    sizes = _solve_sizes(op, "A", A, "self", B)
    coefficient = sizes[:-2] + _sizes(A)[-2:]
    return (OutSpec(sizes, A._impl.dtype, lapack_strides(sizes)),
            OutSpec(coefficient, A._impl.dtype, lapack_strides(coefficient)))


def cholesky_solve(op, args):
    """cholesky_solve(self, input2, upper): self is B, input2 the Cholesky factor."""
    B, factor = args[0], args[1]
    check_square(op, factor, "input2")
    check_matrix(op, B, "self")
    sizes = _solve_sizes(op, "input2", factor, "self", B)
    return OutSpec(sizes, B._impl.dtype, lapack_strides(sizes))


def cholesky_inverse(op, args):
    """cholesky_inverse(self, upper): a symmetric matrix of self's shape."""
    factor = args[0]
    check_square(op, factor, "self")
    sizes = _sizes(factor)
    return OutSpec(sizes, factor._impl.dtype, lapack_strides(sizes))


# ---- LDL^T ----------------------------------------------------------------------------------
def ldl_factor(op, args):
    """linalg_ldl_factor_ex(self, hermitian, check_errors): (LD, pivots, info)."""
    A = args[0]
    check_square(op, A, "self")
    sizes = _sizes(A)
    batch = sizes[:-2]
    return (OutSpec(sizes, A._impl.dtype, lapack_strides(sizes)),
            OutSpec(batch + sizes[-1:], dt.int32), OutSpec(batch, dt.int32))


def ldl_solve(op, args):
    """linalg_ldl_solve(LD, pivots, B, hermitian)."""
    LD, pivots, B, _hermitian = args
    check_square(op, LD, "LD")
    _check_pivots(op, pivots, "pivots", _sizes(LD)[:-2], _sizes(LD)[-1], int64_ok=True)
    sizes = _solve_sizes(op, "LD", LD, "B", B)
    return OutSpec(sizes, LD._impl.dtype, lapack_strides(sizes))
