"""Backward helpers of padding: constant_pad_nd and _pad_nd.

Written with TensorPlay ops only, so they can be differentiated again.
"""
from __future__ import annotations

from tensorplay._generated import functional as F


def constant_pad_nd_backward(grad, pad):
    """Padding's gradient crops the border off again: padding by the negated amounts."""
    return F.constant_pad_nd(grad, [-p for p in pad], 0)


def pad_nd_backward(grad, self, self_sizes, pad, mode):
    """_pad_nd's gradient reads only self's shape. `self` is passed as PyTorch's
    reflection_pad / replication_pad backward ops take it: it is saved (and
    version-checked when unpacked) for those modes only, None for circular (see
    derivatives.yaml's saved_if)."""
    return F._pad_nd_backward(grad, list(self_sizes), pad, mode)
