"""Normalization layers: batch, instance, layer, group, RMS and local response norm.

Batch and instance norm share `_NormBase`: an optional affine (weight, bias) per channel
and, when tracking, the buffers running_mean, running_var and num_batches_tracked (int64).
In training, batch norm normalizes with the batch's statistics and folds them into the
running ones with weight `momentum` (momentum=None: 1 / num_batches_tracked, a cumulative
average); in eval it normalizes with the running ones.
"""
from __future__ import annotations

import numbers
import warnings

import tensorplay as tp
from tensorplay.errors import ArgumentError, ShapeError, fmt_shape
from tensorplay.nn import functional as F
from tensorplay.nn.modules.module import Module
from tensorplay.nn.parameter import Parameter

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "InstanceNorm1d",
           "InstanceNorm2d", "InstanceNorm3d", "LayerNorm", "GroupNorm", "RMSNorm",
           "LocalResponseNorm", "CrossMapLRN2d"]


def _register_affine(module, shape, affine, bias, device, dtype):
    """The per-feature affine of a norm layer: `weight` (init 1) and `bias` (init 0) of
    `shape`, registered as None when the layer has no affine or no bias."""
    def param():
        return Parameter(tp.empty(*shape, device=device, dtype=dtype))
    module.register_parameter("weight", param() if affine else None)
    module.register_parameter("bias", param() if affine and bias else None)


def _reset_affine(module):
    with tp.no_grad():
        if module.weight is not None:
            module.weight.fill_(1)
        if module.bias is not None:
            module.bias.zero_()


class _NormBase(Module):
    """Parameters, buffers and repr shared by batch and instance norm."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _register_affine(self, (num_features,), affine, bias, device, dtype)
        if track_running_stats:
            self.register_buffer("running_mean", tp.zeros(num_features, device=device,
                                                          dtype=dtype))
            self.register_buffer("running_var", tp.ones(num_features, device=device,
                                                        dtype=dtype))
            # The counter is int64 whatever `dtype` is (and `to(dtype)` leaves it so).
            self.register_buffer("num_batches_tracked", tp.tensor(0, dtype=tp.int64,
                                                                  device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self):
        if self.track_running_stats:
            with tp.no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        _reset_affine(self)

    def _load_from_state_dict(self, state_dict, prefix, strict, missing_keys,
                              unexpected_keys, error_msgs, assign=False):
        # Checkpoints from before the counter existed lack it: keep ours, as PyTorch does.
        key = prefix + "num_batches_tracked"
        if self.track_running_stats and key not in state_dict:
            state_dict = dict(state_dict)
            state_dict[key] = self.num_batches_tracked
        super()._load_from_state_dict(state_dict, prefix, strict, missing_keys,
                                      unexpected_keys, error_msgs, assign)

    def _check_dims(self, input, dims, shapes):
        if input.dim() not in dims:
            raise ShapeError(f"{type(self).__name__}: expected {shapes} input, but got "
                             f"{input.dim()}-D input of shape "
                             f"{fmt_shape(tuple(input.shape))}", op=type(self).__name__,
                             arg="input")

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    _dims = ()
    _shapes = ""

    def forward(self, input):
        self._check_dims(input, self._dims, self._shapes)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            with tp.no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:   # cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked.item())
        # Eval normalizes with the batch's statistics only when there are no running ones.
        use_batch_stats = self.training or (self.running_mean is None
                                            and self.running_var is None)
        track = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if track else None,
                            self.running_var if track else None, self.weight, self.bias,
                            use_batch_stats, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch norm over (N, C) or (N, C, L): statistics per channel C."""
    _dims = (2, 3)
    _shapes = "2-D (N, C) or 3-D (N, C, L)"


class BatchNorm2d(_BatchNorm):
    """Batch norm over (N, C, H, W)."""
    _dims = (4,)
    _shapes = "4-D (N, C, H, W)"


class BatchNorm3d(_BatchNorm):
    """Batch norm over (N, C, D, H, W)."""
    _dims = (5,)
    _shapes = "5-D (N, C, D, H, W)"


class SyncBatchNorm(_BatchNorm):
    """Batch norm over (N, C, *) whose statistics, in training, span the whole batch that
    the ranks of `process_group` (default: the world) hold between them
    (tensorplay/nn/_sync_batch_norm.py). Without a process group, or with one rank, or in
    eval, it is BatchNorm. PyTorch's runs on GPUs only; this one on CPU ranks too."""
    _dims = tuple(range(2, 9))
    _shapes = "at least 2-D (N, C, *)"

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, process_group=None, device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype)
        self.process_group = process_group

    def forward(self, input):
        if input.dim() < 2:
            raise ShapeError(f"SyncBatchNorm: expected at least 2D input (got {input.dim()}D "
                             f"input)", op="SyncBatchNorm", arg="input")
        if input.shape[1] == 0:
            raise ShapeError("SyncBatchNorm: the number of input channels should be "
                             "non-zero", op="SyncBatchNorm", arg="input")
        from tensorplay import distributed as dist
        need_sync = self.training and dist.is_available() and dist.is_initialized()
        group = self.process_group
        world = dist.get_world_size(group) if need_sync else 1
        if world < 2:
            return _BatchNorm.forward(self, input)
        from tensorplay.nn._sync_batch_norm import SyncBatchNormFunction
        factor = 0.0 if self.momentum is None else self.momentum
        if self.track_running_stats:
            with tp.no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked.item())
        running = self.track_running_stats
        return SyncBatchNormFunction.apply(
            input, self.weight, self.bias, self.running_mean if running else None,
            self.running_var if running else None, self.eps, factor, group, world)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """`module` with every BatchNorm*d layer in it replaced by a SyncBatchNorm holding
        the same parameters and buffers (PyTorch's helper)."""
        out = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            out = cls(module.num_features, module.eps, module.momentum, module.affine,
                      module.track_running_stats, process_group)
            if module.affine:
                with tp.no_grad():
                    out.weight = module.weight
                    out.bias = module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out


class _InstanceNorm(_NormBase):
    """Per-sample, per-channel statistics; by default no affine and no running stats."""
    _dims = ()
    _shapes = ""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False,
                 track_running_stats=False, device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)

    def forward(self, input):
        self._check_dims(input, self._dims, self._shapes)
        batched = input.dim() == self._dims[1]
        feature_dim = 1 if batched else 0
        if input.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ShapeError(f"{type(self).__name__}: expected input's size at "
                                 f"dim={feature_dim} to match num_features "
                                 f"({self.num_features}), but got: "
                                 f"{input.shape[feature_dim]}.", op=type(self).__name__,
                                 arg="input")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. "
                          "You can silence this warning by not passing in num_features, "
                          "which is not used because affine=False", stacklevel=2)
        x = input if batched else input.unsqueeze(0)
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats,
                              self.momentum if self.momentum is not None else 0.0, self.eps)
        return out if batched else out.squeeze(0)


class InstanceNorm1d(_InstanceNorm):
    """Instance norm over (N, C, L) or unbatched (C, L)."""
    _dims = (2, 3)
    _shapes = "2-D (C, L) or 3-D (N, C, L)"


class InstanceNorm2d(_InstanceNorm):
    """Instance norm over (N, C, H, W) or unbatched (C, H, W)."""
    _dims = (3, 4)
    _shapes = "3-D (C, H, W) or 4-D (N, C, H, W)"


class InstanceNorm3d(_InstanceNorm):
    """Instance norm over (N, C, D, H, W) or unbatched (C, D, H, W)."""
    _dims = (4, 5)
    _shapes = "4-D (C, D, H, W) or 5-D (N, C, D, H, W)"


def _as_shape(normalized_shape):
    if isinstance(normalized_shape, numbers.Integral):
        return (int(normalized_shape),)
    return tuple(normalized_shape)


class LayerNorm(Module):
    """Normalize over the last len(normalized_shape) dims, then weight * x + bias
    (elementwise, of shape normalized_shape; init 1 and 0)."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
                 device=None, dtype=None):
        super().__init__()
        self.normalized_shape = _as_shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _register_affine(self, self.normalized_shape, elementwise_affine, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        _reset_affine(self)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class GroupNorm(Module):
    """Split the C channels into num_groups groups and normalize each (per sample) over
    its channels and spatial positions; then a per-channel affine (init 1 and 0)."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None,
                 dtype=None, *, bias=True):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ArgumentError(f"GroupNorm(): argument 'num_channels' ({num_channels}) must "
                                f"be divisible by argument 'num_groups' ({num_groups})",
                                op="GroupNorm", arg="num_channels")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _register_affine(self, (num_channels,), affine, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        _reset_affine(self)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, "
                f"affine={self.affine}, bias={self.bias is not None}")


class RMSNorm(Module):
    """x / sqrt(mean(x^2) + eps) over the last dims, times weight (init 1); eps=None
    means the dtype's machine epsilon."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None,
                 dtype=None):
        super().__init__()
        self.normalized_shape = _as_shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(tp.empty(*self.normalized_shape, device=device,
                                             dtype=dtype))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self):
        if self.weight is not None:
            with tp.no_grad():
                self.weight.fill_(1)

    def forward(self, input):
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class LocalResponseNorm(Module):
    """x / (k + alpha * mean of x^2 over `size` neighbouring channels)^beta."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class CrossMapLRN2d(Module):
    """PyTorch's legacy cross-channel LRN of a 4-D input (N, C, H, W):

        out = x / (k + alpha / size * sum of x^2 over the channels of c's window)^beta

    The window is Lua Torch's running sum, as PyTorch keeps it: channels [c - p + 1, c + p)
    with p = (size - 1) // 2 + 1, and, once c >= p, channel 0 as well (the running sum
    never subtracts it)."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input):
        if input.dim() != 4:
            raise ShapeError(f"CrossMapLRN2d.forward(): expected argument 'input' to be 4-D, "
                             f"got {input.dim()}-D instead", op="CrossMapLRN2d.forward",
                             arg="input")
        channels = input.shape[1]
        reach = int((self.size - 1) / 2 + 1)
        squares = input * input
        # window sums as differences of a running sum over the channels (0 in front)
        running = tp.cat([tp.zeros_like(squares.narrow(1, 0, 1)), squares.cumsum(1)], 1)
        hi = tp.tensor([min(channels, c + reach) for c in range(channels)],
                       device=input.device)
        lo = tp.tensor([max(0, c - reach + 1) for c in range(channels)],
                       device=input.device)
        stuck = tp.tensor([float(c >= reach) for c in range(channels)], dtype=input.dtype,
                          device=input.device).reshape(1, channels, 1, 1)
        window = running.index_select(1, hi) - running.index_select(1, lo) + \
            stuck * squares.narrow(1, 0, 1)
        scale = window * (self.alpha / self.size) + self.k
        return input * scale.pow(-self.beta)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
