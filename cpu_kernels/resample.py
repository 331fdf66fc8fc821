"""Nearest and bilinear upsampling of (N, C, H, W), and their backwards.

Both are separable: along each spatial dim, output position o reads at most two input
positions, i0[o] and i1[o], with weights l0[o] and l1[o] (nearest: one position, weight
1). So, as PyTorch computes it (the H mix outside, the W mix inside),

    out[.., o, p]  = l0h[o] * (l0w[p] * x[.., i0h[o], i0w[p]] + l1w[p] * x[.., i0h[o], i1w[p]])
                   + l1h[o] * (l0w[p] * x[.., i1h[o], i0w[p]] + l1w[p] * x[.., i1h[o], i1w[p]])

and the backward adds each weighted gradient back into the positions it was read from.
NOTE: gathering only the positions read (rather than multiplying by an (out, in) matrix of
weights) keeps PyTorch's NaN convention: an infinite input reaches only the outputs that
read it (0 * inf = NaN there, as in PyTorch), not every output of its row.

The index arithmetic follows PyTorch's exactly (including computing the source
coordinate in float32 for float32 inputs), so results match it bit for bit in the
positions chosen.
"""
from __future__ import annotations

import numpy as np

from tensorplay.kernel_support.arguments import upsample_params
from tensorplay.kernel_support.ops import shape_rule
from tensorplay.library import kernel
from cpu_kernels._common import accumulate_dtype, check_result, out


def _scale(in_size, out_size, scale, align_corners, ftype):
    """How far apart, in input coordinates, two output positions are."""
    if align_corners:
        return ftype((in_size - 1) / (out_size - 1)) if out_size > 1 else ftype(0)
    if scale is not None and scale > 0:
        return ftype(1.0 / scale)
    return ftype(in_size) / ftype(out_size)


def nearest_taps(in_size, out_size, scale, ftype):
    """One tap: i0[o] = min(floor(o * scale), in - 1) (PyTorch's nearest_idx), weight 1."""
    o = np.arange(out_size)
    if out_size == in_size:
        src = o
    elif out_size == 2 * in_size:
        src = o >> 1
    else:
        s = _scale(in_size, out_size, scale, False, np.float32)
        src = np.minimum(np.floor(o.astype(np.float32) * s).astype(np.int64), in_size - 1)
    return ((src, np.ones(out_size, ftype)),)


def linear_taps(in_size, out_size, align_corners, scale, ftype):
    """Two taps of linear interpolation (PyTorch's area_pixel_compute_source_index):

        src = o * s (align_corners)  or  max((o + 0.5) * s - 0.5, 0)
        i0 = floor(src), weight 1 - frac;  i1 = i0 + 1 (clamped to in - 1), weight frac
    """
    s = _scale(in_size, out_size, scale, align_corners, ftype)
    o = np.arange(out_size).astype(ftype)
    src = o * s if align_corners else np.maximum((o + ftype(0.5)) * s - ftype(0.5), ftype(0))
    i0 = src.astype(np.int64)
    i1 = np.where(i0 < in_size - 1, i0 + 1, i0)
    frac = np.clip(src - i0, 0, 1).astype(ftype)
    return ((i0, (1 - frac).astype(ftype)), (i1, frac))


def _taps(mode, in_hw, out_hw, align_corners, scales_h, scales_w, dtype):
    ftype = np.dtype(dtype).type
    if mode == "nearest":
        return (nearest_taps(in_hw[0], out_hw[0], scales_h, ftype),
                nearest_taps(in_hw[1], out_hw[1], scales_w, ftype))
    return (linear_taps(in_hw[0], out_hw[0], align_corners, scales_h, ftype),
            linear_taps(in_hw[1], out_hw[1], align_corners, scales_w, ftype))


def _mix(x, taps):
    """sum over the taps of weight * x gathered along the last dim (W)."""
    total = None
    for index, weight in taps:
        term = weight * np.take(x, index, axis=-1)
        total = term if total is None else total + term
    return total


def _spread(g, taps, axis, size):
    """The transpose of a mix along `axis`: each weighted gradient added back at the
    input position it was read from (so 0 * an infinite gradient stays where it was read)."""
    g = np.moveaxis(g, axis, -1)
    total = np.zeros(g.shape[:-1] + (size,), g.dtype)
    for index, weight in taps:
        np.add.at(total, (Ellipsis, index), weight * g)
    return np.moveaxis(total, -1, axis)


@kernel(family=True)
def upsample2d(op, self, output_size, *params):
    """upsample_nearest2d and upsample_bilinear2d (their parameters: upsample_params)."""
    mode, align_corners, scales_h, scales_w = upsample_params(op, params)
    shape_rule("resample.upsample2d")(op, (self, output_size))
    acc = accumulate_dtype(self._impl.dtype)
    sizes = self._impl.sizes
    check_result(op, "output_size", (*sizes[:-2], *output_size), self._impl.dtype)
    for out_len, in_len in zip(output_size, sizes[-2:]):   # the interpolation matrices
        check_result(op, "output_size", (out_len, in_len), np.dtype(acc))
    x = self._impl.array().astype(acc, copy=False)
    taps_h, taps_w = _taps(mode, x.shape[-2:], output_size, align_corners, scales_h,
                           scales_w, acc)
    with np.errstate(invalid="ignore"):
        # the H mix of W mixes: a sum over i of l_h[i] * (W mix of the rows at i_h[i])
        y = None
        for index, weight in taps_h:
            term = weight[:, None] * _mix(np.take(x, index, axis=-2), taps_w)
            y = term if y is None else y + term
    return out(y, self._impl.dtype)


@kernel(family=True)
def upsample2d_backward(op, grad_output, output_size, input_size, *params):
    """The backwards of upsample_nearest2d and upsample_bilinear2d."""
    mode, align_corners, scales_h, scales_w = upsample_params(op, params)
    shape_rule("resample.upsample2d_backward")(op, (grad_output, output_size, input_size))
    acc = accumulate_dtype(grad_output._impl.dtype)
    g = grad_output._impl.array().astype(acc, copy=False)
    taps_h, taps_w = _taps(mode, input_size[-2:], output_size, align_corners, scales_h,
                           scales_w, acc)
    with np.errstate(invalid="ignore"):
        rows = _spread(g, taps_w, -1, input_size[-1])
        grad = _spread(rows, taps_h, -2, input_size[-2])
    return out(grad, grad_output._impl.dtype)
