"""GeneralizedPareto(loc, scale, concentration): the limit law of exceedances over a
high threshold. concentration ξ = 0 is the Exponential, ξ > 0 a Pareto tail, ξ < 0 a
bounded support [loc, loc - scale/ξ]. Sampling is by the inverse cdf, so draws are
PyTorch's for a seed and rsample is differentiable."""
from __future__ import annotations

import math
import numbers

import tensorplay as tp
from tensorplay.distributions import constraints
from tensorplay.distributions.distribution import Distribution
from tensorplay.distributions.utils import broadcast_all

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        if all(isinstance(v, numbers.Number) for v in (loc, scale, concentration)):
            batch_shape = tp.Size()
        else:
            batch_shape = self.loc.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(GeneralizedPareto, _instance)
        batch_shape = tp.Size(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        super(GeneralizedPareto, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _safe_concentration(self):
        """(ξ == 0, ξ with its zeros replaced by 1): the ξ = 0 limit is a separate
        formula, and dividing by the zeros would put NaN into the gradient."""
        eq_zero = tp.isclose(self.concentration, tp.zeros_like(self.concentration))
        return eq_zero, tp.where(eq_zero, tp.ones_like(self.concentration), self.concentration)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        u = tp.rand(tuple(shape), dtype=self.loc.dtype, device=self.loc.device)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe_conc = self._safe_concentration()
        y = 1 / safe_conc + tp.ones_like(z)
        where_nonzero = tp.where(y == 0, y, y * tp.log1p(safe_conc * z))
        return -self.scale.log() - tp.where(eq_zero, z, where_nonzero)

    def log_survival_function(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe_conc = self._safe_concentration()
        where_nonzero = -tp.log1p(safe_conc * z) / safe_conc
        return tp.where(eq_zero, -z, where_nonzero)

    def log_cdf(self, value):
        return tp.log1p(-tp.exp(self.log_survival_function(value)))

    def cdf(self, value):
        return tp.exp(self.log_cdf(value))

    def icdf(self, value):
        eq_zero, safe_conc = self._safe_concentration()
        logu = tp.log1p(-value)
        where_nonzero = self.loc + self.scale / safe_conc * tp.expm1(-safe_conc * logu)
        where_zero = self.loc - self.scale * logu
        return tp.where(eq_zero, where_zero, where_nonzero)

    def _z(self, x):
        return (x - self.loc) / self.scale

    @property
    def mean(self):
        valid = self.concentration < 1
        safe_conc = tp.where(valid, self.concentration, tp.full_like(self.concentration, 0.5))
        result = self.loc + self.scale / (1 - safe_conc)
        return tp.where(valid, result, tp.full_like(result, math.nan))

    @property
    def variance(self):
        valid = self.concentration < 0.5
        safe_conc = tp.where(valid, self.concentration, tp.full_like(self.concentration, 0.25))
        result = self.scale ** 2 / ((1 - safe_conc) ** 2 * (1 - 2 * safe_conc))
        return tp.where(valid, result, tp.full_like(result, math.nan))

    def entropy(self):
        ans = tp.log(self.scale) + self.concentration + 1
        return tp.broadcast_to(ans, tuple(self._batch_shape))

    @property
    def mode(self):
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        lower = self.loc
        upper = tp.where(self.concentration < 0, lower - self.scale / self.concentration,
                         tp.full_like(lower, math.inf))
        return constraints.interval(lower, upper)
