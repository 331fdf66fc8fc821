"""What the spatial kernels (pooling.py, resample.py, padding.py) share: reading a tensor as
(N, C, H, W) through its own strides, and the float accumulator their scatter-style
backwards add into.

A backward whose inverse index map is irregular (max pooling through saved indices,
bilinear weights, padding's reflected borders) adds each gradient element into the
input position it came from with tl.atomic_add. Several gradients may land on one
position, so the sum is kept in float32 for half types (float64 stays float64) and
rounded once at the end.
"""
from __future__ import annotations

import triton
import triton.language as tl  # noqa: F401 - the interpreter looks it up in jit functions' globals

from tensorplay import _dtype as dt
from triton_kernels._launch import new_tensor
from triton_kernels.copy import fill_
from triton_kernels.pointwise import run


def nchw(t):
    """(sizes, strides) of a 3-D (C, H, W) or 4-D (N, C, H, W) tensor as four dims each
    (a 3-D tensor has N = 1), so one kernel indexes both without a copy."""
    sizes, strides = tuple(t._impl.sizes), tuple(t._impl.strides)
    if len(sizes) == 3:
        return (1,) + sizes, (0,) + strides
    return sizes, strides


def accumulator(sizes, dtype, device):
    """A zeroed buffer of `sizes` to atomic_add gradients of `dtype` into."""
    acc_dtype = dt.float32 if dtype in (dt.float16, dt.bfloat16) else dtype
    return fill_(new_tensor(sizes, acc_dtype, device), 0)


def finish(acc, dtype):
    """The accumulated sums as `dtype` (one rounding for half types)."""
    if acc._impl.dtype is dtype:
        return acc
    out = new_tensor(acc._impl.sizes, dtype, acc._impl.device)
    return run("copy", out, (acc,), acc._impl.dtype)


@triton.jit
def split(offs, C, H, W):
    """(n, c, h, w) of flat positions in a contiguous (N, C, H, W) tensor."""
    w = offs % W
    t = offs // W
    h = t % H
    t = t // H
    return t // C, t % C, h, w
