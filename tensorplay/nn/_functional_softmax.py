"""tp.nn.functional: softmax, log_softmax and softmin with PyTorch's signatures (the dim
PyTorch's implicit rule picks when none is given), and gumbel_softmax (composed)."""
from __future__ import annotations

from tensorplay._creation import empty_like
from tensorplay._creation import zeros_like
from tensorplay._generated import functional as _F
from tensorplay._generated import functional as _ops

__all__ = ["softmax", "log_softmax", "softmin", "gumbel_softmax"]


def _softmax_dim(ndim):
    """PyTorch's legacy choice when no dim is given: 0 for 0-D, 1-D and 3-D inputs, else 1."""
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """Softmax along `dim`, computed stably (the maximum is subtracted first)."""
    return _F.softmax(input, _softmax_dim(input.dim()) if dim is None else dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    return _F.log_softmax(input, _softmax_dim(input.dim()) if dim is None else dim,
                          dtype=dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-input): the smallest entry gets the largest weight. As PyTorch's, the
    input is negated in its own dtype and `dtype` applies to the softmax: an unsigned
    input's negation wraps (-1 is 255 in uint8) and a bool one is refused, as `-x` is."""
    return _F.softmax(-input, _softmax_dim(input.dim()) if dim is None else dim, dtype=dtype)


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """softmax((logits + g) / tau) with Gumbel(0, 1) noise g = -log(Exp(1)); hard=True
    returns the one-hot of the argmax whose gradient is the soft sample's
    (straight-through estimator)."""
    gumbels = -_ops.exponential_(empty_like(logits)).log()
    soft = _ops.softmax((logits + gumbels) / tau, dim)
    if not hard:
        return soft
    index = soft.argmax(dim, keepdim=True)
    one_hot = _ops.scatter(zeros_like(soft), dim, index, 1.0)
    return one_hot - soft.detach() + soft
