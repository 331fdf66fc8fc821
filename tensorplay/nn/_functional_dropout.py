"""tp.nn.functional: channel-wise ("feature") dropout and alpha dropout, composed from a
Bernoulli mask (and plain `dropout`, which picks the op).

    dropout1d/2d/3d         zero whole channels: one draw per (sample, channel)
    alpha_dropout           keep SELU's zero mean and unit variance: dropped units are
                            set to SELU's negative saturation, then an affine map a*x + b
    feature_alpha_dropout   alpha dropout with one draw per (sample, channel)

As in PyTorch: p == 0 or training=False returns the input itself; p == 1 zeros it.
"""
from __future__ import annotations

import math
import warnings

from tensorplay._creation import empty
from tensorplay._tensor import Tensor
from tensorplay._generated import functional as _ops
from tensorplay._generated import functional as _F
from tensorplay.errors import ArgumentError, ShapeError, fmt_shape

__all__ = ["dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout",
           "dropout"]


# -SELU's negative saturation, -scale * alpha: the value SELU tends to as x -> -inf.
_SELU_SATURATION = 1.7580993408473766


def _check_p(op, p):
    if not 0.0 <= p <= 1.0:
        raise ArgumentError(f"{op}(): dropout probability has to be between 0 and 1, but got "
                            f"{p} (argument 'p')", op=op, arg="p")


def _keep_mask(input, p, feature):
    """1/0 draws (keep with probability 1 - p), of shape (N, C, 1, ...) when `feature`."""
    if feature:
        if input.dim() < 2:
            raise ShapeError(f"feature dropout requires at least 2 dimensions in the input, "
                             f"but got shape {fmt_shape(tuple(input.shape))}",
                             op="feature_dropout", arg="input")
        shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2)
    else:
        shape = tuple(input.shape)
    return _ops.bernoulli_(empty(*shape, dtype=input.dtype, device=input.device), 1 - p)


def _dropout(input, p, training, inplace, feature, alpha):
    """PyTorch's _dropout_impl: the mask (and alpha's shift) as a product and a sum."""
    if p == 0 or not training or input.numel() == 0:
        return input
    if p == 1:
        return input.mul_(0.0) if inplace else input * 0.0
    keep = _keep_mask(input, p, feature)
    if alpha:
        a = 1.0 / math.sqrt((_SELU_SATURATION ** 2 * p + 1) * (1 - p))
        # kept: a * x + a * alpha * p; dropped: -a * alpha * (1 - p) (the shifted saturation)
        shift = (keep - 1) * (_SELU_SATURATION * a) + _SELU_SATURATION * a * p
        scale = keep * a
        return input.mul_(scale).add_(shift) if inplace else input * scale + shift
    scale = keep / (1 - p)
    return input.mul_(scale) if inplace else input * scale


def _channel_dropout(op, input, p, training, inplace, batched_dim):
    """dropout1d/2d/3d: a (batched_dim - 1)-D input is one unbatched sample."""
    _check_p(op, p)
    batched = input.dim() == batched_dim
    if not batched:
        input = input.unsqueeze(0)
    result = _dropout(input, p, training, inplace, feature=True, alpha=False)
    return result if batched else result.squeeze(0)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, L) or (C, L) with probability p; scale by 1/(1-p)."""
    _check_p("dropout1d", p)
    if input.dim() not in (2, 3):
        raise ShapeError(f"dropout1d(): expected a 2-D (C, L) or 3-D (N, C, L) input, but got "
                         f"shape {fmt_shape(tuple(input.shape))} (argument 'input')",
                         op="dropout1d", arg="input")
    return _channel_dropout("dropout1d", input, p, training, inplace, 3)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, H, W) or (C, H, W) with probability p.

    NOTE: PyTorch treats a 3-D input as batched (N, C, L) (with a warning), not as one
    (C, H, W) sample; we do the same so the two agree."""
    _check_p("dropout2d", p)
    if input.dim() not in (3, 4):
        warnings.warn(f"dropout2d: Received a {input.dim()}-D input to dropout2d, which is "
                      f"deprecated; use dropout instead", stacklevel=2)
    if input.dim() == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that "
                      "channel-wise 1D dropout behavior is desired - input is interpreted as "
                      "shape (N, C, L); use dropout1d to keep this behavior", stacklevel=2)
    return _dropout(input, p, training, inplace, feature=True, alpha=False)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) with probability p."""
    _check_p("dropout3d", p)
    if input.dim() not in (4, 5):
        warnings.warn(f"dropout3d: Received a {input.dim()}-D input to dropout3d, which is "
                      f"deprecated; use dropout instead", stacklevel=2)
    return _channel_dropout("dropout3d", input, p, training, inplace, 5)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout for SELU networks: keeps the input's mean and variance (0 and 1)."""
    _check_p("alpha_dropout", p)
    return _dropout(input, p, training, inplace, feature=False, alpha=True)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout of whole channels (one draw per sample and channel)."""
    _check_p("feature_alpha_dropout", p)
    return _dropout(input, p, training, inplace, feature=True, alpha=True)


# ---- dropout, embedding, one_hot, distances, attention ------------------------------
def dropout(input, p=0.5, training=True, inplace=False, *, generator=None):
    """Zero each element with probability p and scale the rest by 1 / (1 - p) when
    training (random draws from `generator`, default: the one `tp.manual_seed` seeds)."""
    if p == 0 and type(input) is Tensor:
        # The op returns its input then (PyTorch's too): a Transformer layer's three
        # dropouts at p=0 would dispatch three calls that do nothing.
        return input
    result = _F.dropout(input, p, training, generator=generator)
    if inplace and result is not input:
        return input.copy_(result)
    return result
