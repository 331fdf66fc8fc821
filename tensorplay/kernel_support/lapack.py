"""Batched matrix factorizations on NumPy arrays, with LAPACK's `info` as PyTorch reports it.

The CPU kernels of inv, slogdet, solve and cholesky call these on their tensors' data; the
`cuda` device runs the same functions on a host copy (triton_kernels/linalg.py, a logged
fallback). Arrays come in as (..., n, n) stacks; results keep the stack.

`info` is LAPACK's, per matrix of the stack (int32, PyTorch's dtype for it):

    inv_ex        getrf's: 0, or i when U[i-1, i-1], the i-th pivot of the LU factorization
                  with partial pivoting, is exactly zero (the matrix is singular)
    cholesky_ex   potrf's: 0, or k when the leading k x k minor is not positive-definite

NumPy's batched routines stop at the first bad matrix and do not say which one or where,
so on failure the stack is walked again one matrix at a time (a path taken only for bad
input) to find each info.
"""
from __future__ import annotations

import numpy as np

from tensorplay.errors import LinAlgError

__all__ = ["stack_of_matrices", "inv_ex", "slogdet", "solve", "solve_is_vector",
           "solve_arrays", "cholesky_ex", "check_info"]


def stack_of_matrices(a):
    """(batch shape, the matrices as one (B, m, n) array; a view where NumPy can). The
    LAPACK wrappers of every linear-algebra family loop over this stack."""
    batch = a.shape[:-2]
    return batch, a.reshape((int(np.prod(batch)),) + a.shape[-2:])   # (no -1: B may be 0)


def first_zero_pivot(m):
    """getrf's info for a matrix LAPACK refused: 1 + the index of the first exactly-zero
    pivot of the LU factorization with partial pivoting. (LAPACK's blocked elimination may
    round differently from this plain one: where this finds no exact zero, the smallest
    pivot is the one LAPACK's was.)"""
    u = np.array(m, dtype=np.float64 if m.dtype != np.float32 else np.float32)
    n = u.shape[0]
    pivots = np.zeros(n)
    for j in range(n):
        p = j + int(np.argmax(np.abs(u[j:, j])))
        if u[p, j] == 0:
            return j + 1
        pivots[j] = abs(u[p, j])
        if p != j:
            u[[j, p]] = u[[p, j]]
        u[j + 1:, j:] -= np.outer(u[j + 1:, j] / u[j, j], u[j, j:])
    return int(np.argmin(pivots)) + 1 if n else 0


def _each_matrix(routine, a, info_of, fill):
    """`routine` on a stack of matrices, with LAPACK's info per matrix. NumPy's batched
    routines stop at the first bad matrix without saying which, so on failure the stack
    runs again one matrix at a time: a refused one gets `fill` and `info_of(matrix)`."""
    batch, stack = stack_of_matrices(a)
    info = np.zeros(stack.shape[0], dtype=np.int32)
    try:
        result = routine(stack)
    except np.linalg.LinAlgError:
        result = np.empty_like(stack)
        for i, m in enumerate(stack):
            try:
                result[i] = routine(m)
            except np.linalg.LinAlgError:
                result[i], info[i] = fill, info_of(m)
    return result.reshape(a.shape), info.reshape(batch)


def inv_ex(a):
    """(inverse, info) of a stack of square matrices; a singular one's inverse is nan
    (LAPACK stopped mid-way; PyTorch returns what it left: read info, not the values)."""
    return _each_matrix(np.linalg.inv, a, first_zero_pivot, np.nan)


def slogdet(a):
    """(sign, log|det|) of a stack of square matrices (sign 0, log|det| -inf if singular)."""
    sign, logabsdet = np.linalg.slogdet(a)
    return sign.astype(a.dtype), logabsdet.astype(a.dtype)


def solve(a, b):
    """X with A X = B for stacks that broadcast; `b` is (..., n, k). Raises LinAlgError
    (naming the batch element when there is a batch) for a singular A."""
    try:
        return np.linalg.solve(a, b)
    except np.linalg.LinAlgError:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        _, stack = stack_of_matrices(np.broadcast_to(a, batch + a.shape[-2:]))
        info = np.array([0 if _invertible(m) else 1 for m in stack], dtype=np.int32)
        check_info("linalg_solve", info.reshape(batch), "The solver failed because the input "
                   "matrix is singular.")
        raise


def solve_is_vector(a_sizes, b_sizes):
    """PyTorch's rule for linalg.solve: B is a (batch of) vector(s) when it is 1-D, or has
    one dim less than A and A's sizes but the last."""
    return len(b_sizes) == 1 or (len(b_sizes) == len(a_sizes) - 1
                                 and tuple(b_sizes) == tuple(a_sizes[:-1]))


def solve_arrays(a, b, left, vector):
    """linalg.solve on arrays: A X = B, or X A = B (`left` False: A^T X^T = B^T)."""
    if vector:
        b = b[..., None]
    if left:
        x = solve(a, b)
    else:
        x = np.swapaxes(solve(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)
    return x[..., 0] if vector else x


def _invertible(m):
    try:
        np.linalg.inv(m)
        return True
    except np.linalg.LinAlgError:
        return False


def cholesky_ex(a, upper):
    """(L, info) with A = L L^T (upper: (U, info) with A = U^T U), reading A's lower
    triangle as LAPACK's potrf does (the upper one for `upper`); a refused matrix's factor
    is zeros."""
    # The factor is computed transposed, from A^T (the same triangle of A): L^T for the
    # lower one, U^T for the upper one. Its transposed view is the factor, laid out as
    # LAPACK and PyTorch lay it out (column-major matrices) without a copy.
    if upper:
        routine, bad_minor = np.linalg.cholesky, _first_bad_minor
    else:
        routine, bad_minor = _upper_cholesky, _first_bad_minor_of_upper
    factor_t, info = _each_matrix(routine, np.swapaxes(a, -1, -2), bad_minor, 0.0)
    return np.swapaxes(factor_t, -1, -2), info


def _upper_cholesky(m):
    return np.linalg.cholesky(m, upper=True)


def _first_bad_minor_of_upper(m):
    return _first_bad_minor(np.swapaxes(m, -1, -2))


def _first_bad_minor(m):
    """potrf's info: the order of the first leading minor that is not positive-definite."""
    for k in range(1, m.shape[0] + 1):
        try:
            np.linalg.cholesky(m[:k, :k])
        except np.linalg.LinAlgError:
            return k
    return m.shape[0]


# What check_info says for each factorization (PyTorch's words).
INV_FAILED = ("The diagonal element {info} is zero, the inversion could not be completed "
              "because the input matrix is singular.")
CHOLESKY_FAILED = ("The factorization could not be completed because the input is not "
                   "positive-definite (the leading minor of order {info} is not "
                   "positive-definite).")


def check_info(op, info, what):
    """Raise LinAlgError for the first matrix whose info is not 0, as PyTorch words it:
    `linalg_inv(): (Batch element 2): The diagonal element 1 is zero, ...`. `what` is the
    message, with `{info}` where LAPACK's number goes."""
    bad = np.flatnonzero(info.reshape(-1))
    if bad.size == 0:
        return
    first = int(bad[0])
    where = f"(Batch element {first}): " if info.ndim > 0 else ""
    raise LinAlgError(f"{op}(): {where}{what.format(info=int(info.reshape(-1)[first]))}", op=op)
