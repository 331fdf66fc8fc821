"""Shape and dtype rules of the pooling ops (max, average, adaptive), 2-D forms.

Every pooling op takes (C, H, W) or (N, C, H, W); the 1-D functions of
tp.nn.functional call these with H = 1.
"""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay.errors import ArgumentError, DTypeError, ShapeError, fmt_shape
from tensorplay.kernel_support.arguments import check_list, pool_params, window_out_size
from tensorplay.kernel_support.checks import OutSpec
from tensorplay.meta._spatial import check_floating


def _sizes(t):
    return t._impl.sizes


def check_pool_input(op, self):
    sizes = _sizes(self)
    if len(sizes) not in (3, 4):
        raise ShapeError(f"{op}(): expected argument 'self' to be 3-D (C, H, W) or 4-D "
                         f"(N, C, H, W), but got shape {fmt_shape(sizes)}", op=op, arg="self")
    if any(s == 0 for s in sizes[-3:]):
        raise ShapeError(f"{op}(): expected non-empty channel and spatial dims in argument "
                         f"'self', but got shape {fmt_shape(sizes)}", op=op, arg="self")
    return sizes


def pool_output(op, sizes, kernel, stride, padding, dilation, ceil_mode):
    out = tuple(window_out_size(s, k, st, p, d, ceil_mode) for s, k, st, p, d
                in zip(sizes[-2:], kernel, stride, padding, dilation))
    if any(o <= 0 for o in out):
        raise ShapeError(f"{op}(): the output would be empty: input {fmt_shape(sizes)} "
                         f"(argument 'self') is too small for kernel {list(kernel)}, "
                         f"padding {list(padding)} and dilation {list(dilation)}", op=op,
                         arg="self")
    return tuple(sizes[:-2]) + out


def max_pool2d_with_indices(op, args):
    self, kernel_size, stride, padding, dilation, ceil_mode = args
    sizes = check_pool_input(op, self)
    if self._impl.dtype is dt.bool:
        raise DTypeError(f"{op}(): not implemented for bool tensors (argument 'self' is "
                         f"bool)", op=op, arg="self")
    params = pool_params(op, kernel_size, stride, padding, dilation)
    out = pool_output(op, sizes, *params, ceil_mode)
    return OutSpec(out, self._impl.dtype), OutSpec(out, dt.int64)


def _check_grad(op, grad_output, expected):
    if tuple(_sizes(grad_output)) != tuple(expected):
        raise ShapeError(f"{op}(): argument 'grad_output' must have the pooled shape "
                         f"{fmt_shape(expected)}, but got {fmt_shape(_sizes(grad_output))}",
                         op=op, arg="grad_output")


def max_pool2d_with_indices_backward(op, args):
    grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices = args
    spec, _ = max_pool2d_with_indices(op, (self, kernel_size, stride, padding, dilation,
                                           ceil_mode))
    _check_grad(op, grad_output, spec.sizes)
    return OutSpec(_sizes(self), grad_output._impl.dtype)


def avg_pool2d(op, args):
    self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override = args
    sizes = check_pool_input(op, self)
    if self._impl.dtype is not dt.int64:   # int64: sums divided with truncation, as torch
        check_floating(op, "self", self)
    params = pool_params(op, kernel_size, stride, padding, (1, 1))
    if divisor_override is not None and divisor_override == 0:
        raise ArgumentError(f"{op}(): argument 'divisor_override' must not be zero", op=op,
                            arg="divisor_override")
    return OutSpec(pool_output(op, sizes, *params, ceil_mode), self._impl.dtype)


def avg_pool2d_backward(op, args):
    grad_output, self = args[:2]
    spec = avg_pool2d(op, (self,) + tuple(args[2:]))
    _check_grad(op, grad_output, spec.sizes)
    return OutSpec(_sizes(self), grad_output._impl.dtype)


def _adaptive(op, self, output_size, floating):
    sizes = check_pool_input(op, self)
    if floating:
        check_floating(op, "self", self)
    out = check_list(op, "output_size", output_size, 2, 0)
    return tuple(sizes[:-2]) + out


def adaptive_avg_pool2d(op, args):
    self, output_size = args
    return OutSpec(_adaptive(op, self, output_size, True), self._impl.dtype)


def adaptive_avg_pool2d_backward(op, args):
    grad_output, self = args
    check_pool_input(op, self)
    if tuple(_sizes(grad_output)[:-2]) != tuple(_sizes(self)[:-2]):
        raise ShapeError(f"{op}(): argument 'grad_output' (shape "
                         f"{fmt_shape(_sizes(grad_output))}) must have the leading dims of "
                         f"'self' (shape {fmt_shape(_sizes(self))})", op=op,
                         arg="grad_output")
    return OutSpec(_sizes(self), grad_output._impl.dtype)


def adaptive_max_pool2d(op, args):
    self, output_size = args
    out = _adaptive(op, self, output_size, True)
    return OutSpec(out, self._impl.dtype), OutSpec(out, dt.int64)


def adaptive_max_pool2d_backward(op, args):
    grad_output, self, indices = args
    check_pool_input(op, self)
    if tuple(_sizes(grad_output)) != tuple(_sizes(indices)):
        raise ShapeError(f"{op}(): argument 'grad_output' (shape "
                         f"{fmt_shape(_sizes(grad_output))}) must have the shape of "
                         f"'indices' ({fmt_shape(_sizes(indices))})", op=op, arg="grad_output")
    return OutSpec(_sizes(self), grad_output._impl.dtype)
