"""AdaptiveLogSoftmaxWithLoss at PyTorch's path (torch/nn/modules/adaptive.py); it is
defined with the other losses in loss.py here."""
from tensorplay.nn.modules.loss import AdaptiveLogSoftmaxWithLoss  # noqa: F401

__all__ = ["AdaptiveLogSoftmaxWithLoss"]
