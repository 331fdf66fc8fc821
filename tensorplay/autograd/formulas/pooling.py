"""Backward helpers of pooling: max pooling's double backward (a gather at the
saved indices).

Written with TensorPlay ops only, so they can be differentiated again.
"""
from __future__ import annotations

from tensorplay import _creation
from tensorplay._generated import functional as F


def last_two(sizes):
    return list(sizes)[-2:]


def last_three(sizes):
    return list(sizes)[-3:]


def max_pool_double_backward(grad, indices, dims=2):
    """The derivative of a max pooling's backward in grad_output: read `grad` (input-shaped)
    at each saved index, a flat position in the last `dims` dims. Built as a one-hot
    comparison so it stays differentiable with the ops at hand; it costs (pooled positions
    x plane) per channel, which suits adaptive and fractional max pooling (small outputs);
    max_pool2d has windows and uses the cheaper helper below."""
    plane = grad.flatten(-dims)                                    # (..., H * W)
    positions = _creation.arange(plane.shape[-1], device=grad.device)
    onehot = indices.flatten(-dims).unsqueeze(-1) == positions     # (..., P, H * W)
    picked = F.where(onehot, plane.unsqueeze(-2), 0.0).sum(-1)     # (..., P)
    return picked.view(tuple(indices.shape))


def max_pool2d_double_backward(grad, indices, kernel_size, stride, padding, dilation):
    """max_pool_double_backward for a windowed max pooling, at the cost of the windows
    instead of whole planes: cut `grad` into the pooling's windows (im2col), and in each
    window keep the element whose flat position is the saved index.

        patches[n, c, k, l] = grad at the k-th position of window l  (0 in the padding)
        where[n, c, k, l]   = that position + 1                      (0 in the padding)
        result[n, c, l]     = sum over k of patches where where == indices + 1
    """
    stride = stride or kernel_size
    h, w = grad.shape[-2:]
    out_h, out_w = indices.shape[-2:]
    # ceil_mode's last windows may reach past the padding: pad the right as far as they go.
    extra = [max(0, (o - 1) * s + d * (k - 1) + 1 - n - 2 * p) for o, s, d, k, n, p in
             zip((out_h, out_w), stride, dilation, kernel_size, (h, w), padding)]
    positions = _creation.arange(1, h * w + 1, dtype=grad.dtype, device=grad.device)
    if h * w >= 2 ** 11 and grad.dtype.itemsize < 4:
        positions = positions.double()   # half types count exactly only up to 2048
    planes = [grad if grad.dim() == 4 else grad.unsqueeze(0), positions.view((1, 1, h, w))]
    cols = []
    for plane in planes:
        if any(extra):
            plane = F.constant_pad_nd(plane, [0, extra[1], 0, extra[0]], 0)
        cols.append(F.im2col(plane, kernel_size, dilation, padding, stride))
    patches, where = cols
    n, k = patches.shape[0], kernel_size[0] * kernel_size[1]
    channels = patches.shape[1] // k
    patches = patches.view((n, channels, k, out_h * out_w))
    target = indices.reshape((n, channels, 1, out_h * out_w)) + 1
    picked = F.where(where.view((1, 1, k, out_h * out_w)) == target, patches, 0.0).sum(2)
    return picked.view(tuple(indices.shape))
