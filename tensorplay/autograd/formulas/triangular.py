"""Backward helpers of the triangular factorizations and solves, written with TensorPlay
ops so they can be differentiated again.

They are PyTorch's (FunctionsManual.cpp), for real matrices: where PyTorch writes A^H
(conjugate transpose) these write A^T (`.mT`); the conjugations drop out. A triangular
inverse is always applied through a triangular solve, never formed.

    A = P L U (LU)        linalg_lu_backward, lu_factor_ex_backward, lu_unpack_backward
    X = A^-1 B from LU    linalg_lu_solve_LU, linalg_lu_solve_B
    A X = B, A triangular linalg_solve_triangular_backward, triangular_solve_backward
    Cholesky              cholesky_solve_backward, cholesky_inverse_backward

A broadcast batch dim is summed back to each input's own shape (sum_to): PyTorch's engine
does that itself after the formula, TensorPlay's formulas do it.
"""
from __future__ import annotations

from tensorplay import _creation
from tensorplay._generated import functional as F
from tensorplay.autograd.formulas.core import sum_to


def _solve_tri(A, B, upper, left=True, unitriangular=False):
    return F.linalg_solve_triangular(A, B, upper=upper, left=left, unitriangular=unitriangular)


def _add(x, y):
    """x + y where either may be None (an output with no gradient)."""
    if x is None:
        return y
    return x if y is None else x + y


def _zeros(sizes, like):
    return _creation.zeros(tuple(sizes), dtype=like.dtype, device=like.device)


# ---- LU ----------------------------------------------------------------------------------
def linalg_lu_backward(grad_L, grad_U, P, L, U, pivot):
    """A = P L U with L m x k (unit lower), U k x n, k = min(m, n). Square:

        gA = P L^-T [(L^T gL) o 1_L + (gU U^T) o 1_U] U^-T

    (1_L: strictly lower, 1_U: upper triangle). Wide (m < n, U = [U1 U2]) and tall
    (m > n, L = [L1; L2]) matrices add the rectangular block's own term."""
    if grad_L is None and grad_U is None:
        return None
    m, n = L.shape[-2], U.shape[-1]
    k = min(m, n)
    if m == n:
        gA = None if grad_L is None else L.mT.matmul(grad_L).tril(-1)
        if grad_U is not None:
            gA = _add(gA, grad_U.matmul(U.mT).triu())
        gA = _solve_tri(U.mT, gA, upper=False, left=False)
        gA = _solve_tri(L.mT, gA, upper=True, unitriangular=True)
    elif m < n:
        # gA1 = P L^-T [gU1 o 1_U + ((L^T gL) o 1_L - (gU U^T) o 1_L) U1^-T],  gA2 = P L^-T gU2
        U1 = U.narrow(-1, 0, k)
        gA = None if grad_L is None else L.mT.matmul(grad_L)
        if grad_U is not None:
            gA = _add(gA, -grad_U.triu().matmul(U.mT))
        gA = _solve_tri(U1.mT, gA.tril(-1), upper=False, left=False)
        if grad_U is not None:
            gA = F.cat([gA + grad_U.narrow(-1, 0, k).triu(), grad_U.narrow(-1, k, n - k)], -1)
        gA = _solve_tri(L.mT, gA, upper=True, unitriangular=True)
        if grad_U is None:
            gA = F.cat([gA, _zeros(gA.shape[:-1] + (n - k,), gA)], -1)
    else:
        # gA1 = P [gL1 o 1_L + L1^-T ((gU U^T) o 1_U - (L^T gL) o 1_U)] U^-T,  gA2 = P gL2 U^-T
        L1 = L.narrow(-2, 0, k)
        gA = None if grad_U is None else grad_U.matmul(U.mT)
        if grad_L is not None:
            gA = _add(gA, -L.mT.matmul(grad_L.tril(-1)))
        gA = _solve_tri(L1.mT, gA.triu(), upper=True, unitriangular=True)
        if grad_L is not None:
            gA = F.cat([gA + grad_L.narrow(-2, 0, k).tril(-1), grad_L.narrow(-2, k, m - k)], -2)
        gA = _solve_tri(U.mT, gA, upper=False, left=False)
        if grad_L is None:
            gA = F.cat([gA, _zeros(gA.shape[:-2] + (m - k,) + gA.shape[-1:], gA)], -2)
    return P.matmul(gA) if pivot else gA


def lu_factor_ex_backward(grad, LU, pivots, pivot):
    """LU packs L (strictly lower part) and U (upper triangle): the gradient of each is
    the packed gradient's own part, handed to linalg_lu_backward."""
    P, L, U = F.lu_unpack(LU, pivots, True, pivot)
    m, n = LU.shape[-2], LU.shape[-1]
    k = min(m, n)
    return linalg_lu_backward(grad.narrow(-1, 0, k), grad.narrow(-2, 0, k), P, L, U, pivot)


def lu_unpack_backward(grad_L, grad_U, sizes):
    """L and U are copies of LU's parts (L's unit diagonal is not LU's): their gradients
    go back to those parts, L's strictly lower one and U's upper triangle."""
    m, n = sizes[-2], sizes[-1]
    k = min(m, n)
    gL = None if grad_L is None else grad_L.tril(-1)     # m x k
    gU = None if grad_U is None else grad_U.triu()       # k x n
    if m < n and gL is not None:
        gL = F.cat([gL, _zeros(gL.shape[:-1] + (n - k,), gL)], -1)
    if m > n and gU is not None:
        gU = F.cat([gU, _zeros(gU.shape[:-2] + (m - k,) + gU.shape[-1:], gU)], -2)
    return _add(gL, gU)


def linalg_lu_solve_LU(grad, LU, pivots, X, left, adjoint):
    """X = A^-1 B from A = P L U's packed factors: the gradient of LU (PyTorch's
    linalg_lu_solve_LU, real case). With gR an auxiliary matrix:

        left != adjoint:  gR = U^-T (-gX' X'^T),  gLU = (L^-T gR U^T) o 1_L + gR o 1_U
        left == adjoint:  gR = -P^T X' gX'^T P L^-T,  gLU = gR o 1_L + (L^T gR U^-T) o 1_U

    (X', gX' are X, gX transposed for the right-hand forms.)"""
    P, L, U = F.lu_unpack(LU, pivots, True, left == adjoint)
    if left != adjoint:
        g = grad if left else grad.mT
        x = X.mT if left else X
        gR = _solve_tri(U.mT, -g.matmul(x), upper=False)
        gL = _solve_tri(L.mT, gR.matmul(U.mT), upper=True, unitriangular=True).tril(-1)
        gLU = gL + gR.triu()
    else:
        x = X if left else X.mT
        g = grad.mT if left else grad
        gR = -P.mT.matmul(x).matmul(g).matmul(P)
        gR = _solve_tri(L.mT, gR, upper=True, left=False, unitriangular=True)
        gU = _solve_tri(U.mT, L.mT.matmul(gR), upper=False, left=False).triu()
        gLU = gR.tril(-1) + gU
    return sum_to(gLU, LU.shape)


def linalg_lu_solve_B(grad, LU, pivots, B_sizes, left, adjoint):
    """gB = A^-T gX: one more solve with the same factors, the other `adjoint`."""
    return sum_to(F.linalg_lu_solve(LU, pivots, grad, left=left, adjoint=not adjoint), B_sizes)


# ---- triangular solves ---------------------------------------------------------------------
def _triangle(gA, upper, unitriangular):
    """The part of A's gradient that A's values reach: its triangle (without the diagonal
    when it is taken as ones)."""
    return gA.triu(int(unitriangular)) if upper else gA.tril(-int(unitriangular))


def linalg_solve_triangular_backward(grad, A, X, upper, left, unitriangular, B_sizes):
    """A X = B: gB = A^-T gX, gA = -gB X^T (X A = B: gB = gX A^-T, gA = -X^T gB), gA kept
    to A's triangle."""
    gB = _solve_tri(A.mT, grad, upper=not upper, left=left, unitriangular=unitriangular)
    gA = -gB.matmul(X.mT) if left else -X.mT.matmul(gB)
    return sum_to(_triangle(gA, upper, unitriangular), A.shape), sum_to(gB, B_sizes)


def triangular_solve_backward(grad_solution, grad_coefficient, b_sizes, A, X, upper,
                              transpose, unitriangular):
    """op(A) X = b (op(A) = A^T when `transpose`): gb = op(A)^-T gX, gA = -gb X^T (or
    -X gb^T), kept to A's triangle, plus the cloned coefficient's gradient (a copy of A)."""
    gb = gA = None
    if grad_solution is not None:
        gb = F.triangular_solve(grad_solution, A, upper, not transpose, unitriangular)[0]
        gA = -X.matmul(gb.mT) if transpose else -gb.matmul(X.mT)
        gA = _triangle(gA, upper, unitriangular)
    gA = _add(gA, grad_coefficient)
    return (None if gb is None else sum_to(gb, b_sizes),
            None if gA is None else sum_to(gA, A.shape))


# ---- Cholesky --------------------------------------------------------------------------------
def cholesky_solve_backward(grad, b, factor, X, upper):
    """X = A^-1 b with A = L L^T: gb = A^-1 gX; with S = gb X^T + X gb^T, gL = -S L
    (A = U^T U: gU = -U S). Only b's shape is read, but b is saved as PyTorch saves it: b
    changed in place before backward makes backward raise, as there."""
    b_sizes = b.shape
    gb = F.cholesky_solve(grad, factor, upper)
    common = gb.matmul(X.mT)
    common = common + common.mT
    gL = -factor.matmul(common) if upper else -common.matmul(factor)
    return sum_to(gb, b_sizes), sum_to(gL, factor.shape)


def cholesky_inverse_backward(grad, factor, upper, inverse):
    """A^-1 from A = L L^T: with S = A^-1 (gX + gX^T) A^-1, gL = -S L (U: -U S)."""
    common = inverse.matmul((grad + grad.mT).matmul(inverse))
    return -factor.matmul(common) if upper else -common.matmul(factor)


# ---- tangents (forward mode) -------------------------------------------------------------
# J v of each factorization and solve (PyTorch's formulas, FunctionsManual.cpp). With
# A = P L U, P^T dA = dL U + L dU, so L^-1 P^T dA U^-1 = L^-1 dL + dU U^-1: its strictly
# lower part is L^-1 dL (L is unit lower), its upper part dU U^-1. A solve X = A^-1 B has
# dX = A^-1 (dB - dA X).

def _lu_square_jvp(PtdA, L, U):
    """(dL, dU) of square factors from P^T dA."""
    X = _solve_tri(L, PtdA, upper=False, unitriangular=True)
    X = _solve_tri(U, X, upper=True, left=False)
    return L.matmul(X.tril(-1)), X.triu().matmul(U)


def linalg_lu_jvp(dA, P, L, U, pivot):
    """(dL, dU) of A = P L U; a wide A's extra columns of U and a tall A's extra rows of L
    follow from the rest: dU2 = L^-1 (P^T dA2 - dL U2), dL2 = (P^T dA2 - L2 dU) U^-1."""
    PtdA = P.mT.to(dA.dtype).matmul(dA) if pivot else dA
    m, n = dA.shape[-2], dA.shape[-1]
    k = min(m, n)
    if m == n:
        return _lu_square_jvp(PtdA, L, U)
    if m < n:
        U1, U2 = U.narrow(-1, 0, k), U.narrow(-1, k, n - k)
        dL, dU1 = _lu_square_jvp(PtdA.narrow(-1, 0, k), L, U1)
        dU2 = _solve_tri(L, PtdA.narrow(-1, k, n - k) - dL.matmul(U2), upper=False,
                         unitriangular=True)
        return dL, F.cat([dU1, dU2], -1)
    L1, L2 = L.narrow(-2, 0, k), L.narrow(-2, k, m - k)
    dL1, dU = _lu_square_jvp(PtdA.narrow(-2, 0, k), L1, U)
    dL2 = _solve_tri(U, PtdA.narrow(-2, k, m - k) - L2.matmul(dU), upper=True, left=False)
    return F.cat([dL1, dL2], -2), dU


def lu_factor_ex_jvp(dA, LU, pivots, pivot):
    """The tangent of the packed factor: dL's strictly lower part and dU's upper part, in
    LU's own m x n layout."""
    P, L, U = F.lu_unpack(LU, pivots, True, pivot)
    dL, dU = linalg_lu_jvp(dA, P, L, U, pivot)
    m, n = LU.shape[-2], LU.shape[-1]
    if m == n:
        return dL + dU
    if m < n:
        return F.cat([dL + dU.narrow(-1, 0, m), dU.narrow(-1, m, n - m)], -1)
    return F.cat([dL.narrow(-2, 0, n) + dU, dL.narrow(-2, n, m - n)], -2)


def lu_unpack_jvp(LU_t, unpack_data):
    """L's and U's tangents are the packed tangent's strictly lower and upper parts."""
    if not unpack_data:
        return None, None
    m, n = LU_t.shape[-2], LU_t.shape[-1]
    L_t = (LU_t if m >= n else LU_t.narrow(-1, 0, m)).tril(-1)
    U_t = (LU_t if n >= m else LU_t.narrow(-2, 0, n)).triu()
    return L_t, U_t


def linalg_lu_solve_jvp(X, LU, pivots, dLU, dB, left, adjoint):
    """X = op(A)^-1 B (or B op(A)^-1), A = P L U from the packed factor: dA = P (dL U + L dU)
    with dL, dU the strictly lower and upper parts of dLU, then one more solve."""
    P, L, U = F.lu_unpack(LU, pivots)
    dA = P.to(dLU.dtype).matmul(dLU.tril(-1).matmul(U) + L.matmul(dLU.triu()))
    if adjoint:
        dA = dA.mH
    rhs = dB - (dA.matmul(X) if left else X.matmul(dA))
    return F.linalg_lu_solve(LU, pivots, rhs, left=left, adjoint=adjoint)


def linalg_solve_triangular_jvp(A_t, B_t, A_p, X, upper, left, unitriangular):
    """dX = A^-1 (dB - dA X) (or (dB - X dA) A^-1), dA kept to the triangle A's solve
    reads (its strict part when unitriangular)."""
    dA = _triangle(A_t, upper, unitriangular)
    rhs = B_t - (dA.matmul(X) if left else X.matmul(dA))
    return _solve_tri(A_p, rhs, upper=upper, left=left, unitriangular=unitriangular)


def triangular_solve_jvp(X, A, dA, dB, upper, transpose, unitriangular):
    """op(A) X = b: dX = op(A)^-1 (db - op(dA) X), dA kept to A's triangle."""
    dA = _triangle(dA, upper, unitriangular)
    if transpose:
        dA = dA.mT
    return F.triangular_solve(dB - dA.matmul(X), A, upper, transpose, unitriangular)[0]


def cholesky_solve_jvp(X, factor, dfactor, dB, upper):
    """A = L L^H (or U^H U): dA = dL L^H + L dL^H, dX = A^-1 (dB - dA X) (PyTorch's: the
    whole tangent of the factor, as its backward gives a gradient for the whole factor)."""
    dK = dfactor.mH.matmul(factor) if upper else dfactor.matmul(factor.mH)
    dA = dK + dK.mH
    return F.cholesky_solve(dB - dA.matmul(X), factor, upper)


def cholesky_inverse_jvp(factor, dfactor, inverse, upper):
    """d(A^-1) = -A^-1 dA A^-1 with dA = dL L^H + L dL^H (U: dU^H U + U^H dU)."""
    dK = dfactor.mH.matmul(factor) if upper else dfactor.matmul(factor.mH)
    return -inverse.matmul((dK + dK.mH).matmul(inverse))
