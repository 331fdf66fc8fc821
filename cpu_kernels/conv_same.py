"""The same-size convolution (stride 1, padding d*(k-1)/2: the output grid is the input's)
by shifted runs, without a padded copy and without garbage positions.

When the output has the input's H x W, output position p = (oh, ow) and kernel offset
(i, j) read input position (oh + dy, ow + dx) with dy = i*d - p_h, dx = j*d - p_w: on the
flat H*W plane that is p + s, s = dy*W + dx, the same shift for every position. So one
kernel offset's columns are ONE slice copy of the input, every image and channel at once:

    cols[n, c, j, i, a:e] = x[n, c, a + s : e + s]     (a, e: where p + s stays in the plane)

with two kinds of positions that must read zero instead (the padding):
  - rows above/below the image: the ends [0, a) and [e, H*W) of the run. The copy never
    writes them, so they are zeroed once, when the buffer is made, and stay zero (each
    geometry has its own buffer: _Buffers);
  - columns left/right of the image: a shift by dx wraps around to the previous/next row.
    The columns ow < -dx (or ow >= W - dx) are zeroed after the copies, by one strided
    fill per kernel column j: in the (n, c, j, i, H*W) layout the kernel rows i and the
    image rows are one axis of KH*H rows of W, so the fill is (N * C) runs of KH*H values.
    That is why the kernel offsets are ordered (j, i), column-major: the weight is
    reordered to match (a copy of C_out * C_in * KH * KW numbers).

The columns of one image are a contiguous (C * KW * KH, H * W) block, so the product
W (C_out, K) @ cols[n] writes image n's output in its own (C_out, H * W) order straight
into the result: no crop, no transpose (for the digits CNN's 8x8 images the run layout of
cpu_kernels/conv.py computes 9/8 of the products and copies the result once more).

The backward uses the same columns: grad_weight = sum over n of g[n] @ cols[n]^T (the
forward's columns when they are still in the buffer), and grad_input is itself a
same-size convolution of g with the weight flipped and its channels swapped.
"""
from __future__ import annotations

import threading

import numpy as np

from tensorplay.dispatch.plan_cache import plans

# The batch goes through in chunks whose columns take at most this many bytes: the products
# read a chunk's columns right after the copies wrote them, still in the cache (as the run
# layout's CHUNK_BYTES in conv.py; 256 KiB to 8 MiB measured within 10% here, 2 MiB best).
CHUNK_BYTES = 2 * 1024 * 1024


class _Geometry:
    """The copies of one (C, H, W, kernel, dilation, padding): for each kernel offset (j, i)
    its run (a, e, s), and for each kernel column j the image columns that wrap."""

    def __init__(self, signature):
        c, h, w, kernel, dilation, padding = signature
        self.signature = signature
        kh, kw = kernel
        self.c, self.h, self.w, self.kh, self.kw = c, h, w, kh, kw
        self.plane = h * w
        self.k = c * kh * kw
        self.runs = []      # (j, i, a, e, s)
        self.wraps = []     # (j, slice of the image columns to zero)
        for j in range(kw):
            dx = j * dilation[1] - padding[1]
            for i in range(kh):
                s = (i * dilation[0] - padding[0]) * w + dx
                a, e = max(0, -s), min(self.plane, self.plane - s)
                self.runs.append((j, i, a, e, s))
            if dx < 0:
                self.wraps.append((j, slice(0, min(w, -dx))))
            elif dx > 0:
                self.wraps.append((j, slice(max(0, w - dx), w)))


def _geometry(c, h, w, kernel, dilation, padding):
    signature = (c, h, w, tuple(kernel), tuple(dilation), tuple(padding))
    return plans.get("cpu.conv.same", signature, lambda: _Geometry(signature))


class _Buffers(threading.local):
    """Per-thread column buffers, one per geometry and dtype, zero where the copies never
    write (see the module doc), and which input's columns each holds (`holder`), for the
    backward of the same call. At most LIMIT geometries (the oldest goes) and KEEP_BYTES
    each: a larger chunk gets a fresh zeroed array every call."""

    LIMIT = 8
    KEEP_BYTES = 32 * 1024 * 1024

    def __init__(self):
        self.entries = {}   # (geometry's signature, dtype) -> [buffer, holder]

    def columns(self, geometry, n, dtype):
        """(an (n, C, KW, KH, H*W) array zero at the run ends, its entry or None)."""
        shape = (geometry.c, geometry.kw, geometry.kh, geometry.plane)
        dtype = np.dtype(dtype)
        if n * geometry.k * geometry.plane * dtype.itemsize > self.KEEP_BYTES:
            return np.zeros((n,) + shape, dtype), None
        key = (geometry.signature, dtype)
        entry = self.entries.get(key)
        if entry is None or entry[0].shape[0] < n:
            if entry is None and len(self.entries) >= self.LIMIT:
                self.entries.pop(next(iter(self.entries)))
            entry = self.entries[key] = [np.zeros((n,) + shape, dtype), None]
        entry[1] = None
        return entry[0][:n], entry

    def kept(self, geometry, dtype, holder):
        """The buffer's columns if they are `holder`'s (all of its batch), else None."""
        entry = self.entries.get((geometry.signature, np.dtype(dtype)))
        if entry is None or holder is None or entry[1] != holder:
            return None
        return entry[0][:holder[-1]]


_buffers = _Buffers()


def _fill(geometry, x, cols):
    """The columns of x (n, C, H*W) into cols (n, C, KW, KH, H*W), whose run ends are zero."""
    for j, i, a, e, s in geometry.runs:
        cols[:, :, j, i, a:e] = x[:, :, a + s:e + s]
    n, c = x.shape[:2]
    for j, columns in geometry.wraps:
        rows = cols[:, :, j].reshape(n, c, geometry.kh * geometry.h, geometry.w)
        rows[..., columns] = 0


def _step(geometry, n, itemsize):
    return max(1, min(n, CHUNK_BYTES // (geometry.k * geometry.plane * itemsize)))


def _column_weight(w):
    """w (O, C, KH, KW) as (O, C * KW * KH), the columns' (c, j, i) order."""
    return w.transpose(0, 1, 3, 2).reshape(w.shape[0], -1)


def conv_same(x, w, bias, padding, dilation, holder=None):
    """conv(x, w) + bias for x (N, C, H, W), w (O, C, KH, KW), stride 1, padding
    d*(k-1)/2: (N, O, H, W), computed in x's dtype. `holder`: a key (ending with N) under
    which the columns stay in the buffer for weight_grad_same, when one chunk holds the
    whole batch."""
    n, c, h, wd = x.shape
    geometry = _geometry(c, h, wd, w.shape[2:], dilation, padding)
    wm = _column_weight(w)
    result = np.empty((n, w.shape[0], h * wd), np.result_type(x, w))
    flat = x.reshape(n, c, h * wd)
    step = _step(geometry, n, x.itemsize)
    b = None if bias is None else bias.reshape(-1, 1)
    for at in range(0, n, step):
        stop = min(at + step, n)
        cols, entry = _buffers.columns(geometry, stop - at, x.dtype)
        _fill(geometry, flat[at:stop], cols)
        r = result[at:stop]
        np.matmul(wm, cols.reshape(stop - at, geometry.k, geometry.plane), out=r)
        if b is not None:
            r += b
        if entry is not None and step >= n:
            entry[1] = holder
    return result.reshape(n, w.shape[0], h, wd)


def weight_grad_same(x, g, kernel, padding, dilation, holder=None):
    """d(sum(conv_same(x, w) * g)) / dw: (O, C, KH, KW) = sum over n of g[n] @ cols[n]^T,
    with the forward's columns when the buffer still holds `holder`'s."""
    n, c, h, wd = x.shape
    geometry = _geometry(c, h, wd, kernel, dilation, padding)
    gm = g.reshape(n, g.shape[1], h * wd)
    cols = _buffers.kept(geometry, x.dtype, holder)
    if cols is not None:
        chunks = [(0, n, cols)]
    else:
        step = _step(geometry, n, x.itemsize)
        chunks = [(at, min(at + step, n), None) for at in range(0, n, step)]
    flat = x.reshape(n, c, h * wd)
    total = 0
    for at, stop, cols in chunks:
        if cols is None:
            cols, _ = _buffers.columns(geometry, stop - at, x.dtype)
            _fill(geometry, flat[at:stop], cols)
        # cols[n] @ g[n]^T, (K, O) per image: OpenBLAS runs this order faster than
        # g[n] @ cols[n]^T (the long K side is the output's rows).
        per_image = np.matmul(cols.reshape(stop - at, geometry.k, geometry.plane),
                              gm[at:stop].transpose(0, 2, 1))
        total = total + per_image.sum(axis=0)
    gw = total.T.reshape(g.shape[1], c, geometry.kw, geometry.kh)
    return np.ascontiguousarray(gw.transpose(0, 1, 3, 2))


def input_grad_same(g, w, padding, dilation):
    """d(sum(conv_same(x, w) * g)) / dx: sliding w over x is adjoint to sliding w flipped,
    its in/out channels swapped, over g, with the padding d*(k-1) - p, which for a
    same-size convolution is p again. g (N, O, H, W), w (O, C, KH, KW) -> (N, C, H, W)."""
    flipped = np.ascontiguousarray(w[:, :, ::-1, ::-1].transpose(1, 0, 2, 3))
    return conv_same(g, flipped, None, padding, dilation)
