"""Loss layers: each calls its tp.nn.functional form with the settings it was built with.

`reduction` is 'mean' (default), 'sum' or 'none'; the deprecated `size_average` and
`reduce` flags are translated as PyTorch does. Per-class weights (and BCEWithLogitsLoss's
pos_weight) are buffers, so they move with `to()` and appear in the state_dict.
"""
from __future__ import annotations

import dataclasses
import math
import warnings
from collections import namedtuple

import tensorplay as tp
from tensorplay.errors import ArgumentError, DimError, ShapeError
from tensorplay.nn import functional as F
from tensorplay.nn._functional_losses import _legacy_reduction
from tensorplay.nn.modules.container import ModuleList, Sequential
from tensorplay.nn.modules.linear import Linear
from tensorplay.nn.modules.module import Module

__all__ = ["L1Loss", "MSELoss", "CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss",
           "KLDivLoss", "SmoothL1Loss", "HuberLoss", "MarginRankingLoss", "CosineEmbeddingLoss",
           "HingeEmbeddingLoss", "SoftMarginLoss", "MultiLabelSoftMarginLoss",
           "MultiLabelMarginLoss", "MultiMarginLoss", "TripletMarginLoss",
           "TripletMarginWithDistanceLoss", "PoissonNLLLoss", "GaussianNLLLoss", "CTCLoss",
           "NLLLoss2d", "AdaptiveLogSoftmaxWithLoss", "LinearCrossEntropyLoss",
           "LinearCrossEntropyOptions"]


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        self.reduction = _legacy_reduction(size_average, reduce, reduction)


class _WeightedLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class L1Loss(_Loss):
    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class MSELoss(_Loss):
    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class SoftMarginLoss(_Loss):
    def forward(self, input, target):
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    def forward(self, input, target):
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class NLLLoss(_WeightedLoss):
    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class NLLLoss2d(NLLLoss):
    """Deprecated: NLLLoss, which takes (N, C, H, W) inputs itself."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean"):
        warnings.warn("`NLLLoss2d` has been deprecated. Please use `NLLLoss` instead as a "
                      "drop-in replacement and see "
                      "https://pytorch.org/docs/main/nn.html#torch.nn.NLLLoss for more "
                      "details.", FutureWarning, stacklevel=2)
        super().__init__(weight, size_average, ignore_index, reduce, reduction)


class CrossEntropyLoss(_WeightedLoss):
    """Logits (N, C, ...) against class indices (N, ...) or class probabilities."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean", label_smoothing=0.0):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class BCELoss(_WeightedLoss):
    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Sigmoid and binary cross entropy in one (stable); pos_weight scales the positive
    term per class."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean",
                 pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight,
                                                  reduction=self.reduction,
                                                  pos_weight=self.pos_weight)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    def forward(self, input, target):
        return F.multilabel_soft_margin_loss(input, target, self.weight,
                                             reduction=self.reduction)


class KLDivLoss(_Loss):
    """KL(target || exp(input)); input is log-probabilities (target too if log_target)."""

    def __init__(self, size_average=None, reduce=None, reduction="mean", log_target=False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class SmoothL1Loss(_Loss):
    def __init__(self, size_average=None, reduce=None, reduction="mean", beta=1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class _MarginLoss(_Loss):
    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin


class MarginRankingLoss(_MarginLoss):
    def forward(self, input1, input2, target):
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin,
                                     reduction=self.reduction)


class CosineEmbeddingLoss(_MarginLoss):
    def forward(self, input1, input2, target):
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin,
                                       reduction=self.reduction)


class HingeEmbeddingLoss(_MarginLoss):
    def __init__(self, margin=1.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(margin, size_average, reduce, reduction)

    def forward(self, input, target):
        return F.hinge_embedding_loss(input, target, margin=self.margin,
                                      reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    def __init__(self, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                 reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        if p not in (1, 2):
            raise ArgumentError(f"MultiMarginLoss(): only p == 1 and p == 2 are supported, but "
                                f"got p={p}", op="MultiMarginLoss", arg="p")
        if weight is not None and weight.dim() != 1:
            raise ShapeError(f"MultiMarginLoss(): expected argument 'weight' to be None or "
                             f"a 1-D tensor, but got {weight.dim()}-D", op="MultiMarginLoss",
                             arg="weight")
        self.p = p
        self.margin = margin

    def forward(self, input, target):
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin,
                                   weight=self.weight, reduction=self.reduction)


class TripletMarginLoss(_Loss):
    def __init__(self, margin=1.0, p=2.0, eps=1e-6, swap=False, size_average=None,
                 reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ArgumentError(f"TripletMarginLoss(): argument 'margin' must be greater than "
                                f"0, but got {margin}", op="TripletMarginLoss", arg="margin")
        self.margin = margin
        self.p = p
        self.eps = eps
        self.swap = swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p,
                                     eps=self.eps, swap=self.swap, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """distance_function: any callable of two tensors (default: PairwiseDistance); a
    Module is registered as a child, as PyTorch does."""

    def __init__(self, *, distance_function=None, margin=1.0, swap=False, reduction="mean"):
        super().__init__(reduction=reduction)
        if margin <= 0:
            raise ArgumentError(f"TripletMarginWithDistanceLoss(): argument 'margin' must be "
                                f"greater than 0, but got {margin}",
                                op="TripletMarginWithDistanceLoss", arg="margin")
        self.distance_function = (distance_function if distance_function is not None
                                  else _PairwiseDistance())
        self.margin = margin
        self.swap = swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function,
            margin=self.margin, swap=self.swap, reduction=self.reduction)


class _PairwiseDistance(Module):
    """The default distance of TripletMarginWithDistanceLoss (named as PyTorch's
    nn.PairwiseDistance so the repr matches; that layer itself lives with the distances)."""

    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def _get_name(self):
        return "PairwiseDistance"

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class PoissonNLLLoss(_Loss):
    def __init__(self, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                 reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.log_input = log_input
        self.full = full
        self.eps = eps

    def forward(self, log_input, target):
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full,
                                  eps=self.eps, reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    def __init__(self, *, full=False, eps=1e-6, reduction="mean"):
        super().__init__(reduction=reduction)
        self.full = full
        self.eps = eps

    def forward(self, input, target, var):
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps,
                                   reduction=self.reduction)


class CTCLoss(_Loss):
    """Connectionist temporal classification loss (F.ctc_loss): forward(log_probs, targets,
    input_lengths, target_lengths)."""

    def __init__(self, blank=0, reduction="mean", zero_infinity=False):
        super().__init__(reduction=reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank,
                          self.reduction, self.zero_infinity)


_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Efficient softmax over many classes (Grave et al. 2016): the `cutoffs[0]` frequent
    classes and one entry per cluster share a head; the rarer classes, in clusters between
    consecutive cutoffs, get a smaller projection each (in_features / div_value^(i + 1)).

        log p(c) = head_logprob[c]                                  c < cutoffs[0]
                 = head_logprob[cluster of c] + cluster_logprob[c]  otherwise

    forward(input, target) returns (output: log p(target) per row, loss: -mean of it)."""

    def __init__(self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False,
                 device=None, dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers "
                             "sorted in an increasing order, where each value is between 1 "
                             "and n_classes-1")
        factory = {"device": device, "dtype": dtype}
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, **factory)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            self.tail.append(Sequential(
                Linear(in_features, hidden, bias=False, **factory),
                Linear(hidden, self.cutoffs[i + 1] - self.cutoffs[i], bias=False, **factory)))

    def reset_parameters(self):
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_, target_):
        op = "AdaptiveLogSoftmaxWithLoss.forward"
        if target_.dim() == 1:
            if input_.shape[0] != target_.shape[0]:
                raise ShapeError(f"{op}(): argument 'input' and argument 'target' should have "
                                 f"the same size in the batch dimension", op=op, arg="target")
            if input_.dim() != 2:
                raise ShapeError(f"{op}(): a 1D target tensor expects a 2D argument 'input', "
                                 f"but found shape {list(input_.shape)}", op=op, arg="input")
        elif target_.dim() == 0:
            if input_.dim() != 1:
                raise ShapeError(f"{op}(): a 0D target tensor expects a 1D argument 'input', "
                                 f"but found shape {list(input_.shape)}", op=op, arg="input")
        else:
            raise ShapeError(f"{op}(): a 0D or 1D argument 'target' expected, multi-target "
                             f"not supported", op=op, arg="target")
        batched = target_.dim() > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        if target.numel() and (target.min().item() < 0
                               or target.max().item() > self.n_classes - 1):
            raise DimError(f"{op}(): Target values should be in [0, {self.n_classes - 1}], "
                           f"but values in range [{target.min().item()}, "
                           f"{target.max().item()}] were found", op=op, arg="target")
        output = input.new_zeros(target.shape[0])
        # the head's column of each row: its class, or its cluster's entry
        head_column = target
        for i in range(1, len(self.cutoffs)):
            low, high = self.cutoffs[i - 1], self.cutoffs[i]
            in_cluster = (target >= low) & (target < high)
            rows = in_cluster.nonzero().reshape(-1)
            if rows.numel() == 0:
                continue
            cluster_logprob = F.log_softmax(self.tail[i - 1](input.index_select(0, rows)), 1)
            local = cluster_logprob.gather(1, (target.index_select(0, rows) - low)
                                           .unsqueeze(1)).squeeze(1)
            output = output.index_add(0, rows, local)
            head_column = tp.where(in_cluster, self.shortlist_size + i - 1, head_column)
        head_logprob = F.log_softmax(self.head(input), 1)
        output = output + head_logprob.gather(1, head_column.unsqueeze(1)).squeeze(1)
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _get_full_log_prob(self, input, head_output):
        head_logprob = F.log_softmax(head_output, 1)
        parts = [head_logprob[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster_logprob = F.log_softmax(self.tail[i](input), 1)
            parts.append(cluster_logprob + head_logprob[:, self.shortlist_size + i]
                         .unsqueeze(1))
        return tp.cat(parts, 1)

    def log_prob(self, input):
        """log p(c) for every class c: (N, n_classes)."""
        return self._get_full_log_prob(input, self.head(input))

    def predict(self, input):
        """The most likely class of each row (log_prob(input).argmax(1), skipping the
        clusters when every row's best head entry is a shortlist class)."""
        head_output = self.head(input)
        best = head_output.argmax(1)
        if not (best >= self.shortlist_size).any().item():
            return best
        return self._get_full_log_prob(input, head_output).argmax(1)


@dataclasses.dataclass(slots=True, frozen=True)
class LinearCrossEntropyOptions:
    """PyTorch's options of the chunked linear_cross_entropy (the batch in pieces, so the
    (N, C) logits never exist at once). Validated as PyTorch validates them; TensorPlay's
    linear_cross_entropy computes the same loss on its reference path whatever they say.

    allow_retain_graph   allow a second backward through the scalar reductions
    batch_chunk_size     rows per chunk (None: one chunk, or chunking_method's pick)
    chunking_method      "auto", "aspect_ratio", "aspect_ratio:N" or None
    acc_policy           "auto", "accurate", "balanced" or "compact"
    acc_dtype            the accumulation dtype (None: picked per input)"""
    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None

    def __post_init__(self):
        if self.acc_policy not in {"auto", "accurate", "balanced", "compact"}:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method is not None and self.chunking_method != "auto":
            name, sep, factor = self.chunking_method.partition(":")
            if not sep:
                factor = "1"
            if not (name == "aspect_ratio" and factor.isdigit() and int(factor) > 0):
                raise ValueError(f"invalid chunking_method: {self.chunking_method!r}")
        if not (self.batch_chunk_size is None or (isinstance(self.batch_chunk_size, int)
                                                  and self.batch_chunk_size > 0)):
            raise ValueError(f"batch_chunk_size must be positive int or None, got "
                             f"{self.batch_chunk_size!r}")
        if self.acc_dtype is not None and self.acc_dtype not in (
                tp.float16, tp.bfloat16, tp.float32, tp.float64):
            raise ValueError(f"acc_dtype must be one of {{None, float16, bfloat16, float32, "
                             f"float64}}, got {self.acc_dtype!r}")


class LinearCrossEntropyLoss(_WeightedLoss):
    """cross entropy of a Linear(in_features, num_classes * prod(out_features)) map of the
    input (F.linear_cross_entropy): the linear layer is this loss's own parameter."""

    def __init__(self, in_features, num_classes, *, out_features=(), bias=False, device=None,
                 dtype=None, reduction="mean", weight=None, ignore_index=None,
                 label_smoothing=0.0, options=None):
        op = "LinearCrossEntropyLoss"
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise ShapeError(f"{op}(): expected argument 'weight' shape to be "
                             f"{(num_classes,)}, got {tuple(weight.shape)}", op=op,
                             arg="weight")
        if not 0 <= label_smoothing <= 1.0:
            raise ArgumentError(f"{op}(): expected argument 'label_smoothing' to be in range "
                                f"[0, 1], got {label_smoothing}", op=op,
                                arg="label_smoothing")
        super().__init__(weight=weight, reduction=reduction)
        self.num_classes = num_classes
        self.out_features = out_features
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        # Linear holds 2-D weights: (C * prod(out_features), in), reshaped in forward.
        self.linear = Linear(in_features, math.prod(out_features, start=num_classes),
                             bias=bias, device=device, dtype=dtype)
        self.options = options

    def forward(self, input, target):
        linear_weight = self.linear.weight.reshape(
            (self.num_classes, *self.out_features, self.linear.in_features))
        linear_bias = None if self.linear.bias is None else \
            self.linear.bias.reshape((self.num_classes, *self.out_features))
        return F.linear_cross_entropy(input, linear_weight, target, linear_bias=linear_bias,
                                      weight=self.weight, reduction=self.reduction,
                                      ignore_index=self.ignore_index,
                                      label_smoothing=self.label_smoothing,
                                      options=self.options)

    def extra_repr(self):
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
                f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
                f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")
