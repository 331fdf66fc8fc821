"""tp.nn.functional: linear (the op itself) and bilinear (composed)."""
from __future__ import annotations

from tensorplay._generated import functional as _ops

__all__ = ["linear", "bilinear"]


linear = _ops.linear


def bilinear(input1, input2, weight, bias=None):
    """y[..., k] = input1 @ weight[k] @ input2 (+ bias[k]); weight (out, in1, in2)."""
    out = _ops.einsum("...i,kij,...j->...k", [input1, weight, input2])
    return out if bias is None else out + bias


