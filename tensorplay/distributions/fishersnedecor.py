"""FisherSnedecor(df1, df2): the F distribution, the ratio of two scaled chi-squares
(X1 / df1) / (X2 / df2), drawn here as Gamma(df1/2, df1) / Gamma(df2/2, df2). The draws
come from TensorPlay's own Gamma sampler (tests compare them with PyTorch's by a
Kolmogorov-Smirnov test); rsample is differentiable through the gammas' implicit
gradient."""
from __future__ import annotations

import math
import numbers

import tensorplay as tp
from tensorplay.distributions import constraints
from tensorplay.distributions.distribution import Distribution
from tensorplay.distributions.gamma import Gamma
from tensorplay.distributions.utils import broadcast_all

__all__ = ["FisherSnedecor"]


def _nan_where(condition, value):
    return tp.where(condition, tp.full_like(value, math.nan), value)


class FisherSnedecor(Distribution):
    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2)
        if isinstance(df1, numbers.Number) and isinstance(df2, numbers.Number):
            batch_shape = tp.Size()
        else:
            batch_shape = self.df1.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(FisherSnedecor, _instance)
        batch_shape = tp.Size(batch_shape)
        new.df1 = self.df1.expand(batch_shape)
        new.df2 = self.df2.expand(batch_shape)
        new._gamma1 = self._gamma1.expand(batch_shape)
        new._gamma2 = self._gamma2.expand(batch_shape)
        super(FisherSnedecor, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        df2 = _nan_where(self.df2 <= 2, self.df2)       # no mean for df2 <= 2
        return df2 / (df2 - 2)

    @property
    def mode(self):
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return _nan_where(self.df1 <= 2, mode)

    @property
    def variance(self):
        df2 = _nan_where(self.df2 <= 4, self.df2)       # no variance for df2 <= 4
        return 2 * df2.pow(2) * (self.df1 + df2 - 2) / (self.df1 * (df2 - 2).pow(2) * (df2 - 4))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        x1 = self._gamma1.rsample(sample_shape).view(tuple(shape))
        x2 = self._gamma2.rsample(sample_shape).view(tuple(shape))
        tiny = tp.finfo(x2.dtype).tiny
        return (x1 / x2.clamp(min=tiny)).clamp(min=tiny)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        ct1 = self.df1 * 0.5
        ct2 = self.df2 * 0.5
        ct3 = self.df1 / self.df2
        t1 = tp.lgamma(ct1 + ct2) - tp.lgamma(ct1) - tp.lgamma(ct2)
        t2 = ct1 * ct3.log() + (ct1 - 1) * tp.log(value)
        t3 = (ct1 + ct2) * tp.log1p(ct3 * value)
        return t1 + t2 - t3
