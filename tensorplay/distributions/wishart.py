"""Wishart(df, covariance_matrix= | precision_matrix= | scale_tril=): the distribution of
X Xᵀ for df Gaussian columns with covariance Σ, a distribution over positive definite
p x p matrices (the conjugate prior of a Gaussian's precision).

Draws use Bartlett's decomposition: A lower triangular with sqrt(χ²(df - i)) on the
diagonal and standard normals below it; then (L A)(L A)ᵀ, L = chol(Σ). The χ² draws come
from TensorPlay's own gamma sampler, so tests compare draws with PyTorch's by their
distribution; rsample is differentiable through the gammas' implicit gradient."""
from __future__ import annotations

import math
import numbers
import warnings

import tensorplay as tp
from tensorplay.distributions import constraints
from tensorplay.distributions.chi2 import Chi2
from tensorplay.distributions.exp_family import ExponentialFamily
from tensorplay.distributions.multivariate_normal import _precision_to_scale_tril
from tensorplay.distributions.transforms import _diag_embed, vec_to_tril_matrix
from tensorplay.distributions.utils import lazy_property

__all__ = ["Wishart"]

_log_2 = math.log(2)


def _mvdigamma(x, p):
    """The multivariate digamma, d/dx log Γ_p(x) = Σ_{j<p} ψ(x - j/2)."""
    if not bool(x.gt((p - 1) / 2).all()):
        raise AssertionError("Wrong domain for multivariate digamma function.")
    shifts = tp.arange(p, dtype=x.dtype, device=x.device).div(2)
    return tp.digamma(x.unsqueeze(-1) - shifts.expand(tuple(x.shape) + (-1,))).sum(-1)


def _clamp_above_eps(x):
    return x.clamp(min=tp.finfo(x.dtype).eps)


def _broadcast_shapes(a, b):
    """The broadcast of two shapes (numpy's rule), as torch.broadcast_shapes."""
    a, b = tuple(a), tuple(b)
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    for x, y in zip(a, b):
        if x != y and 1 not in (x, y):
            raise RuntimeError(f"Shape mismatch: objects cannot be broadcast to a single shape: {a} {b}")
    return tuple(y if x == 1 else x for x, y in zip(a, b))


class Wishart(ExponentialFamily):
    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self):
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        if ((covariance_matrix is not None) + (scale_tril is not None)
                + (precision_matrix is not None)) != 1:
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or "
                                 "scale_tril may be specified.")
        param = next(p for p in (covariance_matrix, precision_matrix, scale_tril) if p is not None)
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if isinstance(df, numbers.Number):
            batch_shape = tp.Size(tuple(param.shape[:-2]))
            self.df = tp.tensor(df, dtype=param.dtype, device=param.device)
        else:
            batch_shape = tp.Size(_broadcast_shapes(param.shape[:-2], df.shape))
            self.df = df.expand(tuple(batch_shape))
        event_shape = param.shape[-2:]
        if bool(self.df.le(event_shape[-1] - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than "
                             f"ndim - 1 = {event_shape[-1] - 1}.")
        full = tuple(batch_shape) + (-1, -1)
        if scale_tril is not None:
            self.scale_tril = param.expand(full)
        elif covariance_matrix is not None:
            self.covariance_matrix = param.expand(full)
        else:
            self.precision_matrix = param.expand(full)
        if bool(self.df.lt(event_shape[-1]).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to "
                          "occur for ndim - 1 < df < ndim.", stacklevel=2)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._batch_dims = [-(x + 1) for x in range(len(self._batch_shape))]
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = tp.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)
        self._dist_chi2 = self._chi2(self.df, batch_shape)

    def _chi2(self, df, batch_shape):
        """χ²(df - i), i = 0..p-1: the squared diagonal of Bartlett's factor."""
        steps = tp.arange(self._event_shape[-1], dtype=self._unbroadcasted_scale_tril.dtype,
                          device=self._unbroadcasted_scale_tril.device)
        return Chi2(df=df.unsqueeze(-1) - steps.expand(tuple(batch_shape) + (-1,)))

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = tp.Size(batch_shape)
        cov_shape = tuple(batch_shape) + tuple(self.event_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(tuple(batch_shape))
        new._batch_dims = [-(x + 1) for x in range(len(batch_shape))]
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(cov_shape))
        new._event_shape = self._event_shape
        new._dist_chi2 = new._chi2(new.df, batch_shape)
        super(Wishart, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _full(self):
        return tuple(self._batch_shape) + tuple(self._event_shape)

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._full())

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return (L @ L.transpose(-2, -1)).expand(self._full())

    @lazy_property
    def precision_matrix(self):
        identity = tp.eye(self._event_shape[-1], device=self._unbroadcasted_scale_tril.device,
                          dtype=self._unbroadcasted_scale_tril.dtype)
        return tp.cholesky_solve(identity, self._unbroadcasted_scale_tril).expand(self._full())

    @property
    def mean(self):
        return self.df.view(tuple(self._batch_shape) + (1, 1)) * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = tp.where(factor <= 0, tp.full_like(factor, math.nan), factor)   # none for df <= p + 1
        return factor.view(tuple(self._batch_shape) + (1, 1)) * self.covariance_matrix

    @property
    def variance(self):
        V = self.covariance_matrix
        diag_V = V.diagonal(dim1=-2, dim2=-1)
        return self.df.view(tuple(self._batch_shape) + (1, 1)) * (
            V.pow(2) + tp.einsum("...i,...j->...ij", diag_V, diag_V))

    def _bartlett_sampling(self, sample_shape=()):
        p = self._event_shape[-1]
        diagonal = _clamp_above_eps(self._dist_chi2.rsample(sample_shape).sqrt())
        below = tp.randn(*(tuple(sample_shape) + tuple(self._batch_shape) + (p * (p - 1) // 2,)),
                         dtype=diagonal.dtype, device=diagonal.device)
        noise = _diag_embed(diagonal) + vec_to_tril_matrix(below, diag=-1)
        chol = self._unbroadcasted_scale_tril @ noise
        return chol @ chol.transpose(-2, -1)

    def rsample(self, sample_shape=(), max_try_correction=None):
        """Bartlett draws; singular ones (possible for ndim - 1 < df < ndim, or by
        rounding) are drawn again, up to max_try_correction times.

        PyTorch 2.13's loop marks the *valid* samples (support.check) as singular, so it
        always warns "Singular sample detected." and redraws them; here only samples
        that fail the positive-definite check are redrawn and warned about."""
        if max_try_correction is None:
            max_try_correction = 10
        sample_shape = tp.Size(tuple(sample_shape))
        sample = self._bartlett_sampling(sample_shape)
        is_singular = ~self.support.check(sample)
        if self._batch_shape:
            is_singular = is_singular.amax(self._batch_dims)
        if bool(is_singular.any()):
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(max_try_correction):
                sample_new = self._bartlett_sampling(sample_shape)
                sample = tp.where(is_singular.view(tuple(is_singular.shape) + (1,) * (
                    sample.dim() - is_singular.dim())), sample_new, sample)
                is_singular = ~self.support.check(sample)
                if self._batch_shape:
                    is_singular = is_singular.amax(self._batch_dims)
                if not bool(is_singular.any()):
                    break
        return sample

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        nu = self.df
        p = self._event_shape[-1]
        log_det_L = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return (-nu * (p * _log_2 / 2 + log_det_L)
                - tp.mvlgamma(nu / 2, p=p)
                + (nu - p - 1) / 2 * tp.linalg.slogdet(value).logabsdet
                - tp.cholesky_solve(value, self._unbroadcasted_scale_tril)
                .diagonal(dim1=-2, dim2=-1).sum(dim=-1) / 2)

    def entropy(self):
        nu = self.df
        p = self._event_shape[-1]
        log_det_L = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return ((p + 1) * (p * _log_2 / 2 + log_det_L)
                + tp.mvlgamma(nu / 2, p=p)
                - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p=p)
                + nu * p / 2)

    @property
    def _natural_params(self):
        nu = self.df
        p = self._event_shape[-1]
        return -self.precision_matrix / 2, (nu - p - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        return (y + (p + 1) / 2) * (-tp.linalg.slogdet(-2 * x).logabsdet + _log_2 * p) + \
            tp.mvlgamma(y + (p + 1) / 2, p=p)
