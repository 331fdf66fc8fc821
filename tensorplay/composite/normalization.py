"""The user-facing normalization ops, each a call of its native_* kernel (which also
returns the statistics for backward). instance_norm is batch norm over a (1, N * C, ...)
view, as PyTorch defines it."""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay._generated import functional as F
from tensorplay._memory_format import is_channels_last
from tensorplay.autograd.grad_mode import no_grad
from tensorplay.errors import ArgumentError, ShapeError, fmt_shape
from tensorplay.meta import normalization as rules


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
               cudnn_enabled):
    if input.numel() == 0 and input.dim() >= 2:
        # As PyTorch's _batch_norm_impl_index, before any check of the other arguments: no
        # statistics to take (the running ones stay as they are), and a result that is no
        # view of the input but still reaches the weight and bias in the graph (their
        # gradients are zeros, not None).
        out = input.clone()
        if weight is not None:
            out = out * weight[0]
        if bias is not None:
            out = out + bias[0]
        return out
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
    if use_input_stats:        # (otherwise batch_norm left them as they were)
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


# ---- the SyncBatchNorm internals ----------------------------------------------------------
# nn.SyncBatchNorm computes batch norm across processes in pieces: each process reduces
# its own batch (batch_norm_stats), the per-process statistics are gathered and combined
# (batch_norm_gather_stats_with_counts), each normalizes with the combined ones
# (batch_norm_elemt); backward likewise (batch_norm_backward_reduce, an all-reduce of its
# sums, batch_norm_backward_elemt). The formulas are PyTorch's (Normalization.cuh); the
# statistics are float32 for half inputs.
def _channel_dims(input):
    return [d for d in range(input.dim()) if d != 1]


def _per_channel(t, input):
    """A (C,) tensor shaped to broadcast against input (N, C, *)."""
    return t.reshape((1, -1) + (1,) * (input.dim() - 2))


def _stats_dtype(input):
    return dt.float32 if input.dtype.itemsize == 2 else input.dtype


def batch_norm_stats(input, eps):
    """(mean, invstd) of each channel over N and the spatial dims; invstd =
    1 / sqrt(biased var + eps)."""
    if input.dim() < 2:
        raise ShapeError(f"batch_norm_stats(): argument 'input' must be (N, C, ...), but got "
                         f"shape {fmt_shape(input.shape)}", op="batch_norm_stats", arg="input")
    x = input.to(_stats_dtype(input))
    dims = _channel_dims(x)
    mean = x.mean(dims)
    var = (x - _per_channel(mean, x)).square().mean(dims)
    return mean, (var + eps).rsqrt()


def batch_norm_elemt(input, weight, bias, mean, invstd, eps):
    """(input - mean) * invstd * weight + bias, per channel."""
    out = (input - _per_channel(mean, input)) * _per_channel(invstd, input)
    if weight is not None:
        out = out * _per_channel(weight, input)
    if bias is not None:
        out = out + _per_channel(bias, input)
    return out.to(input.dtype)


def batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean, running_var,
                                        momentum, eps, counts):
    """The statistics of W batches combined, from their means, invstds (W, C) and sizes
    (W,): n * var summed with the means' spread; the running statistics move toward the
    combined mean and unbiased variance."""
    return _gather("batch_norm_gather_stats_with_counts", mean, invstd, running_mean,
                   running_var, momentum, eps, counts)


def _gather(op, mean, invstd, running_mean, running_var, momentum, eps, counts):
    if mean.dim() != 2 or tuple(invstd.shape) != tuple(mean.shape):
        raise ShapeError(f"{op}(): arguments 'mean' and 'invstd' must be (world_size, C) of "
                         f"one shape, but got {fmt_shape(mean.shape)} and "
                         f"{fmt_shape(invstd.shape)}", op=op, arg="mean")
    if mean.dim() == 2 and counts.numel() != mean.shape[0]:
        raise ShapeError(f"{op}(): argument 'counts' must hold one count per row of 'mean' "
                         f"({mean.shape[0]}), but got {counts.numel()}", op=op, arg="counts")
    counts = counts.reshape(-1, 1).to(mean.dtype)
    total = counts.sum(0)
    combined = (mean * counts).sum(0) / total
    var = invstd.square().reciprocal() - eps                   # each batch's biased var
    spread = (var * counts + (mean - combined).square() * counts).sum(0)
    with no_grad():
        if running_mean is not None:
            running_mean.copy_(running_mean * (1 - momentum) + combined * momentum)
        if running_var is not None:
            unbiased = spread / (total - 1)
            running_var.copy_(running_var * (1 - momentum) + unbiased * momentum)
    return combined, (spread / total + eps).rsqrt()


def batch_norm_gather_stats(input, mean, invstd, running_mean, running_var, momentum, eps,
                            count):
    """batch_norm_gather_stats_with_counts with every batch of `count` elements."""
    counts = mean.new_full((mean.shape[0] if mean.dim() == 2 else 0,), float(count))
    return _gather("batch_norm_gather_stats", mean, invstd, running_mean, running_var,
                   momentum, eps, counts)


def batch_norm_backward_reduce(grad_out, input, mean, invstd, weight, input_g, weight_g,
                               bias_g):
    """(sum_dy, sum_dy_xmu, grad_weight, grad_bias) per channel: sum of dy, sum of
    dy * (x - mean), sum_dy_xmu * invstd, sum_dy; an output not asked for is None."""
    dims = _channel_dims(input)
    dy = grad_out.to(mean.dtype)
    sum_dy = dy.sum(dims)
    sum_dy_xmu = (dy * (input.to(mean.dtype) - _per_channel(mean, input))).sum(dims)
    grad_weight = (sum_dy_xmu * invstd).to(weight.dtype if weight is not None else
                                           mean.dtype) if weight_g else None
    grad_bias = sum_dy.to(weight.dtype if weight is not None else mean.dtype) \
        if bias_g else None
    return (sum_dy if input_g else None, sum_dy_xmu if input_g else None, grad_weight,
            grad_bias)


def batch_norm_backward_elemt(grad_out, input, mean, invstd, weight, sum_dy, sum_dy_xmu,
                              count):
    """grad_input = (dy - mean_dy - (x - mean) * invstd^2 * mean_dy_xmu) * invstd * weight,
    the means over all sum(count) elements of every process."""
    norm = count.sum().to(sum_dy.dtype).reciprocal()
    x_mu = input - _per_channel(mean, input)
    inv = _per_channel(invstd, input)
    factor = inv if weight is None else inv * _per_channel(weight, input)
    grad = (grad_out - _per_channel(sum_dy * norm, input)
            - x_mu * inv * inv * _per_channel(sum_dy_xmu * norm, input)) * factor
    return grad.to(input.dtype)


def batch_norm_update_stats(input, running_mean, running_var, momentum):
    """(mean, biased var) of each channel, and the running statistics moved toward the mean
    and the unbiased var (what native_batch_norm does in training mode)."""
    op = "batch_norm_update_stats"
    if input.numel() == 0:     # (no mean to move the running one toward: PyTorch refuses)
        raise ShapeError(f"{op}(): argument 'input' must have at least one element, but got "
                         f"shape {fmt_shape(input.shape)}", op=op, arg="input")
    dims = _channel_dims(input)
    x = input.to(_stats_dtype(input))
    mean = x.mean(dims)
    var = x.var(dims, correction=0)
    with no_grad():
        if running_mean is not None:
            running_mean.copy_(running_mean * (1 - momentum) + mean * momentum)
        if running_var is not None:
            n = x.numel() // max(x.shape[1], 1)
            unbiased = var * (n / (n - 1)) if n > 1 else var
            running_var.copy_(running_var * (1 - momentum) + unbiased * momentum)
    return mean, var
