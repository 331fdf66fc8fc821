"""Backward helpers of QR and least squares (linalg_qr, linalg_lstsq), written with
TensorPlay ops so they can be differentiated again.

They are PyTorch's (FunctionsManual.cpp: linalg_qr_backward, linalg_lstsq_backward,
pinv_backward, shared with pinv in formulas/eigen.py), real case: where PyTorch takes a
conjugate transpose (mH) these take the transpose, and the terms of the imaginary part of
a diagonal are dropped (complex dtypes come later).

The Householder products (householder_product, orgqr, ormqr) have no helper: they are
Composite (tensorplay/composite/qr.py), so autograd records them reflector by reflector.
"""
from __future__ import annotations

from tensorplay import _creation
from tensorplay._generated import functional as F
from tensorplay.autograd.formulas.core import sum_to
from tensorplay.autograd.formulas.eigen import pinv_backward, pinv_jvp
from tensorplay.errors import AutogradError
from tensorplay.kernel_support.lapack_qr import lstsq_is_vector


def linalg_qr_backward(grad_Q, grad_R, Q, R, mode):
    """A = Q R, gA from gQ and gR (PyTorch's linalg_qr_backward).

    m >= n:  gA = (gQ + Q syminvadj(triu(gR R^T - Q^T gQ))) R^-T, syminvadj(X) the
             symmetric matrix of X's upper triangle (X + X^T with its diagonal once)
    m < n:   gA = [Q trilImInvAdjSkew(Q^T gQ - gR R^T) R_1^-T | 0] + Q gR, with
             trilImInvAdjSkew(X) = tril(X - X^T) and R_1 the leading m x m block of R
    """
    if mode == "r":
        raise AutogradError("linalg_qr(): The derivative of linalg.qr depends on Q, which is "
                            "not computed when mode='r'. Please use linalg.qr(A, "
                            "mode='reduced') if you are going to differentiate through "
                            "linalg.qr.", op="linalg_qr", arg="mode")
    m, n = Q.shape[-2], R.shape[-1]
    if mode == "complete" and m > n:
        raise AutogradError("linalg_qr(): The QR decomposition is not differentiable when "
                            "mode='complete' and nrows > ncols.", op="linalg_qr", arg="mode")
    gA = grad_R.matmul(R.mT) - Q.mT.matmul(grad_Q)
    if m >= n:
        gA = Q.matmul(gA.triu() + gA.triu(1).mT) + grad_Q
        return F.linalg_solve_triangular(R.mT, gA, upper=False, left=False)
    skew = -gA
    gA = Q.matmul((skew - skew.mT).tril())
    gA = F.linalg_solve_triangular(R.narrow(-1, 0, m).mT, gA, upper=False, left=False)
    zeros = _creation.zeros(tuple(R.shape[:-1]) + (n - m,), dtype=gA.dtype, device=gA.device)
    return F.cat([gA, zeros], -1) + Q.matmul(grad_R)


def linalg_lstsq_backward(grad_solution, grad_residuals, A, B, X):
    """X = A^+ B: gB = A^+T gX and gA through pinv_backward with g(A^+) = gX B^T; the
    residuals ||A X - B||^2 (per column) as if X were fixed (Danskin's theorem: X is
    their minimiser), gA += 2 (gL * r) X^T, gB -= 2 gL * r with r = A X - B. Each summed
    to its input's batch (A's and B's broadcast)."""
    a_shape, b_shape = tuple(A.shape), tuple(B.shape)
    vector = lstsq_is_vector(a_shape, b_shape)
    if vector:
        B, X, grad_solution = B.unsqueeze(-1), X.unsqueeze(-1), grad_solution.unsqueeze(-1)
    pinvA = F.linalg_pinv(A)
    gA = pinv_backward(grad_solution.matmul(B.mT), pinvA, A)
    gB = pinvA.mT.matmul(grad_solution)
    if grad_residuals.numel():
        r = A.matmul(X) - B
        gL = grad_residuals.unsqueeze(-2)
        gA = gA + 2 * (gL * r).matmul(X.mT)
        gB = gB - 2 * gL * r
    if vector:
        gB = gB.squeeze(-1)
    return sum_to(gA, a_shape), sum_to(gB, b_shape)


# ---- tangents (forward mode) -------------------------------------------------------------
def linalg_qr_jvp(dA, Q, R, mode):
    """A = QR (m >= n): with C = Q^H dA R^-1, dR R^-1 is the upper triangle of C + C^H with
    its diagonal halved (Q^H dQ is skew-Hermitian), dQ = dA R^-1 - Q dR R^-1 (PyTorch's).
    A wide A = [X | Y], R = [U | V]: X's factors as above, dV = Q^H (dY - dQ V)."""
    m, n = dA.shape[-2], dA.shape[-1]
    if mode == "r" or (mode == "complete" and m > n):
        raise AutogradError(f"linalg_qr: the derivative of QR with mode='{mode}' is not "
                            f"defined (its Q is not a function of A for m > n, or is "
                            f"not computed)", op="linalg_qr")
    if m >= n:
        dARinv = F.linalg_solve_triangular(R, dA, upper=True, left=False)
        M = _sym_upper(Q.mH.matmul(dARinv))
        return dARinv - Q.matmul(M), M.matmul(R)
    dQ, dU = linalg_qr_jvp(dA.narrow(-1, 0, m), Q, R.narrow(-1, 0, m), mode)
    dV = Q.mH.matmul(dA.narrow(-1, m, n - m) - dQ.matmul(R.narrow(-1, m, n - m)))
    return dQ, F.cat([dU, dV], -1)


def _sym_upper(C):
    """The upper-triangular M with M + M^H = C + C^H: triu(C + C^H), diagonal halved."""
    X = (C + C.mH).triu()
    return X - 0.5 * F.diag_embed(X.diagonal(0, -2, -1))


def linalg_lstsq_solution_jvp(A, B, dA, dB):
    """X = A^+ B: dX = d(A^+) B + A^+ dB."""
    vector = lstsq_is_vector(tuple(A.shape), tuple(B.shape))
    if vector:
        B, dB = B.unsqueeze(-1), dB.unsqueeze(-1)
    pinvA = F.linalg_pinv(A)
    dX = pinv_jvp(A, pinvA, dA).matmul(B) + pinvA.matmul(dB)
    return dX.squeeze(-1) if vector else dX


def linalg_lstsq_residuals_jvp(A, B, dA, dB, X, residuals):
    """L = sum over rows of |A X - B|^2: dL = 2 Re sum(conj(r) (dA X + A dX - dB))."""
    if residuals.numel() == 0:
        return None
    vector = lstsq_is_vector(tuple(A.shape), tuple(B.shape))
    dX = linalg_lstsq_solution_jvp(A, B, dA, dB)
    if vector:
        B, dB, X, dX = B.unsqueeze(-1), dB.unsqueeze(-1), X.unsqueeze(-1), dX.unsqueeze(-1)
    r = A.matmul(X) - B
    dr = dA.matmul(X) + A.matmul(dX) - dB
    prod = r.conj() * dr
    dL = 2 * (prod.real if prod.dtype.is_complex else prod).sum(-2)
    return dL.squeeze(-1) if vector else dL
