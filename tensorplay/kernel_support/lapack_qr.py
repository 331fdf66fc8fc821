"""QR and least squares on NumPy arrays: LAPACK's routines as PyTorch's CPU kernels call
them, batched over the leading dims.

    qr        geqrf + orgqr (NumPy's linalg.qr calls exactly these, as PyTorch does, so
              Q and R come with LAPACK's signs: R's diagonal is whatever geqrf leaves,
              negative entries included; no sign is normalised)
    geqrf     geqrf alone: R above the diagonal, the Householder vectors below it, and
              the scalars tau (SciPy's wrapper, one matrix at a time)
    lstsq     one of LAPACK's four least-squares drivers per matrix (SciPy's wrappers):

                  gels    QR (or LQ): A must have full rank; no rank is computed
                  gelsy   QR with column pivoting: rank from R's diagonal against rcond
                          (every column free to pivot: PyTorch passes an uninitialized
                          pivot array, whose nonzero entries fix columns in front, so its
                          rank of an ill-conditioned matrix changes from call to call)
                  gelsd   SVD, divide and conquer: rank and singular values
                  gelss   SVD: rank and singular values

A driver overwrites B with max(m, n) rows: the solution in its first n, and, when
m > n, the pieces whose squares sum to the residuals in the rest (PyTorch reads them
there, so the residuals here are read the same way, not recomputed from A X - B).
"""
from __future__ import annotations

import numpy as np
from scipy.linalg import lapack

from tensorplay.kernel_support.lapack import check_info, stack_of_matrices

__all__ = ["qr", "geqrf", "lstsq", "lstsq_arrays", "lstsq_is_vector", "DRIVERS",
           "default_rcond"]

DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def qr(a, mode):
    """(Q, R) of a stack of matrices; mode 'r' gives (None, R)."""
    if mode == "r":
        return None, np.linalg.qr(a, mode="r")
    return np.linalg.qr(a, mode=mode)


def geqrf(a):
    """(the compact factorization, tau) of a stack of m x n matrices: tau has min(m, n)
    entries per matrix."""
    batch, stack = stack_of_matrices(a)
    m, n = a.shape[-2:]
    k = min(m, n)
    packed = np.empty_like(stack)
    tau = np.zeros((stack.shape[0], k), dtype=a.dtype)
    if m and n:
        routine = lapack.get_lapack_funcs("geqrf", (stack,))
        for i, matrix in enumerate(stack):
            packed[i], tau[i], _, _ = routine(matrix)
    return packed.reshape(a.shape), tau.reshape(batch + (k,))


def default_rcond(dtype, m, n):
    """PyTorch's rcond when none is given: the dtype's machine epsilon times max(m, n)."""
    return float(np.finfo(dtype).eps) * max(m, n)


def lstsq(a, b, rcond, driver):
    """Least squares of A X = B for each matrix of two stacks of one batch shape: A is
    (..., m, n), B (..., m, k). Returns (solution (..., n, k), residuals (..., k) or None,
    rank (...) or None, singular values (..., min(m, n)) or None) as the driver gives them."""
    batch, stack_a = stack_of_matrices(a)
    _, stack_b = stack_of_matrices(b)
    m, n = a.shape[-2:]
    k = b.shape[-1]
    count = stack_a.shape[0]
    rcond = default_rcond(a.dtype, m, n) if rcond is None else rcond
    # (PyTorch lets a negative rcond through to LAPACK, which reads it as machine precision)
    x = np.zeros((count, max(m, n), k), dtype=a.dtype)
    rank = np.zeros(count, dtype=np.int64)
    sv = np.zeros((count, min(m, n)), dtype=a.dtype)
    info = np.zeros(count, dtype=np.int32)
    for i in range(count):
        x[i], rank[i], sv[i], info[i] = _solve_one(stack_a[i], stack_b[i], rcond, driver)
    # gels's info > 0: R (or L) has an exactly zero diagonal entry, A has no full rank;
    # the SVD drivers' info > 0: the SVD did not converge.
    check_info("linalg_lstsq", info.reshape(batch),
               GELS_FAILED if driver == "gels" else SVD_FAILED)
    solution = x[:, :n].reshape(batch + (n, k))
    residuals = None
    full_rank = driver == "gels" or bool(np.all(rank == n))
    if m > n and driver != "gelsy" and full_rank:
        residuals = np.sum(x[:, n:] ** 2, axis=1).reshape(batch + (k,))
    return (solution, residuals,
            None if driver == "gels" else rank.reshape(batch),
            sv.reshape(batch + (min(m, n),)) if driver in ("gelsd", "gelss") else None)


# What check_info says (PyTorch's words).
GELS_FAILED = ("The least squares solution could not be computed because the input matrix "
               "does not have full rank (error code: {info}).")
SVD_FAILED = ("The algorithm failed to converge because the input matrix is ill-conditioned "
              "or has too many repeated singular values (error code: {info}).")


def _solve_one(a, b, rcond, driver):
    """(B overwritten by the driver: max(m, n) x k, rank, singular values) of one matrix."""
    m, n = a.shape
    k = b.shape[-1]
    padded = np.zeros((max(m, n), k), dtype=a.dtype)
    padded[:m] = b
    if m == 0 or n == 0 or k == 0:
        # LAPACK's drivers return at once: X = 0, rank 0; the SVD drivers' residuals are
        # B's squares (B's rows beyond n stay), gels's are zeros (PyTorch does not hand
        # an empty A to gels: its buffer stays zero)
        if driver == "gels":
            padded[:] = 0
        else:
            padded[:n] = 0
        return padded, 0, np.zeros(min(m, n), a.dtype), 0
    a = np.asfortranarray(a)
    padded = np.asfortranarray(padded)
    routine, sizes = lapack.get_lapack_funcs((driver, driver + "_lwork"), (a, padded))
    if driver == "gels":
        lwork = int(sizes(m, n, k)[0])
        _, x, info = routine(a, padded, lwork=lwork)
        rank, s = n, np.zeros(min(m, n), a.dtype)
    elif driver == "gelsy":
        lwork = int(sizes(m, n, k, rcond)[0])
        _, x, _, rank, info = routine(a, padded, np.zeros(n, dtype=np.int32), rcond, lwork)
        s = np.zeros(min(m, n), a.dtype)
    elif driver == "gelsd":
        work, iwork, _ = sizes(m, n, k, rcond)
        x, s, rank, info = routine(a, padded, int(work), iwork, rcond)
    else:
        lwork = int(sizes(m, n, k, rcond)[0])
        _, x, s, rank, _, info = routine(a, padded, rcond, lwork)
    return x, rank, s, info


def lstsq_is_vector(a_sizes, b_sizes):
    """PyTorch's rule for lstsq (linalg_solve_is_vector_rhs): B is a vector, or a batch of
    vectors of shape A.shape[:-1]."""
    return len(b_sizes) == 1 or (len(b_sizes) == len(a_sizes) - 1
                                 and tuple(b_sizes) == tuple(a_sizes[:-1]))


def _of_a(array, batch, a_batch):
    """An array over the broadcast batch (and trailing dims), cut down to A's own batch:
    rank and singular values depend on A alone, and PyTorch returns them with A's batch
    shape."""
    lead = len(batch) - len(a_batch)
    index = tuple(0 for _ in range(lead)) + tuple(
        slice(0, 1) if a == 1 else slice(None) for a in a_batch)
    return array[index]


def lstsq_arrays(a, b, rcond, driver, solution_sizes):
    """linalg_lstsq on host arrays (the CPU kernel's and the cuda fallback's): A and B
    broadcast to the solution's batch, a vector B as a one-column matrix; driver None is
    gelsy. Returns the four arrays, each output the driver does not compute empty."""
    driver = driver or "gelsy"
    vector = lstsq_is_vector(a.shape, b.shape)
    if vector:
        b = b[..., None]
    batch = tuple(solution_sizes[:-1] if vector else solution_sizes[:-2])
    a_batch = a.shape[:-2]
    a = np.broadcast_to(a, batch + a.shape[-2:])
    b = np.broadcast_to(b, batch + b.shape[-2:])
    solution, residuals, rank, sv = lstsq(a, b, rcond, driver)
    if vector:
        solution = solution[..., 0]
    empty = np.empty(0, a.dtype)
    return (solution, empty if residuals is None else residuals,
            np.empty(0, np.int64) if rank is None else _of_a(rank, batch, a_batch),
            empty if sv is None else _of_a(sv, batch, a_batch))
