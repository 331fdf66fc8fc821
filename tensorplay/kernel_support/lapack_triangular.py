"""Triangular factorizations and solves on NumPy arrays, through SciPy's LAPACK and BLAS.

NumPy has no LU with pivots, no triangular solve and no LDL^T, so these call SciPy's
wrappers (scipy.linalg.lapack / scipy.linalg.blas) one matrix at a time over a stack.
The CPU kernels of the `triangular` family call them on their tensors' data; on `cuda`
the same functions run on a host copy (triton_kernels/triangular.py).

    routine   what it computes                     PyTorch op
    getrf     A = P L U, partial pivoting          linalg.lu_factor(_ex), linalg.lu
    getrs     A X = B from getrf's factors         linalg.lu_solve, linalg.solve_ex
    trsm      op(A) X = B, X op(A) = B, A triangular   linalg.solve_triangular, triangular_solve
    potrs     A X = B from A's Cholesky factor     cholesky_solve
    potri     A^-1 from A's Cholesky factor        cholesky_inverse
    sytrf     A = L D L^T, Bunch-Kaufman pivots    linalg.ldl_factor(_ex)
    sytrs     A X = B from sytrf's factors         linalg.ldl_solve

Pivots are LAPACK's: 1-based int32, as PyTorch returns them (SciPy's getrf wrapper gives
them 0-based: one is added here; sytrf's are LAPACK's own, negative for a 2x2 block).
PyTorch uses trsm (no singularity check: a zero on the diagonal gives inf), so these do.
"""
from __future__ import annotations

import numpy as np
from scipy.linalg import blas as scipy_blas
from scipy.linalg import lapack as scipy_lapack

from tensorplay.errors import ArgumentError, LinAlgError
from tensorplay.kernel_support import lapack

__all__ = ["lu_factor_ex", "lu_unpack", "lu_solve", "solve_triangular", "cholesky_solve",
           "cholesky_inverse", "ldl_factor_ex", "ldl_solve", "solve_ex", "check_pivot",
           "check_pivot_range"]


def _routine(name, array):
    """SciPy's s- or d- version of a LAPACK routine for `array`'s dtype."""
    return scipy_lapack.get_lapack_funcs(name, (array,))


def _stack(a, batch):
    """a broadcast to `batch` and flattened to one (B, rows, cols) stack (a view)."""
    full = np.broadcast_to(a, tuple(batch) + a.shape[-2:])
    return full.reshape((int(np.prod(batch, dtype=np.int64)),) + a.shape[-2:])


def _batch(*arrays):
    return np.broadcast_shapes(*(x.shape[:-2] for x in arrays))


# ---- LU ----------------------------------------------------------------------------------
def lu_factor_ex(a):
    """(LU, pivots, info) of a stack of m x n matrices: getrf's packed factors (L's strict
    lower part with its unit diagonal left out, and U), its 1-based row swaps (k = min(m, n)
    of them) and info (i > 0: U[i-1, i-1] is exactly zero)."""
    batch, (m, n) = a.shape[:-2], a.shape[-2:]
    k = min(m, n)
    stack = _stack(a, batch)
    # Each factor is written transposed: its transposed view is column-major, LAPACK's
    # (and PyTorch's) layout for LU, so the kernel's strided result needs no copy.
    lu_t = np.zeros((stack.shape[0], n, m), dtype=a.dtype)
    pivots = np.zeros((stack.shape[0], k), dtype=np.int32)
    info = np.zeros(stack.shape[0], dtype=np.int32)
    if k:
        getrf = _routine("getrf", a)
        for i, matrix in enumerate(stack):
            lu, piv, info[i] = getrf(matrix)
            lu_t[i] = lu.T
            pivots[i] = piv + 1
    lu = np.swapaxes(lu_t, -1, -2)
    return lu.reshape(a.shape), pivots.reshape(batch + (k,)), info.reshape(batch)


def permutation(pivots, m, dtype):
    """P (m x m) with A = P L U from LAPACK's 1-based row swaps: swap j was rows j and
    pivots[j] - 1 of A, applied in order; P's column i is the row of A that ended at i."""
    batch = pivots.shape[:-1]
    order = np.broadcast_to(np.arange(m), batch + (m,)).copy()
    swaps = pivots.astype(np.int64) - 1
    for j in range(pivots.shape[-1]):
        other = swaps[..., j:j + 1]
        here = order[..., j:j + 1].copy()
        order[..., j:j + 1] = np.take_along_axis(order, other, -1)
        np.put_along_axis(order, other, here, -1)
    p_t = np.zeros(batch + (m, m), dtype=dtype)
    np.put_along_axis(p_t, order[..., None], 1, -1)     # P^T[i, order[i]] = 1
    return np.swapaxes(p_t, -1, -2)


def lu_unpack(lu, pivots, unpack_data, unpack_pivots):
    """(P, L, U) from LU's packed factors: L m x k with a unit diagonal, U k x n. What is
    not unpacked is an empty array, as in PyTorch."""
    m, n = lu.shape[-2:]
    k = min(m, n)
    empty = np.zeros((0,), dtype=lu.dtype)
    if unpack_data:
        lower = np.tril(lu[..., :, :k], -1) + np.eye(m, k, dtype=lu.dtype)
        upper = np.triu(lu[..., :k, :])
    else:
        lower = upper = empty
    if not unpack_pivots:
        p = empty
    elif k == 0:      # no row swaps (the pivots, of any shape, are not read)
        p = np.broadcast_to(np.eye(m, dtype=lu.dtype), lu.shape[:-2] + (m, m)).copy()
    else:             # (PyTorch reads, and so checks, the pivots only here)
        check_pivot_range("lu_unpack", pivots, m)
        p = permutation(pivots, m, lu.dtype)
    return p, lower, upper


def lu_solve(lu, pivots, b, left, adjoint):
    """X from getrf's factors of A: A X = B (left), X A = B (not left), with A^T for A
    when `adjoint`. X A = B is A^T X^T = B^T: the other `trans` on the transposed B.
    LU's and B's batch dims broadcast."""
    batch = _batch(lu, b)
    n = lu.shape[-1]
    rhs = b if left else np.swapaxes(b, -1, -2)
    trans = int(adjoint) if left else int(not adjoint)
    x = np.zeros(batch + rhs.shape[-2:], dtype=b.dtype)
    if x.size and n:
        getrs = _routine("getrs", lu)
        lus, pivs = _stack(lu, batch), _stack(pivots[..., None], batch)[..., 0] - 1
        bs, xs = _stack(rhs, batch), x.reshape((-1,) + x.shape[-2:])
        for i in range(xs.shape[0]):
            xs[i] = getrs(lus[i], pivs[i], bs[i], trans=trans)[0]
    return x if left else np.swapaxes(x, -1, -2)


def solve_ex(a, b, left, vector):
    """(X, info) for linalg.solve_ex. linalg.solve's batched NumPy path first (LAPACK's
    gesv: getrf then getrs, as PyTorch); only when a matrix of A is singular, A's LU again
    one matrix at a time for its info per matrix of A's batch, and getrs on B: a singular
    A's X is what getrs gives (inf/nan), as in PyTorch."""
    try:
        x = lapack.solve_arrays(a, b, left, vector)
        return x, np.zeros(a.shape[:-2], dtype=np.int32)
    except (LinAlgError, np.linalg.LinAlgError):     # (NumPy's: a nearly singular one)
        pass
    lu, pivots, info = lu_factor_ex(a)
    rhs = b[..., None] if vector else b
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        x = lu_solve(lu, pivots, rhs, left, False)
    return (x[..., 0] if vector else x), info


# ---- triangular solves ---------------------------------------------------------------------
def solve_triangular(a, b, upper, left, unitriangular, transpose=False):
    """X with op(A) X = B (left) or X op(A) = B, A upper or lower triangular (only that
    triangle is read; `unitriangular`: its diagonal taken as ones), op(A) = A^T when
    `transpose`. BLAS's trsm; A's and B's batch dims broadcast. X has A's dtype: B of
    another dtype is cast to it, as PyTorch copies B into a result of A's dtype."""
    b = b.astype(a.dtype, copy=False)
    batch = _batch(a, b)
    x = np.zeros(batch + b.shape[-2:], dtype=b.dtype)
    if x.size:
        trsm = scipy_blas.get_blas_funcs("trsm", (a,))
        a_s, b_s, x_s = _stack(a, batch), _stack(b, batch), x.reshape((-1,) + x.shape[-2:])
        for i in range(x_s.shape[0]):
            x_s[i] = trsm(1.0, a_s[i], b_s[i], side=int(not left), lower=int(not upper),
                          trans_a=int(transpose), diag=int(unitriangular))
    return x


# ---- Cholesky's solve and inverse ------------------------------------------------------------
def cholesky_solve(b, factor, upper):
    """X with A X = B, A = L L^T (or U^T U for `upper`) given its factor (potrs reads only
    that triangle). The factor's and B's batch dims broadcast."""
    batch = _batch(factor, b)
    x = np.zeros(batch + b.shape[-2:], dtype=b.dtype)
    if x.size and factor.shape[-1]:
        potrs = _routine("potrs", factor)
        f_s, b_s, x_s = _stack(factor, batch), _stack(b, batch), x.reshape((-1,) + x.shape[-2:])
        for i in range(x_s.shape[0]):
            x_s[i] = potrs(f_s[i], b_s[i], lower=int(not upper))[0]
    return x


def cholesky_inverse(factor, upper):
    """(A^-1, info) from A's Cholesky factor: potri writes one triangle of the symmetric
    inverse, mirrored here to the other. info i > 0: the factor's i-th diagonal element is
    zero (A is singular)."""
    batch = factor.shape[:-2]
    stack = _stack(factor, batch)
    inv = np.zeros(stack.shape, dtype=factor.dtype)
    info = np.zeros(stack.shape[0], dtype=np.int32)
    if stack.shape[-1]:
        potri = _routine("potri", factor)
        for i, f in enumerate(stack):
            half, info[i] = potri(f, lower=int(not upper))
            half = np.triu(half) if upper else np.tril(half)
            inv[i] = half + np.swapaxes(np.tril(half, -1) if not upper else np.triu(half, 1),
                                        -1, -2)
    return inv.reshape(factor.shape), info.reshape(batch)


# ---- LDL^T ---------------------------------------------------------------------------------
def ldl_factor_ex(a):
    """(LD, pivots, info): sytrf's Bunch-Kaufman factorization A = L D L^T from A's lower
    triangle. LD holds L (unit diagonal left out) below the diagonal and D's blocks on and
    next to it; the part above is zeroed, as PyTorch does. info i > 0: D[i-1, i-1] is
    exactly zero (the factorization is done, D is singular)."""
    batch, n = a.shape[:-2], a.shape[-1]
    stack = _stack(a, batch)
    ld_t = np.zeros((stack.shape[0], n, n), dtype=a.dtype)
    pivots = np.zeros((stack.shape[0], n), dtype=np.int32)
    info = np.zeros(stack.shape[0], dtype=np.int32)
    if n:
        sytrf = _routine("sytrf", a)
        for i, matrix in enumerate(stack):
            ld, pivots[i], info[i] = sytrf(matrix, lower=1)
            ld_t[i] = np.tril(ld).T
    ld = np.swapaxes(ld_t, -1, -2)
    return ld.reshape(a.shape), pivots.reshape(batch + (n,)), info.reshape(batch)


def ldl_solve(ld, pivots, b):
    """X with A X = B from sytrf's factors of A; LD's and B's batch dims broadcast."""
    batch = _batch(ld, b)
    x = np.zeros(batch + b.shape[-2:], dtype=b.dtype)
    if x.size and ld.shape[-1]:
        sytrs = _routine("sytrs", ld)
        lds, pivs = _stack(ld, batch), _stack(pivots[..., None], batch)[..., 0]
        bs, xs = _stack(b, batch), x.reshape((-1,) + x.shape[-2:])
        for i in range(xs.shape[0]):
            xs[i] = sytrs(lds[i], pivs[i], bs[i], lower=1)[0]
    return x


# ---- argument checks the kernels share ------------------------------------------------------
def check_pivot(op, pivot):
    """PyTorch factors without pivoting only on CUDA (cuSOLVER); its CPU LAPACK has no
    such routine, and neither has this backend's."""
    if not pivot:
        raise ArgumentError(f"{op}(): LU without pivoting is not implemented on the CPU "
                            f"('pivot' is False)", op=op, arg="pivot")


def check_pivot_range(op, pivots, m):
    """LAPACK's row swaps name rows 1..m; anything else did not come from lu_factor."""
    if pivots.size and (pivots.min() < 1 or pivots.max() > m):
        raise ArgumentError(f"{op}(): pivots passed to lu_unpack must be between 1 and "
                            f"LU.size(-2) = {m} inclusive, but 'LU_pivots' holds "
                            f"{int(pivots.min())}..{int(pivots.max())}. Did you properly pass "
                            f"the result of lu_factor?", op=op, arg="LU_pivots")


# What the LinAlgErrors say (PyTorch's words; `{info}` is LAPACK's number).
LU_FAILED = ("U[{info},{info}] is zero and using it on lu_solve would result in a division "
             "by zero. If you still want to perform the factorization, consider calling "
             "linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")
SOLVE_FAILED = "The solver failed because the input matrix is singular."
CHOLESKY_INVERSE_FAILED = ("The diagonal element {info} is zero, the inversion could not be "
                           "completed because the input matrix is singular.")
LDL_FAILED = ("The factorization could not be completed because the input matrix is "
              "singular (D[{info},{info}] is zero).")
