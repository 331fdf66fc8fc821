"""The instance norms at PyTorch's path (torch/nn/modules/instancenorm.py); TensorPlay
keeps every normalization layer in normalization.py."""
from tensorplay.nn.modules.normalization import (  # noqa: F401
    InstanceNorm1d, InstanceNorm2d, InstanceNorm3d,
)

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]
