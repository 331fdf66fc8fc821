"""Normalization kernels: batch, layer, group and RMS norm.

Each returns, besides the normalized output, the statistics its backward formula
needs (mean and rstd = 1 / sqrt(var + eps)), as PyTorch's native_* kernels do. The
half types compute in float32 and round once (except where PyTorch's batch-norm loop
rounds every step: `_half_dtype`). Variances are biased (divide by n),
except the running variance of batch norm, which PyTorch keeps unbiased.

Batch norm's passes over row-major data are compiled loops (cpu_kernels/_loops.py), each
the documentation of its arithmetic: the statistics (`_sums_down_rows`), the output
(`_scale_and_shift_planes`; in training, with rstd and the running statistics,
`_training_output`), and the backward's sums, coefficients and grad_input
(`_plane_sums`, `_backward_coefficients`, `_grad_input_planes`), with `_rows` forms for
the NHWC kernel's (N * H * W, C) rows (whose per-image sums are einsum's, `_image_sums`).
Layer norm of row-major float32 / float64 data is one loop each way along its rows
(`_layer_norm_rows`, `_layer_norm_grad_rows`); other layouts and types take NumPy's
passes.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from tensorplay import _dtype as dt
from tensorplay._memory_format import channels_last
from tensorplay.kernel_support.arguments import machine_eps
from tensorplay.kernel_support.layout import copy_strides
from tensorplay.kernel_support.ops import shape_rule
from tensorplay.library import Library, ShapeRule, kernel
from cpu_kernels._common import nhwc_rows, out, out_channels_last
from cpu_kernels._loops import loop

# NCHW kernels: a channels_last call reaches them through the layout-conversion
# fallback of kernel selection, which lays their 4-D results out channels_last again.
NCHW = "contiguous_format"


def _compute(t):
    a = t._impl.array()
    return a.astype(np.float32) if a.dtype.itemsize == 2 else a


def _param(t, ndim_before, ndim_after, like):
    """A per-channel (or per-feature) parameter shaped to broadcast against the input."""
    if t is None:
        return None
    a = t._impl.array().astype(like.dtype, copy=False)
    return a.reshape((1,) * ndim_before + a.shape + (1,) * ndim_after)


def _affine(y, weight, bias):
    if weight is not None:
        y *= weight
    if bias is not None:
        y += bias
    return y


def _moments(a, axes):
    """(mean, biased variance) over `axes`, kept as size-1 dims, and the centered input
    a - mean, which the caller normalizes next (a fresh array: free to scale in place)."""
    if not all(a.shape[i] for i in axes):
        # a mean of no elements: NaN, as NumPy's and PyTorch's, without NumPy's warning
        mean = np.full(tuple(1 if i in axes else n for i, n in enumerate(a.shape)), np.nan,
                       a.dtype)
        return mean, mean.copy(), a - mean
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):   # squares of 1e30
        mean = np.mean(a, axis=axes, keepdims=True)
        d = a - mean
        var = np.mean(d * d, axis=axes, keepdims=True)
    return mean, var, d


def _welford_mean(mean, var, count):
    """The mean PyTorch's group and layer norm return (Welford's update, see
    native_group_norm): NaN where the variance is NaN (a row holding an infinity), and 0
    for rows of `count` = 0 elements (a sum of none; their variance is NaN)."""
    if not count:
        return np.zeros_like(var)
    return np.where(np.isnan(var), np.nan, mean) if np.isnan(var).any() else mean


def _channel_moments(a, sum_dtype=None):
    """(mean, biased variance) of each channel of a row-major (N, C, ...) array, shaped
    (1, C, 1, ...). `sum_dtype`: what the sums accumulate in. float64, PyTorch's acc_type
    of float (its contiguous kernel sums a float32 input in double: a channel of +-1e30s,
    whose float32 sum cancels to a mean 1.4e-6 off, gets its mean right to the last
    digit): a float32 or float64 `a` goes through `_sums_down_rows`, the squares of x -
    mean rounded to a's dtype and added in double, as PyTorch's; the variance stays a
    double (PyTorch makes rstd and the running variance from it). None: the sums in a's
    dtype (the float32 of a half input, whose acc_type is float), _moments over axes
    (0, 2, ...) without NumPy's reduction over scattered axes (2x slower) and without the
    squares as an array: one einsum for the sums, one for the squares of x - mean."""
    n, c = a.shape[:2]
    x = a.reshape(n, c, -1)
    length = x.shape[2]
    count = n * length
    keep = (1, c) + (1,) * (a.ndim - 2)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        if count and sum_dtype == np.float64 and a.dtype in (np.float32, np.float64):
            rows = x.reshape(n, c * length)
            totals = np.zeros(c * length)
            _sums_down_rows(rows, rows[0], False, totals)     # (the centre: unused)
            mean = (totals.reshape(c, length).sum(axis=1) / count).astype(a.dtype)
            totals[:] = 0
            _sums_down_rows(rows, _per_position(mean, length), True, totals)
            var = totals.reshape(c, length).sum(axis=1) / count
            return mean.reshape(keep), var.reshape(keep)
        mean = (np.einsum("ncl->c", x, dtype=sum_dtype or a.dtype) / count).astype(a.dtype) \
            if count else np.full(c, np.nan, a.dtype)
        d = x - _per_position(mean, length).reshape(c, length)
        var = np.einsum("ncl,ncl->c", d, d) / count if count else mean.copy()
    return mean.astype(a.dtype, copy=False).reshape(keep), \
        var.astype(a.dtype, copy=False).reshape(keep)


def _rows_moments(rows):
    """(mean, biased variance) of each column of a row-major (R, C) array (the NHWC
    kernel's rows, a 1-d batch norm's input), each shaped (1, C): summed down the rows in
    the array's own dtype, one row after the other, as PyTorch's channels-last and 2-D
    kernels sum (and NumPy's reduction along axis 0): `_sums_down_rows` with a total of
    that dtype, the squares of x - mean on the second pass."""
    count = rows.shape[0]
    total = np.zeros(rows.shape[1], rows.dtype)
    _sums_down_rows(rows, total, False, total)       # (the centre: unused)
    mean = total / count
    total[:] = 0
    _sums_down_rows(rows, mean, True, total)
    return mean[None], (total / count)[None]


def _per_position(v, length):
    """Per-channel values v (C,) (or rows of them, (k, C)) repeated over each channel's
    `length` positions: (C * length,) (or (k, C * length)), the layout of one image's
    row of an (N, C * length) array. Against (N, C, L) data a NumPy broadcast is then
    over N alone, each inner loop C * L long (a (C, 1) column makes NumPy run N * C inner
    loops of L: 30% slower a pass at 8x8), and a loop's inner loop is as long."""
    return v.repeat(length, axis=-1)


@loop
def _sums_down_rows(x, centre, square, total):
    """total[j] += x[i, j], or with `square` (x[i, j] - centre[j])**2 rounded to x's dtype,
    added in `total`'s dtype, down the rows i of x: the per-position sums of a batch
    norm's channels (x an (N, C * L) row-major array, rows the images, `total` float64),
    which the caller adds up per channel; or the channels' own sums (x (R, C) rows,
    `total` of x's dtype: _rows_moments). The inner loop runs along a row, one element after the
    other, so the compiler makes it vector code (a sum along a row could not: it rounds
    in the order written, a dependency from each element to the next)."""
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            if square:
                d = x[i, j] - centre[j]
                total[j] += d * d
            else:
                total[j] += x[i, j]


def _update_running(stat, value):
    """stat <- value in place. NOTE: its version counter is not bumped, as PyTorch's
    kernel does not bump it (the running stats are not mutable arguments of the schema):
    batch norm's backward saves them, and a second forward in training mode before the
    first's backward must not make that backward raise."""
    a = stat._impl.array()
    np.copyto(a, value.astype(a.dtype))


@kernel(layout=NCHW)
def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum,
                      eps):
    """Normalize each channel (dim 1) over the batch and spatial dims.

        training:  mean, var over (N, d1, ...);  running <- (1 - momentum) * running
                   + momentum * batch value (the variance unbiased: times n / (n - 1))
        eval:      mean, var = running_mean, running_var
        out = input * scale + shift,  scale = rstd * weight,  shift = bias - mean * scale
    Returns (out, mean, rstd) of the statistics used, in both modes. (PyTorch returns
    empty stats in eval mode and its backward reads the running stats; here the backward
    must not read them: training updates them in place, which would invalidate them as
    saved variables.)
    """
    spec = shape_rule("normalization.native_batch_norm")(
        "native_batch_norm", (input, weight, bias, running_mean, running_var, training, momentum,
                              eps))
    if not training and 0 in input._impl.sizes:
        # nothing to normalize: PyTorch returns before it reads weight, bias or the stats
        rv = running_var._impl.array()
        with np.errstate(all="ignore"):
            rstd = 1 / np.sqrt(rv + rv.dtype.type(eps))
        return (out(np.zeros(input._impl.sizes, input._impl.dtype.np), spec[0].dtype),
                out(running_mean._impl.array().copy(), spec[1].dtype), out(rstd, spec[2].dtype))
    fused = _fused_layout(input._impl)
    half = _half_dtype(input, weight, bias, running_mean, running_var)
    y, mean, rstd = _batch_norm(_compute(input), weight, bias, running_mean, running_var,
                                training, momentum, eps, fused, half,
                                float32_input=input._impl.dtype is dt.float32)
    return out(y, spec[0].dtype), out(mean, spec[1].dtype), out(rstd, spec[2].dtype)


def _half_dtype(input, *params):
    """The half type of a float16/bfloat16 input whose defined parameters share its dtype:
    PyTorch's batch-norm kernels then run on c10::Half (or BFloat16) values (its param_t):
    the non-contiguous loop rounds each `-`, `*`, `+` back to it, the contiguous one keeps
    its statistics in it (_half_statistics). With float32 parameters (mixed types) both
    compute in float32 and round once."""
    a = input._impl.array()
    if a.dtype.itemsize != 2:
        return None
    if any(p is not None and p._impl.dtype != input._impl.dtype for p in params):
        return None
    return a.dtype


def _batch_norm(a, weight, bias, running_mean, running_var, training, momentum, eps,
                fused=True, half=None, float32_input=False):
    """(out, mean, rstd) arrays of native_batch_norm for `a` of shape (N, C, ...); the
    NHWC kernel passes its (N * H * W, C) rows, which is the same computation. `fused`:
    PyTorch's per-channel scale-and-shift loop (see `_fused_layout`); `half`: the half
    dtype of the input and its parameters (`_half_dtype`): the fused loop keeps its
    statistics in it (`_half_statistics`), the other rounds each step to it;
    `float32_input`: the input was float32 (`a` is float32 for a half input too)."""
    stepwise = None if fused else half
    rounded = functools.partial(_rounded, dtype=stepwise)
    after = a.ndim - 2
    axes = (0,) + tuple(range(2, a.ndim))
    if training:
        # PyTorch's loop for the other layouts (not `fused`) sums a float32 input's
        # statistics in double (its acc_type; a half input's in float32, as `a` is): a
        # channel holding 1e30 has a finite variance there, where the float32 squares
        # of the contiguous kernel overflow to inf (every output of the channel 0).
        wide = a.astype(np.float64) if not fused and float32_input else a
        if wide.ndim > 2 and wide.flags.c_contiguous:
            mean, var = _channel_moments(
                wide, np.float64 if float32_input or a.dtype == np.float64 else None)
        elif wide.ndim == 2 and wide.shape[0] and wide.flags.c_contiguous and \
                wide.dtype in (np.float32, np.float64):
            mean, var = _rows_moments(wide)
        else:
            mean, var, _ = _moments(wide, axes)
        n = a.size // a.shape[1]
        if fused and a.ndim > 2 and n > 1 and _plain_parameters(
                a, weight, bias, running_mean, running_var):
            return _training_step(a, mean, var, weight, bias, running_mean, running_var,
                                  momentum, eps, n)
        rstd = (1 / np.sqrt(var + eps)).astype(a.dtype)
        mean = mean.astype(a.dtype)
        if half is not None and fused and n > 1:
            return _half_statistics(a, weight, bias, running_mean, running_var, momentum, eps,
                                    half, mean, var, n)
        if running_mean is not None:
            rm = running_mean._impl.array()
            if stepwise is not None:
                # PyTorch's loop updates from the rounded mean, in double
                rm = rm.astype(np.float64)
                mean = rounded(mean)
            _update_running(running_mean, (1 - momentum) * rm + momentum * mean.reshape(-1))
        if running_var is not None:
            rv = running_var._impl.array()
            if stepwise is not None:
                rv = rv.astype(np.float64)
                var = var.astype(np.float64)
            unbiased = var.reshape(-1) * (n / (n - 1))
            _update_running(running_var, (1 - momentum) * rv + momentum * unbiased)
    else:
        # a copy: the returned mean must not alias running_mean (a later write to one
        # would show in the other)
        mean = _param(running_mean, 1, after, a).copy()
        # (tensor ops on running_var there: each rounds to its dtype)
        rstd = rounded(1 / rounded(np.sqrt(rounded(_param(running_var, 1, after, a) + eps))))
    return _normalize(a, weight, bias, mean, rstd, fused, stepwise)


def _plain_parameters(a, *params):
    """Whether every parameter and running statistic is given, of a's dtype (float32 or
    float64, row-major `a`): the case _training_step computes in one loop."""
    if a.dtype not in (np.float32, np.float64) or not a.flags.c_contiguous:
        return False
    for p in params:
        if p is None or p._impl.dtype.np != a.dtype or len(p._impl.sizes) != 1:
            return False
    return True


def _training_step(a, mean, var, weight, bias, running_mean, running_var, momentum, eps, n):
    """_batch_norm's training step from the channels' statistics (mean in a's dtype, var in
    float64, each shaped (1, C, 1, ...)) where _plain_parameters holds: rstd, the running
    statistics and the output in one compiled loop (_training_output), with the NumPy
    ops' dtypes and order (the other branches of _batch_norm, _normalize). Returns
    (out, mean, rstd)."""
    num = a.dtype.type
    c = a.shape[1]
    x = a.reshape(a.shape[0], c, -1)
    y = np.empty(x.shape, a.dtype)
    rstd = np.empty(c, a.dtype)
    mean = mean.reshape(-1)
    _training_output(x, mean, var.reshape(-1), float(eps), num(1 - momentum), num(momentum),
                     float(momentum), n / (n - 1), running_mean._impl.array(),
                     running_var._impl.array(), weight._impl.array(), bias._impl.array(),
                     rstd, y)
    return y.reshape(a.shape), mean, rstd


@loop
def _training_output(x, mean, var, eps, keep, momentum, momentum64, unbias, running_mean,
                     running_var, weight, bias, rstd, y):
    """Per channel c, in the dtypes of _batch_norm's NumPy ops (x's dtype, but for var and
    the product marked double), each operation rounded as written:

        rstd = 1 / sqrt(var + eps)                   in double, rounded to x's dtype
        running_mean <- keep * running_mean + momentum * mean         keep = 1 - momentum
        running_var  <- keep * running_var + momentum * (var * n / (n - 1)) (the latter
                        in double, the sum rounded)
        scale = rstd * weight;  shift = bias - mean * scale;  y = x * scale + shift"""
    for c in range(x.shape[1]):
        rstd[c] = 1.0 / np.sqrt(var[c] + eps)
        running_mean[c] = keep * running_mean[c] + momentum * mean[c]
        running_var[c] = keep * running_var[c] + momentum64 * (var[c] * unbias)
        scale = rstd[c] * weight[c]
        shift = bias[c] - mean[c] * scale
        for i in range(x.shape[0]):
            for j in range(x.shape[2]):
                y[i, c, j] = x[i, c, j] * scale + shift


def _half_statistics(a, weight, bias, running_mean, running_var, momentum, eps, half,
                     mean, var, n):
    """_batch_norm's training step for a contiguous (or channels-last) half input whose
    parameters share its dtype, as PyTorch's CPU kernel rounds it (measured against it):
    the mean and rstd it normalizes with and returns are half values. A bfloat16 input
    keeps its statistics in bfloat16 (its param_t): the sum of squares rounds before it
    is used, the momentum is a bfloat16 value, and each product of two of them rounds:
        mean, var_sum   rounded;  rstd = 1 / sqrt(round(var_sum / n) + eps)
        running_mean <- round(m * mean) + round((1 - m) * running_mean)
        running_var  <- m * round(var_sum / (n - 1)) + round((1 - m) * running_var)
    with m = round(momentum) and 1 - m rounded. A float16 input's running update is in
    float32 from the unrounded statistics."""
    def h(v):
        return np.asarray(v, np.float32).astype(half).astype(np.float32)

    var = var.reshape(-1).astype(np.float32)
    rm = None if running_mean is None else running_mean._impl.array().astype(np.float32)
    rv = None if running_var is None else running_var._impl.array().astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if half == np.float16:
            rstd = h(1 / np.sqrt(var + np.float32(eps)))
            m, keep = np.float32(momentum), np.float32(1 - momentum)
            new_mean = None if rm is None else m * mean.reshape(-1) + keep * rm
            new_var = None if rv is None else m * (var * (n / np.float32(n - 1))) + keep * rv
        else:
            var_sum = h(var * n)
            rstd = h(1 / np.sqrt(h(var_sum / n) + np.float32(eps)))
            m = h(momentum)
            keep = h(1 - m)
            new_mean = None if rm is None else h(m * h(mean.reshape(-1))) + h(keep * rm)
            new_var = None if rv is None else m * h(var_sum / np.float32(n - 1)) + h(keep * rv)
    if new_mean is not None:
        _update_running(running_mean, new_mean)
    if new_var is not None:
        _update_running(running_var, new_var)
    return _normalize(a, weight, bias, h(mean), rstd.reshape(mean.shape), True, None)


def _rounded(v, dtype):
    """v rounded to `dtype` and back (unchanged for None)."""
    return v if dtype is None else v.astype(dtype).astype(v.dtype)


def _normalize(a, weight, bias, mean, rstd, fused, stepwise):
    """_batch_norm's output from the statistics it uses, mean and rstd shaped (1, C, 1, ...)."""
    rounded = functools.partial(_rounded, dtype=stepwise)
    after = a.ndim - 2
    # NOTE: as PyTorch, whose two CPU loops round (and meet infinities) differently: a
    # contiguous (or channels-last) input gets one scale and shift per channel,
    # y = x * scale + shift with scale = rstd * weight and shift = bias - mean * scale; any
    # other layout gets ((x - mean) * rstd) * weight + bias. With an infinite weight the
    # first can give inf - inf = NaN where the second gives +-inf.
    w = None if weight is None else _param(weight, 1, after, a)
    b = None if bias is None else _param(bias, 1, after, a)
    with np.errstate(invalid="ignore"):
        if fused:
            scale = rstd if w is None else rstd * w
            shift = -mean * scale if b is None else b - mean * scale
            y = _scale_and_shift(a, scale.reshape(-1), shift.reshape(-1))
        elif stepwise is not None:
            y = rounded(rounded(a - rounded(mean)) * rounded(rstd))
            y = y if w is None else rounded(y * w)
            y = y if b is None else rounded(y + b)
        else:
            y = _affine((a - mean) * rstd, w, b)
    return y, mean.reshape(-1), rstd.reshape(-1)


def _scale_and_shift(a, scale, shift):
    """a * scale + shift for a of shape (N, C, ...) and per-channel scale and shift (C,):
    one compiled loop for a float32 or float64 row-major `a` (NumPy's is two passes and a
    temporary): along the planes, or along the rows of a 2-D `a` (the NHWC kernel's
    (N * H * W, C), a 1-d batch norm's (N, C); a loop along planes of one element would
    run scalar); the same arithmetic as NumPy's broadcast, which the other cases take."""
    n, c = a.shape[:2]
    if a.flags.c_contiguous and a.dtype in (np.float32, np.float64) and a.size:
        y = np.empty(a.shape, a.dtype)
        if a.ndim == 2 or a.size == n * c:
            _scale_and_shift_rows(a.reshape(n, c), scale, shift, y.reshape(n, c))
        else:
            _scale_and_shift_planes(a.reshape(n, c, -1), scale, shift, y.reshape(n, c, -1))
        return y
    keep = (1, c) + (1,) * (a.ndim - 2)
    return a * scale.reshape(keep) + shift.reshape(keep)


@loop
def _scale_and_shift_planes(x, scale, shift, y):
    """y = x * scale + shift over the planes of (N, C, L) arrays, scale and shift (C,):
    batch norm's output, one pass."""
    for i in range(x.shape[0]):
        for c in range(x.shape[1]):
            a, b = scale[c], shift[c]
            for j in range(x.shape[2]):
                y[i, c, j] = x[i, c, j] * a + b


@loop
def _scale_and_shift_rows(x, scale, shift, y):
    """y = x * scale + shift along the rows of (R, C) arrays, scale and shift (C,)."""
    for i in range(x.shape[0]):
        for c in range(x.shape[1]):
            y[i, c] = x[i, c] * scale[c] + shift[c]


def _fused_layout(impl):
    """Whether PyTorch's batch norm takes its per-channel scale-and-shift loop: row-major
    or channels-last memory."""
    if impl.is_contiguous:
        return True
    return len(impl.sizes) == 4 and \
        tuple(impl.strides) == copy_strides("batch_norm", impl.sizes, impl.strides,
                                            channels_last)


@kernel(layout=NCHW)
def native_batch_norm_backward(grad_out, input, weight, running_mean, running_var, save_mean,
                               save_invstd, train, eps, output_mask):
    """(grad_input, grad_weight, grad_bias) of native_batch_norm from the saved
    statistics (training) or the running ones (evaluation), per channel c:

        xc = x - mean;  sum_g = sum(grad);  dot = sum(grad * xc)   (over N and space)
        grad_weight = dot * invstd;  grad_bias = sum_g
        training:   grad_input = ((grad - xc * k) - sum_g / n) * (invstd * w),
                    k = dot * invstd**2 / n
        evaluation: grad_input = grad * (invstd * w)   (the running stats are constants)
    """
    specs = shape_rule("normalization.native_batch_norm_backward")(
        "native_batch_norm_backward", (grad_out, input, weight, running_mean, running_var,
                                       save_mean, save_invstd, train, eps, output_mask))
    a = _compute(input)
    n, c = a.shape[0], a.shape[1]
    # (N, C, L): every reduction below is over axes 0 and 2.
    # (row-major: the loops and the BLAS row sums below read them as planes)
    x = np.ascontiguousarray(a.reshape(n, c, -1))
    g = np.ascontiguousarray(grad_out._impl.array().astype(a.dtype, copy=False)
                             .reshape(x.shape))
    grad_in, grad_weight, grad_bias = _batch_norm_backward(
        x, g, weight, running_mean, running_var, save_mean, save_invstd, train, eps,
        output_mask)
    values = (None if grad_in is None else grad_in.reshape(a.shape), grad_weight, grad_bias)
    return tuple(None if spec is None else out(v, spec.dtype) for v, spec in zip(values, specs))


def _batch_norm_backward(x, g, weight, running_mean, running_var, save_mean, save_invstd,
                         train, eps, output_mask, images=None):
    """(grad_input (N, C, L), grad_weight, grad_bias) arrays for x and g of shape (N, C, L);
    the NHWC kernel passes its rows as (N * H * W, C, 1), with `images` = (N, H * W), how
    its first axis splits into images (see _image_sums). Three steps: the per-image sums
    (_image_sums), the per-channel coefficients from them (_backward_coefficients), and
    grad_input (_grad_input), the passes over the data compiled loops and BLAS."""
    if train:
        mean = _compute(save_mean).astype(x.dtype, copy=False)
        invstd = _compute(save_invstd).astype(x.dtype, copy=False)
    else:
        mean = _compute(running_mean).astype(x.dtype, copy=False)
        with np.errstate(divide="ignore", invalid="ignore"):
            # in double, rounded once, as PyTorch's kernel (its eps is a double)
            invstd = (1 / np.sqrt(_compute(running_var).astype(np.float64) + eps)) \
                .astype(x.dtype)
    count = x.shape[0] * x.shape[2]
    # grad_input's array; before that, the rows' form's scratch for g * (x - mean)
    grad_in = np.empty(x.shape, x.dtype)
    with np.errstate(invalid="ignore", over="ignore"):    # (sums of infinities: no warning)
        partials = _image_sums(g, x, mean, grad_in, images)
    sums = np.empty((3, len(mean)))
    coefficients = np.empty((3, len(mean)), x.dtype)
    _backward_coefficients(partials, invstd, weight is not None,
                           invstd if weight is None else
                           _compute(weight).astype(x.dtype, copy=False),
                           count, sums, coefficients)
    sum_g, _, grad_weight = sums
    if not output_mask[0]:
        return None, grad_weight, sum_g
    k, grad_mean, scale = coefficients        # (evaluation: k and grad_mean unused)
    return _grad_input(x, g, mean, k, grad_mean, scale, train, grad_in), grad_weight, sum_g


@loop
def _backward_coefficients(partials, invstd, has_weight, weight, count, sums, coefficients):
    """Per channel c, from partials (2, N, C) of each image's sum(g) and sum(g * (x -
    mean)) in x's dtype:

        sum_g, dot     the N partials added in double, as PyTorch's kernel (its acc_type)
        grad_weight  = dot * invstd                                  (all three in sums)
        k            = dot * invstd^2 / n,  grad_mean = sum_g / n    (in coefficients,
        scale        = invstd * weight      (x's dtype, as PyTorch)   with scale)

    k and grad_mean made in double and rounded once, to x's dtype, by their store."""
    for c in range(partials.shape[2]):
        sum_g = np.float64(0)     # (not 0.0: plain Python would add float32s in float32)
        dot = np.float64(0)
        for i in range(partials.shape[1]):
            sum_g += partials[0, i, c]
            dot += partials[1, i, c]
        sums[0, c] = sum_g
        sums[1, c] = dot
        sums[2, c] = dot * invstd[c]
        coefficients[0, c] = dot * invstd[c] * invstd[c] / count
        coefficients[1, c] = sum_g / count
        coefficients[2, c] = invstd[c] * weight[c] if has_weight else invstd[c]


def _grad_input(x, g, mean, k, grad_mean, scale, train, grad_in):
    """Batch norm's grad_input (N, C, L), into `grad_in`, from row-major x and g (N, C, L)
    and the per-channel (C,) coefficients: `_grad_input_planes`, or `_grad_input_rows`
    where a plane is one element (the NHWC kernel's rows, a 2-D input: a loop along
    planes of one element would run scalar code)."""
    if x.shape[2] > 1:
        _grad_input_planes(x, g, mean, k, grad_mean, scale, train, grad_in)
    else:
        rows = x.shape[:2]
        _grad_input_rows(x.reshape(rows), g.reshape(rows), mean, k, grad_mean, scale, train,
                         grad_in.reshape(rows))
    return grad_in


@loop
def _grad_input_planes(x, g, mean, k, grad_mean, scale, train, grad_in):
    """grad_input over the planes of (N, C, L) arrays, per channel c (scale = invstd *
    weight; k = dot * invstd^2 / n and grad_mean = sum(g) / n rounded once to x's dtype):

        training:    ((g - (x - mean) * k) - grad_mean) * scale
        evaluation:  g * scale              (the running statistics are constants)

    NOTE: the scale multiplies last, as in PyTorch's kernel: with an infinite weight the
    bracket stays finite and the result is +-inf, not the inf - inf = NaN of scaling each
    term first. One pass that reads x and g once (NumPy's were four, in place), the
    coefficients scalars: the inner loop along a plane is vector code."""
    for i in range(x.shape[0]):
        for c in range(x.shape[1]):
            m, kc, gm, s = mean[c], k[c], grad_mean[c], scale[c]
            for j in range(x.shape[2]):
                if train:
                    grad_in[i, c, j] = ((g[i, c, j] - (x[i, c, j] - m) * kc) - gm) * s
                else:
                    grad_in[i, c, j] = g[i, c, j] * s


@loop
def _grad_input_rows(x, g, mean, k, grad_mean, scale, train, grad_in):
    """_grad_input_planes over (R, C) rows, the coefficients (C,) along each row."""
    for r in range(x.shape[0]):
        for c in range(x.shape[1]):
            if train:
                grad_in[r, c] = ((g[r, c] - (x[r, c] - mean[c]) * k[c]) - grad_mean[c]) \
                    * scale[c]
            else:
                grad_in[r, c] = g[r, c] * scale[c]


def _image_sums(g, x, mean, products, images=None):
    """The (2, N, C) partials of sum(g) and sum(g * (x - mean)) over each channel of
    row-major (N, C, L) arrays, in PyTorch's order: each image's plane of a channel in
    the arrays' dtype, which _backward_coefficients adds in double, PyTorch's acc_type of
    float (its contiguous kernel adds each plane's float reduction into a double; its
    channels-last one adds each thread's float partials in double, here one image's). A
    channel of huge values cancelling between images (seed 4029939: 1e30s, whose float32
    total was 6e-5 off) then gets PyTorch's digits. `images`: (N, H * W), the images of
    the NHWC kernel's (N * H * W, C, 1) rows; None for NCHW. `products`: an (N, C, L)
    scratch for the products g * (x - mean) of the rows' form, which a loop makes
    (PyTorch's terms, x - mean first: no cancellation).

    The sums of planes by one compiled loop whose additions may be reordered into vector
    lanes (`_plane_sums`: 2x faster than the products and a BLAS matrix-vector product of
    them), the rows' by einsum."""
    n, c, length = g.shape
    if length > 1:
        partials = np.empty((2, n, c), g.dtype)
        _plane_sums(x, g, mean, g.dtype.type(0), partials)
        return partials
    _centered_products_rows(x.reshape(n, c), g.reshape(n, c), mean, products.reshape(n, c))
    if images is None or images[1] == 1:
        # One element a plane (a 2-D input, or NC11): PyTorch takes its channels-last
        # kernel, which adds each thread's rows in float; float32 down all the rows here
        # (one thread's order), one partial: the double sum of the elements cost 2-3x.
        images = (1, n)
    partials = np.empty((2, images[0], c), g.dtype)
    for k, v in enumerate((g, products)):
        np.einsum("nlc->nc", v.reshape(images + (c,)), out=partials[k])
    return partials


@loop(reassociate=True)
def _plane_sums(x, g, mean, zero, partials):
    """partials[0, i, c] = sum(g[i, c]) and partials[1, i, c] = sum((x[i, c] - mean[c]) *
    g[i, c]) over the planes of (N, C, L) arrays, the products never stored. Its
    additions may be reordered (`reassociate`): each sum runs in vector lanes, added up
    at the end, as BLAS and PyTorch's vectorized reductions add. `zero`: 0 in x's dtype
    (a literal 0.0 would make the sums double)."""
    for i in range(x.shape[0]):
        for c in range(x.shape[1]):
            m = mean[c]
            sum_g = zero
            dot = zero
            for j in range(x.shape[2]):
                sum_g += g[i, c, j]
                dot += (x[i, c, j] - m) * g[i, c, j]
            partials[0, i, c] = sum_g
            partials[1, i, c] = dot


@loop
def _centered_products_rows(x, g, mean, products):
    """products = (x - mean) * g over (R, C) rows, mean (C,) along each row."""
    for r in range(x.shape[0]):
        for c in range(x.shape[1]):
            products[r, c] = (x[r, c] - mean[c]) * g[r, c]


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """Normalize over the trailing `normalized_shape` dims; weight and bias have that shape.

        mean, var over the last k dims;  out = (input - mean) * rstd * weight + bias
    """
    spec = shape_rule("normalization.native_layer_norm")(
        "native_layer_norm", (input, normalized_shape, weight, bias, eps))
    a = _compute(input)
    k = len(normalized_shape)
    before = a.ndim - k
    count = math.prod(a.shape[before:])
    if a.size and a.flags.c_contiguous:     # (float32 or float64: _compute's types)
        return _layer_norm_by_loop(a, count, weight, bias, eps, spec)
    mean, var, centered = _moments(a, tuple(range(before, a.ndim)))
    mean = _welford_mean(mean, var, count)
    rstd = 1 / np.sqrt(var + eps)
    centered *= rstd
    y = _affine(centered, _param(weight, before, 0, a), _param(bias, before, 0, a))
    return out(y, spec[0].dtype), out(mean, spec[1].dtype), out(rstd, spec[2].dtype)


def _layer_norm_by_loop(a, count, weight, bias, eps, spec):
    """native_layer_norm of a row-major float32 or float64 `a` by `_layer_norm_rows`."""
    rows = a.size // count
    one = a.dtype.type(1)
    w = one.reshape(1) if weight is None else \
        weight._impl.array().astype(a.dtype, copy=False).reshape(count)
    b = one.reshape(1) if bias is None else \
        bias._impl.array().astype(a.dtype, copy=False).reshape(count)
    y = np.empty(a.shape, a.dtype)
    mean = np.empty(rows, a.dtype)
    rstd = np.empty(rows, a.dtype)
    _layer_norm_rows(a.reshape(rows, count), np.ascontiguousarray(w), weight is not None,
                     np.ascontiguousarray(b), bias is not None, a.dtype.type(eps), one,
                     y.reshape(rows, count), mean, rstd)
    stats = spec[1].sizes
    return (out(y, spec[0].dtype), out(mean.reshape(stats), spec[1].dtype),
            out(rstd.reshape(stats), spec[2].dtype))


@loop(reassociate=True)
def _layer_norm_rows(x, w, has_w, b, has_b, eps, one, y, mean, rstd):
    """Layer norm of each row of x (R, n): mean and biased variance summed along the row
    (the additions in vector lanes: `reassociate`), rstd = 1 / sqrt(var + eps), then
    y = (x - mean) * (rstd * w) + b in one pass (w and b: ignored when has_w / has_b is
    False). The returned mean is NaN where the variance is (a row holding an infinity),
    as PyTorch's Welford update leaves it (_welford_mean). `one`, `eps`: x's dtype
    (a literal 1 or a Python float would make the arithmetic double)."""
    n = x.shape[1]
    count = one * n
    for r in range(x.shape[0]):
        total = one - one
        for j in range(n):
            total += x[r, j]
        m = total / count
        squares = one - one
        for j in range(n):
            d = x[r, j] - m
            squares += d * d
        var = squares / count
        s = one / np.sqrt(var + eps)
        mean[r] = m if var == var else var
        rstd[r] = s
        for j in range(n):
            t = (x[r, j] - m) * (s * w[j]) if has_w else (x[r, j] - m) * s
            y[r, j] = t + b[j] if has_b else t


def fused_rms_norm(input, normalized_shape, weight, eps):
    """out = input * rstd * weight, rstd = 1 / sqrt(mean(input**2) + eps) over the trailing
    dims; eps=None means the dtype's machine epsilon (PyTorch's default). rstd is float32
    for half inputs, as in PyTorch."""
    spec = shape_rule("normalization.fused_rms_norm")(
        "_fused_rms_norm", (input, normalized_shape, weight, eps))
    a = _compute(input)
    if eps is None:
        eps = machine_eps(input._impl.dtype)
    k = len(normalized_shape)
    axes = tuple(range(a.ndim - k, a.ndim))
    with np.errstate(invalid="ignore"):
        rstd = 1 / np.sqrt(np.mean(a * a, axis=axes, keepdims=True) + eps)
    y = _affine(a * rstd, _param(weight, a.ndim - k, 0, a), None)
    return out(y, spec[0].dtype), out(rstd, spec[1].dtype)


def _norm_backward(grad_out, input, k, mean, rstd, weight, mask, specs):
    """The gradients of y = xhat * weight (+ bias), xhat = (x - mean) * rstd, over the
    trailing k dims, from the saved statistics (mean None: rms_norm):

        g = grad * weight
        grad_input  = rstd * (g - mean(g) - xhat * mean(g * xhat))   (no mean(g) for rms)
        grad_weight = sum over the leading dims of grad * xhat;  grad_bias: of grad
    """
    a = _compute(input)
    g = grad_out._impl.array().astype(a.dtype, copy=False)
    if mean is not None:
        return _layer_norm_backward_rows(a, g, k, mean, rstd, weight, mask, specs)
    axes = tuple(range(a.ndim - k, a.ndim))
    lead = tuple(range(a.ndim - k))
    stat_shape = a.shape[:a.ndim - k] + (1,) * k
    r = rstd._impl.array().astype(a.dtype, copy=False).reshape(stat_shape)
    with np.errstate(invalid="ignore", over="ignore"):
        xhat = a * r
        w = None if weight is None else _param(weight, a.ndim - k, 0, a)
        gx = g if w is None else g * w
        grad_in = r * (gx - xhat * np.mean(gx * xhat, axis=axes, keepdims=True))
        values = (grad_in if mask[0] else None,
                  np.sum(g * xhat, axis=lead) if mask[1] else None,
                  np.sum(g, axis=lead) if len(mask) > 2 and mask[2] else None)
    return tuple(None if spec is None else out(v, spec.dtype) for v, spec in zip(values, specs))


def _layer_norm_backward_rows(a, g, k, mean, rstd, weight, mask, specs):
    """_norm_backward of layer norm: the loop `_layer_norm_grad_rows` over (rows, n)
    views of x and grad (float32 or float64, _compute's types)."""
    shape = a.shape
    n = math.prod(shape[a.ndim - k:])
    rows = math.prod(shape[:a.ndim - k])
    x = np.ascontiguousarray(a.reshape(rows, n))
    g = np.ascontiguousarray(g.reshape(rows, n))
    m = np.ascontiguousarray(mean._impl.array().astype(x.dtype, copy=False).reshape(rows))
    r = np.ascontiguousarray(rstd._impl.array().astype(x.dtype, copy=False).reshape(rows))
    one = x.dtype.type(1)
    w = one.reshape(1) if weight is None else \
        np.ascontiguousarray(weight._impl.array().astype(x.dtype, copy=False).reshape(n))
    need_bias = len(mask) > 2 and bool(mask[2])
    grad_in = np.empty((rows, n), x.dtype) if mask[0] else one.reshape(1, 1)
    grad_weight = np.zeros(n, x.dtype) if mask[1] else one.reshape(1)
    grad_bias = np.zeros(n, x.dtype) if need_bias else one.reshape(1)
    _layer_norm_grad_rows(x, g, m, r, w, weight is not None, one, bool(mask[0]),
                          bool(mask[1]), need_bias, grad_in, grad_weight, grad_bias)
    normalized = shape[a.ndim - k:]
    values = (grad_in.reshape(shape) if mask[0] else None,
              grad_weight.reshape(normalized) if mask[1] else None,
              grad_bias.reshape(normalized) if need_bias else None)
    return tuple(None if spec is None else out(v, spec.dtype) for v, spec in zip(values, specs))


@loop(reassociate=True)
def _layer_norm_grad_rows(x, g, mean, rstd, w, has_w, one, need_input, need_weight,
                          need_bias, grad_in, grad_weight, grad_bias):
    """Layer norm's gradients over the rows of x and g (R, n), with PyTorch's CPU
    kernel's factoring of rstd * (g w - mean(g w) - xhat * mean(g w xhat)), per row,
    s = 1 / n:

        ds = sum(g * w * x),  db = sum(g * w)       (along the row, in vector lanes)
        grad_input = g * (rstd * w) + x * b + c,
                     b = (db * mean - ds) * rstd**3 * s,  c = -b * mean - db * rstd * s
        grad_weight += (x - mean) * g * rstd,  grad_bias += g      (down the rows)

    (w ignored when has_w is False; a gradient not needed is neither made nor written.)
    NOTE: the same factoring gives the same infinities and NaNs as PyTorch: an infinite
    weight enters through ds and db (so b and c), where the other form meets inf - inf
    in other places (see group_norm_backward)."""
    n = x.shape[1]
    s = one / (one * n)
    for r in range(x.shape[0]):
        m = mean[r]
        rs = rstd[r]
        if need_input:
            ds = one - one
            db = one - one
            for j in range(n):
                gw = g[r, j] * w[j] if has_w else g[r, j]
                ds += gw * x[r, j]
                db += gw
            b = (db * m - ds) * rs * rs * rs * s
            c = -b * m - db * rs * s
            for j in range(n):
                first = g[r, j] * (rs * w[j]) if has_w else rs * g[r, j]
                grad_in[r, j] = first + x[r, j] * b + c
        if need_weight:
            for j in range(n):
                grad_weight[j] += (x[r, j] - m) * g[r, j] * rs
        if need_bias:
            for j in range(n):
                grad_bias[j] += g[r, j]


def native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias,
                               output_mask):
    """(grad_input, grad_weight, grad_bias) of native_layer_norm; see _norm_backward."""
    specs = shape_rule("normalization.native_layer_norm_backward")(
        "native_layer_norm_backward", (grad_out, input, normalized_shape, mean, rstd, weight, bias,
                                       output_mask))
    return _norm_backward(grad_out, input, len(normalized_shape), mean, rstd, weight,
                          output_mask, specs)


def fused_rms_norm_backward(grad_out, input, normalized_shape, rstd, weight, output_mask):
    """(grad_input, grad_weight) of _fused_rms_norm; see _norm_backward."""
    specs = shape_rule("normalization.fused_rms_norm_backward")(
        "_fused_rms_norm_backward", (grad_out, input, normalized_shape, rstd, weight, output_mask))
    return _norm_backward(grad_out, input, len(normalized_shape), None, rstd, weight,
                          output_mask, specs)


def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    """Split the C channels into `group` groups; normalize each (sample, group) over its
    channels and spatial positions; then scale and shift per channel.

        x.reshape(N, group, C // group * HxW): mean, var over the last dim
    Returns (out, mean, rstd), the stats of shape (N, group).
    """
    spec = shape_rule("normalization.native_group_norm")(
        "native_group_norm", (input, weight, bias, N, C, HxW, group, eps))
    a = _compute(input)
    grouped = a.reshape(N, group, (C // group) * HxW)
    mean, var, _ = _moments(grouped, (2,))
    # NOTE: PyTorch's group (and layer) norm accumulates the moments by Welford's update,
    # in which an infinity is followed by x - inf: the mean of a group holding an infinity
    # is NaN there, not the inf a plain sum gives (its variance is NaN either way).
    mean = _welford_mean(mean, var, (C // group) * HxW)
    with np.errstate(invalid="ignore", divide="ignore"):
        rstd = 1 / np.sqrt(var + eps)
        # As PyTorch does: one scale and shift per (sample, channel), y = x * scale + shift,
        # with scale = rstd * weight, shift = bias - mean * scale. An infinite weight then
        # gives inf - inf = NaN where (x - mean) * rstd * weight would give +-inf.
        per_channel = (N, group, C // group)
        scale = np.broadcast_to(rstd, per_channel)
        if weight is not None:
            scale = scale * _param(weight, 0, 0, a).reshape(1, group, C // group)
        shift = -mean * scale
        if bias is not None:
            shift = shift + _param(bias, 0, 0, a).reshape(1, group, C // group)
        x = a.reshape(N, group, C // group, HxW)
        y = (x * scale[..., None] + shift[..., None]).reshape(a.shape)
    return (out(y, spec[0].dtype), out(mean.reshape(N, group), spec[1].dtype),
            out(rstd.reshape(N, group), spec[2].dtype))


# ---- NHWC kernels: batch_norm of channels_last inputs ---------------------------------
# In NHWC memory the channels are the fastest dim: the (N * H * W, C) rows are a view, the
# per-channel reductions run down its columns, and the result is written NHWC directly,
# with none of the two layout copies the NCHW kernels need through the fallback.
def native_batch_norm_nhwc(input, weight, bias, running_mean, running_var, training,
                           momentum, eps):
    spec = shape_rule("normalization.native_batch_norm")(
        "native_batch_norm", (input, weight, bias, running_mean, running_var, training, momentum,
                              eps))
    a = _compute(input)
    y, mean, rstd = _batch_norm(nhwc_rows(a), weight, bias, running_mean, running_var,
                                training, momentum, eps,
                                half=_half_dtype(input, weight, bias, running_mean,
                                                 running_var))
    n, c, h, w = a.shape
    return (out_channels_last(y.reshape(n, h, w, c), spec[0].dtype), out(mean, spec[1].dtype),
            out(rstd, spec[2].dtype))


def native_batch_norm_backward_nhwc(grad_out, input, weight, running_mean, running_var,
                                    save_mean, save_invstd, train, eps, output_mask):
    specs = shape_rule("normalization.native_batch_norm_backward")(
        "native_batch_norm_backward", (grad_out, input, weight, running_mean, running_var,
                                       save_mean, save_invstd, train, eps, output_mask))
    a = _compute(input)
    n, c, h, w = a.shape
    x = np.ascontiguousarray(nhwc_rows(a))[:, :, None]                # (N * H * W, C, 1)
    g = np.ascontiguousarray(
        nhwc_rows(grad_out._impl.array().astype(a.dtype, copy=False)))[:, :, None]
    grad_in, grad_weight, grad_bias = _batch_norm_backward(
        x, g, weight, running_mean, running_var, save_mean, save_invstd, train, eps,
        output_mask, images=(n, h * w))
    results = [None if grad_in is None or specs[0] is None else
               out_channels_last(grad_in.reshape(n, h, w, c), specs[0].dtype)]
    results += [None if spec is None else out(v, spec.dtype)
                for v, spec in zip((grad_weight, grad_bias), specs[1:])]
    return tuple(results)


def _wide_image(sizes):
    # The NHWC kernels' loops run along the channels: at 3 or 4 channels the backward
    # loses to the NCHW kernel with its two layout copies (0.7-0.9x); from 8 up both win
    # (forward 1.5-3.6x, backward 1.2-2.5x; benchmarks/bench_kernel_selection.py).
    return len(sizes) == 4 and sizes[1] >= 8


_4D = ShapeRule("4-D input, at least 8 channels",
                lambda input, *rest: _wide_image(input._impl.sizes))
_4D_BACKWARD = ShapeRule("4-D input, at least 8 channels",
                         lambda grad_out, input, *rest: _wide_image(input._impl.sizes))
nhwc = Library("CPU", "cpu_kernels.normalization (NHWC)")
nhwc.impl("native_batch_norm", native_batch_norm_nhwc, priority=10, layout="channels_last",
          shape=_4D)
nhwc.impl("native_batch_norm_backward", native_batch_norm_backward_nhwc, priority=10,
          layout="channels_last", shape=_4D_BACKWARD)
