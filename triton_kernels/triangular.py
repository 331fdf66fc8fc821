"""The triangular factorizations and solves on `cuda`.

Two of them have Triton kernels for batched small matrices (n <= SMALL_N = 32), one
program per matrix with the whole matrix in registers, as triton_kernels/linalg.py's
Cholesky and Gauss-Jordan kernels (whose helpers they share):

    linalg_solve_triangular   forward or back substitution, B's columns in chunks
    linalg_lu_factor_ex       LU with partial pivoting (getrf's factors, pivots and info)

Each is the candidate ops.yaml names, for float32/float64 and small matrices; below it
(registered at the end of this file) its `_on_host` kernel takes everything else.

The other ops, and those two's fallbacks, have no Triton kernel: each `_on_host` kernel
copies its tensors to the host, runs the CPU's SciPy LAPACK routines
(tensorplay/kernel_support/lapack_triangular.py) and copies the results back, laid out
as the shape rule says. explain() shows the kernel; the `tensorplay.dispatch` logger says
it each call (triton_kernels/linalg.py's `_on_host`).
"""
from __future__ import annotations

import numpy as np
import triton
import triton.language as tl

from tensorplay import _dtype as dt
from tensorplay._device_transfer import from_host, to_host
from tensorplay.errors import KernelConstraintError
from tensorplay.kernel_support import lapack_triangular as lt
from tensorplay.kernel_support.lapack import check_info, solve_is_vector
from tensorplay.kernel_support.ops import shape_rule
from tensorplay.kernel_support.results import factory, numel_of
from tensorplay.library import Library, ShapeRule, kernel
from triton_kernels._launch import launch, new_tensor, operands, pointer
from triton_kernels.linalg import FLOATS, SMALL, SMALL_N, _divide, _matrices, \
    _on_device, _on_host, _options, _require_small, _result_matrices


# ---- small matrices in registers -----------------------------------------------------------
# As in triton_kernels/linalg.py: a BLOCK x BLOCK tile holds the matrix (the padding loads
# as zeros and is never stored), "column j" is a masked sum over the tile, and each of the
# n steps of the loop updates the whole tile at once. Registers per thread at BLOCK 32 (4
# warps; sm_90, cuobjdump --dump-resource-usage), no spills:
#                          fp32   fp64
#     triangular solve      75    107     (BLOCK_K 32; unitriangular: 53, 80)
#     lu factor             80    126
@triton.jit
def triangular_solve_kernel(
    a_ptr, b_ptr, x_ptr, n, k,
    stride_ab, stride_ar, stride_ac,  # A[batch, row, col], n x n, triangular
    stride_bb, stride_br, stride_bc,  # B[batch, row, col], n x k
    stride_xb, stride_xr, stride_xc,  # X with A X = B, n x k
    UPPER: tl.constexpr,  # A upper triangular (back substitution), else lower (forward)
    UNIT: tl.constexpr,  # A's diagonal taken as ones (not read)
    FP32: tl.constexpr, ACC: tl.constexpr, BLOCK: tl.constexpr, BLOCK_K: tl.constexpr,
):
    # Forward substitution for a lower A, one row of X per step (column-oriented, as BLAS's
    # trsm):
    #     X[j, :] = B[j, :] / A[j, j],   B[i, :] -= A[i, j] * X[j, :]      (i > j)
    # An upper A runs the same from the last row up (i < j). Only A's triangle is read
    # (without the diagonal when UNIT), so whatever is in the other one is ignored. There
    # is no singularity check, as in trsm: a zero on the diagonal gives inf or nan.
    batch = tl.program_id(0).to(tl.int64)
    first = tl.program_id(1) * BLOCK_K     # this program's columns of B: a grid of chunks
    i = tl.arange(0, BLOCK)
    rows = i[:, None]
    cols = i[None, :]
    if UPPER:
        triangle = rows <= cols
    else:
        triangle = rows >= cols
    if UNIT:
        triangle = triangle & (rows != cols)
    a = tl.load(a_ptr + batch * stride_ab + rows * stride_ar + cols * stride_ac,
                mask=(rows < n) & (cols < n) & triangle, other=0).to(ACC)
    c = first + tl.arange(0, BLOCK_K)[None, :]
    b = tl.load(b_ptr + batch * stride_bb + rows * stride_br + c * stride_bc,
                mask=(rows < n) & (c < k), other=0).to(ACC)
    for step in range(n):
        if UPPER:
            j = n - 1 - step
            later = rows < j               # the rows still to solve
        else:
            j = step
            later = rows > j
        column = tl.sum(tl.where(cols == j, a, 0), axis=1)
        x_j = tl.sum(tl.where(rows == j, b, 0), axis=0)
        if not UNIT:
            x_j = _divide(x_j, tl.sum(tl.where(i == j, column, 0), axis=0), FP32)
        # (tl.where, not a multiply by a mask: the rows already solved keep their values
        # when x_j is inf, rather than 0 * inf = nan.)
        b = tl.where(rows == j, x_j[None, :],
                     tl.where(later, b - column[:, None] * x_j[None, :], b))
    tl.store(x_ptr + batch * stride_xb + rows * stride_xr + c * stride_xc,
             b.to(x_ptr.dtype.element_ty), mask=(rows < n) & (c < k))


@triton.jit
def lu_factor_kernel(
    a_ptr, lu_ptr, pivots_ptr, info_ptr, n,
    stride_ab, stride_ar, stride_ac,  # A[batch, row, col], n x n, any strides
    stride_lb, stride_lr, stride_lc,  # LU, in PyTorch's (column-major) layout
    FP32: tl.constexpr, ACC: tl.constexpr, BLOCK: tl.constexpr,
):
    # Right-looking LU with partial pivoting (LAPACK's getf2): for each column j, swap
    # rows j and p >= j, p the row with the largest |A[p, j]| (the first of equals, as
    # idamax), whole rows (L's columns done so far too, as getrf's row interchanges), then
    #     L[i, j] = A[i, j] / A[j, j],   A[i, k] -= L[i, j] * A[j, k]      (i, k > j)
    # A zero pivot sets info (the first one only) and is skipped: its column below is all
    # zeros (it was the largest), nothing to scale or subtract, and the elimination goes
    # on, as getrf's. The result holds U on and above the diagonal and L (its unit
    # diagonal left out) below, pivots LAPACK's 1-based rows.
    batch = tl.program_id(0).to(tl.int64)
    i = tl.arange(0, BLOCK)
    rows = i[:, None]
    cols = i[None, :]
    inside = (rows < n) & (cols < n)
    a = tl.load(a_ptr + batch * stride_ab + rows * stride_ar + cols * stride_ac,
                mask=inside, other=0).to(ACC)
    info = tl.full([], 0, tl.int32)
    pivots = tl.full([BLOCK], 0, tl.int32)
    for j in range(n):
        column = tl.sum(tl.where(cols == j, a, 0), axis=1)
        size = tl.where((i >= j) & (i < n), tl.abs(column), -1)
        p = tl.min(tl.where(size == tl.max(size, axis=0), i, BLOCK), axis=0)
        p = tl.where(p < n, p, j)      # a nan column matches no row: no swap
        pivot = tl.sum(tl.where(i == p, column, 0), axis=0)
        diagonal = tl.sum(tl.where(i == j, column, 0), axis=0)
        column = tl.where(i == j, pivot, tl.where(i == p, diagonal, column))
        row_j = tl.sum(tl.where(rows == j, a, 0), axis=0)
        row_p = tl.sum(tl.where(rows == p, a, 0), axis=0)
        a = tl.where(rows == j, row_p[None, :], tl.where(rows == p, row_j[None, :], a))
        zero = pivot == 0
        info = tl.where(info == 0, tl.where(zero, j + 1, 0), info)
        multiplier = _divide(column, tl.where(zero, 1, pivot), FP32)
        below = rows > j
        a = tl.where(below & (cols == j), tl.where(zero, a, multiplier[:, None]),
                     tl.where(below & (cols > j), a - multiplier[:, None] * row_p[None, :], a))
        pivots = tl.where(i == j, p + 1, pivots)
    tl.store(lu_ptr + batch * stride_lb + rows * stride_lr + cols * stride_lc,
             a.to(lu_ptr.dtype.element_ty), mask=inside)
    tl.store(pivots_ptr + batch * n + i, pivots, mask=i < n)
    tl.store(info_ptr + batch, info)


def _small_square(A, *rest):
    """ShapeRule check: square matrices of order n <= SMALL_N."""
    sizes = A._impl.sizes
    return len(sizes) >= 2 and sizes[-2] == sizes[-1] <= SMALL_N


# LU's rule: a rectangular A goes to the host fallback. (solve_triangular's A is square,
# or its meta rule says why: linalg.py's SMALL is its rule.)
SMALL_SQUARE = ShapeRule(f"square, n <= {SMALL_N} (the matrix in registers)", _small_square)

# The grid's second dim (B's chunks of columns) has at most 65535 programs.
MAX_CHUNKS = 65535


@kernel(dtypes=FLOATS, shape=SMALL)
def linalg_solve_triangular(self, B, upper, left, unitriangular):
    """X with A X = B, A = self triangular (left=False: X A = B, solved as A^T X^T = B^T,
    A^T's triangle the other one); A's and B's batch dims broadcast, B's columns in chunks
    of registers (the grid's second dim)."""
    op = "linalg_solve_triangular"
    spec = shape_rule("triangular.solve_triangular")(op, (self, B, upper, left, unitriangular))
    device, (A, B) = operands(op, self=self, B=B)
    n = A._impl.sizes[-1]
    _require_small(op, n)
    x = factory.empty_strided(spec.sizes, spec.strides, dtype=spec.dtype, device=device)
    if x._impl.numel() == 0:
        return x
    batch = spec.sizes[:-2]
    k = spec.sizes[-1] if left else spec.sizes[-2]
    transpose = not left
    a, *sa = _matrices(A, batch, transpose)
    b, *sb = _matrices(B, batch, transpose)
    out, sxb, sxr, sxc, _ = _result_matrices(x, batch)      # (LAPACK's layout merges)
    sx = [sxb, sxc, sxr] if transpose else [sxb, sxr, sxc]
    options = _options(spec.dtype, n)
    block_k = min(max(triton.next_power_of_2(k), 4), options["BLOCK"])
    chunks = triton.cdiv(k, block_k)
    if chunks > MAX_CHUNKS:
        raise KernelConstraintError(f"{op}: {k} columns of B, more than {MAX_CHUNKS} chunks")
    launch("triangular solve (registers)", triangular_solve_kernel,
           (numel_of(batch), chunks), pointer(a), pointer(b), pointer(out),
           n, k, *sa, *sb, *sx, UPPER=bool(upper) != transpose,   # (A^T: the other triangle)
           UNIT=bool(unitriangular), BLOCK_K=block_k, **options)
    return x


@kernel(dtypes=FLOATS, shape=SMALL_SQUARE)
def linalg_lu_factor_ex(A, pivot, check_errors):
    """(LU, pivots, info) of square matrices, one program per matrix."""
    op = "linalg_lu_factor_ex"
    specs = shape_rule("triangular.lu_factor")(op, (A, pivot, check_errors))
    lt.check_pivot(op, pivot)          # (refused as the host fallback refuses it)
    device, (A,) = operands(op, A=A)
    n = A._impl.sizes[-1]
    _require_small(op, n)
    if A._impl.sizes[-2] != n:
        raise KernelConstraintError(f"{op}: a {A._impl.sizes[-2]} x {n} matrix, not square")
    lu = factory.empty_strided(specs[0].sizes, specs[0].strides, dtype=specs[0].dtype,
                               device=device)
    pivots = new_tensor(specs[1].sizes, dt.int32, device)
    info = new_tensor(specs[2].sizes, dt.int32, device)
    batch = specs[0].sizes[:-2]
    count = numel_of(batch)
    if count:
        a, *sa = _matrices(A, batch)
        out, slb, slr, slc, _ = _result_matrices(lu, batch)   # (LAPACK's layout merges)
        launch("lu factor (registers)", lu_factor_kernel, (count,), pointer(a), pointer(out),
               pointer(pivots), pointer(info), n, *sa, slb, slr, slc,
               **_options(specs[0].dtype, n))
    if check_errors:
        # LAPACK's info read on the host (a synchronisation, as in PyTorch).
        check_info(op, to_host(info), lt.LU_FAILED)
    return lu, pivots, info


# ---- on a host copy ------------------------------------------------------------------------
def _int32(array, device):
    return from_host(np.array(array, dtype=np.int32, order="C"), dt.int32, device)


def linalg_lu_factor_ex_on_host(A, pivot, check_errors):
    op = "linalg_lu_factor_ex"
    specs = shape_rule("triangular.lu_factor")(op, (A, pivot, check_errors))
    # (PyTorch's CUDA backend can factor without pivoting; this fallback runs the CPU's
    # LAPACK, which cannot.)
    lt.check_pivot(op, pivot)
    a, = _on_host(op, A)
    lu, pivots, info = lt.lu_factor_ex(a)
    if check_errors:
        check_info(op, info, lt.LU_FAILED)
    device = A._impl.device
    return _on_device(lu, specs[0], device), _int32(pivots, device), _int32(info, device)


def lu_unpack_on_host(LU_data, LU_pivots, unpack_data, unpack_pivots):
    specs = shape_rule("triangular.lu_unpack")("lu_unpack", (LU_data, LU_pivots, unpack_data,
                                                            unpack_pivots))
    lu, pivots = _on_host("lu_unpack", LU_data, LU_pivots)
    arrays = lt.lu_unpack(lu, pivots, unpack_data, unpack_pivots)
    return tuple(_on_device(np.ascontiguousarray(a), s, LU_data._impl.device)
                 for a, s in zip(arrays, specs))


def linalg_lu_solve_on_host(LU, pivots, B, left, adjoint):
    op = "linalg_lu_solve"
    spec = shape_rule("triangular.lu_solve")(op, (LU, pivots, B, left, adjoint))
    lu, piv, b = _on_host(op, LU, pivots, B)
    x = lt.lu_solve(lu, piv, b, left, adjoint)
    return _on_device(np.ascontiguousarray(x), spec, LU._impl.device)


def linalg_solve_ex_on_host(A, B, left, check_errors):
    op = "linalg_solve_ex"
    spec, _ = shape_rule("triangular.solve_ex")(op, (A, B, left, check_errors))
    a, b = _on_host(op, A, B)
    x, info = lt.solve_ex(a, b, left, solve_is_vector(A._impl.sizes, B._impl.sizes))
    if check_errors:
        check_info(op, info, lt.SOLVE_FAILED)
    device = A._impl.device
    return _on_device(np.ascontiguousarray(x.reshape(spec.sizes)), spec, device), \
        _int32(info, device)


def linalg_solve_triangular_on_host(self, B, upper, left, unitriangular):
    op = "linalg_solve_triangular"
    spec = shape_rule("triangular.solve_triangular")(op, (self, B, upper, left, unitriangular))
    a, b = _on_host(op, self, B)
    x = lt.solve_triangular(a, b, upper, left, unitriangular)
    return _on_device(x, spec, self._impl.device)


def triangular_solve_on_host(self, A, upper, transpose, unitriangular):
    op = "triangular_solve"
    specs = shape_rule("triangular.triangular_solve")(op, (self, A, upper, transpose,
                                                           unitriangular))
    b, a = _on_host(op, self, A)
    x = lt.solve_triangular(a, b, upper, True, unitriangular, transpose)
    coefficient = np.ascontiguousarray(np.broadcast_to(a, specs[1].sizes))
    device = A._impl.device
    return _on_device(x, specs[0], device), _on_device(coefficient, specs[1], device)


def cholesky_solve_on_host(self, input2, upper):
    op = "cholesky_solve"
    spec = shape_rule("triangular.cholesky_solve")(op, (self, input2, upper))
    b, factor = _on_host(op, self, input2)
    return _on_device(lt.cholesky_solve(b, factor, upper), spec, self._impl.device)


def cholesky_inverse_on_host(self, upper):
    op = "cholesky_inverse"
    spec = shape_rule("triangular.cholesky_inverse")(op, (self, upper))
    factor, = _on_host(op, self)
    inverse, info = lt.cholesky_inverse(factor, upper)
    check_info(op, info, lt.CHOLESKY_INVERSE_FAILED)
    return _on_device(inverse, spec, self._impl.device)


def linalg_ldl_factor_ex_on_host(self, hermitian, check_errors):
    op = "linalg_ldl_factor_ex"
    specs = shape_rule("triangular.ldl_factor")(op, (self, hermitian, check_errors))
    a, = _on_host(op, self)
    ld, pivots, info = lt.ldl_factor_ex(a)
    if check_errors:
        check_info(op, info, lt.LDL_FAILED)
    device = self._impl.device
    return _on_device(np.ascontiguousarray(ld), specs[0], device), _int32(pivots, device), \
        _int32(info, device)


def linalg_ldl_solve_on_host(LD, pivots, B, hermitian):
    op = "linalg_ldl_solve"
    spec = shape_rule("triangular.ldl_solve")(op, (LD, pivots, B, hermitian))
    ld, piv, b = _on_host(op, LD, pivots, B)
    return _on_device(lt.ldl_solve(ld, piv, b), spec, LD._impl.device)


# The Triton kernels above are the ones ops.yaml names, for float32/float64 and small
# matrices; everything else (larger or rectangular matrices, other dtypes and their
# errors) goes to the host fallback.
host_fallback = Library("CUDA", "triton_kernels.triangular (host fallback)")
host_fallback.impl("linalg_solve_triangular", linalg_solve_triangular_on_host, priority=-10)
host_fallback.impl("linalg_lu_factor_ex", linalg_lu_factor_ex_on_host, priority=-10)
