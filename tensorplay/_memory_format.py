"""Memory formats: the layout asked of a copy (`x.clone(memory_format=...)`).

    preserve_format     the input's own layout when it is dense, as `clone()` does
    contiguous_format   row-major, as `contiguous()` and `reshape()`'s copy
    channels_last       NCHW stored as NHWC (4-d tensors)

The strides each one means are computed in `tensorplay/meta/layout.py`.
"""
from __future__ import annotations

__all__ = ["memory_format", "preserve_format", "contiguous_format", "channels_last"]


class memory_format:  # noqa: N801 - PyTorch's name
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"tensorplay.{self.name}"

    def __reduce__(self):
        return self.name            # pickled as the module-level constant


preserve_format = memory_format("preserve_format")
contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
