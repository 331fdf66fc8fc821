"""Poisson(rate): counts k >= 0 with probability rate^k e^-rate / k!."""
from __future__ import annotations

import numbers

import tensorplay as tp
from tensorplay.distributions import constraints
from tensorplay.distributions.exp_family import ExponentialFamily
from tensorplay.distributions.utils import broadcast_all

__all__ = ["Poisson"]


def _poisson_draw(rate):
    """Count the arrivals of a unit-rate Poisson process before time `rate`: add
    Exp(1) gaps until their sum passes the rate (Knuth's algorithm in log space, in
    float64 so that large rates neither underflow nor lose precision). TensorPlay has no
    poisson op, so this does not reproduce PyTorch's draws (its tests compare
    statistics); its cost grows with the largest rate."""
    rate64 = rate.to(tp.float64)
    elapsed = tp.zeros_like(rate64)
    count = tp.zeros_like(rate64)
    active = rate64 > 0
    while bool(active.any()):
        elapsed = elapsed + tp.empty_like(rate64).exponential_()
        active = active & (elapsed < rate64)
        count = count + active.to(tp.float64)
    return count.to(rate.dtype)


class Poisson(ExponentialFamily):
    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        batch_shape = tp.Size() if isinstance(rate, numbers.Number) else self.rate.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Poisson, _instance)
        batch_shape = tp.Size(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        super(Poisson, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with tp.no_grad():
            return _poisson_draw(self.rate.expand(shape).contiguous())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return tp.xlogy(value, rate) - rate - tp.lgamma(value + 1)

    @property
    def _natural_params(self):
        return (tp.log(self.rate),)

    def _log_normalizer(self, x):
        return tp.exp(x)
