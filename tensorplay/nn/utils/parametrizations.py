"""`tp.nn.utils.parametrizations` (torch.nn.utils.parametrizations): weight_norm,
spectral_norm and orthogonal as parametrizations (tp.nn.utils.parametrize), with
PyTorch's parameter and buffer names, so state dicts exchange with PyTorch's:

    weight_norm:   parametrizations.weight.original0 (g), .original1 (v)
    spectral_norm: parametrizations.weight.original, parametrizations.weight.0._u / ._v
    orthogonal:    parametrizations.weight.original (and .0.base with the trivialization)
"""
from __future__ import annotations

from enum import Enum, auto

import tensorplay as tp
import tensorplay.nn.functional as F
from tensorplay.nn.modules.module import Module
from tensorplay.nn.utils import parametrize

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


def _is_tensor(x):
    return getattr(x, "_impl", None) is not None


# ---- orthogonal -------------------------------------------------------------------------
def _is_orthogonal(Q):
    n, k = Q.shape[-2], Q.shape[-1]
    eye = tp.eye(k, dtype=Q.dtype, device=Q.device)
    eps = 10.0 * n * tp.finfo(Q.dtype).eps
    return tp.allclose(Q.mH @ Q, eye, atol=eps)


def _make_orthogonal(A):
    """The Q of A's QR decomposition with the signs fixed (diag(R) > 0), so that the
    result is unique: QR through geqrf and householder_product, as PyTorch's."""
    X, tau = tp.geqrf(A)
    Q = tp.linalg.householder_product(X, tau)
    return Q * X.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    """An (n, k) matrix (or a batch) with orthonormal columns (rows if n < k), as a
    function of an unconstrained one: exp or Cayley transform of the skew-symmetric
    matrix built from its lower triangle, or the product of the Householder reflections
    stored below its diagonal. With the trivialization (`base`), the map's output is
    multiplied onto `base`, the orthogonal matrix the module was initialised with, so
    the original starts at the map's identity point (-I for householder, 0 otherwise)."""

    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        if weight.is_complex() and orthogonal_map == _OrthMaps.householder:
            raise ValueError("The householder parametrization does not support complex "
                             "tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:
                X = tp.cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mH
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = tp.matrix_exp(A)
            else:
                eye = tp.eye(n, dtype=A.dtype, device=A.device)
                Q = tp.linalg.solve(tp.add(eye, A, alpha=-0.5), tp.add(eye, A, alpha=0.5))
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = tp.linalg.householder_product(A, tau)
            # diag(X) as int: a column's sign flip where the diagonal is -1 (the
            # trivialization's starting point), kept where it is 1.
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if hasattr(self, "base"):
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q):
        with tp.no_grad():
            return self._right_inverse(Q)

    def _right_inverse(self, Q):
        if tuple(Q.shape) != tuple(self.shape):
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {Q.shape}.")
        Q_init = Q
        n, k = Q.shape[-2], Q.shape[-1]
        transpose = n < k
        if transpose:
            Q = Q.mT
            n, k = k, n
        if not hasattr(self, "base"):
            if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                raise NotImplementedError("It is not possible to assign to the matrix "
                                          "exponential or the Cayley parametrizations when "
                                          "use_trivialization=False.")
            # Householder without base: geqrf's reflectors, the diagonal holding the
            # signs (flipped where tau == 0: no reflection there).
            A, tau = tp.geqrf(Q)
            diagonal = A.diagonal(dim1=-2, dim2=-1)     # a view: written into A
            signs = diagonal.sign()
            diagonal.copy_(tp.where(tau == 0.0, -signs, signs))
            return A.mT if transpose else A
        if n == k:
            Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
        else:
            # Complete the columns to a square orthogonal matrix with random ones.
            N = tp.randn(*(tuple(Q.shape[:-2]) + (n, n - k)), dtype=Q.dtype, device=Q.device)
            Q = _make_orthogonal(tp.cat([Q, N], dim=-1))
        self.base = Q
        neg_eye = tp.zeros_like(Q_init)
        neg_eye.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
        return neg_eye


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Make `module.<name>` orthogonal (or with orthonormal columns/rows when not square).
    orthogonal_map: "matrix_exp" (the default for square or complex matrices), "cayley"
    or "householder" (the default otherwise)."""
    weight = getattr(module, name, None)
    if not _is_tensor(weight):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError("Expected a matrix or batch of matrices. "
                         f"Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = ("matrix_exp" if weight.shape[-2] == weight.shape[-1]
                          or weight.is_complex() else "householder")
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", '
                         f'"householder". Got: {orthogonal_map}')
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


# ---- weight_norm ------------------------------------------------------------------------
def weight_norm_value(g, v, dim):
    """w = g * v / ||v||, the norm over every dim but `dim` (over all for dim=-1):
    torch._weight_norm's value, shared with the hook form (nn/utils/weight_norm.py)."""
    return v * (g / tp.norm_except_dim(v, 2, dim))


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return weight_norm_value(weight_g, weight_v, self.dim)

    def right_inverse(self, weight):
        return tp.norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """w = g * v / ||v||: magnitude g (`original0`) and direction v (`original1`) as
    separate parameters. State dicts of the old hook form (`weight_g`, `weight_v`) load
    into it."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _weight_norm_compat_hook(state_dict, prefix, local_metadata, strict, missing_keys,
                                 unexpected_keys, error_msgs):
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module._register_load_state_dict_pre_hook(_weight_norm_compat_hook)
    return module


# ---- spectral_norm ----------------------------------------------------------------------
def reshape_weight_to_matrix(weight, dim):
    """`weight` as a matrix whose rows run along `dim` (the spectral norm's view of a
    conv kernel); shared with the hook form (nn/utils/spectral_norm.py)."""
    if dim != 0:
        weight = weight.permute(dim, *(d for d in range(weight.dim()) if d != dim))
    return weight.flatten(1)


def power_iteration(weight_mat, u, v, n_power_iterations, eps):
    """n steps of the power method on weight_mat, writing u and v in place (they are
    buffers, and the estimate improves from call to call); no graph is recorded."""
    with tp.no_grad():
        for _ in range(n_power_iterations):
            u.copy_(F.normalize(tp.mv(weight_mat, v), dim=0, eps=eps))
            v.copy_(F.normalize(tp.mv(weight_mat.mH, u), dim=0, eps=eps))


class _SpectralNorm(Module):
    """W / sigma(W), sigma estimated by power iteration with the buffers `_u`, `_v`
    (one step per forward in training mode; 15 at registration)."""

    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = reshape_weight_to_matrix(weight, self.dim)
            h, w = weight_mat.shape
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            power_iteration(weight_mat.detach(), self._u, self._v, 15, self.eps)

    def forward(self, weight):
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = reshape_weight_to_matrix(weight, self.dim)
        if self.training:
            power_iteration(weight_mat.detach(), self._u, self._v, self.n_power_iterations,
                            self.eps)
        # Copies: the next forward's power iteration writes into the buffers, and this
        # graph must keep the u, v it used.
        u, v = self._u.clone(), self._v.clone()
        sigma = tp.vdot(u, tp.mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Divide `module.<name>` by its largest singular value (estimated by power
    iteration). dim: the output dimension, 1 for the ConvTranspose modules, else 0."""
    weight = getattr(module, name, None)
    if not _is_tensor(weight):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        transposed = (tp.nn.ConvTranspose1d, tp.nn.ConvTranspose2d, tp.nn.ConvTranspose3d)
        dim = 1 if isinstance(module, transposed) else 0
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
