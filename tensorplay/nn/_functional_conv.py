"""tp.nn.functional: the spatial half (see functional.py).

Convolutions here (pooling, resampling... each in its family's _functional_<family>.py).
Convolutions all call the one `convolution` op; these functions only turn PyTorch's
convenient arguments (an int for a tuple, padding="same", an unbatched input) into
its explicit ones.
"""
from __future__ import annotations

from tensorplay._generated import functional as _ops
from tensorplay._generated.functional import conv_tbc  # noqa: F401
from tensorplay.errors import ArgumentError, ShapeError, fmt_shape

__all__ = ["conv1d", "conv2d", "conv3d",
           "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "conv_tbc"]


def _tuple(op, name, value, n):
    """An int or a sequence of n ints, as a tuple of n ints."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,) * n
    if isinstance(value, (list, tuple)) and len(value) == n \
            and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return tuple(value)
    if isinstance(value, (list, tuple)) and len(value) == 1 and isinstance(value[0], int):
        return (value[0],) * n
    raise ArgumentError(f"{op}(): argument '{name}' must be an int or a sequence of {n} ints, "
                        f"but got {value!r}", op=op, arg=name)


def _batched(op, input, n):
    """(input with a batch dim, whether one was added): PyTorch accepts unbatched input."""
    d = input.dim()
    if d == n + 2:
        return input, False
    if d == n + 1:
        return input.unsqueeze(0), True
    raise ShapeError(f"{op}(): expected argument 'input' to be {n + 1}-D (unbatched) or "
                     f"{n + 2}-D (batched), but got {d}-D input of shape "
                     f"{fmt_shape(tuple(input.shape))}", op=op, arg="input")


def _same_padding(op, weight, stride, dilation, n):
    """padding="same": (symmetric padding, extra right padding per dim) so out == in."""
    if any(s != 1 for s in stride):
        raise ArgumentError(f"{op}(): padding='same' is not supported for strided "
                            f"convolutions (argument 'padding', stride {list(stride)})",
                            op=op, arg="padding")
    total = [d * (k - 1) for d, k in zip(dilation, tuple(weight.shape[2:]))]
    return tuple(t // 2 for t in total), tuple(t % 2 for t in total)


def _conv(op, n, input, weight, bias, stride, padding, dilation, groups):
    stride = _tuple(op, "stride", stride, n)
    dilation = _tuple(op, "dilation", dilation, n)
    extra = (0,) * n
    if isinstance(padding, str):
        if padding == "valid":
            padding = (0,) * n
        elif padding == "same":
            padding, extra = _same_padding(op, weight, stride, dilation, n)
        else:
            raise ArgumentError(f"{op}(): argument 'padding' must be 'valid', 'same' or "
                                f"ints, but got {padding!r}", op=op, arg="padding")
    else:
        padding = _tuple(op, "padding", padding, n)
    x, unbatched = _batched(op, input, n)
    if any(extra):
        # An odd total padding: the extra element goes on the right, as in PyTorch.
        pads = []
        for e in reversed(extra):
            pads += [0, e]
        x = _ops.constant_pad_nd(x, pads, 0)
    out = _ops.convolution(x, weight, bias, stride, padding, dilation, False, (0,) * n, groups)
    return out.squeeze(0) if unbatched else out


def _conv_transpose(op, n, input, weight, bias, stride, padding, output_padding, groups,
                    dilation):
    stride = _tuple(op, "stride", stride, n)
    padding = _tuple(op, "padding", padding, n)
    output_padding = _tuple(op, "output_padding", output_padding, n)
    dilation = _tuple(op, "dilation", dilation, n)
    x, unbatched = _batched(op, input, n)
    out = _ops.convolution(x, weight, bias, stride, padding, dilation, True, output_padding,
                           groups)
    return out.squeeze(0) if unbatched else out


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution over (N, C, L) or (C, L); padding may be 'valid' or 'same'."""
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution over (N, C, H, W) or (C, H, W); padding may be 'valid' or 'same'.

    >>> x = tp.randn(1, 3, 8, 8); w = tp.randn(4, 3, 3, 3)
    >>> tp.nn.functional.conv2d(x, w, padding=1).shape
    (1, 4, 8, 8)
    """
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """The adjoint of conv2d (a "deconvolution"); weight is (C_in, C_out / groups, kH, kW)."""
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    return _conv_transpose("conv_transpose3d", 3, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)
