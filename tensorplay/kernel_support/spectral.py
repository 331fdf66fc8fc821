"""The SVD, the symmetric eigendecomposition and the determinant on NumPy arrays.

The CPU kernels of _linalg_svd, _linalg_eigh and linalg_det call these on their tensors'
data; the `cuda` device runs the same functions on a host copy (triton_kernels/eigen.py,
a logged fallback). Arrays come in as (..., m, n) stacks; results keep the stack.

NumPy runs LAPACK's gesdd (the SVD, divide and conquer, as PyTorch's CPU default),
syevd (eigh) and getrf (det). gesdd and syevd can fail to converge: NumPy then raises for
the whole stack without saying which matrix, so the stack is walked again one matrix at a
time (a path taken only for bad input) to name the first one in PyTorch's words.
"""
from __future__ import annotations

import numpy as np

from tensorplay.kernel_support.lapack import check_info, stack_of_matrices

__all__ = ["svd", "eigh", "det", "SVD_NONFINITE", "SVD_FAILED", "EIGH_FAILED"]

# PyTorch's words for a gesdd that did not converge (it tells the two causes apart by
# looking for non-finite values); NumPy does not report LAPACK's info, so no error code.
SVD_NONFINITE = ("The algorithm failed to converge because the input matrix contained "
                 "non-finite values.")
SVD_FAILED = ("The algorithm failed to converge because the input matrix is ill-conditioned "
              "or has too many repeated singular values.")
EIGH_FAILED = ("The algorithm failed to converge because the input matrix is ill-conditioned "
               "or has too many repeated eigenvalues.")


def svd(a, full_matrices, compute_uv, op):
    """(U, S, Vh) of a stack of matrices (U, Vh None when not compute_uv). Raises
    LinAlgError, naming the first matrix gesdd refused, as PyTorch does.

    Non-finite matrices never reach LAPACK: the reference LAPACK's bidiagonal QR under
    NumPy can loop forever on one (a fuzzed nuclear_norm never returned). As PyTorch
    (MKL), a NaN is refused with gesdd's words; a matrix with infinities only gets NaN
    singular values (MKL's gesdd scales by the largest magnitude, inf), and NaN vectors
    (PyTorch's are what MKL left in its buffers)."""
    if a.size and not np.isfinite(a).all():
        batch, stack = stack_of_matrices(a)
        flat = stack.reshape(stack.shape[0], -1)
        check_info(op, np.where(np.isnan(flat).any(axis=1), 2, 0).astype(np.int32)
                   .reshape(batch), SVD_NONFINITE)
        infinite = ~np.isfinite(flat).all(axis=1)
        u, s, vh = _svd(np.where(infinite[:, None, None], 0, stack).reshape(a.shape),
                        full_matrices, compute_uv)
        for part in (u, s, vh):
            if part is not None:
                part.reshape((stack.shape[0], -1))[infinite] = np.nan
        return u, s, vh
    try:
        return _svd(a, full_matrices, compute_uv)
    except np.linalg.LinAlgError:
        batch, stack = stack_of_matrices(a)
        bad = np.zeros(stack.shape[0], dtype=np.int32)
        for i, m in enumerate(stack):
            try:
                _svd(m, full_matrices, False)
            except np.linalg.LinAlgError:
                bad[i] = 1 if np.isfinite(m).all() else 2
        refused = np.flatnonzero(bad)
        if refused.size == 0:
            raise
        # One message, for the first refused matrix: its cause says which words.
        check_info(op, bad.reshape(batch),
                   SVD_NONFINITE if bad[refused[0]] == 2 else SVD_FAILED)
        raise


def _svd(a, full_matrices, compute_uv):
    m, n = a.shape[-2:]
    if not compute_uv:
        if min(m, n) == 0 or a.size == 0:
            return None, np.zeros(a.shape[:-2] + (min(m, n),), a.dtype), None
        return None, np.linalg.svd(a, compute_uv=False), None
    if a.size == 0:
        # LAPACK is not called on empty input: the vectors are the identity (an empty
        # matrix's SVD), as NumPy's and PyTorch's.
        k = min(m, n)
        eye = np.eye
        u = np.broadcast_to(eye(m, m if full_matrices else k, dtype=a.dtype),
                            a.shape[:-2] + (m, m if full_matrices else k)).copy()
        vh = np.broadcast_to(eye(n if full_matrices else k, n, dtype=a.dtype),
                             a.shape[:-2] + (n if full_matrices else k, n)).copy()
        return u, np.zeros(a.shape[:-2] + (k,), a.dtype), vh
    return np.linalg.svd(a, full_matrices=full_matrices)


def eigh(a, UPLO, compute_v, op="linalg_eigh"):
    """(eigenvalues ascending, eigenvectors or None) of a stack of symmetric matrices, of
    which only the UPLO triangle is read. syevd does not refuse a matrix with NaNs (nor
    does PyTorch's): the result is then NaN or meaningless."""
    uplo = UPLO.upper()
    if a.size == 0:
        n = a.shape[-1]
        vectors = np.broadcast_to(np.eye(n, dtype=a.dtype), a.shape).copy()
        return np.zeros(a.shape[:-1], a.dtype), vectors if compute_v else None
    try:
        if not compute_v:
            return np.linalg.eigvalsh(a, UPLO=uplo), None
        return tuple(np.linalg.eigh(a, UPLO=uplo))
    except np.linalg.LinAlgError:
        # syevd did not converge (rare: NaNs go through, as PyTorch's): name the matrix
        batch, stack = stack_of_matrices(a)
        bad = np.zeros(stack.shape[0], dtype=np.int32)
        for i, m in enumerate(stack):
            try:
                np.linalg.eigvalsh(m, UPLO=uplo)
            except np.linalg.LinAlgError:
                bad[i] = 1
        check_info(op, bad.reshape(batch), EIGH_FAILED)
        raise


def det(a):
    """det of a stack of square matrices (LU with partial pivoting: exactly 0 when a
    pivot is exactly 0; an empty matrix's det is 1)."""
    return np.linalg.det(a).astype(a.dtype, copy=False)
