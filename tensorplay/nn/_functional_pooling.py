"""tp.nn.functional pooling: the 1-D and 2-D functions over the 2-D pooling ops.

A 1-D pooling is the 2-D one over a height-1 plane: (N, C, L) becomes (N, C, 1, L)
with a (1, k) kernel, and the flat indices of a 1 x L plane are the positions in L.
"""
from __future__ import annotations

from tensorplay._generated import functional as _ops
from tensorplay.errors import ArgumentError, ShapeError, fmt_shape

__all__ = ["max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d",
           "adaptive_avg_pool2d", "adaptive_max_pool1d", "adaptive_max_pool2d"]


def _pair(op, name, value):
    if value is None:
        return ()
    if isinstance(value, int) and not isinstance(value, bool):
        return (value, value)
    if isinstance(value, (list, tuple)) and len(value) in (1, 2):
        return tuple(value) * (2 // len(value))
    raise ArgumentError(f"{op}(): argument '{name}' must be an int or a pair of ints, but got "
                        f"{value!r}", op=op, arg=name)


def _single(op, name, value, height=1):
    """A 1-D argument as the 2-D one: (height, value); None (stride) stays ()."""
    if value is None:
        return ()
    if isinstance(value, (list, tuple)):
        if len(value) != 1:
            raise ArgumentError(f"{op}(): argument '{name}' must be an int or a 1-tuple, but "
                                f"got {value!r}", op=op, arg=name)
        value = value[0]
    return (height, value)


def _as_2d(op, input):
    if input.dim() not in (2, 3):
        raise ShapeError(f"{op}(): expected argument 'input' to be 2-D (C, L) or 3-D (N, C, L), "
                         f"but got shape {fmt_shape(tuple(input.shape))}", op=op, arg="input")
    return input.unsqueeze(-2)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    op = "max_pool2d"
    out, indices = _ops.max_pool2d_with_indices(
        input, _pair(op, "kernel_size", kernel_size), _pair(op, "stride", stride),
        _pair(op, "padding", padding), _pair(op, "dilation", dilation), ceil_mode)
    return (out, indices) if return_indices else out


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    op = "max_pool1d"
    out, indices = _ops.max_pool2d_with_indices(
        _as_2d(op, input), _single(op, "kernel_size", kernel_size),
        _single(op, "stride", stride), _single(op, "padding", padding, height=0),
        _single(op, "dilation", dilation), ceil_mode)
    out, indices = out.squeeze(-2), indices.squeeze(-2)
    return (out, indices) if return_indices else out


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    op = "avg_pool2d"
    return _ops.avg_pool2d(input, _pair(op, "kernel_size", kernel_size),
                           _pair(op, "stride", stride), _pair(op, "padding", padding),
                           ceil_mode, count_include_pad, divisor_override)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    op = "avg_pool1d"
    out = _ops.avg_pool2d(_as_2d(op, input), _single(op, "kernel_size", kernel_size),
                          _single(op, "stride", stride),
                          _single(op, "padding", padding, height=0), ceil_mode,
                          count_include_pad, None)
    return out.squeeze(-2)


def _adaptive_size(op, input, output_size):
    """output_size as a pair; None keeps the input's size along that dim."""
    size = _pair(op, "output_size", output_size) if output_size is not None else None
    if size is None or (isinstance(output_size, (list, tuple)) and None in output_size):
        given = output_size if isinstance(output_size, (list, tuple)) else (None, None)
        size = tuple(input.shape[-2 + i] if s is None else s for i, s in enumerate(given))
    return size


def adaptive_avg_pool2d(input, output_size):
    return _ops.adaptive_avg_pool2d(input, _adaptive_size("adaptive_avg_pool2d", input,
                                                          output_size))


def adaptive_avg_pool1d(input, output_size):
    op = "adaptive_avg_pool1d"
    return _ops.adaptive_avg_pool2d(_as_2d(op, input),
                                    _single(op, "output_size", output_size)).squeeze(-2)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    out, indices = _ops.adaptive_max_pool2d(
        input, _adaptive_size("adaptive_max_pool2d", input, output_size))
    return (out, indices) if return_indices else out


def adaptive_max_pool1d(input, output_size, return_indices=False):
    op = "adaptive_max_pool1d"
    out, indices = _ops.adaptive_max_pool2d(_as_2d(op, input),
                                            _single(op, "output_size", output_size))
    out, indices = out.squeeze(-2), indices.squeeze(-2)
    return (out, indices) if return_indices else out
