"""The public forms of the SVD and the symmetric eigendecomposition, and what is built on
them, written as PyTorch writes them (LinearAlgebra.cpp, BatchLinearAlgebra.cpp):

    linalg_svd, svd, linalg_svdvals     over _linalg_svd
    linalg_eigh, linalg_eigvalsh        over _linalg_eigh
    det                                 over linalg_det
    linalg_pinv, pinverse               V diag(1/S) U^T, small singular values dropped
    linalg_matrix_rank                  how many singular values are above the tolerance
    linalg_cond                         s_max / s_min, or |A| |A^-1| in another norm
    svd_lowrank, pca_lowrank            a random projection, then the SVD of a small matrix
    lobpcg                              a few extreme eigenpairs by Rayleigh-Ritz steps

Their graphs record themselves (gradients through svd_backward and eigh_backward), except
pinv's: PyTorch gives linalg_pinv a formula of its own (pinv_backward, derivatives.yaml),
so its decomposition here runs below autograd. Each checks its input under its own name
first.
"""
from __future__ import annotations

import math

import numpy as np

from tensorplay import _creation
from tensorplay import _dtype as dt
from tensorplay._generated import functional as F
from tensorplay.autograd.grad_mode import grad_state
from tensorplay.errors import ArgumentError, DTypeError, ShapeError, fmt_shape
from tensorplay.meta.eigen import check_driver, check_matrix, check_uplo
from tensorplay.meta.linalg import check_square


def _may_require_grad(A):
    """PyTorch's _may_require_fw_or_bw_grad: compute the vectors only when a gradient may
    be asked for (svdvals' and eigvalsh's gradients are made from them)."""
    return grad_state.enabled and A.requires_grad


# ---- the SVD ---------------------------------------------------------------------------
def linalg_svd(A, full_matrices, driver):
    check_matrix("linalg_svd", A)
    check_driver("linalg_svd", driver)
    return tuple(F._linalg_svd(A, full_matrices, True, driver=driver))


def svd(self, some, compute_uv):
    """The older form: V, not Vh (a transposed view of it), and some = not full_matrices.
    compute_uv=False gives zero U [*, m, m] and V [*, n, n], as PyTorch's."""
    check_matrix("svd", self, "self")
    if compute_uv:
        U, S, Vh = F._linalg_svd(self, not some, True)
        return U, S, Vh.mT
    S = linalg_svdvals(self, None)
    sizes = tuple(self.shape)
    m, n = sizes[-2:]
    U = _creation.zeros(sizes[:-1] + (m,), dtype=self.dtype, device=self.device)
    Vh = _creation.zeros(sizes[:-2] + (n, n), dtype=self.dtype, device=self.device)
    return U, S, Vh.mT


def linalg_svdvals(A, driver):
    check_matrix("linalg_svdvals", A)
    check_driver("linalg_svdvals", driver)
    return F._linalg_svd(A, False, _may_require_grad(A), driver=driver)[1]


# ---- the symmetric eigendecomposition ------------------------------------------------------
def linalg_eigh(self, UPLO):
    check_square("linalg_eigh", self, "self", empty_ok=True)
    check_uplo("linalg_eigh", UPLO)
    return tuple(F._linalg_eigh(self, UPLO, True))


def linalg_eigvalsh(self, UPLO):
    check_square("linalg_eigvalsh", self, "self", empty_ok=True)
    check_uplo("linalg_eigvalsh", UPLO)
    return F._linalg_eigh(self, UPLO, _may_require_grad(self))[0]


# ---- the determinant -------------------------------------------------------------------
def det(self):
    check_square("det", self, "self")
    return F.linalg_det(self)


# ---- tolerances (PyTorch's get_atol_rtol) ------------------------------------------------
# Singular values s <= max(atol, rtol * s_max) count as zero. rtol defaults to
# eps(dtype) * max(m, n), or to 0 when a positive atol is given. The tolerances are float64
# (PyTorch's), so the comparison with float32 singular values is made in float64.
def _float64(value, like):
    return _creation.full((), value, dtype=dt.float64, device=like.device)


def _default_rtol(A):
    return float(np.finfo(A.dtype.np).eps) * max(A.shape[-1], A.shape[-2])


def _check_tolerance(op, name, tol):
    if tol is not None and tol.dtype.is_complex:
        raise DTypeError(f"{op}(): '{name}' tensor of complex type is not supported, got "
                         f"{tol.dtype.name}", op=op, arg=name)


def _tolerances(op, A, atol, rtol):
    """(atol, rtol) as float64 tensors, from the Tensor? overloads' arguments."""
    _check_tolerance(op, "atol", atol)
    _check_tolerance(op, "rtol", rtol)
    if rtol is None:
        rtol = _float64(_default_rtol(A), A)
        if atol is not None:
            rtol = F.where(atol > 0, _float64(0.0, A), rtol)
    if atol is None:
        atol = _float64(0.0, A)
    return atol, rtol


def _float_tolerances(A, atol, rtol):
    """The same from the float? overloads' arguments."""
    atol = 0.0 if atol is None else atol
    if rtol is None:
        rtol = 0.0 if atol > 0 else _default_rtol(A)
    return _float64(atol, A), _float64(rtol, A)


def _check_floating_matrix(op, A, name):
    """pinv's and matrix_rank's check (any shape of matrix, float32/float64)."""
    check_matrix(op, A, name)


# ---- the pseudoinverse -------------------------------------------------------------------
def _pinv(A, atol, rtol, hermitian):
    if A.numel() == 0:
        # (the formula below reads S[..., 0]: an empty A has none)
        U, S, V = svd(A, True, True)
        return F.matmul(V * S.reciprocal().unsqueeze(-2), U.mT)
    if not hermitian:
        U, S, V = svd(A, True, True)
        # singular values are in descending order: the largest is the first
        max_val = S.narrow(-1, 0, 1)
        tol = F.maximum(atol.unsqueeze(-1), rtol.unsqueeze(-1) * max_val)
        S_pinv = F.where(S > tol, S.reciprocal(), _creation.zeros((), dtype=S.dtype,
                                                                  device=S.device))
        return F.matmul(V * S_pinv.to(A.dtype).unsqueeze(-2), U.mT)
    # A symmetric matrix's singular values are its eigenvalues' absolute values.
    L, U = F._linalg_eigh(A, "L", True)
    L_abs = L.abs()
    max_val = L_abs.amax(-1, keepdim=True)
    tol = F.maximum(atol.unsqueeze(-1), rtol.unsqueeze(-1) * max_val)
    L_pinv = F.where(L_abs > tol, L.reciprocal(), _creation.zeros((), dtype=L.dtype,
                                                                  device=L.device))
    return F.matmul(U * L_pinv.to(A.dtype).unsqueeze(-2), U.mT)


def linalg_pinv(self, atol, rtol, hermitian):
    """The one pinv overload with a derivative (pinv_backward, PyTorch's): the others
    make their tolerances into tensors and call it."""
    _check_floating_matrix("linalg_pinv", self, "self")
    atol, rtol = _tolerances("linalg_pinv", self, atol, rtol)
    return _pinv(self, atol, rtol, hermitian)


def _pinv_tensor(self, atol, rtol, hermitian):
    return F.linalg_pinv(self, atol=atol, rtol=rtol, hermitian=hermitian)


def linalg_pinv_float(self, atol, rtol, hermitian):
    _check_floating_matrix("linalg_pinv", self, "self")
    return _pinv_tensor(self, *_float_tolerances(self, atol, rtol), hermitian)


def linalg_pinv_rcond(self, rcond, hermitian):
    """NumPy's form: rcond is the relative tolerance (and atol is 0)."""
    _check_floating_matrix("linalg_pinv", self, "self")
    return _pinv_tensor(self, _float64(0.0, self), _float64(rcond, self), hermitian)


def linalg_pinv_rcond_tensor(self, rcond, hermitian):
    _check_floating_matrix("linalg_pinv", self, "self")
    _check_tolerance("linalg_pinv", "rcond", rcond)
    return _pinv_tensor(self, _float64(0.0, self), rcond, hermitian)


def pinverse(self, rcond):
    _check_floating_matrix("pinverse", self, "self")
    return _pinv_tensor(self, _float64(0.0, self), _float64(rcond, self), False)


# ---- the rank ----------------------------------------------------------------------------
def _matrix_rank(A, atol, rtol, hermitian):
    if A.numel() == 0:
        return _creation.zeros(tuple(A.shape[:-2]), dtype=dt.int64, device=A.device)
    if not hermitian:
        S = linalg_svdvals(A, None)
        max_S = S.narrow(-1, 0, 1)
    else:
        S = linalg_eigvalsh(A, "L").abs()
        max_S = S.amax(-1, keepdim=True)
    tol = F.maximum(atol.unsqueeze(-1), rtol.unsqueeze(-1) * max_S)
    return F.sum(S > tol, -1)


def linalg_matrix_rank(input, atol, rtol, hermitian):  # noqa: A002 - the schema's name
    _check_floating_matrix("linalg_matrix_rank", input, "input")
    atol, rtol = _tolerances("linalg_matrix_rank", input, atol, rtol)
    return _matrix_rank(input, atol, rtol, hermitian)


def linalg_matrix_rank_float(self, atol, rtol, hermitian):
    _check_floating_matrix("linalg_matrix_rank", self, "self")
    return _matrix_rank(self, *_float_tolerances(self, atol, rtol), hermitian)


def linalg_matrix_rank_tol(self, tol, hermitian):
    """The deprecated form: tol is an absolute tolerance (rtol 0)."""
    _check_floating_matrix("linalg_matrix_rank", self, "self")
    return _matrix_rank(self, _float64(tol, self), _float64(0.0, self), hermitian)


def linalg_matrix_rank_tol_tensor(input, tol, hermitian):  # noqa: A002 - the schema's name
    _check_floating_matrix("linalg_matrix_rank", input, "input")
    _check_tolerance("linalg_matrix_rank", "tol", tol)
    return _matrix_rank(input, tol, _creation.zeros((), dtype=tol.dtype, device=tol.device),
                        hermitian)


# ---- the condition number ------------------------------------------------------------------
def _cond_empty(A):
    """NumPy has no condition number of a 0 x 0 matrix: PyTorch gives 0 for each."""
    return _creation.zeros(tuple(A.shape[:-2]), dtype=A.dtype, device=A.device)


def _check_cond_ord(p):
    if isinstance(p, str):
        ok = p in ("fro", "nuc")
    else:
        ok = abs(float(p)) in (2.0, 1.0, math.inf)
    if not ok:
        raise ArgumentError(f"linalg_cond(): got an invalid norm type: {p} (argument 'p')",
                            op="linalg_cond", arg="p")


def _check_cond_square(A, p):
    if A.shape[-1] != A.shape[-2]:
        raise ShapeError(f"linalg_cond(): with p={p!r}, 'self' must be batches of square "
                         f"matrices, but they are {A.shape[-2]} by {A.shape[-1]} matrices",
                         op="linalg_cond", arg="self")


def _cond_through_inverse(A, p):
    """|A| |A^-1| in norm p; a singular matrix's inverse is taken as inf, and 0 * inf (a
    zero norm) as inf, as NumPy's."""
    inverse, info = F.linalg_inv_ex(A)
    # (inf as a tensor, not a Python float: the cuda backend's expression kernels do not
    # spell a float inf constant yet)
    inf = _creation.full((), math.inf, dtype=A.dtype, device=A.device)
    inverse = F.where((info > 0).unsqueeze(-1).unsqueeze(-1), inf, inverse)
    result = F.linalg_matrix_norm(A, p) * F.linalg_matrix_norm(inverse, p)
    return F.where(result.isnan(), inf, result)     # PyTorch's nan_to_num(inf, inf, -inf)


def linalg_cond(self, p):
    op = "linalg_cond"
    if self.dim() < 2:
        raise ShapeError(f"{op}(): The input tensor 'self' must have at least 2 dimensions, "
                         f"but got shape {fmt_shape(self.shape)}", op=op, arg="self")
    check_matrix(op, self, "self", empty_ok=True)
    p = 2 if p is None else p
    _check_cond_ord(p)
    if self.numel() == 0:
        return _cond_empty(self)
    if abs(float(p)) == 2.0:
        S = linalg_svdvals(self, None)
        s_max, s_min = S.narrow(-1, 0, 1), S.narrow(-1, S.shape[-1] - 1, 1)
        result = s_min / s_max if float(p) == -2.0 else s_max / s_min
        return result.squeeze(-1)
    _check_cond_square(self, p)
    return _cond_through_inverse(self, p)


def linalg_cond_str(self, p):
    op = "linalg_cond"
    check_matrix(op, self, "self", empty_ok=True)
    _check_cond_square(self, p)
    _check_cond_ord(p)
    if self.numel() == 0:
        return _cond_empty(self)
    if p == "nuc":
        # the nuclear norm of A^-1 is the sum of 1/S: no inverse needed (and none of inf)
        S = linalg_svdvals(self, None)
        return S.sum(-1) * S.reciprocal().sum(-1)
    return _cond_through_inverse(self, p)


# ---- randomized low-rank SVD and PCA (Halko, Martinsson and Tropp, 2009) ---------------------
def _approximate_basis(A, q, niter, M):
    """An orthonormal Q [.., m, q] whose columns nearly span A's range (of A - M): A times
    a Gaussian matrix R [n, q] (one R for the whole batch, as PyTorch draws it), then niter
    power iterations (A A^T)^niter A R, re-orthonormalized by QR at every step so the
    columns do not collapse onto the largest singular vector."""
    def times(X, right):
        Y = F.matmul(X, right)
        return Y if M is None else Y - F.matmul(M if X is A else M.mT, right)
    R = _creation.randn(A.shape[-1], q, dtype=A.dtype, device=A.device)
    Q = F.linalg_qr(times(A, R))[0]
    for _ in range(niter):
        Q = F.linalg_qr(times(A.mT, Q))[0]
        Q = F.linalg_qr(times(A, Q))[0]
    return Q


def _svd_lowrank(A, q, niter, M):
    """Algorithm 5.1 of Halko et al.: B = Q^T A is small [q, n]; its SVD U_B S V^T gives
    A ~ (Q U_B) S V^T. A wide A is transposed first (the basis is taken on its tall side)."""
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(list(A.shape))
    if m < n:
        A = A.mT
        M = None if M is None else M.mT
    Q = _approximate_basis(A, q, niter, M)
    B = F.matmul(Q.mT, A)
    if M is not None:
        B = B - F.matmul(Q.mT, M)
    U, S, Vh = F.linalg_svd(B, full_matrices=False)
    U, V = F.matmul(Q, U), Vh.mT
    return (V, S, U) if m < n else (U, S, V)


def _check_lowrank(op, A):
    if A.dim() < 2:
        raise ShapeError(f"{op}(): expected a matrix or a batch of matrices, but argument 'A' "
                         f"has shape {fmt_shape(A.shape)}", op=op, arg="A")
    if not A.is_floating_point():
        raise DTypeError(f"{op}(): expected a floating point input, but argument 'A' has dtype "
                         f"{A.dtype.name}", op=op, arg="A")


def svd_lowrank(A, q, niter, M):
    """U [.., m, q], S [.., q], V [.., n, q] with A - M ~ U diag(S) V^T (exact when q is at
    least the rank of A - M; the columns drawn at random, so signs and the small singular
    triplets vary from call to call)."""
    _check_lowrank("svd_lowrank", A)
    return _svd_lowrank(A, 6 if q is None else q, 2 if niter is None else niter, M)


def pca_lowrank(A, q, center, niter):
    """The principal components of the rows of A: svd_lowrank of A minus its column means
    (center=True), with q = min(6, m, n) by default."""
    op = "pca_lowrank"
    _check_lowrank(op, A)
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not 0 <= q <= min(m, n):
        raise ArgumentError(f"{op}(): q(={q}) must be non-negative integer and not greater "
                            f"than min(m, n)={min(m, n)} (argument 'q')", op=op, arg="q")
    if niter < 0:
        raise ArgumentError(f"{op}(): niter(={niter}) must be non-negative integer (argument "
                            f"'niter')", op=op, arg="niter")
    if center:
        A = A - A.mean([-2], keepdim=True)
    return _svd_lowrank(A, q, niter, None)


# ---- lobpcg: a few extreme eigenpairs of a symmetric (generalized) eigenproblem -----------------
_SQRT_EPS = {dt.float32: 1.2e-07 ** 0.5, dt.float64: 2.23e-16 ** 0.5}    # PyTorch's default tol


def _b_times(B, Y):
    return Y if B is None else F.matmul(B, Y)


def _rayleigh_ritz(A, B, S, largest):
    """The Ritz pairs of (A, B) on span(S), largest (smallest) first: a B-orthonormal
    basis Q of span(S) (from the eigendecomposition of S^T B S, directions it finds
    numerically dependent dropped), then the eigenpairs of Q^T A Q."""
    G = F.matmul(S.mT, _b_times(B, S))
    d, V = F.linalg_eigh((G + G.mT) / 2)
    eps = float(np.finfo(np.dtype(S.dtype.np)).eps)
    keep = [i for i, v in enumerate(d.tolist()) if v > max(d.tolist()) * eps * 100]
    index = _creation.tensor(keep, dtype=dt.int64, device=S.device)
    Q = F.matmul(S, V.index_select(1, index) / d.index_select(0, index).sqrt())
    T = F.matmul(Q.mT, F.matmul(A, Q))
    E, Z = F.linalg_eigh((T + T.mT) / 2)
    if largest:
        E, Z = E.flip([0]), Z.flip([1])
    return E, F.matmul(Q, Z)


def _lobpcg_one(A, B, X, iK, k, n, niter, tol, largest):
    """Knyazev's LOBPCG: each step takes the Ritz pairs of span[X, W, P], X the current
    eigenvector estimates, W the (preconditioned) residuals A X - B X diag(E), P the last
    step's change of X; it stops when the first k pairs have converged by PyTorch's
    backward-stable criterion, |r| / (|x| (|A| + |e| |B|)) < tol."""
    x_norm = float(X.norm())
    a_norm = float(F.matmul(A, X).norm()) / x_norm
    b_norm = float(_b_times(B, X).norm()) / x_norm
    E, Y = _rayleigh_ritz(A, B, X, largest)
    X, E = Y[:, :n], E[:n]
    P = None
    for _ in range(niter):
        R = F.matmul(A, X) - _b_times(B, X) * E
        rerr = R.norm(2, [0]) / (X.norm(2, [0]) * (a_norm + E.abs() * b_norm))
        converged = 0
        for ok in (rerr < tol).tolist():
            if not ok:
                break
            converged += 1
        if converged >= k:
            break
        W = R if iK is None else F.matmul(iK, R)
        E_all, Y = _rayleigh_ritz(A, B, F.cat([X, W] + ([P] if P is not None else []), 1),
                                  largest)
        new_X, E = Y[:, :n], E_all[:n]
        P = new_X - F.matmul(X, F.matmul(X.mT, _b_times(B, new_X)))
        X = new_X
    return E[:k], X[:, :k]


def lobpcg(A, k, B, X, n, iK, niter, tol, largest, method):
    """The k largest (smallest) eigenvalues of A x = e B x (B = I when None) for symmetric A
    and positive definite B, and their eigenvectors (B-orthonormal), by LOBPCG from n
    starting vectors (X, or random ones); a batch of matrices one at a time."""
    op = "lobpcg"
    if A.dim() < 2 or A.shape[-1] != A.shape[-2]:
        raise ShapeError(f"{op}(): expected a square matrix (or a batch of them), but "
                         f"argument 'A' has shape {fmt_shape(A.shape)}", op=op, arg="A")
    if A.dtype not in _SQRT_EPS:
        raise DTypeError(f"{op}(): expected a float32 or float64 input, but argument 'A' has "
                         f"dtype {A.dtype.name}", op=op, arg="A")
    if B is not None and tuple(B.shape) != tuple(A.shape):
        raise ShapeError(f"{op}(): argument 'B' must have A's shape {fmt_shape(A.shape)}, "
                         f"got {fmt_shape(B.shape)}", op=op, arg="B")
    if method not in (None, "basic", "ortho"):
        raise ArgumentError(f"{op}(): method must be 'basic' or 'ortho', got {method!r} "
                            f"(argument 'method')", op=op, arg="method")
    m = A.shape[-1]
    k = (1 if X is None else X.shape[-1]) if k is None else k
    n = (k if n is None else n) if X is None else X.shape[-1]
    if m < 3 * n:
        raise ArgumentError(f"{op}(): LPBPCG algorithm is not applicable when the number of A "
                            f"rows (={m}) is smaller than 3 x the number of requested "
                            f"eigenpairs (={n}) (argument 'k')", op=op, arg="k")
    if X is not None and A.dim() == 2 and tuple(X.shape) != (m, n):
        raise ShapeError(f"{op}(): first argument must be ({m}, {n}) tensor, got "
                         f"{fmt_shape(X.shape)} (argument 'X')", op=op, arg="X")
    tol = _SQRT_EPS[A.dtype] if tol is None else tol
    niter = 1000 if niter is None else niter
    largest = True if largest is None else largest

    def one(a, b, x, ik):
        if x is None:
            x = _creation.randn(m, n, dtype=A.dtype, device=A.device)
        return _lobpcg_one(a, b, x, ik, k, n, niter, tol, largest)
    if A.dim() == 2:
        return one(A, B, X, iK)
    batch = A.reshape([-1, m, m])
    if batch.shape[0] == 0:        # an empty batch: no pairs to stack
        return (A.new_zeros(list(A.shape[:-2]) + [k]), A.new_zeros(list(A.shape[:-2]) + [m, k]))
    pairs = [one(batch[i], None if B is None else B.reshape([-1, m, m])[i],
                 None if X is None else X.reshape([-1, m, n])[i], iK)
             for i in range(batch.shape[0])]
    E = F.stack([e for e, _ in pairs], 0).reshape(list(A.shape[:-2]) + [k])
    V = F.stack([v for _, v in pairs], 0).reshape(list(A.shape[:-2]) + [m, k])
    return E, V
