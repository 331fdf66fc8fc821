"""Losses that PyTorch defines by composition: their gradients (first and higher order)
come from the ops they call. nll_loss and binary_cross_entropy_with_logits have CPU
kernels (cpu_kernels/losses.py); cross_entropy is log_softmax followed by nll_loss.
"""
from __future__ import annotations

import math

from tensorplay import _dtype as dt
from tensorplay._frontdoor import wrap_number
from tensorplay._generated import functional as F
from tensorplay._promotion import result_type
from tensorplay.errors import ArgumentError, DTypeError, ShapeError, fmt_shape
from tensorplay.meta._nn import check_floating, check_reduction
from tensorplay.meta.losses import nll_loss_forward as _check_nll


def reduce_loss(op, loss, reduction):
    check_reduction(op, reduction)
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _pointwise_args(op, self, target):
    check_floating(op, self)
    check_floating(op, target, "target")


def nll_loss(self, target, weight, reduction, ignore_index):
    _check_nll("nll_loss", (self, target, weight, reduction, ignore_index))
    if (self.dim() == 3 or self.dim() > 4) and self.numel() > 0:
        # As PyTorch, which runs these shapes as a 4-D nll_loss2d on contiguous copies:
        # a strided input or target is copied, and the copy is what backward saves.
        self = self.contiguous()
        if target.numel() > 0:
            target = target.contiguous()
    return F.nll_loss_forward(self, target, weight, reduction, ignore_index)[0]


def _class_dim(self):
    return 1 if self.dim() >= 2 else 0


def _weight_view(self, weight):
    """weight (C,) shaped to multiply an input (N, C, d1, ...) along the class dim."""
    shape = [1] * self.dim()
    shape[_class_dim(self)] = weight.shape[0]
    return weight.view(shape)


def cross_entropy_loss(self, target, weight, reduction, ignore_index, label_smoothing):
    """-sum(target * log_softmax(self)) per sample, from class indices or probabilities.

    label_smoothing s mixes the target with the uniform distribution:
    (1 - s) * loss(target) + s * mean over classes of loss(class).
    """
    op = "cross_entropy_loss"
    check_floating(op, self)
    check_reduction(op, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ArgumentError(f"{op}(): argument 'label_smoothing' must be between 0.0 and 1.0, "
                            f"but got {label_smoothing}", op=op, arg="label_smoothing")
    if self.dim() == 0:
        raise ShapeError(f"{op}(): argument 'self' must have at least 1 dimension (the "
                         f"classes), but got shape []", op=op, arg="self")
    if label_smoothing == 0.0 and self.dim() == 2 and self.device.type in ("cpu", "cuda") \
            and not target.dtype.is_floating_point:
        # The common case has a fused kernel: one pass for the loss, one for its gradient.
        return F._cross_entropy_forward(self, target, weight, reduction, ignore_index)[0]
    cdim = _class_dim(self)
    classes = self.shape[cdim]
    logp = F.log_softmax(self, cdim)
    if target.dtype.is_floating_point:
        return _cross_entropy_probs(op, self, logp, target, weight, reduction,
                                    ignore_index, label_smoothing, classes)
    if label_smoothing == 0.0:
        return F.nll_loss_forward(logp, target, weight, reduction, ignore_index)[0]
    nll, total_weight = F.nll_loss_forward(logp, target, weight, reduction, ignore_index)
    per_class = logp if weight is None else logp * _weight_view(self, weight)
    smooth = F.where(target == ignore_index, 0.0, -per_class.sum(cdim))
    if reduction == "mean":
        # nll_loss's total weight: the number of kept samples, or the sum of their weights.
        smooth = smooth.sum() / total_weight
    elif reduction == "sum":
        smooth = smooth.sum()
    # (no classes: PyTorch's label_smoothing / 0 is inf, times smooth, a sum of nothing,
    # is NaN; written as NaN here, which NumPy multiplies without an invalid-value warning)
    return nll * (1 - label_smoothing) + smooth * (label_smoothing / classes if classes
                                                   else math.nan)


def _cross_entropy_probs(op, self, logp, target, weight, reduction, ignore_index,
                         label_smoothing, classes):
    if tuple(target.shape) != tuple(self.shape):
        raise ShapeError(f"{op}(): class probabilities in argument 'target' must have the "
                         f"input's shape {fmt_shape(self.shape)}, but got "
                         f"{fmt_shape(target.shape)}", op=op, arg="target")
    if ignore_index >= 0:
        # a probability target has no class index to ignore; PyTorch refuses any index a
        # class could have (a negative one, the default -100, names none)
        raise ArgumentError(f"{op}(): argument 'ignore_index' is not supported for a "
                            f"floating point (class probabilities) target: expected a "
                            f"negative index, but got {ignore_index}", op=op,
                            arg="ignore_index")
    if label_smoothing > 0.0:
        # (no classes: nothing to smooth over, and nothing the target could reach)
        target = target * (1 - label_smoothing) + (label_smoothing / classes if classes
                                                   else 0.0)
    terms = logp * target
    if weight is not None:
        terms = terms * _weight_view(self, weight)
    if reduction == "mean" and self.numel() == 0:
        # PyTorch's: the sum of nothing filled with NaN, then negated, so the tangent is
        # fill_'s zero, negated (-0.0; a division by the 0 samples would make it NaN)
        return -(terms.sum().fill_(math.nan))
    loss = -terms.sum(_class_dim(self))
    if reduction == "mean":
        return loss.sum() / (self.numel() // classes)
    return reduce_loss(op, loss, reduction)


def _promoted_args(op, self, target, complex_ok=False):
    """mse_loss, l1_loss and smooth_l1_loss compute in the common dtype of self and target
    (a float32 input against an int32 target is float32, float16 against int32 float16),
    which must be a floating one (or complex, for l1_loss: |d| is real), as PyTorch's
    kernels do."""
    common = result_type(self, target)
    if not (common.is_floating_point or (complex_ok and common.is_complex)):
        raise DTypeError(f"{op}(): arguments 'self' and 'target' must have a floating point "
                         f"common dtype, but got {self.dtype.name} and {target.dtype.name}",
                         op=op, arg="self")
    return common


def mse_loss(self, target, reduction):
    common = _promoted_args("mse_loss", self, target)
    d = self.to(common) - target.to(common)
    return reduce_loss("mse_loss", d * d, reduction)


def l1_loss(self, target, reduction):
    _promoted_args("l1_loss", self, target, complex_ok=True)
    # self - target as it is: PyTorch's l1_loss subtracts first, and refuses a bool operand
    return reduce_loss("l1_loss", (self - target).abs(), reduction)


def smooth_l1_loss(self, target, reduction, beta):
    """0.5 * d**2 / beta where |d| < beta, |d| - 0.5 * beta elsewhere (l1 for beta = 0)."""
    op = "smooth_l1_loss"
    common = _promoted_args(op, self, target)
    if beta < 0:
        raise ArgumentError(f"{op}(): argument 'beta' must be non-negative, but got {beta}",
                            op=op, arg="beta")
    d = self.to(common) - target.to(common)
    if beta == 0:
        return reduce_loss(op, d.abs(), reduction)
    return reduce_loss(op, _huber(d, beta) / beta, reduction)


def _huber(d, delta):
    """0.5 * d**2 where |d| <= delta, delta * (|d| - 0.5 * delta) elsewhere, as c * (d - c / 2)
    with c = clamp(d, -delta, delta).

    NOTE: not where(|d| < delta, d * d / 2, ...): at an infinite d the unused branch's
    gradient would be 0 * inf = NaN; through the clamp it is +-delta, as in PyTorch."""
    c = F.clamp(d, -delta, delta)
    return c * (d - 0.5 * c)


def huber_loss(self, target, reduction, delta):
    """0.5 * d**2 where |d| < delta, delta * (|d| - 0.5 * delta) elsewhere."""
    op = "huber_loss"
    # PyTorch's kernel computes in the common dtype of self and target (an int32 target
    # is promoted) into a tensor like `self`: the loss has self's dtype, which must hold it
    common = _promoted_args(op, self, target)
    check_floating(op, self)
    if delta <= 0:
        raise ArgumentError(f"{op}(): argument 'delta' must be positive, but got {delta}",
                            op=op, arg="delta")
    d = self.to(common) - target.to(common)
    return reduce_loss(op, _huber(d, delta).to(self.dtype), reduction)


def _check_unit_interval(op, t, arg):
    if t.device.type == "meta" or t.numel() == 0:
        return
    # written as "not inside [0, 1]" so that a NaN fails it too, as in PyTorch
    if not bool(F.logical_and(t >= 0, t <= 1).all()):
        raise ArgumentError(f"{op}(): all elements of argument '{arg}' should be between 0 "
                            f"and 1", op=op, arg=arg)


def binary_cross_entropy(self, target, weight, reduction):
    """-w * (y * log(x) + (1 - y) * log(1 - x)), each log clamped at -100 as in PyTorch (so
    x = 0 or 1 gives a finite loss)."""
    op = "binary_cross_entropy"
    _pointwise_args(op, self, target)
    check_reduction(op, reduction)
    if tuple(target.shape) != tuple(self.shape):
        raise ShapeError(f"{op}(): argument 'target' must have the same shape as 'self' "
                         f"({fmt_shape(self.shape)}), but got {fmt_shape(target.shape)}",
                         op=op, arg="target")
    # PyTorch's kernel reads self and target as one dtype (the weight is multiplied in
    # afterwards, into the loss: any dtype, and the loss keeps self's)
    if target.dtype is not self.dtype:
        raise DTypeError(f"{op}(): argument 'target' must have the dtype of 'self' "
                         f"({self.dtype.name}), but got {target.dtype.name}", op=op, arg="target")
    _check_unit_interval(op, self, "self")
    _check_unit_interval(op, target, "target")
    floor = wrap_number(-100.0, self)
    log_x = F.maximum(F.log(self), floor)
    log_1mx = F.maximum(F.log(1 - self), floor)
    # self's terms first: the loss is laid out like self, as PyTorch's (empty_like(self)).
    loss = -(log_x * target + log_1mx * (1 - target))
    if weight is not None:
        # (a complex weight would be cast away silently: PyTorch refuses it)
        weighted = result_type(loss, weight)
        if not dt.can_cast(weighted, self.dtype):
            raise DTypeError(f"{op}(): result type {weighted.name} can't be cast to the "
                             f"desired output type {self.dtype.name} (argument 'weight' is "
                             f"{weight.dtype.name})", op=op, arg="weight")
        loss = (loss * weight).to(self.dtype)
    return reduce_loss(op, loss, reduction)


def kl_div(self, target, reduction, log_target):
    """target * (log(target) - self) pointwise (self holds log-probabilities); with
    log_target, exp(target) * (target - self)."""
    op = "kl_div"
    check_floating(op, self)
    if not target.dtype.is_floating_point:   # (it would promote: PyTorch refuses it)
        raise DTypeError(f"{op}(): argument 'target' must be a floating point tensor "
                         f"(integral and complex inputs are not supported), but got "
                         f"{target.dtype.name}", op=op, arg="target")
    if log_target:
        loss = F.exp(target) * (target - self)
    else:
        loss = F.xlogy(target, target) - target * self
    return reduce_loss(op, loss, reduction)


def margin_ranking_loss(input1, input2, target, margin, reduction):
    """max(0, -target * (input1 - input2) + margin)."""
    op = "margin_ranking_loss"
    for name, t in (("input1", input1), ("input2", input2), ("target", target)):
        if t.dim() != input1.dim():
            raise ShapeError(f"{op}(): arguments 'input1', 'input2' and 'target' must have "
                             f"the same number of dimensions, but '{name}' has {t.dim()} "
                             f"and 'input1' has {input1.dim()}", op=op, arg=name)
    # clamp_min, not relu: a NaN gets no gradient through it (PyTorch's clamp_min_)
    return reduce_loss(op, F.clamp_min(-target * (input1 - input2) + margin, 0), reduction)


def cosine_embedding_loss(input1, input2, target, margin, reduction):
    """1 - cos(x1, x2) where target == 1, max(0, cos(x1, x2) - margin) where target == -1."""
    op = "cosine_embedding_loss"
    if input1.dim() not in (1, 2) or input1.dim() != input2.dim() or \
            target.dim() != input1.dim() - 1:
        raise ShapeError(f"{op}(): expected 1-D or 2-D 'input1' and 'input2' with 'target' "
                         f"one dimension less, but got shapes {fmt_shape(input1.shape)}, "
                         f"{fmt_shape(input2.shape)} and {fmt_shape(target.shape)}", op=op,
                         arg="target")
    if not target.dtype.is_floating_point and target.dtype.name not in ("int64", "int32"):
        raise DTypeError(f"{op}(): argument 'target' must hold 1 or -1", op=op, arg="target")
    dim = input1.dim() - 1
    eps = 1e-12   # as in PyTorch: keeps a zero vector from dividing by zero
    prod = (input1 * input2).sum(dim)
    mag1 = (input1 * input1).sum(dim) + eps
    mag2 = (input2 * input2).sum(dim) + eps
    cos = prod / F.sqrt(mag1 * mag2)
    pos = F.where(target == 1, 1 - cos, 0.0)
    neg = F.where(target == -1, F.relu(cos - margin), 0.0)
    return reduce_loss(op, pos + neg, reduction)


# ---- ctc_loss -----------------------------------------------------------------------------
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=1,
             zero_infinity=False):
    """_ctc_loss's per-entry losses, reduced: 0 none, 1 mean (each loss divided by its
    target length, at least 1, then the batch mean), 2 sum. An unbatched (T, C) input is a
    batch of one; zero_infinity turns an impossible alignment's inf into 0."""
    if reduction not in (0, 1, 2):
        raise ArgumentError(f"ctc_loss(): argument 'reduction' must be 0 (none), 1 (mean) or "
                            f"2 (sum), but got {reduction}", op="ctc_loss", arg="reduction")
    input_lengths = [int(v) for v in input_lengths]
    target_lengths = [int(v) for v in target_lengths]
    # PyTorch's ctc_loss hands _ctc_loss its targets as int64 (`targets.to(kLong)`), so
    # float targets are labels too, truncated toward zero as any cast to an integer.
    targets = targets.to(dt.int64)
    unbatched = log_probs.dim() == 2
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        if targets.dim() == 1:
            targets = targets.unsqueeze(0)
    losses = F._ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                         zero_infinity)[0]
    if zero_infinity:
        losses = F.where(losses == float("inf"), 0.0, losses)
    if reduction == 1:
        divisor = losses.new_tensor(target_lengths).clamp(min=1)
        return (losses / divisor).mean()
    if reduction == 2:
        return losses.sum()
    return losses.squeeze(0) if unbatched else losses


def ctc_loss_tensor(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=1,
                    zero_infinity=False):
    """ctc_loss with the lengths as integer tensors (read on the host)."""
    for arg, t in (("input_lengths", input_lengths), ("target_lengths", target_lengths)):
        if t.dtype.is_floating_point or t.dtype.is_complex or t.dtype is dt.bool:
            raise DTypeError(f"ctc_loss(): argument '{arg}' must be an integer tensor, but "
                             f"got {t.dtype.name}", op="ctc_loss", arg=arg)
    return ctc_loss(log_probs, targets, input_lengths.tolist(), target_lengths.tolist(),
                    blank, reduction, zero_infinity)
