"""Backward helpers of the losses: nll, cross-entropy, mse, huber, smooth_l1, BCE
(with logits).

Written with TensorPlay ops only, so they can be differentiated again.
"""
from __future__ import annotations

from tensorplay import _creation
from tensorplay._generated import functional as F
from tensorplay._promotion import result_type
from tensorplay.autograd.formulas.core import sum_to
from tensorplay.errors import DTypeError

# PyTorch's EPSILON of the loss kernels is a float32 constant: 1e-12 rounded to float32.
_BCE_EPSILON = 9.999999960041972e-13


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
def _difference(self, target):
    """self - target in their common dtype (a bool or integer target of a float self is
    promoted first: the forward promoted it, and bool does not subtract)."""
    common = result_type(self, target)
    return self.to(common) - target.to(common)


def mse_loss_backward(grad, self, target, reduction):
    d = _difference(self, target)
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
    d = _difference(self, target)
    slope = F.sign(d) if beta == 0 else F.clamp(d, -beta, beta) / beta
    return _pointwise_loss_grad(grad, self, reduction, d, slope)


def _pointwise_loss_grad(grad, self, reduction, d, slope):
    """`slope` (the loss's derivative in d, broadcast shape) times the reduced gradient,
    summed back to self's shape and dtype."""
    return sum_to(_loss_grad(grad, reduction, d) * slope, tuple(self.shape)).to(self.dtype)


def softplus_neg(x):
    """log(1 + exp(-x)), stable: max(-x, 0) + log(1 + exp(-|x|))."""
    return F.relu(-x) + F.log(1 + F.exp(-x.abs()))


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


# ---- tangents (forward mode) -------------------------------------------------------------
# A pointwise loss l(self, target) reduced: its tangent is the reduction of
# dl/dself * self_t + dl/dtarget * target_t, each derivative the one the backward uses.

def apply_loss_reduction(unreduced, reduction):
    if reduction == "mean":
        return unreduced.mean()
    if reduction == "sum":
        return unreduced.sum()
    return unreduced


def mse_loss_jvp(self_p, target_p, self_t, target_t, reduction):
    """2 (x - y) dx + 2 (y - x) dy, one term per input as PyTorch's formula (its backward
    kernel read forward): a missing tangent is zeros there, so an infinite x - y gives
    NaN (0 * inf), where 2 (x - y) (dx - dy) would give inf."""
    return apply_loss_reduction(2 * (self_p - target_p) * self_t
                                + 2 * (target_p - self_p) * target_t, reduction)


def huber_loss_jvp(self_p, target_p, self_t, target_t, reduction, delta):
    slope = F.clamp(self_p - target_p, -delta, delta)
    return apply_loss_reduction(slope * (self_t - target_t), reduction)


def smooth_l1_loss_jvp(self_p, target_p, self_t, target_t, reduction, beta):
    d = self_p - target_p
    slope = F.sign(d) if beta == 0 else F.clamp(d, -beta, beta) / beta
    return apply_loss_reduction(slope * (self_t - target_t), reduction)


def bce_jvp(self_p, target_p, self_t, target_t, weight, reduction):
    """(x - y) / max(x (1 - x), 1e-12) dx - logit(x) dy, each term times the weight as
    PyTorch's two backward kernels do: a missing tangent is zeros there, so an infinite
    weight makes its term NaN (0 * inf) and the sum NaN."""
    d_self = self_t * (self_p - target_p) / F.clamp_min((1 - self_p) * self_p, _BCE_EPSILON)
    d_target = -F.logit(self_p) * target_t
    if weight is not None:
        d_self, d_target = d_self * weight, d_target * weight
    return apply_loss_reduction(d_self + d_target, reduction)


def bce_with_logits_self_jvp(self_t, self_p, target_p, weight, pos_weight, reduction):
    """The input's term of the tangent, (sigmoid(x) - y) dx, with pos_weight
    ((pw y + 1 - y) sigmoid(x) - pw y) dx: PyTorch's backward kernel read forward, the
    weight multiplied into the term before the two terms are summed (an infinite weight
    times terms of opposite signs is NaN there, not the infinity of their sum times it)."""
    s = F.sigmoid(self_p)
    if pos_weight is None:
        d = (s - target_p) * self_t
    else:
        t = pos_weight * target_p
        d = ((t + 1 - target_p) * s - t) * self_t
    return _weighted_term(d, weight, reduction)


def bce_with_logits_target_jvp(target_t, self_p, target_p, weight, pos_weight, reduction):
    """The target's term, -x dy, with pos_weight ((pw - 1) softplus(-x) - x) dy (see
    bce_with_logits_self_jvp)."""
    if pos_weight is None:
        d = -self_p * target_t
    else:
        d = ((pos_weight - 1) * softplus_neg(self_p) - self_p) * target_t
    return _weighted_term(d, weight, reduction)


def _weighted_term(d, weight, reduction):
    """One tangent's term times the weight, reduced: the reduction is linear, so reducing
    each term keeps the sum's infinities and NaNs (+inf and -inf anywhere give NaN)."""
    return apply_loss_reduction(d if weight is None else d * weight, reduction)


def cross_entropy_jvp(self_t, target, weight, reduction, ignore_index, probs):
    """The fused cross entropy's tangents: log_softmax's, dx - sum(p dx) over the classes
    (dim 1), through nll_loss (linear in its input) for the loss; p (dx - sum(p dx)) for
    the probabilities."""
    lsm_t = self_t - (probs * self_t).sum(1, True)
    loss_t = F.nll_loss_forward(lsm_t, target, weight, reduction, ignore_index)[0]
    return loss_t, probs * lsm_t


def cross_entropy_backward_jvp(grad_output_p, grad_output_t, probs_p, probs_t, target, weight,
                               reduction, ignore_index, total_weight):
    """(probs - onehot) * w[r] * g is linear in g and in probs: the kernel on dg, plus
    dprobs * w[r] * g (w[r] = 0 on an ignored row)."""
    row_weight = -F.nll_loss_forward(_creation.ones_like(probs_p), target, weight, "none",
                                     ignore_index)[0]
    g = grad_output_p / total_weight if reduction == "mean" else grad_output_p
    return F._cross_entropy_backward(grad_output_t, probs_p, target, weight, reduction,
                                     ignore_index, total_weight) + \
        probs_t * (row_weight * g).unsqueeze(1)


def ctc_loss_jvp(log_probs_p, log_probs_t, targets, input_lengths, target_lengths,
                 neg_log_likelihood, log_alpha, blank, zero_infinity):
    """Each sample's loss depends on its own slice log_probs[:, n, :] only, so the
    backward's gradient for a gradient of ones holds every sample's own derivative: the
    tangent of loss n is that gradient times the tangent, summed over time and classes.
    (The backward's gradient is the one through log_softmax, as PyTorch's: so is this
    tangent; it is the derivative for a tangent that log_softmax produced.)"""
    ones = _creation.ones_like(neg_log_likelihood)
    grad = F._ctc_loss_backward(ones, log_probs_p, targets, input_lengths, target_lengths,
                                neg_log_likelihood, log_alpha, blank, zero_infinity)
    return (grad * log_probs_t).sum([0, 2])
