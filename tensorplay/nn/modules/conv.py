"""Convolution layers: Conv1d/2d/3d and ConvTranspose1d/2d/3d.

All share `_ConvNd`, which holds the hyper-parameters as tuples (one entry per spatial
dim), validates them with PyTorch's messages, creates the weight

    Conv:           (out_channels, in_channels / groups, *kernel_size)
    ConvTranspose:  (in_channels, out_channels / groups, *kernel_size)

and initialises it as PyTorch does. The forward passes call tp.nn.functional, which calls
the single `convolution` op.
"""
from __future__ import annotations

import math

import tensorplay as tp
from tensorplay.nn import functional as F
from tensorplay.nn import init
from tensorplay.nn.modules.module import Module
from tensorplay.nn.parameter import Parameter

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
           "ConvTranspose3d"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _ntuple(value, n):
    """PyTorch's _single/_pair/_triple: a sequence as a tuple, anything else repeated."""
    if isinstance(value, (list, tuple)):
        return tuple(value)
    return (value,) * n


class _ConvNd(Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation,
                 transposed, output_padding, groups, bias, padding_mode, device=None,
                 dtype=None):
        super().__init__()
        name = type(self).__name__
        if groups <= 0:
            raise ValueError(f"{name}(): groups must be a positive integer, but got {groups}")
        if in_channels % groups != 0:
            raise ValueError(f"{name}(): in_channels must be divisible by groups, but got "
                             f"in_channels={in_channels}, groups={groups}")
        if out_channels % groups != 0:
            raise ValueError(f"{name}(): out_channels must be divisible by groups, but got "
                             f"out_channels={out_channels}, groups={groups}")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"{name}(): invalid padding string {padding!r}, should be one "
                                 f"of 'same', 'valid'")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError(f"{name}(): padding='same' is not supported for strided "
                                 f"convolutions (stride={stride})")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"{name}(): padding_mode must be one of {_PADDING_MODES}, but got "
                             f"padding_mode={padding_mode!r}")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = output_padding
        self.groups = groups
        self.padding_mode = padding_mode
        # F.pad's argument for the non-zero padding modes: last dim first, (left, right)
        # per dim. For 'same' the odd element of a total padding goes right. (A list for a
        # padding string, a tuple otherwise: PyTorch's types, which its tests may compare.)
        n = len(kernel_size)
        if isinstance(padding, str):
            pads = [0, 0] * n
            if padding == "same":
                for i, (d, k) in enumerate(zip(dilation, kernel_size)):
                    total = d * (k - 1)
                    j = n - 1 - i
                    pads[2 * j] = total // 2
                    pads[2 * j + 1] = total - total // 2
        else:
            pads = tuple(p for p in reversed(padding) for _ in range(2))
        self._reversed_padding_repeated_twice = pads
        if transposed:
            shape = (in_channels, out_channels // groups, *kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *kernel_size)
        self.weight = Parameter(tp.empty(shape, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(tp.empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        # weight ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)) (see kaiming_uniform_'s note); the
        # bias the same bound, fan_in = in_channels / groups * prod(kernel_size).
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * len(self.padding):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "padding_mode"):
            self.padding_mode = "zeros"


class _Conv(_ConvNd):
    """The forward of Conv1d/2d/3d: `_functional` is F.conv1d, F.conv2d or F.conv3d."""

    _n = 0
    _functional = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", device=None,
                 dtype=None):
        n = self._n
        stride = _ntuple(stride, n)
        padding = padding if isinstance(padding, str) else _ntuple(padding, n)
        super().__init__(in_channels, out_channels, _ntuple(kernel_size, n), stride, padding,
                         _ntuple(dilation, n), False, (0,) * n, groups, bias, padding_mode,
                         device=device, dtype=dtype)

    def _conv_forward(self, input, weight, bias):
        conv = self._functional   # a staticmethod: F.conv1d, F.conv2d or F.conv3d
        if self.padding_mode != "zeros":
            # Pad explicitly in the chosen mode, then convolve without padding.
            input = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return conv(input, weight, bias, self.stride, (0,) * self._n, self.dilation,
                        self.groups)
        return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """1-D convolution over (N, C_in, L) or (C_in, L)."""
    _n = 1
    _functional = staticmethod(F.conv1d)


class Conv2d(_Conv):
    """2-D convolution over (N, C_in, H, W) or (C_in, H, W).

    >>> conv = tp.nn.Conv2d(3, 8, 3, padding=1)
    >>> conv(tp.randn(2, 3, 16, 16)).shape
    tensorplay.Size([2, 8, 16, 16])
    """
    _n = 2
    _functional = staticmethod(F.conv2d)


class Conv3d(_Conv):
    """3-D convolution over (N, C_in, D, H, W) or (C_in, D, H, W)."""
    _n = 3
    _functional = staticmethod(F.conv3d)


class _ConvTranspose(_ConvNd):
    """The forward of ConvTranspose1d/2d/3d (only 'zeros' padding, as PyTorch)."""

    _n = 0
    _functional = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'{type(self).__name__}(): only "zeros" padding mode is supported, '
                             f'but got padding_mode={padding_mode!r}')
        n = self._n
        super().__init__(in_channels, out_channels, _ntuple(kernel_size, n),
                         _ntuple(stride, n), _ntuple(padding, n), _ntuple(dilation, n), True,
                         _ntuple(output_padding, n), groups, bias, padding_mode,
                         device=device, dtype=dtype)

    def _output_padding(self, input, output_size):
        """output_padding, or the one that makes the output `output_size` (a stride > 1
        leaves up to stride - 1 sizes possible; output_size picks one)."""
        n = self._n
        if output_size is None:
            return self.output_padding
        non_spatial = 2 if input.dim() == n + 2 else 1
        output_size = tuple(output_size)
        if len(output_size) == non_spatial + n:
            output_size = output_size[non_spatial:]
        if len(output_size) != n:
            raise ValueError(f"{type(self).__name__}.forward(): for {input.dim()}-D input, "
                             f"argument 'output_size' must have {n} or {non_spatial + n} "
                             f"elements, but got {len(output_size)}")
        min_sizes = [(input.shape[d + non_spatial] - 1) * self.stride[d] - 2 * self.padding[d]
                     + self.dilation[d] * (self.kernel_size[d] - 1) + 1 for d in range(n)]
        max_sizes = [m + s - 1 for m, s in zip(min_sizes, self.stride)]
        for size, low, high in zip(output_size, min_sizes, max_sizes):
            if size < low or size > high:
                raise ValueError(f"{type(self).__name__}.forward(): requested an output size "
                                 f"of {list(output_size)}, but valid sizes range from "
                                 f"{min_sizes} to {max_sizes} (for an input of "
                                 f"{list(input.shape[non_spatial:])})")
        return tuple(size - low for size, low in zip(output_size, min_sizes))

    def forward(self, input, output_size=None):
        output_padding = self._output_padding(input, output_size)
        return self._functional(input, self.weight, self.bias, self.stride, self.padding,
                                output_padding, self.groups, self.dilation)


class ConvTranspose1d(_ConvTranspose):
    """The adjoint of Conv1d (a "deconvolution"): (N, C_in, L) -> (N, C_out, L_out)."""
    _n = 1
    _functional = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTranspose):
    """The adjoint of Conv2d: upsamples by `stride`, e.g. in a decoder."""
    _n = 2
    _functional = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTranspose):
    _n = 3
    _functional = staticmethod(F.conv_transpose3d)
