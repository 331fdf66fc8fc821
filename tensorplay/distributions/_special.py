"""lgamma, digamma and mvlgamma for the distributions added with issue 29.

TensorPlay's special-function ops are arriving (tp.lgamma, tp.digamma, tp.mvlgamma);
until they land, the composites in utils.py and gamma.py stand in. The lookup happens at
call time, so these families use the op as soon as it exists."""
from __future__ import annotations

import math

import tensorplay as tp


def lgamma(x):
    if hasattr(tp, "lgamma"):
        return tp.lgamma(x)
    from tensorplay.distributions import utils
    return utils.lgamma(x)


def digamma(x):
    if hasattr(tp, "digamma"):
        return tp.digamma(x)
    from tensorplay.distributions import gamma
    return gamma.digamma(x)


def mvlgamma(x, p):
    """The multivariate log-gamma: log Γ_p(x) = p(p-1)/4 log π + Σ_{j<p} log Γ(x - j/2),
    defined for x > (p - 1)/2 (PyTorch raises outside it)."""
    if hasattr(tp, "mvlgamma"):
        return tp.mvlgamma(x, p=p)
    if not bool((x > (p - 1) / 2).all()):
        raise RuntimeError(f"All elements must be greater than (p-1)/2 = {(p - 1) / 2}")
    shifts = tp.arange(p, dtype=x.dtype, device=x.device) / 2
    return lgamma(x.unsqueeze(-1) - shifts).sum(-1) + p * (p - 1) / 4 * math.log(math.pi)
