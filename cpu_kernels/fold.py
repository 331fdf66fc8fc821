"""im2col (F.unfold) and col2im (F.fold): sliding blocks as columns, and back.

    im2col: (N, C, H, W) -> (N, C * kH * kW, L), column l = the block at output position l
    col2im: the transpose: every column's elements added back to their positions

They are each other's adjoint, hence each other's backward.
"""
from __future__ import annotations

import numpy as np

from tensorplay.kernel_support.arguments import window_out_size
from tensorplay.kernel_support.ops import shape_rule
from cpu_kernels._common import accumulate_dtype, out
from cpu_kernels._windows import add_windows, pad_spatial, windows


def im2col(self, kernel_size, dilation, padding, stride):
    spec = shape_rule("fold.im2col")("im2col", (self, kernel_size, dilation, padding, stride))
    x = self._impl.array()
    win = windows(pad_spatial(x, padding), kernel_size, stride, dilation)  # (.., C, oh, ow, K)
    lead = x.ndim - 3
    order = tuple(range(lead + 1)) + (lead + 3, lead + 4, lead + 1, lead + 2)
    # np.array copies always: ascontiguousarray hands back the read-only window view
    # itself where it is contiguous already (an empty batch), and the result is written
    return out(np.array(win.transpose(order), order="C").reshape(spec.sizes),
               self._impl.dtype)


def col2im(self, output_size, kernel_size, dilation, padding, stride):
    spec = shape_rule("fold.col2im")(
        "col2im", (self, output_size, kernel_size, dilation, padding, stride))
    acc = accumulate_dtype(self._impl.dtype)
    cols = self._impl.array().astype(acc, copy=False)
    kernel = tuple(kernel_size)
    blocks = tuple(window_out_size(s, k, st, p, d) for s, k, st, p, d
                   in zip(output_size, kernel, stride, padding, dilation))
    lead = cols.ndim - 2
    c = spec.sizes[lead]
    cols = cols.reshape(cols.shape[:lead] + (c,) + kernel + blocks)
    order = tuple(range(lead + 1)) + (lead + 3, lead + 4, lead + 1, lead + 2)
    full = [s + 2 * p for s, p in zip(output_size, padding)]
    image = add_windows(cols.transpose(order), full, stride, dilation)
    crop = tuple(slice(p, p + s) for p, s in zip(padding, output_size))
    return out(np.ascontiguousarray(image[(Ellipsis,) + crop]), self._impl.dtype)
