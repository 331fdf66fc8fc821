"""Dirichlet(concentration): random probability vectors on the simplex.

rsample normalizes independent Gamma(concentration_i, 1) draws (gamma.py). Gradients
flow through the gammas' implicit reparameterization and the normalization: a valid
reparameterized estimator, though per draw not the same one as PyTorch's (which
differentiates the Dirichlet's own marginals); tests compare it in expectation."""
from __future__ import annotations

import tensorplay as tp
from tensorplay.distributions import constraints
from tensorplay.distributions.exp_family import ExponentialFamily
from tensorplay.distributions.gamma import _standard_gamma

__all__ = ["Dirichlet"]


class Dirichlet(ExponentialFamily):
    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        batch_shape, event_shape = concentration.shape[:-1], concentration.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = tp.Size(batch_shape)
        new.concentration = self.concentration.expand(tuple(batch_shape) + tuple(self.event_shape))
        super(Dirichlet, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        concentration = self.concentration.expand(shape)
        gammas = _standard_gamma(concentration)
        return gammas / gammas.sum(-1, True)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (tp.xlogy(self.concentration - 1.0, value).sum(-1)
                + tp.lgamma(self.concentration.sum(-1)) - tp.lgamma(self.concentration).sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        concentrationm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concentrationm1 / concentrationm1.sum(-1, True)
        # all concentrations below 1: the density peaks at a vertex. PyTorch picks the
        # argmax of the 0/0 = nan row (the first vertex, nan counting as largest); kept.
        mask = (self.concentration < 1).all(-1, keepdim=True)
        k = concentrationm1.shape[-1]
        vertex = tp.nn.functional.one_hot(mode.argmax(-1), k).to(mode.dtype)
        return tp.where(mask, vertex, mode)

    @property
    def variance(self):
        con0 = self.concentration.sum(-1, True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self):
        k = self.concentration.size(-1)
        a0 = self.concentration.sum(-1)
        return (tp.lgamma(self.concentration).sum(-1) - tp.lgamma(a0) - (k - a0) * tp.digamma(a0)
                - ((self.concentration - 1.0) * tp.digamma(self.concentration)).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return tp.lgamma(x).sum(-1) - tp.lgamma(x.sum(-1))
