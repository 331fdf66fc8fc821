"""tp.nn.functional: the layers half (see functional.py).

Functions with PyTorch's `torch.nn.functional` signatures that pick an op of ops.yaml
and its arguments: softmax family, losses, normalization, dropout, embedding,
distances and attention.
"""
from __future__ import annotations

from tensorplay._generated import functional as _F
from tensorplay.nn._functional_losses import *  # noqa: F401,F403


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
    """softmax(-input): the smallest entry gets the largest weight."""
    if dtype is not None:
        input = input.to(dtype)
    return _F.softmax(-input, _softmax_dim(input.dim()) if dim is None else dim)
