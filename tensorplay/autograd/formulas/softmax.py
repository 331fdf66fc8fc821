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
