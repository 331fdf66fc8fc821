"""Flatten and Unflatten: reshape layers, the bridge between conv features and a Linear."""
from __future__ import annotations

from tensorplay.nn.modules.module import Module

__all__ = ["Flatten", "Unflatten"]


class Flatten(Module):
    """Merges dims start_dim..end_dim into one; the default keeps the batch dim:
    (N, C, H, W) -> (N, C * H * W)."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Splits dim `dim` into `unflattened_size`: Unflatten(1, (C, H, W)) undoes a Flatten.
    One size may be -1 (inferred). Named dims (a str `dim`) are not supported."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        if isinstance(dim, bool) or not isinstance(dim, int):
            raise TypeError(f"Unflatten(): argument 'dim' must be an int, but got "
                            f"{type(dim).__name__} (named dims are not supported)")
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError(f"Unflatten(): argument 'unflattened_size' must be a tuple of ints, "
                            f"but got {type(unflattened_size).__name__}")
        for i, size in enumerate(unflattened_size):
            if isinstance(size, bool) or not isinstance(size, int):
                raise TypeError(f"Unflatten(): argument 'unflattened_size' must be a tuple of "
                                f"ints, but found element of type {type(size).__name__} at "
                                f"pos {i}")
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input):
        return input.unflatten(self.dim, list(self.unflattened_size))

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
