"""The batch norms at PyTorch's path (torch/nn/modules/batchnorm.py); TensorPlay keeps
every normalization layer in normalization.py."""
from tensorplay.nn.modules.normalization import (  # noqa: F401
    BatchNorm1d, BatchNorm2d, BatchNorm3d, SyncBatchNorm,
)

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm"]
