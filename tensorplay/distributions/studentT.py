"""StudentT(df, loc, scale): loc + scale · N / sqrt(Chi2(df) / df), heavier-tailed than
the normal. Reparameterized through the Normal and Chi2 draws (Chi2's gradient in df is
the implicit one of gamma.py)."""
from __future__ import annotations

import math

import tensorplay as tp
from tensorplay.distributions import constraints
from tensorplay.distributions.chi2 import Chi2
from tensorplay.distributions.distribution import Distribution
from tensorplay.distributions.utils import _standard_normal, broadcast_all

__all__ = ["StudentT"]


class StudentT(Distribution):
    arg_constraints = {"df": constraints.positive, "loc": constraints.real,
                       "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    @property
    def mean(self):
        # undefined (nan) for df <= 1
        return tp.where(self.df <= 1, tp.full_like(self.loc, math.nan), self.loc)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        # scale² df / (df - 2) for df > 2, infinite for 1 < df <= 2, undefined for df <= 1
        df_safe = tp.where(self.df > 2, self.df, tp.full_like(self.df, 3.0))
        finite = self.scale.pow(2) * df_safe / (df_safe - 2)
        m = tp.where(self.df > 2, finite, tp.full_like(finite, math.inf))
        return tp.where(self.df <= 1, tp.full_like(m, math.nan), m)

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        batch_shape = self.df.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(StudentT, _instance)
        batch_shape = tp.Size(batch_shape)
        new.df = self.df.expand(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new._chi2 = self._chi2.expand(batch_shape)
        super(StudentT, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        X = _standard_normal(shape, dtype=self.df.dtype, device=self.df.device)
        Z = self._chi2.rsample(sample_shape)
        Y = X * tp.rsqrt(Z / self.df)
        return self.loc + self.scale * Y

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        Z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi)
             + tp.lgamma(0.5 * self.df) - tp.lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * tp.log1p(y ** 2.0 / self.df) - Z

    def entropy(self):
        lbeta = tp.lgamma(0.5 * self.df) + math.lgamma(0.5) - tp.lgamma(0.5 * (self.df + 1))
        return (self.scale.log()
                + 0.5 * (self.df + 1)
                * (tp.digamma(0.5 * (self.df + 1)) - tp.digamma(0.5 * self.df))
                + 0.5 * self.df.log() + lbeta)
