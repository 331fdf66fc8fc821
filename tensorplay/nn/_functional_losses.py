"""tp.nn.functional: losses, with PyTorch's signatures (see _functional_layers.py).

Each picks the op of ops.yaml and passes `reduction` on; the deprecated
`size_average` / `reduce` arguments are translated as PyTorch does.
"""
from __future__ import annotations

from tensorplay._generated import functional as _F

__all__ = [
    "nll_loss", "cross_entropy", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
    "margin_ranking_loss", "cosine_embedding_loss",
]


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
