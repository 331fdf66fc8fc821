"""im2col (F.unfold) and col2im (F.fold) on the `cuda` device: the two gather kernels of
triton_kernels/conv.py, with the ops' own layout (N, C * kH * kW, L) and one group.

    im2col: (N, C, H, W) -> (N, C * kH * kW, L), column l = the block at output position l
    col2im: each pixel sums the column entries that cover it (a gather: deterministic)
"""
from __future__ import annotations

from tensorplay.kernel_support.arguments import window_out_size
from tensorplay.kernel_support.ops import shape_rule
from triton_kernels._launch import new_tensor, operands
from triton_kernels.conv import col2im_into, im2col_into


def _batched(t, image_dims):
    """t with a leading batch dim of 1 when it has none (a view)."""
    return t.unsqueeze(0) if len(t._impl.sizes) == image_dims else t


def im2col(self, kernel_size, dilation, padding, stride):
    spec = shape_rule("fold.im2col")("im2col", (self, kernel_size, dilation, padding, stride))
    device, (x,) = operands("im2col", self=self)
    image = _batched(x, 3)
    n, c = image._impl.sizes[:2]
    blocks = tuple(window_out_size(s, k, st, p, d) for s, k, st, p, d
                   in zip(image._impl.sizes[2:], kernel_size, stride, padding, dilation))
    out = new_tensor(spec.sizes, spec.dtype, device)
    k, ck = kernel_size[0] * kernel_size[1], spec.sizes[-2]
    length = spec.sizes[-1]
    # The (N, C * K, L) layout in the kernel's terms: group, batch, window, channel, offset.
    strides = (0, ck * length, 1, k * length, length)
    im2col_into(image, out, strides, tuple(kernel_size), stride, padding, dilation, blocks, 1)
    return out


def col2im(self, output_size, kernel_size, dilation, padding, stride):
    spec = shape_rule("fold.col2im")(
        "col2im", (self, output_size, kernel_size, dilation, padding, stride))
    device, (x,) = operands("col2im", self=self)
    cols = _batched(x, 2)
    blocks = tuple(window_out_size(s, k, st, p, d) for s, k, st, p, d
                   in zip(output_size, kernel_size, stride, padding, dilation))
    k = kernel_size[0] * kernel_size[1]
    s_n, s_ck, s_l = cols._impl.strides
    strides = (0, s_n, s_l, k * s_ck, s_ck)
    out = new_tensor((cols._impl.sizes[0],) + spec.sizes[-3:], spec.dtype, device)
    col2im_into(cols, strides, out, None, tuple(kernel_size), stride, padding, dilation,
                blocks, 1)
    return out.view(list(spec.sizes))
