"""Layers that rearrange elements without arithmetic: PixelShuffle and PixelUnshuffle
(channels <-> space, for sub-pixel upsampling), ChannelShuffle (ShuffleNet's group mix),
and Fold / Unfold (image <-> columns of sliding blocks)."""
from __future__ import annotations

from tensorplay.nn import functional as F
from tensorplay.nn.modules.module import Module

__all__ = ["PixelShuffle", "PixelUnshuffle", "ChannelShuffle"]


class PixelShuffle(Module):
    """(N, C * r * r, H, W) -> (N, C, H * r, W * r) with r = upscale_factor."""

    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(N, C, H * r, W * r) -> (N, C * r * r, H, W) with r = downscale_factor."""

    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self):
        return f"downscale_factor={self.downscale_factor}"


class ChannelShuffle(Module):
    """Splits the C channels into `groups` and interleaves them: (g, C/g) -> (C/g, g)."""

    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"


