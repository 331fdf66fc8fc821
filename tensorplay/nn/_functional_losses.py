"""tp.nn.functional: losses, with PyTorch's signatures: the ops of ops.yaml, and the
losses with no op of their own, composed from pointwise ops and reductions as PyTorch's
reference formulas write them (autograd differentiates them through the ops they call).

Each picks the op of ops.yaml and passes `reduction` on; the deprecated
`size_average` / `reduce` arguments are translated as PyTorch does.
"""
from __future__ import annotations

import math

from tensorplay._creation import full_like, zeros_like
from tensorplay._generated import functional as _F
from tensorplay._generated import functional as _ops
from tensorplay.autograd.grad_mode import no_grad
from tensorplay.errors import ArgumentError, ShapeError, fmt_shape
from tensorplay.nn._functional_activations import logsigmoid

__all__ = ["nll_loss", "cross_entropy", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
           "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
           "margin_ranking_loss", "cosine_embedding_loss", "linear_cross_entropy",
           "hinge_embedding_loss", "soft_margin_loss", "multilabel_soft_margin_loss",
           "multi_margin_loss", "multilabel_margin_loss", "poisson_nll_loss",
           "gaussian_nll_loss", "triplet_margin_loss", "triplet_margin_with_distance_loss",
           "ctc_loss"]


def _legacy_reduction(size_average, reduce, reduction):
    """PyTorch's mapping of the deprecated flags: reduce=False -> 'none', else
    size_average=False -> 'sum', else 'mean'."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    return _F.nll_loss(input, target, weight,
                       _legacy_reduction(size_average, reduce, reduction), ignore_index)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """Cross entropy of logits `input` (N, C, d1, ...) against class indices (N, d1, ...)
    or class probabilities (the input's shape)."""
    return _F.cross_entropy_loss(input, target, weight,
                                 _legacy_reduction(size_average, reduce, reduction),
                                 ignore_index, label_smoothing)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return _F.mse_loss(input, target, _legacy_reduction(size_average, reduce, reduction))


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return _F.l1_loss(input, target, _legacy_reduction(size_average, reduce, reduction))


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean",
                   beta=1.0):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if beta == 0.0:
        # As torch.nn.functional does: beta = 0 is l1_loss, whose backward saves neither
        # input (smooth_l1_loss's saves both, which an in-place change would trip).
        return _F.l1_loss(input, target, reduction)
    return _F.smooth_l1_loss(input, target, reduction, beta)


def huber_loss(input, target, reduction="mean", delta=1.0):
    return _F.huber_loss(input, target, reduction, delta)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    return _F.binary_cross_entropy(input, target, weight,
                                   _legacy_reduction(size_average, reduce, reduction))


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None,
                                     reduce=None, reduction="mean", pos_weight=None):
    return _F.binary_cross_entropy_with_logits(
        input, target, weight, pos_weight, _legacy_reduction(size_average, reduce, reduction))


def kl_div(input, target, size_average=None, reduce=None, reduction="mean",
           log_target=False):
    """'batchmean' divides the summed loss by the batch size (the mathematically correct
    KL divergence per sample); 'mean' divides by the number of elements."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if reduction == "batchmean":
        loss = _F.kl_div(input, target, "sum", log_target=log_target)
        return loss / input.shape[0] if input.dim() else loss
    return _F.kl_div(input, target, reduction, log_target=log_target)


def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                        reduction="mean"):
    return _F.margin_ranking_loss(input1, input2, target, float(margin),
                                  _legacy_reduction(size_average, reduce, reduction))


def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                          reduction="mean"):
    return _F.cosine_embedding_loss(input1, input2, target, float(margin),
                                    _legacy_reduction(size_average, reduce, reduction))


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None,
                         reduction="mean", ignore_index=None, label_smoothing=0.0,
                         options=None):
    """cross_entropy(logits, target) with logits = the linear map of input: linear_weight
    (C, *out_features, in_features) gives logits (N, C, *out_features) (a K-dimensional
    loss). `options` (nn.LinearCrossEntropyOptions) picks PyTorch's chunked path, a memory
    saving with the same result; TensorPlay validates it and computes the reference path."""
    op = "linear_cross_entropy"
    if options is not None and type(options).__name__ != "LinearCrossEntropyOptions":
        raise ArgumentError(f"{op}(): argument 'options' must be a LinearCrossEntropyOptions "
                            f"or None, but got {type(options).__name__}", op=op,
                            arg="options")
    if linear_weight.dim() < 2:
        raise ShapeError(f"{op}(): argument 'linear_weight' must be (C, *out_features, "
                         f"in_features), but got shape {fmt_shape(tuple(linear_weight.shape))}",
                         op=op, arg="linear_weight")
    class_shape = tuple(linear_weight.shape[:-1])
    flat_weight = linear_weight.reshape(-1, linear_weight.shape[-1])
    flat_bias = None if linear_bias is None else linear_bias.reshape(-1)
    logits = _ops.linear(input, flat_weight, flat_bias)
    logits = logits.reshape(tuple(input.shape[:-1]) + class_shape)
    return cross_entropy(logits, target, weight, reduction=reduction,
                         ignore_index=-100 if ignore_index is None else ignore_index,
                         label_smoothing=label_smoothing)


def _reduce(op, loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ArgumentError(f"{op}(): argument 'reduction' must be 'none', 'mean' or 'sum', but "
                        f"got {reduction!r}", op=op, arg="reduction")


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """x where y == 1, max(0, margin - x) where y == -1 (other targets add both)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    margin_part = _ops.where(target != 1, (margin - input).clamp_min(0), 0.0)
    self_part = _ops.where(target != -1, input, 0.0)
    return _reduce("hinge_embedding_loss", margin_part + self_part, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-y * x)), y in {1, -1}."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _reduce("soft_margin_loss", (-target * input).exp().log1p(), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """Binary cross entropy of each class's logit, averaged over the classes (last dim)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    loss = loss.sum(class_dim) / input.shape[class_dim]
    return _reduce("multilabel_soft_margin_loss", loss, reduction)


def _class_scores(op, input, target):
    """(input as (N, C), target as (N, ...), whether the input was 1-D)."""
    if input.dim() not in (1, 2):
        raise ShapeError(f"{op}(): expected a 1-D (C) or 2-D (N, C) argument 'input', but got "
                         f"shape {fmt_shape(tuple(input.shape))}", op=op, arg="input")
    if input.dim() == 1:
        return input.unsqueeze(0), target.reshape(1, -1), True
    return input, target, False


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    """sum over j != y of max(0, margin - x[y] + x[j])^p (times weight[y]), over C."""
    op = "multi_margin_loss"
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ArgumentError(f"{op}(): only p == 1 and p == 2 are supported, but got p={p}",
                            op=op, arg="p")
    x, y, single = _class_scores(op, input, target)
    y = y.reshape(-1, 1)
    if y.shape[0] != x.shape[0]:
        raise ShapeError(f"{op}(): argument 'target' must hold one class per sample "
                         f"({x.shape[0]}), but got shape {fmt_shape(tuple(target.shape))}",
                         op=op, arg="target")
    # relu, not clamp: a margin of exactly 0 gets no gradient, as in PyTorch's kernel.
    z = _ops.relu(margin - _ops.gather(x, 1, y) + x)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * _ops.index_select(weight, 0, y.reshape(-1)).unsqueeze(1)
    z = _ops.scatter(z, 1, y, 0.0)   # the target class itself adds nothing
    loss = z.sum(1) / x.shape[1]
    return _reduce(op, loss.squeeze(0) if single else loss, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """sum over target classes j and non-target classes k of max(0, 1 - (x[j] - x[k])), over
    C. `target` lists class indices, ended by the first -1."""
    op = "multilabel_margin_loss"
    reduction = _legacy_reduction(size_average, reduce, reduction)
    x, y, single = _class_scores(op, input, target)
    if tuple(y.shape) != tuple(x.shape):
        raise ShapeError(f"{op}(): argument 'target' must have the input's shape "
                         f"{fmt_shape(tuple(input.shape))}, but got "
                         f"{fmt_shape(tuple(target.shape))}", op=op, arg="target")
    # The listed prefix (before the first -1) as counts per class: a class listed twice
    # counts twice, as in PyTorch's loop over the target list.
    listed = _ops.cumprod((y != -1).long(), 1)
    counts = _ops.scatter_add(zeros_like(listed), 1, y.clamp_min(0), listed)
    counts = counts.to(x.dtype)
    others = (counts == 0).to(x.dtype)
    hinge = _ops.relu(1 - x.unsqueeze(2) + x.unsqueeze(1))   # [n, j, k]
    loss = (hinge * counts.unsqueeze(2) * others.unsqueeze(1)).sum([1, 2]) / x.shape[1]
    return _reduce(op, loss.squeeze(0) if single else loss, reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    """exp(x) - y * x (log_input) or x - y * log(x + eps); `full` adds Stirling's
    approximation of log(y!) where y > 1."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        stirling = target * target.log() - target + 0.5 * (2 * math.pi * target).log()
        loss = loss + _ops.masked_fill(stirling, target <= 1, 0.0)
    return _reduce("poisson_nll_loss", loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """0.5 * (log(var) + (x - y)^2 / var) (+ 0.5 * log(2 pi) when full). `var` has the
    input's shape, or one fewer dim, or a size-1 dim (one variance shared), or is a float.

    NOTE: var is clamped to eps in place on a copy, outside autograd, as PyTorch does: the
    gradient flows to var as if unclamped."""
    op = "gaussian_nll_loss"
    if isinstance(var, (int, float)):
        if var < 0:
            raise ArgumentError(f"{op}(): argument 'var' has negative entry/entries ({var})",
                                op=op, arg="var")
        var = full_like(input, float(var))
    elif bool((var < 0).any()):
        raise ArgumentError(f"{op}(): argument 'var' has negative entry/entries", op=op,
                            arg="var")
    in_shape, var_shape = tuple(input.shape), tuple(var.shape)
    if var_shape != in_shape:
        if in_shape[:-1] == var_shape:
            var = var.unsqueeze(-1)
        elif not (len(in_shape) == len(var_shape)
                  and sum(v for i, v in zip(in_shape, var_shape) if i != v) == 1):
            raise ShapeError(f"{op}(): argument 'var' is of incorrect size "
                             f"{fmt_shape(var_shape)} for input of shape "
                             f"{fmt_shape(in_shape)}", op=op, arg="var")
    if reduction not in ("none", "mean", "sum"):
        raise ArgumentError(f"{op}(): argument 'reduction' must be 'none', 'mean' or 'sum', "
                            f"but got {reduction!r}", op=op, arg="reduction")
    var = var.clone()
    with no_grad():
        var.clamp_min_(eps)
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(op, loss, reduction)


def _check_triplet_dims(op, anchor, positive, negative):
    dims = (anchor.dim(), positive.dim(), negative.dim())
    if len(set(dims)) != 1:
        raise ShapeError(f"{op}(): the anchor, positive, and negative tensors are expected to "
                         f"have the same number of dimensions, but got: anchor {dims[0]}D, "
                         f"positive {dims[1]}D, and negative {dims[2]}D inputs", op=op,
                         arg="anchor")


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """max(0, margin + d(a, p) - d(a, n)) with the p-norm distance d; swap=True uses
    min(d(a, n), d(p, n)) for the negative distance."""
    op = "triplet_margin_loss"
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_triplet_dims(op, anchor, positive, negative)
    d_pos = _ops.pairwise_distance(anchor, positive, float(p), eps, False)
    d_neg = _ops.pairwise_distance(anchor, negative, float(p), eps, False)
    if swap:
        d_neg = _ops.minimum(d_neg, _ops.pairwise_distance(positive, negative, float(p), eps,
                                                           False))
    return _reduce(op, (margin + d_pos - d_neg).clamp_min(0), reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """triplet_margin_loss with any distance (default: pairwise_distance)."""
    op = "triplet_margin_with_distance_loss"
    if margin <= 0:
        raise ArgumentError(f"{op}(): argument 'margin' must be greater than 0, but got "
                            f"{margin}", op=op, arg="margin")
    _check_triplet_dims(op, anchor, positive, negative)
    if distance_function is None:
        def distance_function(x1, x2):
            return _ops.pairwise_distance(x1, x2, 2.0, 1e-6, False)
    d_pos = distance_function(anchor, positive)
    d_neg = distance_function(anchor, negative)
    if swap:
        d_neg = _ops.minimum(d_neg, distance_function(positive, negative))
    return _reduce(op, (margin + d_pos - d_neg).clamp_min(0), reduction)


_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """Connectionist temporal classification: -log of the probability, summed over every
    alignment, that the frames log_probs (T, N, C) (log_softmax's output) spell targets.

    targets: (N, S) padded, or the N targets concatenated (1-D); input_lengths and
    target_lengths: one length per batch entry (lists or tensors). reduction 'mean'
    divides each loss by its target length before the batch mean."""
    if reduction not in _REDUCTIONS:
        raise ArgumentError(f"ctc_loss(): argument 'reduction' must be one of 'none', "
                            f"'mean', 'sum', but got {reduction!r}", op="ctc_loss",
                            arg="reduction")
    lengths = (input_lengths, target_lengths)
    if not all(hasattr(v, "tolist") for v in lengths):     # ctc_loss.IntList (or a mix)
        input_lengths, target_lengths = (v.tolist() if hasattr(v, "tolist") else list(v)
                                         for v in lengths)
    return _ops.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                         _REDUCTIONS[reduction], zero_infinity)
