"""Formula helpers of convolution.

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
    from tensorplay.kernel_support.arguments import conv_output_sizes
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




# ---- tangents (forward mode) -------------------------------------------------------------
def convolution_jvp(input_p, input_t, weight_p, weight_t, bias_t, stride, padding, dilation,
                    transposed, output_padding, groups):
    """A convolution is bilinear in (input, weight) plus the bias: conv(dx, w) +
    conv(x, dw) + db."""
    args = (stride, padding, dilation, transposed, output_padding, groups)
    return F.convolution(input_t, weight_p, None, *args) + \
        F.convolution(input_p, weight_t, bias_t, *args)


def convolution_backward_jvp(grad_output_p, grad_output_t, input_p, input_t, weight_p,
                             weight_t, bias_sizes, stride, padding, dilation, transposed,
                             output_padding, groups, output_mask):
    """The backward's gradients are bilinear too: grad_input in (grad_output, weight),
    grad_weight in (grad_output, input), grad_bias linear in grad_output."""
    args = (stride, padding, dilation, transposed, output_padding, groups)
    d_input = d_weight = d_bias = None
    if output_mask[0]:
        d_input = F.convolution_backward(grad_output_t, input_p, weight_p, None, *args,
                                         [True, False, False])[0] + \
            F.convolution_backward(grad_output_p, input_p, weight_t, None, *args,
                                   [True, False, False])[0]
    if output_mask[1]:
        d_weight = F.convolution_backward(grad_output_t, input_p, weight_p, None, *args,
                                          [False, True, False])[1] + \
            F.convolution_backward(grad_output_p, input_t, weight_p, None, *args,
                                   [False, True, False])[1]
    if output_mask[2]:
        d_bias = F.convolution_backward(grad_output_t, input_p, weight_p, bias_sizes, *args,
                                        [False, False, True])[2]
    return d_input, d_weight, d_bias
