"""tp.nn.functional pooling: the 1-D and 2-D functions over the 2-D pooling ops, the 3-D
ones over the 3-D ops, and fractional max pooling.

A 1-D pooling is the 2-D one over a height-1 plane: (N, C, L) becomes (N, C, 1, L)
with a (1, k) kernel, and the flat indices of a 1 x L plane are the positions in L.
"""
from __future__ import annotations

import numpy as np

from tensorplay._creation import rand, tensor, zeros
from tensorplay._generated import functional as _ops
from tensorplay.composite.pooling import adaptive_avg_pool
from tensorplay.errors import ArgumentError, ShapeError, fmt_shape

__all__ = ["max_pool2d", "max_pool1d", "avg_pool2d", "avg_pool1d", "adaptive_avg_pool2d",
           "adaptive_avg_pool1d", "adaptive_max_pool2d", "adaptive_max_pool1d", "lp_pool2d",
           "lp_pool1d", "max_unpool2d", "max_unpool1d", "max_pool1d_with_indices",
           "max_pool2d_with_indices", "adaptive_max_pool1d_with_indices",
           "adaptive_max_pool2d_with_indices", "max_pool3d", "max_pool3d_with_indices",
           "avg_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool3d",
           "adaptive_max_pool3d_with_indices", "lp_pool3d", "max_unpool3d",
           "fractional_max_pool2d", "fractional_max_pool2d_with_indices",
           "fractional_max_pool3d", "fractional_max_pool3d_with_indices"]


def _pair(op, name, value):
    return _ntuple(op, name, value, 2)


def _triple(op, name, value):
    return _ntuple(op, name, value, 3)


def _ntuple(op, name, value, n):
    """An int (or a 1-tuple) repeated n times, or n of them as a tuple; None stays ()."""
    if value is None:
        return ()
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,) * n
    if isinstance(value, (list, tuple)) and len(value) in (1, n):
        return tuple(value) * (n // len(value))
    what = "a pair" if n == 2 else "a triple"
    raise ArgumentError(f"{op}(): argument '{name}' must be an int or {what} of ints, but got "
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


def _adaptive_size(op, input, output_size, n=2):
    """output_size as n ints; None keeps the input's size along that dim."""
    if output_size is None or (isinstance(output_size, (list, tuple)) and None in output_size):
        given = output_size if isinstance(output_size, (list, tuple)) else (None,) * n
        return tuple(input.shape[-n + i] if s is None else s for i, s in enumerate(given))
    return _ntuple(op, "output_size", output_size, n)


def adaptive_avg_pool2d(input, output_size):
    return adaptive_avg_pool(input, _adaptive_size("adaptive_avg_pool2d", input, output_size),
                             2)


def adaptive_avg_pool1d(input, output_size):
    op = "adaptive_avg_pool1d"
    return adaptive_avg_pool(_as_2d(op, input), _single(op, "output_size", output_size),
                             2).squeeze(-2)


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


def _pow(input, exponent):
    """input ** exponent with the exponent as a tensor of the input's dtype.

    NOTE: works around the float exponent of pow.Tensor_Scalar, whose gradient is
    computed at float32 precision (x ** 0.6 in float64 is off by ~1e-8)."""
    return input.pow(tensor(float(exponent), dtype=input.dtype, device=input.device))


def _power_average(avg, kernel_area, norm_type):
    """(area * avg(x^p))^(1/p); relu(|.|) * sign keeps PyTorch's gradient at 0."""
    return _pow((_ops.sign(avg) * _ops.relu(avg.abs())).mul(kernel_area), 1.0 / norm_type)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum of x^p over each window)^(1/p)."""
    kh, kw = _pair("lp_pool2d", "kernel_size", kernel_size)
    avg = avg_pool2d(_pow(input, norm_type), kernel_size, stride, 0, ceil_mode)
    return _power_average(avg, kh * kw, norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    avg = avg_pool1d(_pow(input, norm_type), kernel_size, stride, 0, ceil_mode)
    k = kernel_size[0] if isinstance(kernel_size, (list, tuple)) else kernel_size
    return _power_average(avg, k, norm_type)


def _unpool_size(op, spatial, kernel, stride, padding, output_size):
    default = tuple((s - 1) * st - 2 * pd + k
                    for s, k, st, pd in zip(spatial, kernel, stride, padding))
    if output_size is None:
        return default
    size = tuple(output_size)[-len(spatial):]
    for s, d, st in zip(size, default, stride):
        if not d - st < s < d + st:
            raise ShapeError(f"{op}(): argument 'output_size' {list(output_size)} must be "
                             f"between {[d - st + 1 for d, st in zip(default, stride)]} and "
                             f"{[d + st - 1 for d, st in zip(default, stride)]}", op=op,
                             arg="output_size")
    return size


def _max_unpool(input, indices, size):
    """Scatter each value to its flat index in the output plane (zeros elsewhere)."""
    lead = tuple(input.shape[:-len(size)])
    flat_in = input.reshape(*lead, -1)
    plane = int(np.prod(size))
    out = zeros(*lead, plane, dtype=input.dtype, device=input.device)
    out = _ops.scatter(out, -1, indices.reshape(*lead, -1), flat_in)
    return out.reshape(*lead, *size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool2d: maxima back at `indices`, zeros elsewhere."""
    op = "max_unpool2d"
    kernel = _pair(op, "kernel_size", kernel_size)
    stride = _pair(op, "stride", stride) or kernel
    padding = _pair(op, "padding", padding)
    size = _unpool_size(op, tuple(input.shape[-2:]), kernel, stride, padding, output_size)
    return _max_unpool(input, indices, size)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    op = "max_unpool1d"

    def single(value):
        return value[0] if isinstance(value, (list, tuple)) else value
    kernel = (single(kernel_size),)
    stride = (single(stride),) if stride is not None else kernel
    padding = (single(padding),)
    size = _unpool_size(op, tuple(input.shape[-1:]), kernel, stride, padding, output_size)
    return _max_unpool(input, indices, size)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=True):
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=True):
    return adaptive_max_pool2d(input, output_size, True)


# ---- 3-D -------------------------------------------------------------------------------
def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    op = "max_pool3d"
    out, indices = _ops.max_pool3d_with_indices(
        input, _triple(op, "kernel_size", kernel_size), _triple(op, "stride", stride),
        _triple(op, "padding", padding), _triple(op, "dilation", dilation), ceil_mode)
    return (out, indices) if return_indices else out


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    op = "avg_pool3d"
    return _ops.avg_pool3d(input, _triple(op, "kernel_size", kernel_size),
                           _triple(op, "stride", stride), _triple(op, "padding", padding),
                           ceil_mode, count_include_pad, divisor_override)


def adaptive_avg_pool3d(input, output_size):
    return adaptive_avg_pool(input, _adaptive_size("adaptive_avg_pool3d", input, output_size,
                                                   3), 3)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    out, indices = _ops.adaptive_max_pool3d(
        input, _adaptive_size("adaptive_max_pool3d", input, output_size, 3))
    return (out, indices) if return_indices else out


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=True):
    return adaptive_max_pool3d(input, output_size, True)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum of x^p over each window)^(1/p); p = inf is the max of |x|, -inf its min."""
    kd, kh, kw = _triple("lp_pool3d", "kernel_size", kernel_size)
    if norm_type == float("inf"):
        return max_pool3d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -float("inf"):
        return -max_pool3d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    avg = avg_pool3d(_pow(input, norm_type), kernel_size, stride, 0, ceil_mode)
    return _power_average(avg, kd * kh * kw, norm_type)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool3d: maxima back at `indices`, zeros elsewhere."""
    op = "max_unpool3d"
    kernel = _triple(op, "kernel_size", kernel_size)
    stride = _triple(op, "stride", stride) or kernel
    padding = _triple(op, "padding", padding)
    size = _unpool_size(op, tuple(input.shape[-3:]), kernel, stride, padding, output_size)
    return _ops.max_unpool3d(input, indices, list(size), list(stride), list(padding))


# ---- fractional max pooling ------------------------------------------------------------
def _fractional(op, n, input, kernel_size, output_size, output_ratio, _random_samples):
    """The op's arguments: output_size from output_ratio (floor(size * ratio)) when not
    given, and one sample in [0, 1) per (batch, channel, dim) drawn when not given."""
    if output_size is None and output_ratio is None:
        raise ArgumentError(f"{op}(): requires specifying either an 'output_size' or an "
                            f"'output_ratio'", op=op, arg="output_size")
    if output_size is None:
        ratio = _ntuple(op, "output_ratio", output_ratio, n) \
            if not isinstance(output_ratio, float) else (output_ratio,) * n
        output_size = [int(s * r) for s, r in zip(input.shape[-n:], ratio)]
    if _random_samples is None:
        batch = 1 if input.dim() == n + 1 else input.shape[0]
        _random_samples = rand(batch, input.shape[-n - 1], n, dtype=input.dtype,
                               device=input.device)
    return (_ntuple(op, "kernel_size", kernel_size, n),
            _ntuple(op, "output_size", output_size, n), _random_samples)


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """Max pooling over windows of kernel_size placed at pseudo-random positions, so that
    the output has output_size (or input size * output_ratio): the (values, indices)."""
    args = _fractional("fractional_max_pool2d", 2, input, kernel_size, output_size,
                       output_ratio, _random_samples)
    return _ops.fractional_max_pool2d(input, *args)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    out, indices = fractional_max_pool2d_with_indices(input, kernel_size, output_size,
                                                      output_ratio, True, _random_samples)
    return (out, indices) if return_indices else out


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    args = _fractional("fractional_max_pool3d", 3, input, kernel_size, output_size,
                       output_ratio, _random_samples)
    return _ops.fractional_max_pool3d(input, *args)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    out, indices = fractional_max_pool3d_with_indices(input, kernel_size, output_size,
                                                      output_ratio, True, _random_samples)
    return (out, indices) if return_indices else out
