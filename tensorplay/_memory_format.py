"""Memory formats: the layout asked of a copy (`x.clone(memory_format=...)`).

    preserve_format     the input's own layout when it is dense, as `clone()` does
    contiguous_format   row-major, as `contiguous()` and `reshape()`'s copy
    channels_last       NCHW stored as NHWC (4-d tensors)

The strides each one means are computed in `tensorplay/kernel_support/layout.py`.
"""
from __future__ import annotations

from tensorplay._layout import NamedConstant

__all__ = ["memory_format", "preserve_format", "contiguous_format", "channels_last",
           "is_channels_last"]


class memory_format(NamedConstant):  # noqa: N801 - PyTorch's name
    __slots__ = ()


preserve_format = memory_format("preserve_format")
contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")


# NCHW stored as NHWC: C moves fastest, then W, then H, then N.
CHANNELS_LAST_ORDER = (1, 3, 2, 0)


def is_channels_last(sizes, strides):
    """A 4-D layout dense in channels-last order (size-1 dims may have any stride).
    Read by the layout rules (kernel_support/layout.py) and by kernel selection
    (dispatch/kernel_selection.py, where the layout of a call is part of the choice)."""
    if len(sizes) != 4:
        return False
    expected = 1
    for d in CHANNELS_LAST_ORDER:
        if sizes[d] != 1:
            if strides[d] != expected:
                return False
            expected *= sizes[d]
    return True
