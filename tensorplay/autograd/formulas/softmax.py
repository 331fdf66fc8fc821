"""Softmax double backward helpers.

Written with TensorPlay ops only, so they can be differentiated again.
"""
from __future__ import annotations


# ---- softmax ------------------------------------------------------------------------
def softmax_double_backward(grad, grad_output, output, dim):
    """d/d(output) of output * (g - sum(g * output)), applied to `grad`:
    grad * (g - sum(g * output)) - g * sum(grad * output)."""
    inner = grad_output - (grad_output * output).sum(dim, True)
    return grad * inner - grad_output * (grad * output).sum(dim, True)


def log_softmax_double_backward_grad(grad, output, dim):
    """d/d(g) of g - exp(output) * sum(g), transposed: grad - sum(grad * exp(output))."""
    return grad - (grad * output.exp()).sum(dim, True)


# ---- tangents (forward mode) -------------------------------------------------------------
def softmax_backward_data_jvp(grad_output_p, grad_output_t, output_p, output_t, dim):
    """y (g - sum(g y)) is bilinear in (g, y): the product rule over both."""
    inner = grad_output_p - (grad_output_p * output_p).sum(dim, True)
    d_inner = grad_output_t - (grad_output_t * output_p + grad_output_p * output_t).sum(dim,
                                                                                       True)
    return output_t * inner + output_p * d_inner


def log_softmax_backward_data_jvp(grad_output_p, grad_output_t, output_p, output_t, dim):
    """g - exp(y) sum(g): d = dg - exp(y) (dy sum(g) + sum(dg))."""
    return grad_output_t - output_p.exp() * (output_t * grad_output_p.sum(dim, True)
                                             + grad_output_t.sum(dim, True))
