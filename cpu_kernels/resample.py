"""Nearest and bilinear upsampling of (N, C, H, W), and their backwards.

Both are separable linear maps: along each spatial dim, output position o reads a fixed
mix of input positions, i.e. a small (out, in) matrix M. So

    out          = M_h @ x @ M_w^T        (two matmuls over the whole batch)
    grad_input   = M_h^T @ grad @ M_w

The matrices follow PyTorch's index arithmetic exactly (including computing the source
coordinate in float32 for float32 inputs), so results match it bit for bit in the
positions chosen.
"""
from __future__ import annotations

import numpy as np

from tensorplay.library import kernel
from tensorplay.meta import nn_spatial_resample as rules
from cpu_kernels._common import accumulate_dtype, check_result, out


def _scale(in_size, out_size, scale, align_corners, ftype):
    """How far apart, in input coordinates, two output positions are."""
    if align_corners:
        return ftype((in_size - 1) / (out_size - 1)) if out_size > 1 else ftype(0)
    if scale is not None and scale > 0:
        return ftype(1.0 / scale)
    return ftype(in_size) / ftype(out_size)


def nearest_matrix(in_size, out_size, scale, ftype=np.float32):
    """M[o, min(floor(o * scale), in - 1)] = 1 (PyTorch's nearest_idx)."""
    o = np.arange(out_size)
    if out_size == in_size:
        src = o
    elif out_size == 2 * in_size:
        src = o >> 1
    else:
        s = _scale(in_size, out_size, scale, False, np.float32)
        src = np.minimum(np.floor(o.astype(np.float32) * s).astype(np.int64), in_size - 1)
    m = np.zeros((out_size, in_size), ftype)
    m[o, src] = 1
    return m


def linear_matrix(in_size, out_size, align_corners, scale, ftype):
    """Rows of linear interpolation weights (PyTorch's area_pixel_compute_source_index):

        src = o * s (align_corners)  or  max((o + 0.5) * s - 0.5, 0)
        M[o, floor(src)] = 1 - frac,  M[o, floor(src) + 1 (clamped)] = frac
    """
    s = _scale(in_size, out_size, scale, align_corners, ftype)
    o = np.arange(out_size).astype(ftype)
    src = o * s if align_corners else np.maximum((o + ftype(0.5)) * s - ftype(0.5), ftype(0))
    i0 = src.astype(np.int64)
    i1 = np.where(i0 < in_size - 1, i0 + 1, i0)
    frac = np.clip(src - i0, 0, 1).astype(ftype)
    m = np.zeros((out_size, in_size), ftype)
    rows = np.arange(out_size)
    np.add.at(m, (rows, i0), 1 - frac)
    np.add.at(m, (rows, i1), frac)
    return m


def _matrices(mode, in_hw, out_hw, align_corners, scales_h, scales_w, dtype):
    ftype = np.dtype(dtype).type
    if mode == "nearest":
        return (nearest_matrix(in_hw[0], out_hw[0], scales_h, ftype),
                nearest_matrix(in_hw[1], out_hw[1], scales_w, ftype))
    return (linear_matrix(in_hw[0], out_hw[0], align_corners, scales_h, ftype),
            linear_matrix(in_hw[1], out_hw[1], align_corners, scales_w, ftype))


@kernel(family=True)
def upsample2d(op, self, output_size, *params):
    """upsample_nearest2d and upsample_bilinear2d (their parameters: rules.upsample_params)."""
    mode, align_corners, scales_h, scales_w = rules.upsample_params(op, params)
    rules.upsample2d(op, (self, output_size))
    acc = accumulate_dtype(self._impl.dtype)
    sizes = self._impl.sizes
    check_result(op, "output_size", (*sizes[:-2], *output_size), self._impl.dtype)
    for out_len, in_len in zip(output_size, sizes[-2:]):   # the interpolation matrices
        check_result(op, "output_size", (out_len, in_len), np.dtype(acc))
    x = self._impl.array().astype(acc, copy=False)
    m_h, m_w = _matrices(mode, x.shape[-2:], output_size, align_corners, scales_h, scales_w,
                         acc)
    return out(np.matmul(np.matmul(m_h, x), m_w.T), self._impl.dtype)


@kernel(family=True)
def upsample2d_backward(op, grad_output, output_size, input_size, *params):
    """The backwards of upsample_nearest2d and upsample_bilinear2d."""
    mode, align_corners, scales_h, scales_w = rules.upsample_params(op, params)
    rules.upsample2d_backward(op, (grad_output, output_size, input_size))
    acc = accumulate_dtype(grad_output._impl.dtype)
    g = grad_output._impl.array().astype(acc, copy=False)
    m_h, m_w = _matrices(mode, input_size[-2:], output_size, align_corners, scales_h,
                         scales_w, acc)
    return out(np.matmul(np.matmul(m_h.T, g), m_w), grad_output._impl.dtype)
