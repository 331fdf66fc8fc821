"""Shape and dtype rules of the pooling ops (max, average, adaptive, fractional), 2-D and
3-D forms.

Every 2-D pooling op takes (C, H, W) or (N, C, H, W), every 3-D one (C, D, H, W) or
(N, C, D, H, W); the 1-D functions of tp.nn.functional call the 2-D ops with H = 1. The
rules are written once for `nd` spatial dims; the op's name says which (`..._3d...`).
"""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay.errors import ArgumentError, DTypeError, ShapeError, fmt_shape
from tensorplay.kernel_support.arguments import (
    check_list, pool_params, spatial_dims, window_out_size,
)
from tensorplay.kernel_support.checks import OutSpec
from tensorplay.meta._spatial import check_floating

_LAYOUTS = {2: "(C, H, W)", 3: "(C, D, H, W)"}


def _sizes(t):
    return t._impl.sizes


def check_pool_input(op, self, nd=2, nonempty=None):
    """The input of an nd-d pooling: (C, *spatial) or (N, C, *spatial). `nonempty`: how many
    trailing dims must not be empty: C and the spatial ones (nd + 1) by default, as
    PyTorch's pool2d_shape_check; its adaptive average pooling checks the spatial dims only
    (nd), its adaptive max and fractional pooling every dim but the first (so a 3-D input's
    C may be empty there: PyTorch reads it as a batch dim)."""
    sizes = _sizes(self)
    nonempty = nd + 1 if nonempty is None else nonempty
    if len(sizes) not in (nd + 1, nd + 2):
        unbatched = _LAYOUTS[nd]
        raise ShapeError(f"{op}(): expected argument 'self' to be {nd + 1}-D {unbatched} or "
                         f"{nd + 2}-D (N, {unbatched[1:]}, but got shape {fmt_shape(sizes)}",
                         op=op, arg="self")
    if any(s == 0 for s in sizes[len(sizes) - nonempty:]):
        raise ShapeError(f"{op}(): expected non-empty channel and spatial dims in argument "
                         f"'self', but got shape {fmt_shape(sizes)}", op=op, arg="self")
    return sizes


def pool_output(op, sizes, kernel, stride, padding, dilation, ceil_mode):
    nd = len(kernel)
    out = tuple(window_out_size(s, k, st, p, d, ceil_mode) for s, k, st, p, d
                in zip(sizes[-nd:], kernel, stride, padding, dilation))
    if out and min(out) <= 0:
        raise ShapeError(f"{op}(): the output would be empty: input {fmt_shape(sizes)} "
                         f"(argument 'self') is too small for kernel {list(kernel)}, "
                         f"padding {list(padding)} and dilation {list(dilation)}", op=op,
                         arg="self")
    return tuple(sizes[:-nd]) + out


def _check_not_bool(op, self):
    if self._impl.dtype is dt.bool:
        raise DTypeError(f"{op}(): not implemented for bool tensors (argument 'self' is "
                         f"bool)", op=op, arg="self")


def max_pool2d_with_indices(op, args):
    self, kernel_size, stride, padding, dilation, ceil_mode = args
    nd = spatial_dims(op)
    sizes = check_pool_input(op, self, nd)
    _check_not_bool(op, self)
    params = pool_params(op, kernel_size, stride, padding, dilation, nd)
    out = pool_output(op, sizes, *params, ceil_mode)
    return OutSpec(out, self._impl.dtype), OutSpec(out, dt.int64)


max_pool3d_with_indices = max_pool2d_with_indices


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


max_pool3d_with_indices_backward = max_pool2d_with_indices_backward


def avg_pool2d(op, args):
    self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override = args
    nd = spatial_dims(op)
    sizes = check_pool_input(op, self, nd)
    if self._impl.dtype is not dt.int64:   # int64: sums divided with truncation, as torch
        check_floating(op, "self", self)
    params = pool_params(op, kernel_size, stride, padding, (1,) * nd, nd)
    if divisor_override is not None and divisor_override == 0:
        raise ArgumentError(f"{op}(): argument 'divisor_override' must not be zero", op=op,
                            arg="divisor_override")
    return OutSpec(pool_output(op, sizes, *params, ceil_mode), self._impl.dtype)


avg_pool3d = avg_pool2d


def avg_pool2d_backward(op, args):
    grad_output, self = args[:2]
    spec = avg_pool2d(op, (self,) + tuple(args[2:]))
    _check_grad(op, grad_output, spec.sizes)
    return OutSpec(_sizes(self), grad_output._impl.dtype)


avg_pool3d_backward = avg_pool2d_backward


def _adaptive_nonempty(op, self, nd, out_spatial):
    """How many trailing dims of an adaptive pooling's input must not be empty (see
    check_pool_input), as PyTorch's kernels check them: the 2-D average's forward the
    spatial dims only, the 3-D average, the backwards and the max every dim but the
    first; none for an average to one element per channel (`out_spatial` all 1), which
    PyTorch's adaptive_avg_pool2d/3d compute as a mean over the spatial dims (NaN where
    they are empty), forward and backward, without the pooling's checks. TensorPlay's
    Triton kernels need non-empty spatial dims: off the CPU those stay checked (open)."""
    if "avg" in op and all(o == 1 for o in out_spatial):
        return 0 if self._impl.device.type == "cpu" else nd
    if op.startswith("adaptive_avg_pool2d") and not op.endswith("backward"):
        return nd
    return len(_sizes(self)) - 1


def _adaptive(op, self, output_size, floating):
    nd = spatial_dims(op)
    out = check_list(op, "output_size", output_size, nd, 0)
    sizes = check_pool_input(op, self, nd, _adaptive_nonempty(op, self, nd, out))
    if floating:
        check_floating(op, "self", self)
    return tuple(sizes[:-nd]) + out


def adaptive_avg_pool2d(op, args):
    self, output_size = args
    return OutSpec(_adaptive(op, self, output_size, True), self._impl.dtype)


adaptive_avg_pool3d = adaptive_avg_pool2d


def adaptive_avg_pool2d_backward(op, args):
    grad_output, self = args
    nd = spatial_dims(op)
    check_pool_input(op, self, nd, _adaptive_nonempty(op, self, nd, _sizes(grad_output)[-nd:]))
    if tuple(_sizes(grad_output)[:-nd]) != tuple(_sizes(self)[:-nd]):
        raise ShapeError(f"{op}(): argument 'grad_output' (shape "
                         f"{fmt_shape(_sizes(grad_output))}) must have the leading dims of "
                         f"'self' (shape {fmt_shape(_sizes(self))})", op=op,
                         arg="grad_output")
    return OutSpec(_sizes(self), grad_output._impl.dtype)


adaptive_avg_pool3d_backward = adaptive_avg_pool2d_backward


def adaptive_max_pool2d(op, args):
    self, output_size = args
    out = _adaptive(op, self, output_size, True)
    return OutSpec(out, self._impl.dtype), OutSpec(out, dt.int64)


adaptive_max_pool3d = adaptive_max_pool2d


def adaptive_max_pool2d_backward(op, args):
    grad_output, self, indices = args
    nd = spatial_dims(op)
    check_pool_input(op, self, nd, _adaptive_nonempty(op, self, nd, _sizes(indices)[-nd:]))
    if tuple(_sizes(grad_output)) != tuple(_sizes(indices)):
        raise ShapeError(f"{op}(): argument 'grad_output' (shape "
                         f"{fmt_shape(_sizes(grad_output))}) must have the shape of "
                         f"'indices' ({fmt_shape(_sizes(indices))})", op=op, arg="grad_output")
    return OutSpec(_sizes(self), grad_output._impl.dtype)


adaptive_max_pool3d_backward = adaptive_max_pool2d_backward


# ---- fractional max pooling -----------------------------------------------------------
def fractional_params(op, self, kernel_size, output_size):
    """(kernel, output_size) after PyTorch's checks: the windows must fit in the input,
    output + kernel - 1 <= input along every dim (< input for the 3-D op, as PyTorch's)."""
    nd = spatial_dims(op)
    sizes = check_pool_input(op, self, nd, len(_sizes(self)) - 1)
    check_floating(op, "self", self)
    kernel = check_list(op, "kernel_size", kernel_size, nd, 1)
    out = check_list(op, "output_size", output_size, nd, 0)
    bound = "less than" if nd == 3 else "at most"
    for k, o, n in zip(kernel, out, sizes[-nd:]):
        if o + k - 1 > n or (nd == 3 and o + k - 1 == n):
            raise ArgumentError(f"{op}(): argument 'kernel_size' {list(kernel)} is too large "
                                f"for output_size {list(out)} and input "
                                f"{fmt_shape(sizes)}: output + kernel - 1 must be {bound} "
                                f"the input size", op=op, arg="kernel_size")
    return kernel, out


def _check_samples(op, self, random_samples, nd):
    sizes, given = _sizes(self), _sizes(random_samples)
    batch = sizes[0] if len(sizes) == nd + 2 else 1
    expected = f"(at least {batch}, {sizes[-(nd + 1)]}, {nd})"
    if random_samples._impl.dtype is not self._impl.dtype:
        raise DTypeError(f"{op}(): argument 'random_samples' must have the dtype of 'self' "
                         f"({self._impl.dtype.name}), but got "
                         f"{random_samples._impl.dtype.name}", op=op, arg="random_samples")
    if len(given) != 3 or given[0] < batch or given[1] != sizes[-(nd + 1)] or given[2] != nd:
        raise ShapeError(f"{op}(): argument 'random_samples' must have shape {expected} "
                         f"(batch, channels, {nd}), but got {fmt_shape(given)}", op=op,
                         arg="random_samples")


def fractional_max_pool2d(op, args):
    self, kernel_size, output_size, random_samples = args
    nd = spatial_dims(op)
    _, out = fractional_params(op, self, kernel_size, output_size)
    _check_samples(op, self, random_samples, nd)
    sizes = tuple(_sizes(self)[:-nd]) + out
    return OutSpec(sizes, self._impl.dtype), OutSpec(sizes, dt.int64)


fractional_max_pool3d = fractional_max_pool2d


def fractional_max_pool2d_backward(op, args):
    grad_output, self, kernel_size, output_size, indices = args
    nd = spatial_dims(op)
    _, out = fractional_params(op, self, kernel_size, output_size)
    _check_grad(op, grad_output, tuple(_sizes(self)[:-nd]) + out)
    if tuple(_sizes(indices)) != tuple(_sizes(grad_output)):
        raise ShapeError(f"{op}(): argument 'indices' (shape {fmt_shape(_sizes(indices))}) "
                         f"must have the shape of 'grad_output' "
                         f"({fmt_shape(_sizes(grad_output))})", op=op, arg="indices")
    return OutSpec(_sizes(self), grad_output._impl.dtype)


fractional_max_pool3d_backward = fractional_max_pool2d_backward
