"""tp.nn.functional: the normalizations with PyTorch's signatures (batch, layer, group,
instance and RMS norm pick the op and its arguments), local response norm (a few ops) and
normalize."""
from __future__ import annotations

from tensorplay._generated import functional as _F
from tensorplay._generated import functional as _ops
from tensorplay.errors import ArgumentError, ShapeError, fmt_shape
from tensorplay.nn._functional_pooling import _pow

__all__ = ["batch_norm", "layer_norm", "group_norm", "instance_norm", "rms_norm",
           "local_response_norm", "normalize"]


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


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha * mean of x^2 over `size` neighbouring channels)^beta; the window
    is centred (size // 2 before, (size - 1) // 2 after) and zero-padded."""
    op = "local_response_norm"
    if input.dim() < 3:
        raise ShapeError(f"{op}(): expected a 3-D or higher input (N, C, ...), but got shape "
                         f"{fmt_shape(tuple(input.shape))} (argument 'input')", op=op,
                         arg="input")
    if input.numel() == 0:
        return input
    channels = input.shape[1]
    # Pad the channel dim and sum `size` shifted slices (a sliding window of width size).
    pads = [0, 0] * (input.dim() - 2) + [size // 2, (size - 1) // 2]
    squares = _ops.constant_pad_nd(input * input, pads, 0)
    window = squares.narrow(1, 0, channels)
    for shift in range(1, size):
        window = window + squares.narrow(1, shift, channels)
    div = _pow(window / size * alpha + k, beta)
    return input / div


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(||input||_p along dim, eps)."""
    if out is not None:
        raise ArgumentError("normalize(): argument 'out' is not supported (got a tensor); "
                            "assign the result instead", op="normalize", arg="out")
    norm = _ops.norm(input, p, [dim], True).clamp_min(eps)
    return input / norm.expand_as(input)
