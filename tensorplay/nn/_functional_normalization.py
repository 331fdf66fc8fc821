"""tp.nn.functional: the layers half (see functional.py).

Functions with PyTorch's `torch.nn.functional` signatures that pick an op of ops.yaml
and its arguments: softmax family, losses, normalization, dropout, embedding,
distances and attention.
"""
from __future__ import annotations

from tensorplay._generated import functional as _F
from tensorplay.nn import _functional_losses
from tensorplay.nn._functional_losses import *  # noqa: F401,F403

__all__ = [
    "softmax", "log_softmax", "softmin",
    "batch_norm", "layer_norm", "group_norm", "instance_norm", "rms_norm",
    "dropout", "embedding", "one_hot", "cosine_similarity", "pairwise_distance",
    "scaled_dot_product_attention",
] + _functional_losses.__all__


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


# ---- dropout, embedding, one_hot, distances, attention ------------------------------
def dropout(input, p=0.5, training=True, inplace=False, *, generator=None):
    """Zero each element with probability p and scale the rest by 1 / (1 - p) when
    training (random draws from `generator`, default: the one `tp.manual_seed` seeds)."""
    result = _F.dropout(input, p, training, generator=generator)
    if inplace and result is not input:
        return input.copy_(result)
    return result


def embedding(input, weight, padding_idx=None, *, scale_grad_by_freq=False, sparse=False):
    """Rows of `weight` selected by the indices in `input`; row `padding_idx` gets no
    gradient. (No max_norm: renormalizing rows in place is not supported.)"""
    if padding_idx is None:
        padding_idx = -1
    elif padding_idx < 0:
        padding_idx += weight.shape[0]
    return _F.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)


def one_hot(tensor, num_classes=-1):
    return _F.one_hot(tensor, num_classes)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    return _F.cosine_similarity(x1, x2, dim, eps)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    return _F.pairwise_distance(x1, x2, float(p), eps, keepdim)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    return _F.scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal,
                                           scale=scale, enable_gqa=enable_gqa)
