"""NegativeBinomial(total_count, probs= or logits=): failures before total_count
successes (successes of probability 1 - probs), a Gamma-Poisson mixture, which is how
it is sampled (both samplers are TensorPlay's own: tests compare statistics)."""
from __future__ import annotations

import tensorplay as tp
from tensorplay.distributions import constraints
from tensorplay.distributions.distribution import Distribution
from tensorplay.distributions.gamma import Gamma
from tensorplay.distributions.poisson import _poisson_draw
from tensorplay.distributions.utils import (
    broadcast_all,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
)

__all__ = ["NegativeBinomial"]


def _logsigmoid(x):
    return -tp.nn.functional.softplus(-x)


class NegativeBinomial(Distribution):
    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.type_as(self.probs)
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.type_as(self.logits)
        self._param = self.probs if probs is not None else self.logits
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(NegativeBinomial, _instance)
        batch_shape = tp.Size(batch_shape)
        new.total_count = self.total_count.expand(batch_shape)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
            new._param = new.logits
        super(NegativeBinomial, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.total_count * tp.exp(self.logits)

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / tp.sigmoid(-self.logits)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return self._param.size()

    @lazy_property
    def _gamma(self):
        return Gamma(concentration=self.total_count, rate=tp.exp(-self.logits), validate_args=False)

    def sample(self, sample_shape=()):
        with tp.no_grad():
            rate = self._gamma.sample(sample_shape=sample_shape)
            return _poisson_draw(rate)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_unnormalized_prob = (self.total_count * _logsigmoid(-self.logits)
                                 + value * _logsigmoid(self.logits))
        # total_count = value = 0: probability 1 of no failure, log-normalization 0 (PyTorch's
        # masked_fill of tp.lgamma(0) - tp.lgamma(0) = inf - inf; its gradient there is nan, as
        # PyTorch's: 0 * tp.digamma(0))
        log_normalization = (-tp.lgamma(self.total_count + value) + tp.lgamma(1.0 + value)
                             + tp.lgamma(self.total_count))
        empty = self.total_count + value == 0.0
        log_normalization = tp.where(empty, tp.zeros_like(log_normalization), log_normalization)
        return log_unnormalized_prob - log_normalization
