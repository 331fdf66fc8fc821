"""Gamma(concentration, rate): density rate^a x^(a-1) e^(-rate x) / Γ(a) on x > 0.

The special functions are ops of family `special`: tp.lgamma, tp.digamma (the entropy)
and tp.igamma, the regularized lower incomplete gamma P(a, x) (the cdf). TensorPlay has
no gamma sampler, so two pieces are composites here:
- draws: Marsaglia and Tsang's rejection method (vectorized: every entry retries until
  accepted). It does not reproduce PyTorch's draws; tests compare statistics.
- rsample's gradient: implicit reparameterization. A draw x of Gamma(a, 1) moves with a
  as dx/da = -(∂P(a, x)/∂a) / p(x; a). tp.igamma has no derivative in a (PyTorch's
  has none either; its sampler has an op of its own for this gradient), so P is summed
  here as its power series, which autograd differentiates in a."""
from __future__ import annotations

import math
import numbers

import tensorplay as tp
from tensorplay.distributions import constraints
from tensorplay.distributions.exp_family import ExponentialFamily
from tensorplay.distributions.utils import broadcast_all

__all__ = ["Gamma"]


def _gammainc_series(a, x):
    """P(a, x), the regularized lower incomplete gamma, by its power series
    x^a e^-x / Γ(a + 1) · Σ_n x^n / ((a + 1)···(a + n)): differentiable in a (tp.igamma
    is not), for rsample's gradient. The series needs about x + 10 sqrt(x) terms; fine
    for the moderate x of sampling."""
    a, x = broadcast_all(a, x)
    x_safe = x.clamp(min=tp.finfo(x.dtype).tiny)
    n_terms = int(float(x.detach().max()) + 10 * math.sqrt(float(x.detach().max())) + 30) \
        if x.numel() else 1
    term = tp.ones_like(a + x)
    total = term
    for n in range(1, n_terms):
        term = term * x_safe / (a + n)
        total = total + term
    log_p = a * x_safe.log() - x_safe - tp.lgamma(a + 1) + total.log()
    return tp.where(x > 0, log_p.exp().clamp(max=1.0), tp.zeros_like(log_p))


def _marsaglia_tsang(a):
    """Gamma(a, 1) draws for a > 0 (no gradient)."""
    boost = a < 1
    a1 = tp.where(boost, a + 1, a)           # a < 1: draw Gamma(a + 1), then scale by u^(1/a)
    d = a1 - 1.0 / 3.0
    c = 1.0 / tp.sqrt(9.0 * d)
    out = tp.zeros_like(a)
    pending = tp.ones_like(a, dtype=tp.bool)
    while bool(pending.any()):
        z = tp.randn_like(a)
        v = (1 + c * z) ** 3
        u = tp.rand_like(a)
        v_safe = v.clamp(min=tp.finfo(a.dtype).tiny)
        accept = (v > 0) & (u.log() < 0.5 * z * z + d - d * v_safe + d * v_safe.log())
        take = accept & pending
        out = tp.where(take, d * v_safe, out)
        pending = pending & ~accept
    u = tp.rand_like(a).clamp(min=tp.finfo(a.dtype).tiny)
    return tp.where(boost, out * u ** (1 / a), out)


def _standard_gamma(a):
    """Gamma(a, 1) draws whose gradient in a is the implicit one (see the module)."""
    with tp.no_grad():
        x = _marsaglia_tsang(a.detach().to(tp.float64)).clamp(min=tp.finfo(tp.float64).tiny)
    if not a.requires_grad:
        return x.to(a.dtype)
    # value x; derivative -(∂P/∂a) / p(x; a), from P computed with a live, x fixed
    log_pdf = (a.detach().to(tp.float64) - 1) * x.log() - x - tp.lgamma(a.detach().to(tp.float64))
    p = _gammainc_series(a.to(tp.float64), x)
    return (x - (p - p.detach()) / log_pdf.exp()).to(a.dtype)


class Gamma(ExponentialFamily):
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        if isinstance(concentration, numbers.Number) and isinstance(rate, numbers.Number):
            batch_shape = tp.Size()
        else:
            batch_shape = self.concentration.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Gamma, _instance)
        batch_shape = tp.Size(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        super(Gamma, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        value = _standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        return value

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (tp.xlogy(self.concentration, self.rate) + tp.xlogy(self.concentration - 1, value)
                - self.rate * value - tp.lgamma(self.concentration))

    def entropy(self):
        return (self.concentration - tp.log(self.rate) + tp.lgamma(self.concentration)
                + (1.0 - self.concentration) * tp.digamma(self.concentration))

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return tp.lgamma(x + 1) + (x + 1) * tp.log(-y.reciprocal())

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return tp.igamma(self.concentration, value * self.rate)

