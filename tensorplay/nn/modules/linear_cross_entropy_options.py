"""LinearCrossEntropyOptions at PyTorch's path (torch/nn/modules/
linear_cross_entropy_options.py); it is defined with the losses in loss.py here."""
from tensorplay.nn.modules.loss import LinearCrossEntropyOptions  # noqa: F401

__all__ = ["LinearCrossEntropyOptions"]
