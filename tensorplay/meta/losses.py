"""Shape and dtype rules of the losses that are kernels: nll_loss (forward and
backward), the fused cross-entropy pair, binary_cross_entropy_with_logits."""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay.errors import ArgumentError, DTypeError, ShapeError, fmt_shape
from tensorplay.kernel_support.checks import OutSpec, broadcast, check_devices
from tensorplay.meta._nn import check_floating, check_reduction, check_size


def _sizes(t):
    return t._impl.sizes


# ---- losses -------------------------------------------------------------------------
def _class_layout(op, self, target):
    """(N-and-spatial sizes, C) of an nll input (N, C, d1, ...) or (C,), checked against
    the target's shape (N, d1, ...) or ()."""
    sizes = _sizes(self)
    if len(sizes) == 0:
        raise ShapeError(f"{op}(): argument 'self' must have at least 1 dimension (the "
                         f"classes), but got shape []", op=op, arg="self")
    if len(sizes) == 1:
        expected, classes = (), sizes[0]
    else:
        expected, classes = (sizes[0],) + tuple(sizes[2:]), sizes[1]
    if tuple(_sizes(target)) != expected:
        raise ShapeError(f"{op}(): argument 'target' must have shape {fmt_shape(expected)} "
                         f"for an input of shape {fmt_shape(sizes)}, but got "
                         f"{fmt_shape(_sizes(target))}", op=op, arg="target")
    return expected, classes


def nll_loss_forward(op, args):
    self, target, weight, reduction, ignore_index = args
    check_floating(op, self)
    if target._impl.dtype not in (dt.int64, dt.uint8):
        raise DTypeError(f"{op}(): argument 'target' must be an int64 (or uint8) tensor of "
                         f"class indices, but got {target._impl.dtype.name}", op=op,
                         arg="target")
    check_reduction(op, reduction)
    check_devices(op, [("self", self), ("target", target)] +
                  ([("weight", weight)] if weight is not None else []))
    batch, classes = _class_layout(op, self, target)
    check_size(op, weight, "weight", (classes,), "one weight per class")
    d = self._impl.dtype
    # PyTorch's kernel reads the weights as self's scalar type
    if weight is not None and weight._impl.dtype is not d:
        raise DTypeError(f"{op}(): argument 'weight' must have the dtype of 'self' ({d.name}), "
                         f"but got {weight._impl.dtype.name}", op=op, arg="weight")
    return OutSpec(batch if reduction == "none" else (), d), OutSpec((), d)


def nll_loss_backward(op, args):
    grad_output, self, target, weight, reduction, ignore_index, total_weight = args
    nll_loss_forward(op, (self, target, weight, reduction, ignore_index))
    return OutSpec(_sizes(self), self._impl.dtype)


def bce_with_logits(op, args):
    self, target, weight, pos_weight, reduction = args
    check_floating(op, self)
    check_reduction(op, reduction)
    if target._impl.dtype.is_complex:
        # (PyTorch computes a complex loss, without a gradient: not supported here)
        raise DTypeError(f"{op}(): a complex target is not supported (argument 'target' is "
                         f"{target._impl.dtype.name}; expected a real tensor)", op=op,
                         arg="target")
    if not target._impl.dtype.is_floating_point:
        # PyTorch computes the loss into (1 - target) in place: a float loss cannot be
        # written into an integer target's dtype (and 1 - a bool target is refused)
        raise DTypeError(f"{op}(): argument 'target' must be a floating point tensor (the "
                         f"loss is computed in its dtype), but got "
                         f"{target._impl.dtype.name}", op=op, arg="target")
    if tuple(_sizes(target)) != tuple(_sizes(self)):
        raise ShapeError(f"{op}(): argument 'target' must have the same shape as 'self' "
                         f"({fmt_shape(_sizes(self))}), but got {fmt_shape(_sizes(target))}",
                         op=op, arg="target")
    _check_bce_weights(op, weight, pos_weight)
    for name, t in (("weight", weight), ("pos_weight", pos_weight)):
        if t is not None and broadcast(op, [("self", _sizes(self)), (name, _sizes(t))]) \
                != tuple(_sizes(self)):
            raise ShapeError(f"{op}(): argument '{name}' (shape {fmt_shape(_sizes(t))}) must "
                             f"broadcast to the input's shape {fmt_shape(_sizes(self))}",
                             op=op, arg=name)
    sizes = _sizes(self) if reduction == "none" else ()
    # PyTorch computes the loss into (1 - target) in place: the result has target's dtype
    return OutSpec(sizes, target._impl.dtype)


def _check_bce_weights(op, weight, pos_weight):
    """PyTorch multiplies the loss by the weights in place, into a real tensor (the log-
    sigmoid of the input by (pos_weight - 1) * target + 1, the loss by weight): a complex
    weight's product cannot be cast back to it; and pos_weight - 1 refuses a bool."""
    for name, t in (("weight", weight), ("pos_weight", pos_weight)):
        if t is not None and t._impl.dtype.is_complex:
            raise DTypeError(f"{op}(): argument '{name}' must be real, but got "
                             f"{t._impl.dtype.name} (the loss is multiplied by it in place, "
                             f"and a complex product cannot be cast to the real loss)",
                             op=op, arg=name)
    if pos_weight is not None and pos_weight._impl.dtype is dt.bool:
        raise DTypeError(f"{op}(): argument 'pos_weight' must not be bool (the loss "
                         f"subtracts 1 from it, and subtraction with bool tensors is not "
                         f"supported)", op=op, arg="pos_weight")


def cross_entropy_forward(op, args):
    """The fused cross-entropy kernel's case: (N, C) logits and (N,) class indices."""
    self, target, weight, reduction, ignore_index = args
    if len(_sizes(self)) != 2:
        raise ShapeError(f"{op}(): argument 'self' must be 2-D (N, C), but got shape "
                         f"{fmt_shape(_sizes(self))}", op=op, arg="self")
    spec, total = nll_loss_forward(op, args)
    return spec, OutSpec(_sizes(self), self._impl.dtype), total


def cross_entropy_backward(op, args):
    grad_output, probs, target, weight, reduction, ignore_index, total_weight = args
    cross_entropy_forward(op, (probs, target, weight, reduction, ignore_index))
    return OutSpec(_sizes(probs), probs._impl.dtype)


# ---- _ctc_loss and its backward --------------------------------------------------------
def check_ctc(op, log_probs, targets, input_lengths, target_lengths, blank):
    """PyTorch's ctc_loss checks; (T, N, C, S) with S the longest target."""
    sizes = _sizes(log_probs)
    if len(sizes) != 3:
        raise ShapeError(f"{op}(): argument 'log_probs' must be 3-D (T, N, C), but got shape "
                         f"{fmt_shape(sizes)}", op=op, arg="log_probs")
    check_floating(op, log_probs, "log_probs")
    if targets._impl.dtype not in (dt.int64, dt.int32):
        raise DTypeError(f"{op}(): argument 'targets' must be an int64 or int32 tensor, but "
                         f"got {targets._impl.dtype.name}", op=op, arg="targets")
    T, N, C = sizes
    if not 0 <= blank < C:
        raise ArgumentError(f"{op}(): argument 'blank' must be in label range [0, {C}), but "
                            f"got {blank}", op=op, arg="blank")
    for name, lengths in (("input_lengths", input_lengths),
                          ("target_lengths", target_lengths)):
        if len(lengths) != N:
            raise ShapeError(f"{op}(): argument '{name}' must be of size batch_size ({N}), "
                             f"but got {len(lengths)} lengths", op=op, arg=name)
        if any(v < 0 for v in lengths):
            raise ArgumentError(f"{op}(): argument '{name}' must be non-negative, but got "
                                f"{list(lengths)}", op=op, arg=name)
    if any(v > T for v in input_lengths):
        raise ArgumentError(f"{op}(): expected argument 'input_lengths' to have value at most "
                            f"{T}, but got {list(input_lengths)}", op=op, arg="input_lengths")
    S = max(target_lengths, default=0)
    tsizes = _sizes(targets)
    if len(tsizes) == 1:
        if tsizes[0] < sum(target_lengths):
            raise ShapeError(f"{op}(): argument 'targets' (1-D: the targets concatenated) "
                             f"must hold sum(target_lengths) = {sum(target_lengths)} labels, "
                             f"but got {tsizes[0]}", op=op, arg="targets")
    elif len(tsizes) == 2:
        if tsizes[0] != N or tsizes[1] < S:
            raise ShapeError(f"{op}(): argument 'targets' (2-D: one padded row per batch "
                             f"entry) must have shape [{N}, >= {S}], but got "
                             f"{fmt_shape(tsizes)}", op=op, arg="targets")
    else:
        raise ShapeError(f"{op}(): argument 'targets' must be 1-D or 2-D, but got shape "
                         f"{fmt_shape(tsizes)}", op=op, arg="targets")
    check_devices(op, [("log_probs", log_probs), ("targets", targets)])
    return T, N, C, S


def ctc_loss(op, args):
    log_probs, targets, input_lengths, target_lengths, blank = args[:5]
    T, N, C, S = check_ctc(op, log_probs, targets, input_lengths, target_lengths, blank)
    dtype = log_probs._impl.dtype
    return OutSpec((N,), dtype), OutSpec((N, T, 2 * S + 1), dtype)


def ctc_loss_backward(op, args):
    grad, log_probs, targets, input_lengths, target_lengths, nll, log_alpha, blank = args[:8]
    T, N, C, S = check_ctc(op, log_probs, targets, input_lengths, target_lengths, blank)
    if tuple(_sizes(grad)) not in ((N,), ()):
        raise ShapeError(f"{op}(): argument 'grad' must have shape [{N}] (one gradient per "
                         f"batch entry), but got {fmt_shape(_sizes(grad))}", op=op, arg="grad")
    if tuple(_sizes(log_alpha)) != (N, T, 2 * S + 1):
        raise ShapeError(f"{op}(): argument 'log_alpha' must have shape "
                         f"{fmt_shape((N, T, 2 * S + 1))}, but got "
                         f"{fmt_shape(_sizes(log_alpha))}", op=op, arg="log_alpha")
    return OutSpec((T, N, C), log_probs._impl.dtype)
