"""Backward helpers for the nn_layers ops (see derivatives.yaml): softmax double
backward, losses, normalization, dropout and embedding.

Written with TensorPlay ops only, so their results can be differentiated again.
"""
from __future__ import annotations

from tensorplay._generated import functional as F
from tensorplay.autograd.formulas.core import sum_to


# ---- softmax ------------------------------------------------------------------------
def softmax_double_backward(grad, grad_output, output, dim):
    """d/d(output) of output * (g - sum(g * output)), applied to `grad`:
    grad * (g - sum(g * output)) - g * sum(grad * output)."""
    inner = grad_output - (grad_output * output).sum(dim, True)
    return grad * inner - grad_output * (grad * output).sum(dim, True)


def log_softmax_double_backward_grad(grad, output, dim):
    """d/d(g) of g - exp(output) * sum(g), transposed: grad - sum(grad * exp(output))."""
    return grad - (grad * output.exp()).sum(dim, True)


# ---- losses -------------------------------------------------------------------------
def nll_loss_value(grad, target, weight, reduction, ignore_index):
    """nll_loss_backward is linear in grad_output; its transpose is nll_loss itself:
    the double backward picks -weight[t] * grad[n, t] (over total_weight for 'mean')."""
    return F.nll_loss_forward(grad, target, weight, reduction, ignore_index)[0]


def _loss_grad(grad, reduction, like):
    """The gradient of a reduced loss, spread over every element of `like`."""
    if reduction == "none":
        return grad
    grad = grad.expand(tuple(like.shape))
    return grad / like.numel() if reduction == "mean" else grad


def softplus_neg(x):
    """log(1 + exp(-x)), stable: max(-x, 0) + log(1 + exp(-|x|))."""
    return F.relu(-x) + F.log(1 + F.exp(-x.abs()))


def bce_with_logits_backward_self(grad, self, target, weight, pos_weight, reduction):
    """sigmoid(x) - y, or (pw * y + 1 - y) * sigmoid(x) - pw * y with pos_weight."""
    s = F.sigmoid(self)
    if pos_weight is None:
        d = s - target
    else:
        t = pos_weight * target
        d = (t + 1 - target) * s - t
    if weight is not None:
        d = d * weight
    return sum_to(_loss_grad(grad, reduction, self) * d, tuple(self.shape))


def bce_with_logits_backward_target(grad, self, target, weight, pos_weight, reduction):
    """-x, plus (pw - 1) * softplus(-x) with pos_weight."""
    d = -self
    if pos_weight is not None:
        d = d + (pos_weight - 1) * softplus_neg(self)
    if weight is not None:
        d = d * weight
    return sum_to(_loss_grad(grad, reduction, target) * d, tuple(target.shape))
