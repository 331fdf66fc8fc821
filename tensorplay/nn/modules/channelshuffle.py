"""ChannelShuffle at PyTorch's path (torch/nn/modules/channelshuffle.py); it is defined
beside PixelShuffle, its relative, in pixelshuffle.py here."""
from tensorplay.nn.modules.pixelshuffle import ChannelShuffle  # noqa: F401

__all__ = ["ChannelShuffle"]
