"""The user-facing normalization ops, each a call of its native_* kernel (which also
returns the statistics for backward). instance_norm is batch norm over a (1, N * C, ...)
view, as PyTorch defines it."""
from __future__ import annotations

from tensorplay._generated import functional as F
from tensorplay._memory_format import is_channels_last
from tensorplay.autograd.grad_mode import no_grad
from tensorplay.errors import ArgumentError, ShapeError, fmt_shape
from tensorplay.meta import normalization as rules


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
               cudnn_enabled):
    rules.native_batch_norm("batch_norm", (input, weight, bias, running_mean, running_var,
                                           training, momentum, eps))
    return F.native_batch_norm(input, weight, bias, running_mean, running_var, training,
                               momentum, eps)[0]


def layer_norm(input, normalized_shape, weight, bias, eps, cudnn_enable):
    rules.native_layer_norm("layer_norm", (input, normalized_shape, weight, bias, eps))
    return F.native_layer_norm(input, normalized_shape, weight, bias, eps)[0]


def rms_norm(input, normalized_shape, weight, eps):
    rules.fused_rms_norm("rms_norm", (input, normalized_shape, weight, eps))
    return F._fused_rms_norm(input, normalized_shape, weight, eps)[0]


def group_norm(input, num_groups, weight, bias, eps, cudnn_enabled):
    op = "group_norm"
    if input.dim() < 2:
        raise ShapeError(f"{op}(): argument 'input' must have at least 2 dimensions (N, C, "
                         f"...), but got shape {fmt_shape(input.shape)}", op=op, arg="input")
    n, c = input.shape[0], input.shape[1]
    if num_groups <= 0 or c % num_groups:
        raise ArgumentError(f"{op}(): the number of channels ({c}) must be divisible by "
                            f"argument 'num_groups' ({num_groups})", op=op, arg="num_groups")
    hxw = 1
    for s in input.shape[2:]:
        hxw *= s
    # As PyTorch: the kernel takes a dense input, so a strided one is copied first (and
    # the copy, not the input, is what the backward saves).
    if not (input.is_contiguous() or is_channels_last(tuple(input.shape), input.stride())):
        input = input.contiguous()
    return F.native_group_norm(input, weight, bias, n, c, hxw, num_groups, eps)[0]


def _repeat(t, n):
    """(C,) -> (n * C,): t repeated n times (None stays None)."""
    if t is None:
        return None
    return t.unsqueeze(0).expand((n, t.shape[0])).reshape((n * t.shape[0],))


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum,
                  eps, cudnn_enabled):
    """Normalize each (sample, channel) over its spatial dims: batch norm of the input
    viewed as one sample with N * C channels; the running stats are averaged back over N."""
    op = "instance_norm"
    if input.dim() < 3:
        raise ShapeError(f"{op}(): argument 'input' must have at least 3 dimensions (N, C, "
                         f"d1, ...), but got shape {fmt_shape(input.shape)}", op=op,
                         arg="input")
    n, c = input.shape[0], input.shape[1]
    # the running statistics are computed in the parameters' dtype, whatever their own
    # (PyTorch checks only weight and bias against the input)
    stats = weight if weight is not None else bias if bias is not None else input
    rm, rv = _repeat(running_mean, n), _repeat(running_var, n)
    rm = None if rm is None else rm.to(stats.dtype)
    rv = None if rv is None else rv.to(stats.dtype)
    shaped = input.contiguous().view((1, n * c) + tuple(input.shape[2:]))
    out = F.batch_norm(shaped, _repeat(weight, n), _repeat(bias, n), rm, rv, use_input_stats,
                       momentum, eps, cudnn_enabled)
    with no_grad():
        if running_mean is not None:
            running_mean.copy_(rm.view((n, c)).mean(0))
        if running_var is not None:
            running_var.copy_(rv.view((n, c)).mean(0))
    return out.view(tuple(input.shape))


def native_batch_norm_backward(grad_out, input, weight, running_mean, running_var, save_mean,
                               save_invstd, train, eps, output_mask):
    """The fused batch-norm backward written with TensorPlay ops, for a backend without a
    kernel of its own (the CPU kernel, cpu_kernels/normalization.py, gives the formulas)."""
    rules.native_batch_norm_backward("native_batch_norm_backward", (
        grad_out, input, weight, running_mean, running_var, save_mean, save_invstd, train, eps,
        output_mask))
    shape = [1] * input.dim()
    shape[1] = input.shape[1]
    dims = [0] + list(range(2, input.dim()))
    count = input.numel() // input.shape[1]
    if train:
        mean, invstd = save_mean, save_invstd
    else:
        mean, invstd = running_mean, 1 / F.sqrt(running_var + eps)
    scale = invstd if weight is None else invstd * weight
    xc = input - mean.reshape(shape)
    sum_g = grad_out.sum(dims)
    dot = (grad_out * xc).sum(dims)
    grad_in = None
    if output_mask[0]:
        grad_in = grad_out * scale.reshape(shape)
        if train:
            k = dot * invstd * invstd / count * scale
            grad_in = grad_in - xc * k.reshape(shape) - (sum_g / count * scale).reshape(shape)
    return (grad_in, dot * invstd if output_mask[1] else None,
            sum_g if output_mask[2] else None)
