"""AdamW at PyTorch's path (torch/optim/adamw.py). It is Adam with decoupled weight decay,
so TensorPlay defines it beside Adam, in adam.py."""
from tensorplay.optim.adam import AdamW  # noqa: F401

__all__ = ["AdamW"]
