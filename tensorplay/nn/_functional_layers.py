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


# ---- normalization ------------------------------------------------------------------
def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-05):
    """Normalize each channel (dim 1); in training, update the running stats in place."""
    return _F.batch_norm(input, weight, bias, running_mean, running_var, training, momentum,
                         eps, False)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05):
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    return _F.layer_norm(input, list(normalized_shape), weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05):
    return _F.group_norm(input, num_groups, weight, bias, eps)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-05):
    return _F.instance_norm(input, weight, bias, running_mean, running_var, use_input_stats,
                            momentum, eps, False)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    return _F.rms_norm(input, list(normalized_shape), weight, eps)
