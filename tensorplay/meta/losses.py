"""Shape and dtype rules of the losses that are kernels: nll_loss (forward and
backward), the fused cross-entropy pair, binary_cross_entropy_with_logits."""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay.errors import DTypeError, ShapeError, fmt_shape
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
    if tuple(_sizes(target)) != tuple(_sizes(self)):
        raise ShapeError(f"{op}(): argument 'target' must have the same shape as 'self' "
                         f"({fmt_shape(_sizes(self))}), but got {fmt_shape(_sizes(target))}",
                         op=op, arg="target")
    for name, t in (("weight", weight), ("pos_weight", pos_weight)):
        if t is not None and broadcast(op, [("self", _sizes(self)), (name, _sizes(t))]) \
                != tuple(_sizes(self)):
            raise ShapeError(f"{op}(): argument '{name}' (shape {fmt_shape(_sizes(t))}) must "
                             f"broadcast to the input's shape {fmt_shape(_sizes(self))}",
                             op=op, arg=name)
    sizes = _sizes(self) if reduction == "none" else ()
    # PyTorch computes the loss into (1 - target) in place: the result has target's dtype
    dtype = target._impl.dtype if target._impl.dtype.is_floating_point else self._impl.dtype
    return OutSpec(sizes, dtype)


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
