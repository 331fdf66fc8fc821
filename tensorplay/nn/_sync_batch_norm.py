"""Batch norm whose statistics span every rank of a process group (nn.SyncBatchNorm).

Each rank holds a slice of the global batch. Forward: each computes its per-channel mean
and inverse standard deviation and its count, all ranks gather them, and each combines
them into the global batch's statistics (the counts may differ, so a plain all_reduce of
means would be wrong). Backward: the input gradient needs two sums over the global batch,
sum(dy) and sum(dy * (x - mean)); each rank computes its part and one all_reduce adds them.
The weight and bias gradients stay local: data parallelism (DDP) averages them.

The steps are PyTorch's ATen functions of the same names (torch.batch_norm_stats, ...,
which PyTorch serves on GPUs only); here they are written with tp ops and run on every
device. Unlike PyTorch, SyncBatchNorm runs on CPU ranks too (over gloo).
"""
from __future__ import annotations

import tensorplay as tp
from tensorplay.autograd.function import Function


def _channel_dims(input):
    return [d for d in range(input.dim()) if d != 1]


def _per_channel(t, input):
    """A (C,) tensor shaped to broadcast against the (N, C, *) input."""
    return t.reshape([1, -1] + [1] * (input.dim() - 2))


def batch_norm_stats(input, eps):
    """(mean, invstd) per channel of (N, C, *): invstd = 1 / sqrt(biased var + eps)."""
    dims = _channel_dims(input)
    mean = input.mean(dims)
    var = ((input - _per_channel(mean, input)) ** 2).mean(dims)
    return mean, (var + eps).rsqrt()


def batch_norm_elemt(input, weight, bias, mean, invstd, eps):
    """(x - mean) * invstd * weight + bias, per channel (`eps` is PyTorch's unused one)."""
    out = (input - _per_channel(mean, input)) * _per_channel(invstd, input)
    if weight is not None:
        out = out * _per_channel(weight, input)
    if bias is not None:
        out = out + _per_channel(bias, input)
    return out


def batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean, running_var,
                                        momentum, eps, counts):
    """The global (mean, invstd) from each rank's row of `mean` / `invstd` (R, C) and its
    count (R,) (Chan et al.'s combination of variances); updates the running statistics
    with the unbiased global variance, as batch norm does."""
    counts = counts.to(mean.dtype).reshape(-1, 1)
    total = counts.sum()
    global_mean = (mean * counts).sum(0) / total
    var = (invstd ** -2) - eps                                   # each rank's biased var
    global_var = ((var + (mean - global_mean) ** 2) * counts).sum(0) / total
    if running_mean is not None:
        running_mean.mul_(1 - momentum).add_(global_mean.to(running_mean.dtype) * momentum)
    if running_var is not None:
        unbiased = global_var * (total / (total - 1))
        running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype) * momentum)
    return global_mean, (global_var + eps).rsqrt()


def batch_norm_gather_stats(input, mean, invstd, running_mean, running_var, momentum, eps,
                            count):
    """batch_norm_gather_stats_with_counts with every rank's count equal to `count`."""
    counts = tp.full((mean.shape[0],), float(count), dtype=mean.dtype, device=mean.device)
    return batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean,
                                               running_var, momentum, eps, counts)


def batch_norm_update_stats(input, running_mean, running_var, momentum):
    """(mean, unbiased var) per channel, and the running statistics updated with them."""
    dims = _channel_dims(input)
    mean = input.mean(dims)
    n = input.numel() // input.shape[1]
    var = ((input - _per_channel(mean, input)) ** 2).sum(dims) / max(n - 1, 1)
    if running_mean is not None:
        running_mean.mul_(1 - momentum).add_(mean.to(running_mean.dtype) * momentum)
    if running_var is not None:
        running_var.mul_(1 - momentum).add_(var.to(running_var.dtype) * momentum)
    return mean, var


def batch_norm_backward_reduce(grad_out, input, mean, invstd, weight, input_g, weight_g,
                               bias_g):
    """(sum_dy, sum_dy_xmu, grad_weight, grad_bias) per channel; the sums are returned when
    the input's gradient is wanted, the weight's and bias's when theirs are (else None)."""
    dims = _channel_dims(input)
    sum_dy = grad_out.sum(dims)
    sum_dy_xmu = (grad_out * (input - _per_channel(mean, input))).sum(dims)
    grad_weight = sum_dy_xmu * invstd if weight_g and weight is not None else None
    grad_bias = sum_dy if bias_g else None
    if not input_g:
        sum_dy = sum_dy_xmu = None
    return sum_dy, sum_dy_xmu, grad_weight, grad_bias


def batch_norm_backward_elemt(grad_out, input, mean, invstd, weight, sum_dy, sum_dy_xmu,
                              count):
    """The input's gradient from the global sums over all `count` (per rank) elements:
    (dy - sum_dy / N - (x - mean) * invstd^2 * sum_dy_xmu / N) * invstd * weight."""
    total = count.sum().to(grad_out.dtype)
    c = lambda t: _per_channel(t, input)          # noqa: E731
    scale = c(invstd) if weight is None else c(invstd * weight)
    centered = (input - c(mean)) * c(invstd * invstd * sum_dy_xmu / total)
    return (grad_out - c(sum_dy / total) - centered) * scale


class SyncBatchNormFunction(Function):
    """The forward and backward above, with the two collectives between them."""

    @staticmethod
    def forward(ctx, input, weight, bias, running_mean, running_var, eps, momentum, group,
                world_size):
        from tensorplay import distributed as dist
        channels = input.shape[1]
        if input.numel() > 0:
            mean, invstd = batch_norm_stats(input, eps)
            count = tp.full((1,), float(input.numel() // channels), dtype=mean.dtype,
                            device=mean.device)
            combined = tp.cat([mean, invstd, count])
        else:   # an empty slice takes part in the gather with a count of 0
            combined = tp.zeros(2 * channels + 1, dtype=input.dtype, device=input.device)
        gathered = [tp.empty_like(combined) for _ in range(world_size)]
        dist.all_gather(gathered, combined, group)
        stacked = tp.stack(gathered)
        keep = stacked[:, -1] >= 1                       # drop the empty slices' rows
        stacked = stacked[keep]
        mean, invstd = batch_norm_gather_stats_with_counts(
            input, stacked[:, :channels], stacked[:, channels:2 * channels], running_mean,
            running_var, momentum, eps, stacked[:, -1])
        ctx.save_for_backward(input, weight, mean, invstd, stacked[:, -1].to(tp.int32))
        ctx.group = group
        if input.numel() == 0:
            return tp.empty_like(input)
        return batch_norm_elemt(input, weight, bias, mean, invstd, eps)

    @staticmethod
    def backward(ctx, grad_output):
        from tensorplay import distributed as dist
        input, weight, mean, invstd, counts = ctx.saved_tensors
        need_input, need_weight, need_bias = ctx.needs_input_grad[:3]
        grad_input = grad_weight = grad_bias = None
        if input.numel() > 0:
            sum_dy, sum_dy_xmu, grad_weight, grad_bias = batch_norm_backward_reduce(
                grad_output, input, mean, invstd, weight, need_input, need_weight, need_bias)
        else:
            channels = input.shape[1]
            sum_dy = sum_dy_xmu = tp.zeros(channels, dtype=input.dtype, device=input.device)
        if need_input:
            # the sums over the global batch: every rank's share, added (empty ones too)
            combined = tp.cat([sum_dy, sum_dy_xmu])
            dist.all_reduce(combined, dist.ReduceOp.SUM, ctx.group)
            sum_dy, sum_dy_xmu = combined.split(input.shape[1])
            if input.numel() > 0:
                grad_input = batch_norm_backward_elemt(grad_output, input, mean, invstd, weight,
                                                       sum_dy, sum_dy_xmu, counts)
            else:
                grad_input = tp.zeros_like(input)
        return grad_input, grad_weight, grad_bias, None, None, None, None, None, None


TORCH_LEVEL = ("batch_norm_stats", "batch_norm_elemt", "batch_norm_gather_stats",
               "batch_norm_gather_stats_with_counts", "batch_norm_update_stats",
               "batch_norm_backward_reduce", "batch_norm_backward_elemt")
