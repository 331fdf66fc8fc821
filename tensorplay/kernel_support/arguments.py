"""What an op family's shape rule and its kernels both read: the arguments a rule checks
and a kernel then uses (pooling's windows, upsampling's scales, scatter's reduce, the
tensors cat joins), and the sizes and dtypes both compute. Written once here; the rules
of tensorplay/meta/<family>.py import them.

    windows       check_list (one entry per spatial dim), window_out_size, pool_params,
                  spatial_dims (2 or 3, from a pooling op's name),
                  conv_output_sizes
    arguments     upsample_params, scatter_params, cat_inputs, check_repeats_tensor
    reductions    reduced_sizes, integral_to_long, bincount_dtype
    norms         machine_eps
"""
from __future__ import annotations

import ml_dtypes

from tensorplay import _dtype as dt
from tensorplay.errors import ArgumentError, DTypeError, ShapeError, fmt_shape
from tensorplay.kernel_support.checks import reduce_dim_list, wrap_dim


def _sizes(t):
    return t._impl.sizes


# ---- windows: (N, C, *spatial) inputs, one list entry per spatial dim ------------------
def check_list(op, name, values, n, minimum):
    """`values` has `n` entries, each >= `minimum`."""
    values = tuple(values)
    if len(values) != n:
        raise ArgumentError(f"{op}(): argument '{name}' must have {n} element(s), one per "
                            f"spatial dim, but got {list(values)}", op=op, arg=name)
    if values and min(values) < minimum:      # (min, not a generator: every pooling call)
        what = "positive" if minimum == 1 else "non-negative"
        raise ArgumentError(f"{op}(): argument '{name}' must be {what}, but got "
                            f"{list(values)}", op=op, arg=name)
    return values


def window_out_size(size, k, stride, pad, dilation, ceil_mode=False):
    """Output length of a sliding window (PyTorch's pooling_output_shape): with ceil_mode a
    last partial window counts, unless it would start in the right padding."""
    span = size + 2 * pad - dilation * (k - 1) - 1 + (stride - 1 if ceil_mode else 0)
    out = span // stride + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out


def spatial_dims(op):
    """2 or 3: the number of spatial dims a pooling op works on, read from its name
    (`avg_pool3d_backward`); the rules and kernels of both forms are written once."""
    return 3 if "3d" in op else 2


def pool_params(op, kernel_size, stride, padding, dilation, nd=2):
    """(kernel, stride, padding, dilation), each with one entry per spatial dim (`nd` of
    them); an empty stride means the kernel."""
    kernel = check_list(op, "kernel_size", kernel_size, nd, 1)
    stride = check_list(op, "stride", stride or kernel, nd, 1)
    padding = check_list(op, "padding", padding, nd, 0)
    dilation = check_list(op, "dilation", dilation, nd, 1)
    for p, k, d in zip(padding, kernel, dilation):
        if p > (d * (k - 1) + 1) // 2:
            raise ArgumentError(f"{op}(): argument 'padding' ({list(padding)}) must be at most "
                                f"half of the (dilated) kernel size {list(kernel)}", op=op,
                                arg="padding")
    return kernel, stride, padding, dilation


def conv_output_sizes(input_sizes, weight_sizes, stride, padding, dilation, transposed,
                      output_padding):
    spatial = input_sizes[2:]
    kernel = weight_sizes[2:]
    if transposed:
        return tuple((i - 1) * s - 2 * p + d * (kk - 1) + op + 1 for i, kk, s, p, d, op
                     in zip(spatial, kernel, stride, padding, dilation, output_padding))
    return tuple((i + 2 * p - d * (kk - 1) - 1) // s + 1 for i, kk, s, p, d
                 in zip(spatial, kernel, stride, padding, dilation))


# ---- arguments ------------------------------------------------------------------------
def upsample_params(op, params):
    """(mode, align_corners, scales_h, scales_w) of an upsampling call, from the op's name and
    the arguments after output_size (input_size for the backwards): the mode is in the
    name, and only bilinear takes align_corners.

        upsample_nearest2d(self, output_size, scales_h, scales_w)
        upsample_bilinear2d(self, output_size, align_corners, scales_h, scales_w)
    """
    if op.startswith("upsample_nearest"):
        return ("nearest", False) + tuple(params)
    return ("bilinear",) + tuple(params)


def scatter_params(op, params):
    """(src, reduce) of a scatter-family call from the arguments after `index`: scatter's
    src or value, then its optional reduce ('add' or 'multiply'); scatter_add always
    adds.

        scatter(self, dim, index, src | value [, reduce])     scatter_add(self, dim, index, src)
    """
    if op.startswith("scatter_add"):
        return params[0], "add"
    return params[0], (params[1] if len(params) > 1 else None)


def cat_inputs(op, tensors):
    """The tensors cat really joins: PyTorch skips 1-D empty ones (shape [0]) for
    backward compatibility, whatever the other tensors' rank."""
    if not tensors:
        raise ArgumentError(f"{op}(): argument 'tensors' must be a non-empty list of tensors",
                            op=op, arg="tensors")
    kept = [t for t in tensors if _sizes(t) != (0,)]
    return kept or list(tensors[:1])


def fills_nothing(op, self, dim):
    """index_fill of a tensor that is empty along another dim than `dim`: PyTorch's
    kernel writes nothing and reads no index, so an index out of range passes (an
    empty `dim` itself still has no index in range)."""
    sizes = _sizes(self)
    return self._impl.numel() == 0 and sizes[wrap_dim(op, dim, len(sizes))] != 0


def reads_no_index(op, self, source):
    """index_add into an empty self, index_copy from an empty source: PyTorch's kernels
    return before they check the index's bounds, so an index out of range passes."""
    empty = self if op.startswith("index_add") else source
    return empty._impl.numel() == 0


def check_repeats_tensor(op, repeats, n):
    if repeats._impl.dtype not in (dt.int64, dt.int32):
        raise DTypeError(f"{op}(): argument 'repeats' must be an int64 or int32 tensor, but got "
                         f"{repeats._impl.dtype.name}", op=op, arg="repeats")
    rs = _sizes(repeats)
    if len(rs) > 1 or (rs and rs[0] not in (1, n)):
        raise ShapeError(f"{op}(): argument 'repeats' (shape {fmt_shape(rs)}) must be 0-D, or "
                         f"1-D with 1 or {n} elements (the size of the repeated dim)", op=op,
                         arg="repeats")


# ---- reductions -----------------------------------------------------------------------
def reduced_sizes(op, sizes, dims, keepdim):
    """`sizes` with `dims` (None or [] = all) removed, or kept as 1 with keepdim."""
    if dims is None or len(dims) == 0:
        dims = range(len(sizes))
    else:
        dims = reduce_dim_list(op, dims, len(sizes))   # a 0-dim tensor accepts 0 / -1
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(sizes))
    return tuple(s for i, s in enumerate(sizes) if i not in dims)


def integral_to_long(t, dtype=None):
    """sum/prod/cumsum's result dtype: dtype= if given, else integers and bool widen to
    int64 (floating and complex types keep theirs)."""
    if dtype is not None:
        return dtype
    d = t._impl.dtype
    return d if d.is_differentiable else dt.int64


def bincount_dtype(self, weights):
    """bincount's counts: int64 without weights, float32 for float32 weights, float64 for
    the others; and int64 for an empty self even with weights (PyTorch's kernels return
    zeros(minlength, int64) before they look at the weights)."""
    if weights is None or 0 in self._impl.sizes:
        return dt.int64
    return dt.float32 if weights._impl.dtype is dt.float32 else dt.float64


# ---- norms ----------------------------------------------------------------------------
def machine_eps(dtype):
    """rms_norm's default eps: the distance from 1.0 to the next float of the dtype it
    computes in, which for the half types (float16, bfloat16) is float32, as in PyTorch."""
    if dtype.itemsize == 2:
        return 2.0 ** -23     # float32 eps
    return float(ml_dtypes.finfo(dtype.np).eps)
