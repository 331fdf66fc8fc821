"""Backward helpers of the SVD, the symmetric eigendecomposition and the determinant:
PyTorch's svd_backward, linalg_eig_backward (its Hermitian case, as eigh_backward) and
linalg_det_backward (FunctionsManual.cpp), real case, written with TensorPlay ops so that
they can be differentiated again.

Real only: PyTorch's complex terms (the imaginary part of diag(U^H gU) / 2S in the SVD,
the conjugates) are dropped, and so is its check that a loss does not depend on the
phase e^{i phi} of complex singular or eigen vectors. Real vectors have no continuous
gauge: each is determined up to its sign, a discrete choice that no smooth loss can
follow, so there is nothing to check.

A missing gradient. PyTorch hands these formulas an *undefined* tensor for an output
that got no gradient (svdvals uses S only, eigvalsh the eigenvalues only) and takes a
shortcut then: gA = U diag(gS) Vh. The general formula is not the shortcut: with two
equal singular values it divides 0 by 0 (and a rectangular rank-deficient A gives
gU / 0). So _linalg_svd's and _linalg_eigh's entries in derivatives.yaml say
`materialize_grads: false`: the engine hands their nodes None for such an output, where
it hands every other node zeros.
"""
from __future__ import annotations

import numpy as np

from tensorplay import _creation
from tensorplay._generated import functional as F
from tensorplay.autograd.formulas.reduction import product_of_others
from tensorplay.autograd.grad_mode import grad_state
from tensorplay.errors import AutogradError


def _eye_mask(n, like):
    i = _creation.arange(n, device=like.device)
    return i.view([n, 1]) == i.view([1, n])


def _diag_embed(v):
    """A (batch of) diagonal matrices with v on the diagonal (a where, not v * I: an inf
    or NaN in v stays on the diagonal)."""
    n = v.shape[-1]
    return F.where(_eye_mask(n, v), v.unsqueeze(-1), _creation.zeros((), dtype=v.dtype,
                                                                     device=v.device))


def _gaps(values):
    """E[..., i, j] = values[j] - values[i], with 1 on the diagonal (which is only ever
    divided into 0). Written as a sum with the identity, not an in-place fill, so that the
    graph records it for higher derivatives."""
    n = values.shape[-1]
    eye = _creation.eye(n, dtype=values.dtype, device=values.device)
    return values.unsqueeze(-2) - values.unsqueeze(-1) + eye


# ---- the SVD ---------------------------------------------------------------------------
def svd_backward(gU, gS, gVh, U, S, Vh):
    """PyTorch's svd_backward (real case), for the reduced SVD A = U diag(S) Vh (U [m, k],
    Vh [k, n]); a gradient may be None (not given). With skew(X) = X - X^T and
    E[j, k] = S_k^2 - S_j^2 (1 on the diagonal):

        m == n:  gA = U [(skew(U^T gU) / E) S + S (skew(V^T gV) / E) + diag(gS)] Vh
        m > n:   gA = [the term above] + (I_m - U U^T) gU S^-1 Vh
        m < n:   gA = [the term above] + U S^-1 gVh (I_n - V V^T)

    It assumes distinct singular values (and, for m != n, a full-rank A): for equal ones
    E has zeros off the diagonal, and the gradient is inf or NaN, as PyTorch's."""
    if gS is None and gU is None and gVh is None:
        return None
    m, n = U.shape[-2], Vh.shape[-1]
    if gU is None and gVh is None:
        # svdvals' shortcut: gA = U diag(gS) Vh
        if m >= n:
            return F.matmul(U, gS.unsqueeze(-1) * Vh)
        return F.matmul(U * gS.unsqueeze(-2), Vh)
    UhgU = VhgV = None
    if gU is not None:
        UhgU = F.matmul(U.mT, gU)
        UhgU = UhgU - UhgU.mT
    if gVh is not None:
        VhgV = F.matmul(Vh, gVh.mT)
        VhgV = VhgV - VhgV.mT
    E = _gaps(S * S)
    if gU is not None and gVh is not None:
        gA = (UhgU * S.unsqueeze(-2) + S.unsqueeze(-1) * VhgV) / E
    elif gU is not None:
        gA = (UhgU / E) * S.unsqueeze(-2)
    else:
        gA = S.unsqueeze(-1) * (VhgV / E)
    if gS is not None:
        gA = gA + _diag_embed(gS)
    # (PyTorch adds diag(U^H gU) / 2S here in the complex case: real, it is zero.)
    if m > n and gU is not None:
        gA = F.matmul(U, gA)
        gUSinv = gU / S.unsqueeze(-2)
        gA = gA + gUSinv - F.matmul(U, F.matmul(U.mT, gUSinv))
        return F.matmul(gA, Vh)
    if m < n and gVh is not None:
        gA = F.matmul(gA, Vh)
        SinvgVh = gVh / S.unsqueeze(-1)
        gA = gA + SinvgVh - F.matmul(F.matmul(SinvgVh, Vh.mT), Vh)
        return F.matmul(U, gA)
    if m >= n:
        return F.matmul(U, F.matmul(gA, Vh))
    return F.matmul(F.matmul(U, gA), Vh)


def linalg_svd_backward(grad_U, grad_S, grad_Vh, U, S, Vh, full_matrices, compute_uv):
    """_linalg_svd's derivative, as PyTorch's derivatives.yaml writes it: with
    full_matrices the columns of U (rows of Vh) past k = min(m, n) are any orthonormal
    basis of the complement, so their gradients are ignored and svd_backward sees the
    reduced SVD (PyTorch documents this; it does not raise)."""
    if not compute_uv:
        raise AutogradError("linalg_svd_backward(): the derivative of the SVD needs U and Vh, "
                            "which compute_uv=False does not compute (use linalg_svd or "
                            "linalg_svdvals, which compute them when a gradient may be needed)")
    k = S.shape[-1]
    if full_matrices:
        U, Vh = U.narrow(-1, 0, k), Vh.narrow(-2, 0, k)
        grad_U = grad_U.narrow(-1, 0, k) if grad_U is not None else None
        grad_Vh = grad_Vh.narrow(-2, 0, k) if grad_Vh is not None else None
    gA = svd_backward(grad_U, grad_S, grad_Vh, U, S, Vh)
    if gA is None:
        return _creation.zeros(tuple(U.shape[:-1]) + (Vh.shape[-1],), dtype=S.dtype,
                               device=S.device)
    return gA


# ---- the symmetric eigendecomposition ------------------------------------------------------
def linalg_eig_backward(gL, gV, L, V, is_hermitian=True):
    """PyTorch's linalg_eig_backward, its Hermitian case (real symmetric A = V diag(L) V^T):

        gA = V [diag(gL) + skew(V^T gV) / 2E] V^T,   E[i, j] = L_j - L_i (1 on the diagonal)

    (the skew part projects onto the tangent space of the orthogonal group). Equal
    eigenvalues give inf or NaN, as PyTorch's. A gradient may be None (not given): with gV
    None it is eigvalsh's V diag(gL) V^T. TensorPlay has no linalg_eig (a non-symmetric
    eigendecomposition has complex results), so only is_hermitian=True is served."""
    if not is_hermitian:
        raise AutogradError("linalg_eig_backward(): only the Hermitian case (eigh) is "
                            "implemented: TensorPlay has no complex linalg_eig")
    if gL is None and gV is None:
        return None
    if gV is None:
        return F.matmul(V * gL.unsqueeze(-2), V.mT)
    VhgV = F.matmul(V.mT, gV)
    # (PyTorch checks here that the loss does not depend on the phases of complex
    # eigenvectors; real ones have no continuous gauge: nothing to check.)
    VhgV = 0.5 * (VhgV - VhgV.mT)
    gA = VhgV / _gaps(L)
    if gL is not None:
        gA = gA + _diag_embed(gL)       # (the skew part's diagonal is zero)
    return F.matmul(V, F.matmul(gA, V.mT))


def eigh_backward(grad_eigenvalues, grad_eigenvectors, eigenvalues, eigenvectors, compute_v):
    """_linalg_eigh's derivative: linalg_eig_backward with is_hermitian=True. The gradient
    is that of a function of the whole symmetric matrix, not projected onto the triangle
    that was read (PyTorch's, and what finite differences of a symmetrized input see)."""
    if not compute_v:
        raise AutogradError("linalg_eigh_backward(): the derivative of eigh needs the "
                            "eigenvectors, which compute_v=False does not compute (use "
                            "linalg_eigh or linalg_eigvalsh, which compute them when a "
                            "gradient may be needed)")
    gA = linalg_eig_backward(grad_eigenvalues, grad_eigenvectors, eigenvalues, eigenvectors,
                             True)
    if gA is None:
        return _creation.zeros(tuple(eigenvectors.shape), dtype=eigenvalues.dtype,
                               device=eigenvalues.device)
    return gA


# ---- the determinant -------------------------------------------------------------------
def _det_singular(A, grad):
    """The cofactor matrix through the SVD (Higham, "What is the adjugate of a matrix?"):
    A = U S Vh gives adj(A)^T = det(U) det(Vh) U diag(prod of the other S) Vh, correct for
    singular A too; every step is differentiable (higher derivatives of det)."""
    U, S, Vh = F._linalg_svd(A, True, True)
    alpha = F.linalg_det(U) * F.linalg_det(Vh) * grad
    D = alpha.unsqueeze(-1) * product_of_others(S)
    return F.matmul(U * D.unsqueeze(-2), Vh)


def _det_nonsingular(A, d):
    """gA with A^T gA = d: solved as (A^-1 d^T)^T = solve(A, d)^T (d is diagonal), so that
    the LU factorization is A's own, the one det came from. Near a singular A, det / the
    small pivot then cancels consistently (a factorization of A^T pivots differently, and
    the gradient loses digits: gradgradcheck of a rank-deficient det sees them)."""
    return F.linalg_solve(A, d).mT


def _masked_fmap(mask, f1, f2, A, *rest):
    """f1 on the matrices where mask is true, f2 on the others (PyTorch's masked_fmap)."""
    n = int(F.sum(mask))
    if n == mask.numel():
        return f1(A, *rest)
    if n == 0:
        return f2(A, *rest)
    keep = ~mask
    out = _creation.zeros(tuple(A.shape), dtype=A.dtype, device=A.device)
    out = F.index_put(out, (mask,), f1(A[mask], *[t[mask] for t in rest]))
    return F.index_put(out, (keep,), f2(A[keep], *[t[keep] for t in rest]))


def linalg_det_backward(grad, det, A):
    """PyTorch's linalg_det_backward, real case: gA = g det(A) A^-T, solved from
    A^T gA = (g det) I.

    Without create_graph (the common backward), a singular A gets PyTorch's answer
    exactly: PyTorch perturbs the zero pivots of the LU factorization by eps and solves,
    and since the right-hand side g * det is then 0, the gradient is 0 (here: those
    matrices are left out of the solve). With create_graph, matrices with
    |det| < 100 eps take the SVD formula (_det_singular: the true cofactors, and
    differentiable again) and the others the solve, recomputed so that autograd
    differentiates it."""
    if A.numel() == 0:
        return _creation.zeros(tuple(A.shape), dtype=A.dtype, device=A.device)
    n = A.shape[-1]
    eye = _creation.eye(n, dtype=A.dtype, device=A.device)
    d = _diag_embed((grad * det).unsqueeze(-1).expand(tuple(det.shape) + (n,)))
    if not grad_state.enabled:
        singular = (det == 0).unsqueeze(-1).unsqueeze(-1)
        safe = F.where(singular, eye, A)        # (its right-hand side is 0: so is gA)
        return _det_nonsingular(safe, d)
    eps = float(np.finfo(A.dtype.np).eps)
    mask = det.abs() < 100.0 * eps
    if A.dim() == 2:
        return _det_singular(A, grad) if bool(mask) else _det_nonsingular(A, d)
    return _masked_fmap(mask, lambda a, g, _d: _det_singular(a, g),
                        lambda a, _g, dd: _det_nonsingular(a, dd), A, grad.expand(mask.shape),
                        d)


# ---- the pseudoinverse -----------------------------------------------------------------
def pinv_backward(grad, pinvA, A):
    """PyTorch's pinv_backward (real case): the derivative of the Moore-Penrose inverse
    X = A^+ at a point of constant rank (Golub and Pereyra), with gX = grad:

        gA = -(X K)^T + K X^T - A X K X^T + X^T X (gX^T - K A)        K = gX^T X  (m <= n)

    (the m > n form is its transpose). PyTorch uses it for every pinv, its tolerances
    included: where they cut singular values that are not 0, the result is not A's
    Moore-Penrose inverse and this is not the derivative of the truncated pinv (finite
    differences disagree), but it is PyTorch's gradient, and TensorPlay's."""
    m, n = A.shape[-2], A.shape[-1]
    pinvAh = pinvA.mT
    gradh = grad.mT
    if m <= n:
        K = F.matmul(gradh, pinvA)
        KpinvAh = F.matmul(K, pinvAh)
        return (-F.matmul(pinvA, K).mT + KpinvAh - F.matmul(F.matmul(A, pinvA), KpinvAh)
                + F.matmul(F.matmul(pinvAh, pinvA), gradh - F.matmul(K, A)))
    K = F.matmul(pinvA, gradh)
    pinvAhK = F.matmul(pinvAh, K)
    return (-F.matmul(K, pinvA).mT
            + F.matmul(F.matmul(gradh - F.matmul(A, K), pinvA), pinvAh) + pinvAhK
            - F.matmul(F.matmul(pinvAhK, pinvA), A))


# ---- tangents (forward mode) -------------------------------------------------------------
# PyTorch's formulas (FunctionsManual.cpp). With A = U S V^H and dP = U^H dA V, the
# skew-Hermitian U^H dU and V^H dV are read off dP's off-diagonal part (divided by
# E_jk = S_k^2 - S_j^2); an eigendecomposition the same way with E_jk = L_k - L_j.

def _sym(X):
    return X + X.mH


def svd_jvp(A, dA, U, S, Vh, full_matrices, compute_uv):
    """_linalg_svd's tangents; without U and V (svdvals) the factors are computed here, as
    dS needs them."""
    if compute_uv:
        return linalg_svd_jvp(dA, U, S, Vh, full_matrices)
    U, S, Vh = F._linalg_svd(A, False, True)
    return None, linalg_svd_jvp(dA, U, S, Vh, False)[1], None


def eigh_jvp(A, dA, L, V, UPLO, compute_v):
    """_linalg_eigh's tangents; without V (eigvalsh) it is computed here, as dL needs it."""
    if compute_v:
        return linalg_eig_jvp(dA, L, V, True)
    L, V = F._linalg_eigh(A, UPLO, True)
    return linalg_eig_jvp(dA, L, V, True)[0], None


def linalg_svd_jvp(dA, U, S, Vh, full_matrices):
    """(dU, dS, dVh) of the reduced SVD, k = min(m, n) (the complement a full U or Vh adds
    has no derivative: zeros, as PyTorch's):
        dS = Re diag(dP),  dU = U (sym(dX S) / E + i Im diag(dP) / 2S) + (I - UU^H) dA V S^-1
        dVh = (-sym(S dX) / E + i Im diag(dP) / 2S) Vh + S^-1 U^H dA (I - VV^H)
    with dX = dP - diag(dS)."""
    m, n, k = dA.shape[-2], dA.shape[-1], S.shape[-1]
    if full_matrices:
        U, Vh = U.narrow(-1, 0, k), Vh.narrow(-2, 0, k)
    V = Vh.mH
    dP = U.mH.matmul(dA.matmul(V))
    diag = dP.diagonal(0, -2, -1)
    dS = diag.real if dA.dtype.is_complex else diag
    dX = dP - F.diag_embed(dS.to(dP.dtype))
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1)
    E = E + F.diag_embed(_creation.ones_like(S))            # 1 on the diagonal
    Sc = S.to(dP.dtype)
    dU = _sym(dX * Sc.unsqueeze(-2)) / E
    dVh = -_sym(Sc.unsqueeze(-1) * dX) / E
    if dA.dtype.is_complex:
        half = F.diag_embed(dX.diagonal(0, -2, -1) / (2 * Sc))
        dU, dVh = dU + half, dVh + half
    dU = U.matmul(dU)
    dVh = dVh.matmul(Vh)
    if m > k:
        dAVSinv = dA.matmul(V / Sc.unsqueeze(-2))
        dU = dU + dAVSinv - U.matmul(U.mH.matmul(dAVSinv))
    if n > k:
        SinvUhdA = (U.mH / Sc.unsqueeze(-1)).matmul(dA)
        dVh = dVh + SinvUhdA - SinvUhdA.matmul(V).matmul(Vh)
    if full_matrices:
        if m > k:
            dU = F.cat([dU, _creation.zeros(tuple(dU.shape[:-1]) + (m - k,), dtype=dU.dtype,
                                            device=dU.device)], -1)
        if n > k:
            dVh = F.cat([dVh, _creation.zeros(tuple(dVh.shape[:-2]) + (n - k, n),
                                              dtype=dVh.dtype, device=dVh.device)], -2)
    return dU, dS, dVh


def linalg_eig_jvp(dA, L, V, is_hermitian):
    """dP = V^-1 dA V: dL = diag(dP) (real for a Hermitian A), dV = V (dP / E) with E's
    diagonal zeroed (a Hermitian A: V^-1 = V^H)."""
    dP = V.mH.matmul(dA.matmul(V)) if is_hermitian else F.linalg_solve(V, dA.matmul(V))
    diag = dP.diagonal(0, -2, -1)
    dL = diag.real if (is_hermitian and dA.dtype.is_complex) else diag
    Lc = L.to(dP.dtype)
    E = Lc.unsqueeze(-2) - Lc.unsqueeze(-1)
    E = E + F.diag_embed(_creation.ones_like(Lc))
    ratio = dP / E
    ratio = ratio - F.diag_embed(ratio.diagonal(0, -2, -1))
    dV = V.matmul(ratio)
    if not is_hermitian:
        dV = dV - V * (V.mH.matmul(dV)).diagonal(0, -2, -1).real.to(dV.dtype).unsqueeze(-2)
    return dL, dV


def linalg_det_jvp(dA, det, A):
    """d det A = det A tr(A^-1 dA), A^-1 dA through A's LU, a zero pivot nudged to eps (the
    determinant is C^1: the limit from nonsingular matrices, as PyTorch)."""
    LU, pivots = F.linalg_lu_factor(A)
    diag = LU.diagonal(0, -2, -1)
    eps = float(np.finfo(np.float64 if A.dtype.itemsize >= 8 else np.float32).eps)
    LU = LU + F.diag_embed((diag == 0).to(LU.dtype) * eps)
    return F.linalg_lu_solve(LU, pivots, dA).diagonal(0, -2, -1).sum(-1) * det


def pinv_jvp(A, pinvA, dA):
    """Golub and Pereyra (1973): the derivative of A^+ (the smaller of m, n multiplies)."""
    m, n = A.shape[-2], A.shape[-1]
    dAh, pinvAh = dA.mH, pinvA.mH
    if m <= n:
        K = pinvAh.matmul(dAh)
        return pinvA.matmul(K - K.mH - K.matmul(A.matmul(pinvA))) + \
            (dAh - pinvA.matmul(A.matmul(dAh))).matmul(pinvAh.matmul(pinvA))
    K = pinvA.matmul(dA)
    Kh = K.mH
    return (Kh - K - pinvA.matmul(A).matmul(Kh)).matmul(pinvA) + \
        pinvA.matmul(pinvAh).matmul(dAh - dAh.matmul(A).matmul(pinvA))
