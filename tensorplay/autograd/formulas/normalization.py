"""Backward helpers for the nn_layers ops (see derivatives.yaml): softmax double
backward, losses, normalization, dropout and embedding.

Written with TensorPlay ops only, so their results can be differentiated again.
"""
from __future__ import annotations

import math

from tensorplay import _creation
from tensorplay._generated import functional as F
from tensorplay.autograd.grad_mode import grad_state
from tensorplay.errors import DTypeError
from tensorplay.meta.nn_layers import machine_eps
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


def cross_entropy_backward(grads, probs, input_dtype, target, weight, reduction, ignore_index,
                           total_weight):
    """The fused kernel's gradient: one pass over the saved probabilities (grads[0], the
    loss's), plus softmax's backward for a gradient of the probabilities (grads[1]).

    The probabilities are a differentiable output, as log_softmax's result is in PyTorch's
    composition: with create_graph the saved output carries this node's history, so the
    gradient, a differentiable function of it, goes back to self through softmax's
    backward without keeping self (an in-place change of the input after the loss does
    not make backward raise, as in PyTorch, which saves only log_softmax's result)."""
    loss_grad, probs_grad = grads[0], grads[1]
    result = None
    if loss_grad is not None:
        result = F._cross_entropy_backward(loss_grad, probs, target, weight, reduction,
                                           ignore_index, total_weight)
    if probs_grad is not None:
        softmax_grad = F._softmax_backward_data(probs_grad, probs, 1, input_dtype)
        result = softmax_grad if result is None else result + softmax_grad
    return result


def cross_entropy_backward_grads(grad, grad_output, probs, target, weight, reduction,
                                 ignore_index, total_weight):
    """Gradients of _cross_entropy_backward, (probs - onehot) * w[r] * g, for
    (grad_output, probs). Each row's weight w[r] (0 where ignored) is -nll_loss of a
    row of ones, and nll_loss of `grad` picks -w[r] * grad[r, target[r]]."""
    row_weight = -F.nll_loss_forward(_creation.ones_like(probs), target, weight, "none",
                                     ignore_index)[0]
    g = grad_output / total_weight if reduction == "mean" else grad_output
    grad_probs = grad * (row_weight * g).unsqueeze(1)
    per_row = (grad * probs).sum(1) * row_weight + \
        F.nll_loss_forward(grad, target, weight, "none", ignore_index)[0]
    if reduction == "none":
        return per_row, grad_probs
    total = per_row.sum()
    return (total / total_weight if reduction == "mean" else total), grad_probs


def _loss_grad(grad, reduction, like):
    """The gradient of a reduced loss, spread over every element of `like`."""
    if reduction == "none":
        return grad
    grad = grad.expand(tuple(like.shape))
    return grad / like.numel() if reduction == "mean" else grad


# NOTE: PyTorch differentiates mse/huber/smooth_l1 with formulas of their own, which read
# self and target (not through their decomposition), so both are saved: an in-place
# change of either before backward raises there and so here. Each helper gives the
# gradient of its first argument; the target's is the same call with the two swapped,
# as the derivative of each loss is odd in d = self - target.
def mse_loss_backward(grad, self, target, reduction):
    d = self - target
    return _pointwise_loss_grad(grad, self, reduction, d, 2 * d)


def huber_loss_backward(grad, self, target, reduction, delta):
    """d where |d| <= delta, +-delta beyond (so an infinite d gives +-delta, not NaN).

    Like PyTorch's kernel it refuses operands of two dtypes, which the forward accepts."""
    if target.dtype is not self.dtype:
        raise DTypeError(f"huber_loss_backward(): Found dtype {target.dtype.name} but expected "
                         f"{self.dtype.name}: the backward needs 'self' and 'target' of one "
                         f"dtype", op="huber_loss_backward", arg="target")
    d = self - target
    return _pointwise_loss_grad(grad, self, reduction, d, F.clamp(d, -delta, delta))


def smooth_l1_loss_backward(grad, self, target, reduction, beta):
    """huber_loss_backward / beta; sign(d) for beta = 0, where the loss is l1."""
    d = self - target
    slope = F.sign(d) if beta == 0 else F.clamp(d, -beta, beta) / beta
    return _pointwise_loss_grad(grad, self, reduction, d, slope)


def _pointwise_loss_grad(grad, self, reduction, d, slope):
    """`slope` (the loss's derivative in d, broadcast shape) times the reduced gradient,
    summed back to self's shape and dtype."""
    return sum_to(_loss_grad(grad, reduction, d) * slope, tuple(self.shape)).to(self.dtype)


def softplus_neg(x):
    """log(1 + exp(-x)), stable: max(-x, 0) + log(1 + exp(-|x|))."""
    return F.relu(-x) + F.log(1 + F.exp(-x.abs()))


# PyTorch's EPSILON of the loss kernels is a float32 constant: 1e-12 rounded to float32.
_BCE_EPSILON = 9.999999960041972e-13


def _bce_finish(d, weight, reduction, like):
    """PyTorch's order: times the weight, then divided by numel for 'mean'."""
    if weight is not None:
        d = d * weight
    if reduction == "mean":
        d = d / like.numel()
    return sum_to(d, tuple(like.shape))


def bce_backward_self(grad, self, target, weight, reduction):
    """grad * (x - y) / max(x (1 - x), 1e-12) (* weight), as PyTorch's kernel computes it."""
    g = grad if reduction == "none" else grad.expand(tuple(self.shape))
    d = g * (self - target) / F.clamp_min((1 - self) * self, _BCE_EPSILON)
    return _bce_finish(d, weight, reduction, self)


def bce_backward_target(grad, self, target, weight, reduction):
    """-logit(x) * grad (* weight): unclamped, so x = 0 or 1 gives +-inf, as in PyTorch."""
    g = grad if reduction == "none" else grad.expand(tuple(target.shape))
    return _bce_finish(-F.logit(self) * g, weight, reduction, target)


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


# ---- normalization ------------------------------------------------------------------
# NOTE: without create_graph the backward reads the mean and rstd that the forward
# kernel saved. With create_graph (grad mode on during backward) it recomputes them
# from the input with TensorPlay ops, so that the second derivative sees how they
# depend on the input (the saved ones are constants to autograd).
def _stats(x, dims, eps, saved_mean, saved_rstd, stat_shape):
    if grad_state.enabled:
        mean = x.mean(dims, True)
        d = x - mean
        return mean, 1 / F.sqrt((d * d).mean(dims, True) + eps)
    mean = None if saved_mean is None else saved_mean.reshape(stat_shape)
    return mean, saved_rstd.reshape(stat_shape)


def _normalized_grad(grad_xhat, xhat, rstd, dims):
    """d/dx of xhat = (x - mean(x)) * rstd(x), applied to grad_xhat:
    rstd * (g - mean(g) - xhat * mean(g * xhat)), means over the normalized dims."""
    return rstd * (grad_xhat - grad_xhat.mean(dims, True)
                   - xhat * (grad_xhat * xhat).mean(dims, True))


def _affine_grads(grad, xhat, weight, bias, dims, param_shape):
    """(grad_weight, grad_bias): sums over every dim the parameter is broadcast along.
    `bias` is the bias or only its sizes; None: there is none."""
    gw = None if weight is None else (grad * xhat).sum(dims).reshape(param_shape)
    gb = None if bias is None else grad.sum(dims).reshape(param_shape)
    return gw, gb


def _channel_shape(x):
    shape = [1] * x.dim()
    shape[1] = x.shape[1]
    return shape


# NOTE: batch and group norm save what PyTorch's formulas save, so that an in-place change
# raises in backward alike: not the bias (only whether there is one, `bias_sizes`), and
# for batch norm the running stats, in both modes. Their values are not read here: the
# forward returns the statistics it used (the running ones in eval mode), and training
# updates the running stats in place without bumping their version, as PyTorch's does.
def batch_norm_backward(grad, input, weight, bias_sizes, running_mean, running_var,
                        save_mean, save_rstd, training, eps):
    """Gradients of native_batch_norm for (input, weight, bias). In eval mode the stats
    are the running ones: constants, so the input gradient is grad * weight * rstd.

    A plain backward() in training mode takes the fused op native_batch_norm_backward,
    one kernel over the saved mean and rstd (see layer_norm_backward for why create_graph
    composes the backward from differentiable ops instead)."""
    if training and not grad_state.enabled:
        return F.native_batch_norm_backward(grad, input, weight, None, None, save_mean,
                                            save_rstd, True, eps,
                                            [True, weight is not None, bias_sizes is not None])
    shape = _channel_shape(input)
    dims = [0] + list(range(2, input.dim()))
    w = None if weight is None else weight.reshape(shape)
    if training:
        mean, rstd = _stats(input, dims, eps, save_mean, save_rstd, shape)
    else:
        mean, rstd = save_mean.reshape(shape), save_rstd.reshape(shape)
    xhat = (input - mean) * rstd
    grad_xhat = grad if w is None else grad * w
    if training:
        gi = _normalized_grad(grad_xhat, xhat, rstd, dims)
    else:
        gi = grad_xhat * rstd
    gw, gb = _affine_grads(grad, xhat, weight, bias_sizes, dims, (input.shape[1],))
    return gi, gw, gb


def layer_norm_backward(grad, input, normalized_shape, weight, bias, mean, rstd, eps):
    """Gradients of native_layer_norm for (input, weight, bias).

    A plain backward() (grad mode off while it runs: nothing records this backward) takes
    the fused op native_layer_norm_backward, one kernel over the saved mean and rstd.
    With create_graph=True the backward is itself recorded, so it is composed from
    differentiable ops instead, the statistics recomputed from the input (the fused op
    has no derivative; the saved statistics are constants to autograd)."""
    if not grad_state.enabled:
        return F.native_layer_norm_backward(grad, input, normalized_shape, mean, rstd, weight,
                                            bias, [True, weight is not None, bias is not None])
    k = len(normalized_shape)
    lead = input.dim() - k
    dims = list(range(lead, input.dim()))
    stat_shape = list(input.shape[:lead]) + [1] * k
    mean, rstd = _stats(input, dims, eps, mean, rstd, stat_shape)
    xhat = (input - mean) * rstd
    grad_xhat = grad if weight is None else grad * weight
    # NOTE: factored as the fused kernel (and PyTorch's) factors it, so an infinite
    # weight gives the same infinities and NaNs on both paths; see group_norm_backward.
    s = 1.0 / math.prod(normalized_shape)
    ds = (grad_xhat * input).sum(dims, True)
    db = grad_xhat.sum(dims, True)
    b = (db * mean - ds) * rstd * rstd * rstd * s
    c = -b * mean - db * rstd * s
    gi = (rstd * grad if weight is None else rstd * grad * weight) + b * input + c
    gw, gb = _affine_grads(grad, xhat, weight, bias, list(range(lead)), tuple(normalized_shape))
    return gi, gw, gb


def group_norm_backward(grad, input, weight, bias_sizes, mean, rstd, N, C, HxW, group, eps):
    """Gradients of native_group_norm, factored as PyTorch's kernel factors them. With the
    input viewed as (N, group, D = C // group, HxW), s = 1 / (D * HxW), w = weight or 1,
    per (sample, channel) ds = sum(grad * x), db = sum(grad), and per (sample, group)
    ds_w = sum_c ds * w, db_w = sum_c db * w:

        grad_input  = rstd * w * grad + c2 * x + c3
                      c2 = (db_w * mean - ds_w) * rstd**3 * s,  c3 = -c2 * mean - db_w * rstd * s
        grad_weight = sum_n (ds - db * mean) * rstd;   grad_bias = sum_n db

    NOTE: the same factoring as PyTorch's gives the same infinities and NaNs (an infinite
    weight enters through ds_w and db_w), where the layer-norm form of the formula
    (rstd * (g - mean(g) - xhat * mean(g * xhat))) meets inf - inf in other places."""
    d = C // group
    x = input.reshape((N, group, d, HxW))
    g = grad.reshape((N, group, d, HxW))
    mean, rstd = _stats(x, [2, 3], eps, mean, rstd, (N, group, 1, 1))
    mean, rstd = mean.reshape((N, group, 1)), rstd.reshape((N, group, 1))
    ds = (g * x).sum([3])                     # (N, group, D)
    db = g.sum([3])
    w = None if weight is None else weight.reshape((1, group, d))
    ds_w = (ds if w is None else ds * w).sum([2], True)
    db_w = (db if w is None else db * w).sum([2], True)
    s = 1.0 / (d * HxW)
    c2 = (db_w * mean - ds_w) * rstd * rstd * rstd * s
    c3 = -c2 * mean - db_w * rstd * s
    c1 = rstd if w is None else rstd * w
    gi = c1.unsqueeze(3) * g + c2.unsqueeze(3) * x + c3.unsqueeze(3)
    gw = None if weight is None else ((ds - db * mean) * rstd).sum([0]).reshape((C,))
    gb = None if bias_sizes is None else db.sum([0]).reshape((C,))
    return gi.reshape(tuple(input.shape)), gw, gb


def rms_norm_backward(grad, input, normalized_shape, weight, rstd, eps):
    """Gradients of _fused_rms_norm for (input, weight): with xhat = x * rstd,
    grad_input = rstd * (g - xhat * mean(g * xhat)), g = grad * weight.

    As layer_norm_backward: the fused op _fused_rms_norm_backward when this backward is
    not recorded (grad mode off), the composition below with create_graph=True."""
    if not grad_state.enabled:
        return F._fused_rms_norm_backward(grad, input, normalized_shape, rstd, weight,
                                          [True, weight is not None])
    k = len(normalized_shape)
    lead = input.dim() - k
    dims = list(range(lead, input.dim()))
    if eps is None:
        eps = machine_eps(input.dtype)
    rstd = 1 / F.sqrt((input * input).mean(dims, True) + eps)
    xhat = input * rstd
    grad_xhat = grad if weight is None else grad * weight
    gi = rstd * (grad_xhat - xhat * (grad_xhat * xhat).mean(dims, True))
    gw = None if weight is None else \
        (grad * xhat).sum(list(range(lead))).reshape(tuple(normalized_shape))
    return gi, gw


# ---- dropout and embedding ----------------------------------------------------------
def dropout_backward(grad, mask, p, train):
    """grad * mask / (1 - p) where training (0 for p == 1); grad itself otherwise."""
    if train is False:
        return grad
    scale = 0.0 if p == 1 else 1.0 / (1.0 - p)
    return grad * mask * scale


def embedding_backward(grad, indices, weight_sizes, padding_idx, scale_grad_by_freq):
    return F.embedding_dense_backward(grad, indices, weight_sizes[0], padding_idx,
                                      scale_grad_by_freq)


def embedding_dense_double_backward(grad, indices, padding_idx, scale_grad_by_freq):
    """The transpose of the scatter-add: gather the rows of `grad` by index, 0 at the
    padding index, divided by each index's count with scale_grad_by_freq."""
    rows = F.embedding(grad, indices)
    keep = (indices != padding_idx).unsqueeze(-1)
    if scale_grad_by_freq:
        flat = indices.reshape((-1,))
        counts = (flat.unsqueeze(1) == flat.unsqueeze(0)).sum(1, dtype=grad.dtype)
        rows = rows / counts.reshape(tuple(indices.shape) + (1,))
    return F.where(keep, rows, 0.0)
