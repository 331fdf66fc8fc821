"""tp.nn.functional: unfold (im2col) and fold (col2im) with PyTorch's signatures."""
from __future__ import annotations

from tensorplay._generated import functional as _ops
from tensorplay.nn._functional_resample import _pair

__all__ = ["unfold", "fold"]


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding blocks as columns: (N, C, H, W) -> (N, C * kH * kW, L)."""
    op = "unfold"
    return _ops.im2col(input, _pair(op, "kernel_size", kernel_size),
                       _pair(op, "dilation", dilation), _pair(op, "padding", padding),
                       _pair(op, "stride", stride))


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Columns summed back into an image: (N, C * kH * kW, L) -> (N, C, H, W)."""
    op = "fold"
    return _ops.col2im(input, _pair(op, "output_size", output_size),
                       _pair(op, "kernel_size", kernel_size), _pair(op, "dilation", dilation),
                       _pair(op, "padding", padding), _pair(op, "stride", stride))
