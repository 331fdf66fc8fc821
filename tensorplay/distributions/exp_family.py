"""Exponential families (torch.distributions.ExponentialFamily): densities of the form
p(x; θ) = exp(<t(x), θ> - F(θ) + k(x)). Knowing the log normalizer F gives the entropy
of any member through the gradient of F (Bregman divergence), which is how PyTorch's
generic entropy and KL for two members of one family work."""
from __future__ import annotations

import tensorplay as tp
from tensorplay.distributions.distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):

    @property
    def _natural_params(self):
        """The natural parameters θ, a tuple of tensors."""
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        """F(θ), the log normalizer."""
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        """E[k(x)]."""
        raise NotImplementedError

    def entropy(self):
        """H = F(θ) - <θ, ∇F(θ)> - E[k(x)], ∇F taken by autograd."""
        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        lg_normal = self._log_normalizer(*nparams)
        gradients = tp.autograd.grad(lg_normal.sum(), nparams, create_graph=True)
        result = result + lg_normal
        for np_, g in zip(nparams, gradients):
            result = result - (np_ * g).reshape(*self._batch_shape, -1).sum(-1)
        return result
