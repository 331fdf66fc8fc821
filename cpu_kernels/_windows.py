"""Sliding windows over the spatial dims of an `(N, C, *spatial)` array, and their
adjoint: the two halves of im2col / col2im that convolution, pooling and
unfold/fold are built from.

`windows` is a strided *view* (no copy): element `[n, c, *o, *k]` is input element
`[n, c, *(o * stride + k * dilation)]`. `add_windows` is its transpose: it sums an
array shaped like that view back into the input's positions, looping over the
kernel offsets only (9 iterations for a 3x3 kernel), never over pixels.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def pad_spatial(a, padding, value=0):
    """Pad the trailing len(padding) dims of `a` by `padding[i]` on both sides."""
    if not any(padding):
        return a
    widths = [(0, 0)] * (a.ndim - len(padding)) + [(p, p) for p in padding]
    return np.pad(a, widths, constant_values=value)


def windows(a, kernel, stride, dilation):
    """View of `a` (`(..., *spatial)`) as `(..., *out, *kernel)` windows.

        for o in out positions, k in kernel offsets:
            view[..., o, k] = a[..., o * stride + k * dilation]
    """
    k = len(kernel)
    extent = tuple(d * (kk - 1) + 1 for kk, d in zip(kernel, dilation))
    axes = tuple(range(a.ndim - k, a.ndim))
    v = sliding_window_view(a, extent, axis=axes)
    lead = (slice(None),) * (a.ndim - k)
    return v[lead + tuple(slice(None, None, s) for s in stride)
             + tuple(slice(None, None, d) for d in dilation)]


def add_windows(cols, spatial, stride, dilation, dtype=None):
    """The adjoint of `windows`: a zero array of shape `(..., *spatial)` with every window
    element of `cols` (`(..., *out, *kernel)`) added at its position.

        for k in kernel offsets:                      # the only Python loop
            result[..., o * stride + k * dilation] += cols[..., o, k]   for all o at once
    """
    k = len(spatial)
    lead = cols.shape[:cols.ndim - 2 * k]
    out_sizes = cols.shape[cols.ndim - 2 * k:cols.ndim - k]
    kernel = cols.shape[cols.ndim - k:]
    result = np.zeros(lead + tuple(spatial), dtype or cols.dtype)
    if 0 in out_sizes:
        return result
    for offsets in np.ndindex(*kernel):
        dst = tuple(slice(o * d, o * d + s * (n - 1) + 1, s)
                    for o, d, s, n in zip(offsets, dilation, stride, out_sizes))
        result[(Ellipsis,) + dst] += cols[(Ellipsis,) + tuple(
            slice(None) for _ in range(k)) + offsets]
    return result
