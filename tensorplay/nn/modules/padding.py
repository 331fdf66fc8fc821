"""Padding layers: ConstantPad, ZeroPad, ReflectionPad, ReplicationPad and CircularPad in
1-D, 2-D and 3-D, each a call of tp.nn.functional.pad with its mode.

`padding` is one int for every side or a tuple (left, right[, top, bottom[, front,
back]]), stored as the full tuple, as PyTorch stores it (its repr shows the tuple).
"""
from __future__ import annotations

from tensorplay.nn import functional as F
from tensorplay.nn.modules.module import Module

__all__ = ["ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ZeroPad1d", "ZeroPad2d",
           "ZeroPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
           "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d",
           "CircularPad2d", "CircularPad3d"]


def _sides(padding, n):
    """An int for each of the n sides, or the tuple as given (F.pad checks its length)."""
    if isinstance(padding, (list, tuple)):
        return tuple(padding)
    return (padding,) * n


class _PadNd(Module):
    """Pads the last len(padding) // 2 dims of the input with `mode`."""

    mode = "constant"
    dims = 1          # the padded dims; the input has dims + 1 or dims + 2 dims

    def __init__(self, padding):
        super().__init__()
        self.padding = _sides(padding, 2 * self.dims)

    def forward(self, input):
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self):
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pads the last dim of (C, W) or (N, C, W) with `value`."""


class ConstantPad2d(_ConstantPadNd):
    """Pads the last two dims of (C, H, W) or (N, C, H, W) with `value`."""
    dims = 2


class ConstantPad3d(_ConstantPadNd):
    """Pads the last three dims of (C, D, H, W) or (N, C, D, H, W) with `value`."""
    dims = 3


class ZeroPad1d(ConstantPad1d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ReflectionPad1d(_PadNd):
    """Mirrors the input at its edges, without repeating the edge value."""
    mode = "reflect"


class ReflectionPad2d(ReflectionPad1d):
    dims = 2


class ReflectionPad3d(ReflectionPad1d):
    dims = 3


class ReplicationPad1d(_PadNd):
    """Repeats the edge value."""
    mode = "replicate"


class ReplicationPad2d(ReplicationPad1d):
    dims = 2


class ReplicationPad3d(ReplicationPad1d):
    dims = 3


class _CircularPadNd(_PadNd):
    """Wraps around: the left pad comes from the right end, as if the input repeated."""
    mode = "circular"

    def forward(self, input):
        if input.dim() not in (self.dims + 1, self.dims + 2):
            raise ValueError(f"expected {self.dims + 1}D or {self.dims + 2}D input (got "
                             f"{input.dim()}D input)")
        return F.pad(input, self.padding, self.mode)


class CircularPad1d(_CircularPadNd):
    pass


class CircularPad2d(_CircularPadNd):
    dims = 2


class CircularPad3d(_CircularPadNd):
    dims = 3
