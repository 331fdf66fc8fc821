"""Batch norm whose statistics span every rank of a process group (nn.SyncBatchNorm).

Each rank holds a slice of the global batch. Forward: each computes its per-channel mean
and inverse standard deviation and its count, all ranks gather them, and each combines
them into the global batch's statistics (the counts may differ, so a plain all_reduce of
means would be wrong). Backward: the input gradient needs two sums over the global batch,
sum(dy) and sum(dy * (x - mean)); each rank computes its part and one all_reduce adds them.
The weight and bias gradients stay local: data parallelism (DDP) averages them.

The steps are the ops PyTorch's SyncBatchNorm calls (tp.batch_norm_stats,
batch_norm_gather_stats_with_counts, batch_norm_elemt, batch_norm_backward_reduce,
batch_norm_backward_elemt: Composites of the normalization family, on every device;
PyTorch serves them on GPUs only). Unlike PyTorch's, SyncBatchNorm runs on CPU ranks too
(over gloo).
"""
from __future__ import annotations

import tensorplay as tp
from tensorplay.autograd.function import Function


class SyncBatchNormFunction(Function):
    """The forward and backward above, with the two collectives between them."""

    @staticmethod
    def forward(ctx, input, weight, bias, running_mean, running_var, eps, momentum, group,
                world_size):
        from tensorplay import distributed as dist
        channels = input.shape[1]
        if input.numel() > 0:
            mean, invstd = tp.batch_norm_stats(input, eps)
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
        mean, invstd = tp.batch_norm_gather_stats_with_counts(
            input, stacked[:, :channels], stacked[:, channels:2 * channels], running_mean,
            running_var, momentum, eps, stacked[:, -1])
        ctx.save_for_backward(input, weight, mean, invstd, stacked[:, -1].to(tp.int32))
        ctx.group = group
        if input.numel() == 0:
            return tp.empty_like(input)
        return tp.batch_norm_elemt(input, weight, bias, mean, invstd, eps)

    @staticmethod
    def backward(ctx, grad_output):
        from tensorplay import distributed as dist
        input, weight, mean, invstd, counts = ctx.saved_tensors
        need_input, need_weight, need_bias = ctx.needs_input_grad[:3]
        grad_input = grad_weight = grad_bias = None
        if input.numel() > 0:
            sum_dy, sum_dy_xmu, grad_weight, grad_bias = tp.batch_norm_backward_reduce(
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
                grad_input = tp.batch_norm_backward_elemt(grad_output, input, mean, invstd,
                                                          weight, sum_dy, sum_dy_xmu, counts)
            else:
                grad_input = tp.zeros_like(input)
        return grad_input, grad_weight, grad_bias, None, None, None, None, None, None
