"""Kumaraswamy(concentration1 a, concentration0 b): a Beta-like law on (0, 1) with a
closed-form cdf 1 - (1 - x^a)^b, so it is a TransformedDistribution of Uniform(0, 1):
x = (1 - u^(1/b))^(1/a). Draws are PyTorch's for a seed and rsample is differentiable."""
from __future__ import annotations

import math

import tensorplay as tp
from tensorplay.distributions import constraints
from tensorplay.distributions.transformed_distribution import TransformedDistribution
from tensorplay.distributions.transforms import AffineTransform, PowerTransform
from tensorplay.distributions.uniform import Uniform
from tensorplay.distributions.utils import broadcast_all, euler_constant

__all__ = ["Kumaraswamy"]


def _moments(a, b, n):
    """E[X^n] = b B(1 + n/a, b)."""
    arg1 = 1 + n / a
    log_value = tp.lgamma(arg1) + tp.lgamma(b) - tp.lgamma(arg1 + b)
    return b * tp.exp(log_value)


class Kumaraswamy(TransformedDistribution):
    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base_dist = Uniform(tp.full_like(self.concentration0, 0),
                            tp.full_like(self.concentration0, 1), validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration0.reciprocal()),
                      AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(batch_shape)
        new.concentration0 = self.concentration0.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return _moments(self.concentration1, self.concentration0, 1)

    @property
    def mode(self):
        """((a - 1) / (ab - 1))^(1/a), for a, b >= 1 (NaN otherwise).

        PyTorch 2.13 writes this as exp(log1p(-b) / b - log1p(-ab)), which is NaN for
        every b > 1 (log of a negative number): its mode is NaN everywhere. This is the
        closed form instead (tests check it is where the density peaks)."""
        a, b = self.concentration1, self.concentration0
        defined = (a >= 1) & (b >= 1)
        a_safe = tp.where(defined, a, tp.full_like(a, 2.0))    # keeps NaN out of gradients
        b_safe = tp.where(defined, b, tp.full_like(b, 2.0))
        log_mode = ((a_safe - 1).log() - (a_safe * b_safe - 1).log()) / a_safe
        return tp.where(defined, log_mode.exp(), tp.full_like(log_mode, math.nan))

    @property
    def variance(self):
        return _moments(self.concentration1, self.concentration0, 2) - tp.pow(self.mean, 2)

    def entropy(self):
        t1 = 1 - self.concentration1.reciprocal()
        t0 = 1 - self.concentration0.reciprocal()
        h0 = tp.digamma(self.concentration0 + 1) + euler_constant()   # the harmonic number H_b
        return t0 + t1 * h0 - tp.log(self.concentration1) - tp.log(self.concentration0)
