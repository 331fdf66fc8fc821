"""MultivariateNormal(loc, covariance_matrix= | precision_matrix= | scale_tril=).

Everything goes through the lower Cholesky factor L of the covariance (Σ = L Lᵀ):
a draw is loc + L ε, the Mahalanobis term |L⁻¹(x - loc)|² is a triangular solve, and
log det Σ = 2 Σ log diag(L). tp.linalg.cholesky and solve_triangular carry the gradients."""
from __future__ import annotations

import math

import tensorplay as tp
from tensorplay.distributions import constraints
from tensorplay.distributions.distribution import Distribution
from tensorplay.distributions.utils import _standard_normal, lazy_property

__all__ = ["MultivariateNormal"]


def _batch_mv(bmat, bvec):
    """Matrix times vector over broadcast batch dimensions."""
    return tp.matmul(bmat, bvec.unsqueeze(-1)).squeeze(-1)


def _batch_mahalanobis(bL, bx):
    """xᵀ (L Lᵀ)⁻¹ x = |L⁻¹ x|², for L of shape (..., n, n) and x of shape (..., n)."""
    bx_b, bL_b = tp.broadcast_tensors(bx.unsqueeze(-1), bL)   # x as a column, beside L
    sol = tp.linalg.solve_triangular(bL_b, bx_b[..., :1], upper=False)
    return sol.squeeze(-1).pow(2).sum(-1)


def _precision_to_scale_tril(P):
    """Lower Cholesky factor of P⁻¹ without inverting P: with Lf = chol(flip(P)),
    L = (flip(Lf)ᵀ)⁻¹ is lower triangular and L Lᵀ = P⁻¹ (PyTorch's way)."""
    Lf = tp.linalg.cholesky(tp.flip(P, (-2, -1)))
    L_inv = tp.flip(Lf, (-2, -1)).mT
    Id = tp.eye(P.shape[-1], dtype=P.dtype, device=P.device)
    return tp.linalg.solve_triangular(L_inv, Id, upper=False)


class MultivariateNormal(Distribution):
    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = [m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None]
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")

        def _batch(mat, name):
            if mat.dim() < 2:
                raise ValueError(f"{name} matrix must be at least two-dimensional, "
                                 "with optional leading batch dimensions")
            # the matrices' batch dimensions broadcast with loc's
            shapes = tp.broadcast_tensors(tp.empty(mat.shape[:-2]), tp.empty(loc.shape[:-1]))
            return tuple(shapes[0].shape)

        if scale_tril is not None:
            batch_shape = _batch(scale_tril, "scale_tril")
            self.scale_tril = scale_tril.expand(batch_shape + (-1, -1))
        elif covariance_matrix is not None:
            batch_shape = _batch(covariance_matrix, "covariance_matrix")
            self.covariance_matrix = covariance_matrix.expand(batch_shape + (-1, -1))
        else:
            batch_shape = _batch(precision_matrix, "precision_matrix")
            self.precision_matrix = precision_matrix.expand(batch_shape + (-1, -1))
        self.loc = loc.expand(batch_shape + (-1,))

        event_shape = self.loc.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = tp.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch_shape = tp.Size(batch_shape)
        loc_shape = tuple(batch_shape) + tuple(self.event_shape)
        cov_shape = tuple(batch_shape) + tuple(self.event_shape) + tuple(self.event_shape)
        new.loc = self.loc.expand(loc_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        if "covariance_matrix" in self.__dict__:
            new.covariance_matrix = self.covariance_matrix.expand(cov_shape)
        if "scale_tril" in self.__dict__:
            new.scale_tril = self.scale_tril.expand(cov_shape)
        if "precision_matrix" in self.__dict__:
            new.precision_matrix = self.precision_matrix.expand(cov_shape)
        super(MultivariateNormal, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(
            tuple(self._batch_shape) + tuple(self._event_shape) + tuple(self._event_shape))

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return tp.matmul(L, L.mT).expand(
            tuple(self._batch_shape) + tuple(self._event_shape) + tuple(self._event_shape))

    @lazy_property
    def precision_matrix(self):
        L = self._unbroadcasted_scale_tril
        Id = tp.eye(L.shape[-1], dtype=L.dtype, device=L.device)
        L_inv = tp.linalg.solve_triangular(L, Id, upper=False)
        return tp.matmul(L_inv.mT, L_inv).expand(
            tuple(self._batch_shape) + tuple(self._event_shape) + tuple(self._event_shape))

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(
            tuple(self._batch_shape) + tuple(self._event_shape))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        M = _batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + M) - half_log_det

    def entropy(self):
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        H = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + half_log_det
        if len(self._batch_shape) == 0:
            return H
        return H.expand(self._batch_shape)
