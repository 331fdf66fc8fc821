"""Shape and dtype rules of the activations (gelu, hardtanh, the backward ops); the
plain ones are pointwise.py's `unary_floating`."""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay.errors import ArgumentError
from tensorplay.kernel_support.checks import binary
from tensorplay.meta.pointwise import require_float, unary_floating, unary_no_bool


def threshold_backward(op, args):
    """grad_output and self broadcast together and promote, as a binary op."""
    grad_output, self, threshold = args
    return binary(op, (grad_output, self), names=("grad_output", "self"))


# ---- activations --------------------------------------------------------------------
def check_gelu_approximate(op, approximate):
    if approximate not in ("none", "tanh"):
        raise ArgumentError(f"{op}(): argument 'approximate' must be 'none' or 'tanh', but "
                            f"got {approximate!r}", op=op, arg="approximate")


def gelu(op, args):
    check_gelu_approximate(op, args[1])
    return unary_floating(op, args)


def activation_backward(op, args):
    """silu_backward, gelu_backward: grad_output and self broadcast; a floating result
    (PyTorch has no integer kernels)."""
    spec = binary(op, args[:2], names=("grad_output", "self"))
    if not spec.dtype.is_floating_point:
        require_float(op, "self", args[1])
        require_float(op, "grad_output", args[0])
    return spec


def gelu_backward(op, args):
    check_gelu_approximate(op, args[2])
    return activation_backward(op, args)


def hardtanh(op, args):
    self, min_val, max_val = args
    if self._impl.dtype is dt.uint8 and min_val < 0:
        raise ArgumentError(f"{op}(): cannot clamp an unsigned tensor (argument 'self' is "
                            f"uint8) to a negative limit (argument 'min_val' is {min_val})",
                            op=op, arg="min_val")
    return unary_no_bool(op, args)
