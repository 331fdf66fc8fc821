"""tp.nn.functional: layers with no op of their own, written as a few ops (as PyTorch's
Python reference does): local response norm, channel shuffle, pdist, power-average
pooling, max unpooling, the deprecated upsample names, the `*_with_indices` forms, and
`embedding` with PyTorch's full signature (max_norm renormalizes rows, then the op).
"""
from __future__ import annotations

import warnings

import numpy as np

from tensorplay._creation import tensor, zeros
from tensorplay._generated import functional as _ops
from tensorplay.errors import ArgumentError, ShapeError, fmt_shape
from tensorplay.autograd.grad_mode import no_grad
from tensorplay.nn import _functional_layers as _layers
from tensorplay.nn import _functional_pool as _pool
from tensorplay.nn._functional_losses import cross_entropy
from tensorplay.nn._functional_resample import interpolate

__all__ = ["local_response_norm", "channel_shuffle", "native_channel_shuffle", "pdist",
           "lp_pool1d", "lp_pool2d", "max_unpool1d", "max_unpool2d", "upsample",
           "upsample_nearest", "upsample_bilinear", "max_pool1d_with_indices",
           "max_pool2d_with_indices", "adaptive_max_pool1d_with_indices",
           "adaptive_max_pool2d_with_indices", "linear_cross_entropy", "embedding"]


def _pow(input, exponent):
    """input ** exponent with the exponent as a tensor of the input's dtype.

    NOTE: works around the float exponent of pow.Tensor_Scalar, whose gradient is
    computed at float32 precision (x ** 0.6 in float64 is off by ~1e-8)."""
    return input.pow(tensor(float(exponent), dtype=input.dtype, device=input.device))


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


def channel_shuffle(input, groups):
    """(N, g * c, ...) -> interleave the g groups: channel i * c + j goes to j * g + i."""
    op = "channel_shuffle"
    if input.dim() < 3 or input.shape[1] % groups:
        raise ShapeError(f"{op}(): expected an input (N, C, ...) with C divisible by groups="
                         f"{groups}, but got shape {fmt_shape(tuple(input.shape))}", op=op,
                         arg="input")
    shape = tuple(input.shape)
    grouped = input.reshape(shape[0], groups, shape[1] // groups, *shape[2:])
    return grouped.transpose(1, 2).reshape(*shape)


native_channel_shuffle = channel_shuffle


def pdist(input, p=2):
    """The p-norm distances between the rows of (N, M), for i < j in row-major order:
    an N * (N - 1) / 2 vector."""
    if input.dim() != 2:
        raise ShapeError(f"pdist(): expected a 2-D input (N, M), but got shape "
                         f"{fmt_shape(tuple(input.shape))} (argument 'input')", op="pdist",
                         arg="input")
    rows, cols = np.triu_indices(input.shape[0], k=1)
    i = tensor(rows.astype(np.int64), device=input.device)
    j = tensor(cols.astype(np.int64), device=input.device)
    diff = _ops.index_select(input, 0, i) - _ops.index_select(input, 0, j)
    return _ops.norm(diff, float(p), [1], False)


def _power_average(avg, kernel_area, norm_type):
    """(area * avg(x^p))^(1/p); relu(|.|) * sign keeps PyTorch's gradient at 0."""
    return _pow((_ops.sign(avg) * _ops.relu(avg.abs())).mul(kernel_area), 1.0 / norm_type)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum of x^p over each window)^(1/p)."""
    kh, kw = _pool._pair("lp_pool2d", "kernel_size", kernel_size)
    avg = _pool.avg_pool2d(_pow(input, norm_type), kernel_size, stride, 0, ceil_mode)
    return _power_average(avg, kh * kw, norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    avg = _pool.avg_pool1d(_pow(input, norm_type), kernel_size, stride, 0, ceil_mode)
    k = kernel_size[0] if isinstance(kernel_size, (list, tuple)) else kernel_size
    return _power_average(avg, k, norm_type)


def _unpool_size(op, spatial, kernel, stride, padding, output_size):
    default = tuple((s - 1) * st - 2 * pd + k
                    for s, k, st, pd in zip(spatial, kernel, stride, padding))
    if output_size is None:
        return default
    size = tuple(output_size)[-len(spatial):]
    for s, d, st in zip(size, default, stride):
        if not d - st < s < d + st:
            raise ShapeError(f"{op}(): argument 'output_size' {list(output_size)} must be "
                             f"between {[d - st + 1 for d, st in zip(default, stride)]} and "
                             f"{[d + st - 1 for d, st in zip(default, stride)]}", op=op,
                             arg="output_size")
    return size


def _max_unpool(input, indices, size):
    """Scatter each value to its flat index in the output plane (zeros elsewhere)."""
    lead = tuple(input.shape[:-len(size)])
    flat_in = input.reshape(*lead, -1)
    plane = int(np.prod(size))
    out = zeros(*lead, plane, dtype=input.dtype, device=input.device)
    out = _ops.scatter(out, -1, indices.reshape(*lead, -1), flat_in)
    return out.reshape(*lead, *size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool2d: maxima back at `indices`, zeros elsewhere."""
    op = "max_unpool2d"
    kernel = _pool._pair(op, "kernel_size", kernel_size)
    stride = _pool._pair(op, "stride", stride) or kernel
    padding = _pool._pair(op, "padding", padding)
    size = _unpool_size(op, tuple(input.shape[-2:]), kernel, stride, padding, output_size)
    return _max_unpool(input, indices, size)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    op = "max_unpool1d"

    def single(value):
        return value[0] if isinstance(value, (list, tuple)) else value
    kernel = (single(kernel_size),)
    stride = (single(stride),) if stride is not None else kernel
    padding = (single(padding),)
    size = _unpool_size(op, tuple(input.shape[-1:]), kernel, stride, padding, output_size)
    return _max_unpool(input, indices, size)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated name of interpolate."""
    warnings.warn("nn.functional.upsample is deprecated. Use nn.functional.interpolate "
                  "instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    warnings.warn("nn.functional.upsample_nearest is deprecated. Use "
                  "nn.functional.interpolate instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """interpolate(mode='bilinear', align_corners=True), as the deprecated name did."""
    warnings.warn("nn.functional.upsample_bilinear is deprecated. Use "
                  "nn.functional.interpolate instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    return _pool.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    return _pool.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=True):
    return _pool.adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=True):
    return _pool.adaptive_max_pool2d(input, output_size, True)


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None,
                         reduction="mean", ignore_index=None, label_smoothing=0.0,
                         options=None):
    """cross_entropy(linear(input, linear_weight, linear_bias), target): the unfused
    reference form (PyTorch may chunk it to save memory; `options` is not supported)."""
    if options is not None:
        raise ArgumentError("linear_cross_entropy(): argument 'options' is not supported "
                            f"(got {options!r})", op="linear_cross_entropy", arg="options")
    logits = _ops.linear(input, linear_weight, linear_bias)
    return cross_entropy(logits, target, weight, reduction=reduction,
                         ignore_index=-100 if ignore_index is None else ignore_index,
                         label_smoothing=label_smoothing)


def _embedding_renorm_(weight, indices, max_norm, norm_type):
    """Scale, in place, each row of `weight` that `indices` picks whose norm exceeds
    max_norm down to max_norm (PyTorch's embedding_renorm_: max_norm / (norm + 1e-7))."""
    with no_grad():
        rows = _ops.unique(indices.reshape(-1))
        picked = _ops.index_select(weight, 0, rows)
        norms = _ops.norm(picked, float(norm_type), [1], True)
        scale = _ops.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        _ops.index_copy_(weight, 0, rows, picked * scale)
    return weight


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of `weight` picked by `input`; row `padding_idx` gets no gradient.

    NOTE: max_norm modifies `weight` in place before the lookup, as PyTorch does, so a
    weight used elsewhere in the same graph must be cloned first."""
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    return _layers.embedding(input, weight, padding_idx, scale_grad_by_freq=scale_grad_by_freq,
                             sparse=sparse)
