"""Formula helpers of the spatial nn ops (convolution, pooling, resampling).

NOTE on convolution's double backward. Write the convolution as a bilinear map
B(x, w) (+ bias). Its backward returns gI = J_x(w)^T g and gW = J_w(x)^T g, which
are linear in g, gI does not depend on x and gW does not depend on w. Given the
gradients ggI, ggW, ggb flowing into those outputs:

    d/dg  = B(ggI, w) + B(x, ggW) + ggb        (two convolutions)
    d/dx  = J_x(ggW)^T g    = convolution_backward(g, x, ggW)[0]
    d/dw  = J_w(ggI)^T g    = convolution_backward(g, ggI, w)[1]

The same holds for transposed convolutions (B is still bilinear), so one set of
helpers serves both, and every order of derivative is a convolution again.
"""
from __future__ import annotations

from tensorplay import _creation
from tensorplay._generated import functional as F


def conv_double_backward_grad_output(grads, input, weight, stride, padding, dilation,
                                     transposed, output_padding, groups):
    gg_input, gg_weight, gg_bias = grads
    result = None
    if gg_input is not None:
        result = F.convolution(gg_input, weight, gg_bias, stride, padding, dilation,
                               transposed, output_padding, groups)
        gg_bias = None
    if gg_weight is not None:
        term = F.convolution(input, gg_weight, gg_bias, stride, padding, dilation,
                             transposed, output_padding, groups)
        result = term if result is None else result + term
        gg_bias = None
    if gg_bias is not None:
        shape = [1, gg_bias.shape[0]] + [1] * (input.dim() - 2)
        result = gg_bias.reshape(shape).expand(_conv_out_shape(
            input, weight, stride, padding, dilation, transposed, output_padding, groups))
    return result


def _conv_out_shape(input, weight, stride, padding, dilation, transposed, output_padding,
                    groups):
    from tensorplay.meta.nn_spatial import conv_output_sizes
    spatial = conv_output_sizes(tuple(input.shape), tuple(weight.shape), stride, padding,
                                dilation, transposed, output_padding)
    channels = weight.shape[1] * groups if transposed else weight.shape[0]
    return (input.shape[0], channels) + tuple(spatial)


def conv_double_backward_input(grads, grad_output, input, weight, stride, padding, dilation,
                               transposed, output_padding, groups):
    gg_weight = grads[1]
    if gg_weight is None:
        return None
    return F.convolution_backward(grad_output, input, gg_weight, None, stride, padding,
                                  dilation, transposed, output_padding, groups,
                                  [True, False, False])[0]


def conv_double_backward_weight(grads, grad_output, input, weight, stride, padding, dilation,
                                transposed, output_padding, groups):
    gg_input = grads[0]
    if gg_input is None:
        return None
    return F.convolution_backward(grad_output, gg_input, weight, None, stride, padding,
                                  dilation, transposed, output_padding, groups,
                                  [False, True, False])[1]


def constant_pad_nd_backward(grad, pad):
    """Padding's gradient crops the border off again: padding by the negated amounts."""
    return F.constant_pad_nd(grad, [-p for p in pad], 0)


def pad_nd_backward(grad, self, self_sizes, pad, mode):
    """_pad_nd's gradient reads only self's shape. `self` is passed as PyTorch's
    reflection_pad / replication_pad backward ops take it: it is saved (and
    version-checked when unpacked) for those modes only, None for circular (see
    derivatives.yaml's saved_if)."""
    return F._pad_nd_backward(grad, list(self_sizes), pad, mode)


def last_two(sizes):
    return list(sizes)[-2:]


def max_pool_double_backward(grad, indices):
    """The derivative of a max pooling's backward in grad_output: read `grad` (input-shaped)
    at each saved index. Built as a one-hot comparison so it stays differentiable with the
    ops at hand; it costs (pooled positions x plane) per channel, which suits adaptive max
    pooling (small outputs); max_pool2d has windows and uses the cheaper helper below."""
    plane = grad.flatten(-2)                                       # (..., H * W)
    positions = _creation.arange(plane.shape[-1], device=grad.device)
    onehot = indices.flatten(-2).unsqueeze(-1) == positions        # (..., P, H * W)
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
