"""Cauchy(loc, scale): the ratio of two independent standard normals, shifted and scaled.
No mean or variance (PyTorch returns nan and inf)."""
from __future__ import annotations

import math
import numbers

import tensorplay as tp
from tensorplay.distributions import constraints
from tensorplay.distributions.distribution import Distribution
from tensorplay.distributions.utils import broadcast_all

__all__ = ["Cauchy"]


class Cauchy(Distribution):
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        if isinstance(loc, numbers.Number) and isinstance(scale, numbers.Number):
            batch_shape = tp.Size()
        else:
            batch_shape = self.loc.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Cauchy, _instance)
        batch_shape = tp.Size(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        super(Cauchy, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return tp.full(self._extended_shape(), math.nan, dtype=self.loc.dtype,
                       device=self.loc.device)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return tp.full(self._extended_shape(), math.inf, dtype=self.loc.dtype,
                       device=self.loc.device)

    def rsample(self, sample_shape=()):
        # TensorPlay has no cauchy_: the standard Cauchy is tan(π (u - 1/2)), u ~ U(0, 1),
        # the transform PyTorch's cauchy_ applies to a float64 uniform draw whatever the
        # dtype (so float32 draws match PyTorch's too).
        shape = self._extended_shape(sample_shape)
        u = tp.empty(shape, dtype=tp.float64, device=self.loc.device).uniform_()
        eps = tp.tan(math.pi * (u - 0.5)).to(self.loc.dtype)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        return -math.log(math.pi) - self.scale.log() - (z ** 2).log1p()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return tp.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value):
        return tp.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + self.scale.log()
