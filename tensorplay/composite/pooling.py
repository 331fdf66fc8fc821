"""Pooling ops that PyTorch defines by composition: the torch-level 1-D poolings (the 2-D
ops over a height-1 plane), max_pool2d/3d (the max without its indices), max_unpool3d
(a scatter into a zero volume) and adaptive average pooling (a mean for an output of 1s,
the kernel op otherwise; tp.nn.functional's adaptive_avg_pool1d/2d/3d call it).

A 1-D pooling is the 2-D one with H = 1: (N, C, L) becomes (N, C, 1, L) with a (1, k)
kernel, and the flat indices of a 1 x L plane are the positions in L.
"""
from __future__ import annotations

from tensorplay import _creation
from tensorplay._generated import functional as F
from tensorplay.errors import ArgumentError, DimError, DTypeError, ShapeError, fmt_shape


def _as_2d(op, self):
    if self.dim() not in (2, 3):
        raise ShapeError(f"{op}(): expected argument 'self' to be 2-D (C, L) or 3-D (N, C, L), "
                         f"but got shape {fmt_shape(tuple(self.shape))}", op=op, arg="self")
    return self.unsqueeze(-2)


def _one(op, name, values, height):
    """A 1-D list argument as the 2-D one, [height, value]; [] (stride) stays []."""
    values = list(values)
    if not values:
        return []
    if len(values) != 1:
        raise ArgumentError(f"{op}(): argument '{name}' must have 1 element, but got "
                            f"{values}", op=op, arg=name)
    return [height, values[0]]


def max_pool1d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode):
    op = "max_pool1d_with_indices"
    values, indices = F.max_pool2d_with_indices(
        _as_2d(op, self), _one(op, "kernel_size", kernel_size, 1),
        _one(op, "stride", stride, 1), _one(op, "padding", padding, 0),
        _one(op, "dilation", dilation, 1), ceil_mode)
    return values.squeeze(-2), indices.squeeze(-2)


def max_pool1d(self, kernel_size, stride, padding, dilation, ceil_mode):
    op = "max_pool1d"
    values, _ = F.max_pool2d_with_indices(
        _as_2d(op, self), _one(op, "kernel_size", kernel_size, 1),
        _one(op, "stride", stride, 1), _one(op, "padding", padding, 0),
        _one(op, "dilation", dilation, 1), ceil_mode)
    return values.squeeze(-2)


def max_pool2d(self, kernel_size, stride, padding, dilation, ceil_mode):
    return F.max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode)[0]


def max_pool3d(self, kernel_size, stride, padding, dilation, ceil_mode):
    return F.max_pool3d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode)[0]


def avg_pool1d(self, kernel_size, stride, padding, ceil_mode, count_include_pad):
    op = "avg_pool1d"
    out = F.avg_pool2d(_as_2d(op, self), _one(op, "kernel_size", kernel_size, 1),
                       _one(op, "stride", stride, 1), _one(op, "padding", padding, 0),
                       ceil_mode, count_include_pad, None)
    return out.squeeze(-2)


def adaptive_avg_pool(self, output_size, nd):
    """PyTorch's adaptive_avg_pool2d/3d, the composites over its _adaptive_avg_pool2d/3d
    kernels (TensorPlay's adaptive_avg_pool2d/3d ops): an output of all 1s is the mean of
    the last nd dims, kept, whose backward saves nothing, so an in-place write to the
    input after the forward leaves its backward working (the kernel's backward saves the
    input). That path checks nothing more, as PyTorch's: any rank, an empty dim gives NaN.
    (PyTorch also restrides a channels-last input's (N, C, 1, 1) mean; only the strides
    of its size-1 dims differ, which TensorPlay's layout rules ignore.)"""
    if len(output_size) == nd and all(s == 1 for s in output_size):
        return self.mean(list(range(-nd, 0)), keepdim=True)
    kernel = F.adaptive_avg_pool2d if nd == 2 else F.adaptive_avg_pool3d
    return kernel(self, output_size)


def adaptive_avg_pool1d(self, output_size):
    op = "adaptive_avg_pool1d"
    return adaptive_avg_pool(_as_2d(op, self), _one(op, "output_size", output_size, 1),
                             2).squeeze(-2)


def adaptive_max_pool1d(self, output_size):
    op = "adaptive_max_pool1d"
    values, indices = F.adaptive_max_pool2d(_as_2d(op, self),
                                            _one(op, "output_size", output_size, 1))
    return values.squeeze(-2), indices.squeeze(-2)


def _check_unpool(op, self, indices, output_size, stride, padding):
    nd = 3
    sizes = tuple(self.shape)
    if len(sizes) not in (nd + 1, nd + 2) or 0 in sizes[-(nd + 1):]:
        raise ShapeError(f"{op}(): expected argument 'self' to be a non-empty 4-D "
                         f"(C, D, H, W) or 5-D (N, C, D, H, W) tensor, but got shape "
                         f"{fmt_shape(sizes)}", op=op, arg="self")
    if indices.dtype.name != "int64":
        raise DTypeError(f"{op}(): argument 'indices' must have dtype int64, but got "
                         f"{indices.dtype.name}", op=op, arg="indices")
    if tuple(indices.shape) != sizes:
        raise ShapeError(f"{op}(): argument 'indices' (shape {fmt_shape(indices.shape)}) "
                         f"must have the shape of 'self' ({fmt_shape(sizes)})", op=op,
                         arg="indices")
    for name, values, low in (("output_size", output_size, 0), ("stride", stride, 1),
                              ("padding", padding, 0)):
        if len(values) != nd or any(v < low for v in values):
            what = "positive" if low else "non-negative"
            raise ArgumentError(f"{op}(): argument '{name}' must have {nd} {what} elements, "
                                f"but got {list(values)}", op=op, arg=name)


def max_unpool3d(self, indices, output_size, stride, padding):
    """The partial inverse of max_pool3d: each value written at its flat index in the
    output volume (D * H * W positions per channel), zeros elsewhere. stride and padding
    are only checked: the indices say where each value goes."""
    op = "max_unpool3d"
    _check_unpool(op, self, indices, output_size, stride, padding)
    lead = tuple(self.shape[:-3])
    volume = output_size[0] * output_size[1] * output_size[2]
    # (the window count spelled out: -1 cannot be inferred when a leading dim is empty)
    points = self.shape[-3] * self.shape[-2] * self.shape[-1]
    flat_indices = indices.reshape(lead + (points,))
    # (a data-dependent check: a meta tensor has no values to check)
    if flat_indices.numel() and self.device.type != "meta" and (flat_indices.min().item() < 0
                                 or flat_indices.max().item() >= volume):
        raise DimError(f"{op}(): argument 'indices' holds a position outside the output "
                       f"volume {list(output_size)} ({volume} positions)", op=op,
                       arg="indices")
    zeros = _creation.zeros(lead + (volume,), dtype=self.dtype, device=self.device)
    out = F.scatter(zeros, -1, flat_indices, self.reshape(lead + (points,)))
    return out.reshape(lead + tuple(output_size))
