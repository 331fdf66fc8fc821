"""Shape and dtype rules of padding: constant_pad_nd, and reflect / replicate /
circular padding (_pad_nd and its backward)."""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay.errors import ArgumentError, DTypeError, ShapeError, fmt_shape
from tensorplay.kernel_support.checks import OutSpec


def _sizes(t):
    return t._impl.sizes


# ---- padding ------------------------------------------------------------------------
def check_pad_list(op, pad, ndim):
    if len(pad) % 2:
        raise ArgumentError(f"{op}(): argument 'pad' must have an even length (a (left, right) "
                            f"pair per dim, last dim first), but got {list(pad)}", op=op,
                            arg="pad")
    if len(pad) // 2 > ndim:
        raise ArgumentError(f"{op}(): argument 'pad' ({list(pad)}) pads {len(pad) // 2} dims, "
                            f"but the input has only {ndim}", op=op, arg="pad")


def padded_sizes(op, sizes, pad):
    out = list(sizes)
    for i in range(len(pad) // 2):
        d = len(sizes) - 1 - i
        out[d] = sizes[d] + pad[2 * i] + pad[2 * i + 1]
        if out[d] < 0:
            raise ShapeError(f"{op}(): argument 'pad' ({list(pad)}) would make dim {d} of size "
                             f"{sizes[d]} negative ({out[d]})", op=op, arg="pad")
    return tuple(out)


def _check_crops(op, sizes, pad):
    """constant_pad_nd crops by the negative pads first (PyTorch narrows), then pads: the
    crops alone must leave each dim non-negative, even where the positive pad on its other
    side would make up for it ((1, -1) on an empty dim)."""
    for i in range(len(pad) // 2):
        d = len(sizes) - 1 - i
        left = sizes[d] + min(pad[2 * i], 0) + min(pad[2 * i + 1], 0)
        if left < 0:
            raise ShapeError(f"{op}(): the negative entries of argument 'pad' ({list(pad)}) "
                             f"crop {sizes[d] - left} elements off dim {d} of size "
                             f"{sizes[d]}", op=op, arg="pad")


def constant_pad_nd(op, args):
    self, pad, value = args
    check_pad_list(op, pad, len(_sizes(self)))
    _check_crops(op, _sizes(self), pad)
    return OutSpec(padded_sizes(op, _sizes(self), pad), self._impl.dtype)


PAD_MODES = ("reflect", "replicate", "circular")


def check_pad_nd(op, sizes, dtype, pad, mode):
    if mode not in PAD_MODES:
        raise ArgumentError(f"{op}(): argument 'mode' must be one of {', '.join(PAD_MODES)}, "
                            f"but got {mode!r}", op=op, arg="mode")
    check_pad_list(op, pad, len(sizes))
    n = len(pad) // 2
    if n not in (1, 2, 3) or len(sizes) not in (n + 1, n + 2):
        raise ShapeError(f"{op}(): {mode} padding of {n} dim(s) (argument 'pad' "
                         f"{list(pad)}) needs a {n + 1}-D or {n + 2}-D input, but got shape "
                         f"{fmt_shape(sizes)}", op=op, arg="pad")
    if mode != "circular" and dtype is dt.bool:
        raise DTypeError(f"{op}(): {mode} padding is not implemented for bool tensors "
                         f"(argument 'self' is bool)", op=op, arg="self")
    # PyTorch's reflect and replicate kernels take an empty batch, but no other empty dim
    # (a 0 channel or spatial size has nothing to reflect or repeat), whatever the pads.
    batched = len(sizes) == n + 2
    if mode != "circular" and 0 in sizes[int(batched):]:
        raise ShapeError(f"{op}(): {mode} padding expects a {n + 1}-D or {n + 2}-D (batch "
                         f"mode) input with possibly 0 batch size and other non-zero "
                         f"dimensions, but argument 'self' has shape {fmt_shape(sizes)}",
                         op=op, arg="self")
    for i in range(n):
        d = len(sizes) - 1 - i
        size, left, right = sizes[d], pad[2 * i], pad[2 * i + 1]
        limit = size - 1 if mode == "reflect" else size
        if mode == "replicate":
            ok = size > 0
        else:
            ok = max(left, right) <= limit
        if not ok:
            raise ShapeError(f"{op}(): {mode} padding ({left}, {right}) of dim {d} must be "
                             f"{'at most' if mode == 'circular' else 'less than'} its size "
                             f"{size} (argument 'pad')", op=op, arg="pad")


def pad_nd(op, args):
    self, pad, mode = args
    check_pad_nd(op, _sizes(self), self._impl.dtype, pad, mode)
    return OutSpec(padded_sizes(op, _sizes(self), pad), self._impl.dtype)


def pad_nd_backward(op, args):
    grad_output, input_sizes, pad, mode = args
    check_pad_nd(op, tuple(input_sizes), grad_output._impl.dtype, pad, mode)
    expected = padded_sizes(op, tuple(input_sizes), pad)
    if tuple(_sizes(grad_output)) != expected:
        raise ShapeError(f"{op}(): argument 'grad_output' must have the padded shape "
                         f"{fmt_shape(expected)}, but got {fmt_shape(_sizes(grad_output))}",
                         op=op, arg="grad_output")
    return OutSpec(tuple(input_sizes), grad_output._impl.dtype)
