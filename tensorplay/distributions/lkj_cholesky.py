"""LKJCholesky(dim, concentration η): a distribution over Cholesky factors L of
correlation matrices (L Lᵀ has a unit diagonal), with density of the correlation
matrix proportional to det(L Lᵀ)^(η-1) (Lewandowski, Kurowicka & Joe, 2009). η = 1 is
uniform over correlation matrices; larger η favors the identity.

Sampling is the onion method: row i of L is a random direction in its first i
coordinates, scaled by the square root of a Beta draw, with the diagonal entry filling
the row to unit length. The Beta draws come from TensorPlay's own gamma sampler, so
tests compare the draws with PyTorch's by their distribution, not number by number."""
from __future__ import annotations

import math

import tensorplay as tp
from tensorplay.distributions import constraints
from tensorplay.distributions.beta import Beta
from tensorplay.distributions.distribution import Distribution
from tensorplay.distributions.transforms import _diag_embed
from tensorplay.distributions.utils import broadcast_all

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(
                f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        batch_shape = self.concentration.size()
        event_shape = tp.Size((dim, dim))
        # the Beta marginals of the onion method, one per row (row 0 is not used)
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        offset = tp.arange(self.dim - 1, dtype=self.concentration.dtype,
                           device=self.concentration.device)
        offset = tp.cat([offset.new_zeros((1,)), offset])
        beta_conc1 = offset + 0.5
        beta_conc0 = marginal_conc.unsqueeze(-1) - 0.5 * offset
        self._beta = Beta(beta_conc1, beta_conc0)
        super().__init__(batch_shape, event_shape, validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = tp.Size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(tuple(batch_shape) + (self.dim,))
        super(LKJCholesky, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=()):
        with tp.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            u_normal = tp.randn(*self._extended_shape(sample_shape), dtype=y.dtype,
                                device=y.device).tril(-1)
            u_hypersphere = u_normal / u_normal.norm(dim=-1, keepdim=True)
            # row 0 has no entries below the diagonal (0 / 0 above): it is just e_1
            first_row = tp.arange(self.dim, device=y.device).unsqueeze(-1) == 0
            u_hypersphere = tp.where(first_row, tp.zeros_like(u_hypersphere), u_hypersphere)
            w = tp.sqrt(y) * u_hypersphere
            eps = tp.finfo(w.dtype).tiny
            diag_elems = tp.clamp(1 - tp.sum(w ** 2, dim=-1), min=eps).sqrt()
            return w + _diag_embed(diag_elems)

    def log_prob(self, value):
        # log p(L) = Σ_i (dim - i + 2(η - 1)) log L_ii - log normalizer (LKJ's eq. 16,
        # with the Jacobian of L -> L Lᵀ folded in)
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = tp.arange(2, self.dim + 1, device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized_log_pdf = tp.sum(order * diag_elems.log(), dim=-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = tp.lgamma(alpha) * dm1
        numerator = tp.mvlgamma(alpha - 0.5, dm1)
        pi_constant = 0.5 * dm1 * math.log(math.pi)
        normalize_term = pi_constant + numerator - denominator
        return unnormalized_log_pdf - normalize_term
