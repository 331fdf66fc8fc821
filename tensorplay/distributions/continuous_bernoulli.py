"""ContinuousBernoulli(probs= or logits=): a density on [0, 1] proportional to
p^x (1-p)^(1-x), the Bernoulli likelihood made a proper density for continuous pixel
values (Loaiza-Ganem & Cunningham, 2019). `probs` is not a mean here, only a shape.

Its normalizer C(p) = 2 atanh(1 - 2p) / (1 - 2p) has a removable singularity at p = 1/2:
inside `lims` (0.499, 0.501) every quantity switches to its Taylor series there, as
PyTorch's does, so values and gradients stay finite. Just outside it the exact formulas
cancel terms of size 1/(1 - 2p)^2 down to O(1): log C(p), the mean and the variance are
computed in float64 whatever the dtype (_wide_probs), and rounded once."""
from __future__ import annotations

import math
import numbers

import tensorplay as tp
from tensorplay.distributions import constraints
from tensorplay.distributions.exp_family import ExponentialFamily
from tensorplay.distributions.utils import (
    broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits)

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ExponentialFamily):
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            is_scalar = isinstance(probs, numbers.Number)
            (self.probs,) = broadcast_all(probs)
            # validated before clamping (clamping would hide values outside [0, 1])
            if validate_args is not None:
                if not bool(self.arg_constraints["probs"].check(self.probs).all()):
                    raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(self.probs)
        else:
            is_scalar = isinstance(logits, numbers.Number)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        batch_shape = tp.Size() if is_scalar else self._param.size()
        self._lims = lims
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(ContinuousBernoulli, _instance)
        new._lims = self._lims
        batch_shape = tp.Size(batch_shape)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
            new._param = new.logits
        super(ContinuousBernoulli, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _outside_unstable_region(self):
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self, probs=None):
        # probs near 1/2 replaced by a safe value: the exact branch is evaluated there
        # too (tp.where takes both), and must not produce NaN (its gradient would leak)
        probs = self.probs if probs is None else probs
        return tp.where(self._outside_unstable_region(), probs,
                        self._lims[0] * tp.ones_like(probs))

    def _wide_probs(self):
        """probs in float64 (exactly: a float32 value widens without rounding), for the
        formulas that cancel near p = 1/2. In float32 their rounding is amplified to
        1e-2 of a gradient at p = 0.4988 (in PyTorch's float32 too); in float64 and
        rounded once to the dtype, the result is accurate to the dtype. The Taylor
        branch is chosen on the probs themselves (_outside_unstable_region), as PyTorch
        chooses it."""
        return self.probs.to(tp.float64) if self.probs.dtype.is_floating_point else self.probs

    def _cont_bern_log_norm(self):
        """log C(p), C the normalizing constant."""
        probs = self._wide_probs()
        cut_probs = self._cut_probs(probs)
        below_half = tp.where(cut_probs <= 0.5, cut_probs, tp.zeros_like(cut_probs))
        above_half = tp.where(cut_probs >= 0.5, cut_probs, tp.ones_like(cut_probs))
        log_norm = tp.log(tp.abs(tp.log1p(-cut_probs) - tp.log(cut_probs))) - tp.where(
            cut_probs <= 0.5, tp.log1p(-2.0 * below_half), tp.log(2.0 * above_half - 1.0))
        x = tp.pow(probs - 0.5, 2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        out = tp.where(self._outside_unstable_region(), log_norm, taylor)
        return out.to(self.probs.dtype)

    @property
    def mean(self):
        probs = self._wide_probs()
        cut_probs = self._cut_probs(probs)
        mus = cut_probs / (2.0 * cut_probs - 1.0) + 1.0 / (
            tp.log1p(-cut_probs) - tp.log(cut_probs))
        x = probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * tp.pow(x, 2)) * x
        return tp.where(self._outside_unstable_region(), mus, taylor).to(self.probs.dtype)

    @property
    def stddev(self):
        return tp.sqrt(self.variance)

    @property
    def variance(self):
        probs = self._wide_probs()
        cut_probs = self._cut_probs(probs)
        variances = cut_probs * (cut_probs - 1.0) / tp.pow(1.0 - 2.0 * cut_probs, 2) + 1.0 / tp.pow(
            tp.log1p(-cut_probs) - tp.log(cut_probs), 2)
        x = tp.pow(probs - 0.5, 2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        out = tp.where(self._outside_unstable_region(), variances, taylor)
        return out.to(self.probs.dtype)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self):
        return self._param.size()

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        u = tp.rand(tuple(shape), dtype=self.probs.dtype, device=self.probs.device)
        with tp.no_grad():
            return self.icdf(u)

    def rsample(self, sample_shape=()):
        # inverse-cdf sampling: icdf is differentiable in probs
        shape = self._extended_shape(sample_shape)
        u = tp.rand(tuple(shape), dtype=self.probs.dtype, device=self.probs.device)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        bce = tp.nn.functional.binary_cross_entropy_with_logits(logits, value, reduction="none")
        return -bce + self._cont_bern_log_norm()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        cut_probs = self._cut_probs()
        cdfs = (tp.pow(cut_probs, value) * tp.pow(1.0 - cut_probs, 1.0 - value)
                + cut_probs - 1.0) / (2.0 * cut_probs - 1.0)
        unbounded_cdfs = tp.where(self._outside_unstable_region(), cdfs, value)
        return tp.where(value <= 0.0, tp.zeros_like(value),
                        tp.where(value >= 1.0, tp.ones_like(value), unbounded_cdfs))

    def icdf(self, value):
        cut_probs = self._cut_probs()
        return tp.where(
            self._outside_unstable_region(),
            (tp.log1p(-cut_probs + value * (2.0 * cut_probs - 1.0)) - tp.log1p(-cut_probs))
            / (tp.log(cut_probs) - tp.log1p(-cut_probs)),
            value)

    def entropy(self):
        log_probs0 = tp.log1p(-self.probs)
        log_probs1 = tp.log(self.probs)
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        """log C as a function of the natural parameter (the logit)."""
        out_unst_reg = (x <= self._lims[0] - 0.5) | (x > self._lims[1] - 0.5)
        cut_nat_params = tp.where(out_unst_reg, x, (self._lims[0] - 0.5) * tp.ones_like(x))
        log_norm = tp.log(tp.abs(tp.expm1(cut_nat_params))) - tp.log(tp.abs(cut_nat_params))
        taylor = 0.5 * x + tp.pow(x, 2) / 24.0 - tp.pow(x, 4) / 2880.0
        return tp.where(out_unst_reg, log_norm, taylor)
