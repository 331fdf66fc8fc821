"""The same-size convolution (stride 1, padding d*(k-1)/2: the output grid is the input's)
with columns that hold no garbage positions, built by one copy.

When the output has the input's H x W, output position p = (oh, ow) and kernel offset
(i, j) read input position (oh + i*d_h - p_h, ow + j*d_w - p_w). Pad the input with p_h
zero ROWS above and below only (rows of W, no padded columns): then, on the flat padded
plane, that position is p + i*d_h*W + j*d_w - p_w, an affine function of (i, j, p). So
all the columns are one strided view of the padded input, copied once:

    cols[n, c, j, i, p] = padded[n, c].flat[p + i*d_h*W + j*d_w - p_w]

Kernel columns that shift by dx = j*d_w - p_w != 0 wrap around: output columns ow < -dx
(or ow >= W - dx) read the neighbouring row's end instead of the zero padding. They are
zeroed after the copy, one strided fill per kernel column j: with the offsets ordered
(j, i), the kernel rows i and the image rows are one axis of KH*H rows of W, so the fill
is (N * C) strided runs, or C in the channel-major layout. (The weight is reordered to
(c, j, i) to match: a copy of C_out * C_in * KH * KW numbers.)

The padded buffer is per geometry (_Buffers): its zero rows are written once, when it is
made, and never again (each call copies only the H real rows of each plane).

Two layouts of the same columns, one per product:

  image-major (N, C * KW * KH, H*W), the forward: image n's columns are a contiguous
      block, so W (C_out, K) @ cols[n] writes image n's output in its own (C_out, H*W)
      order straight into the result, no crop and no transpose (the run layout of
      cpu_kernels/conv.py computes 9/8 of the products for 8x8 images and copies the
      result once more);
  channel-major (C * KW * KH, N * H*W), the weight gradient: one long product
      cols @ g^T over all the batch's positions, in place of one short product per image
      and a sum (1.1x to 1.4x faster measured at the digits CNN's and a ResNet block's
      sizes, even with its own copy of the columns in place of the forward's).

grad_input is itself a same-size convolution of g with the weight flipped and its channels
swapped (the padding d*(k-1) - p of the transposed form is p again).
"""
from __future__ import annotations

import threading

import numpy as np

from tensorplay.dispatch.plan_cache import plans

# The batch goes through in chunks whose columns take at most this many bytes: the products
# read a chunk's columns right after the copy wrote them, still in the cache (as the run
# layout's CHUNK_BYTES in conv.py; 256 KiB to 8 MiB measured within 10% here, 2 MiB best).
CHUNK_BYTES = 2 * 1024 * 1024


class _Geometry:
    """The copy of one (C, H, W, kernel, dilation, padding): the padded plane, the view's
    strides (in elements) and, per kernel column j, the image columns that wrap."""

    def __init__(self, signature):
        c, h, w, kernel, dilation, padding = signature
        self.signature = signature
        (self.kh, self.kw), self.c, self.h, self.w = kernel, c, h, w
        self.plane = h * w
        self.k = c * self.kh * self.kw
        self.pad_rows = padding[0]
        self.padded_plane = (h + 2 * padding[0]) * w
        # The view starts p_w elements before the first plane, so the buffer has p_w spare
        # elements at each end (the first row's left and the last row's right neighbours).
        self.slack = padding[1]
        self.step_j, self.step_i = dilation[1], dilation[0] * w
        self.wraps = []
        for j in range(self.kw):
            dx = j * dilation[1] - padding[1]
            if dx < 0:
                self.wraps.append((j, slice(0, min(w, -dx))))
            elif dx > 0:
                self.wraps.append((j, slice(max(0, w - dx), w)))

    def image_bytes(self, itemsize):
        return self.k * self.plane * itemsize

    def step(self, n, itemsize):
        """Images per chunk: at most CHUNK_BYTES of columns, the batch split evenly."""
        most = max(1, CHUNK_BYTES // self.image_bytes(itemsize))
        chunks = -(-n // most)
        return -(-n // chunks)


def _geometry(c, h, w, kernel, dilation, padding):
    signature = (c, h, w, tuple(kernel), tuple(dilation), tuple(padding))
    return plans.get("cpu.conv.same", signature, lambda: _Geometry(signature))


class _Buffers(threading.local):
    """Per-thread buffers: the row-padded inputs, one per geometry and dtype (zero rows
    made once), and scratch arrays reused from call to call (as conv.py's _Scratch). At
    most LIMIT padded buffers (the oldest goes) and KEEP_BYTES each: larger ones are made
    afresh each call. Nothing returned to a caller is a view of these."""

    LIMIT = 8
    KEEP_BYTES = 32 * 1024 * 1024

    def __init__(self):
        self.padded_inputs = {}   # (geometry's signature, dtype) -> flat buffer
        self.scratch = {}         # (name, dtype) -> flat buffer

    def padded(self, geometry, n, dtype):
        """A flat buffer for n row-padded planes (and the slack), zero outside the rows
        that the copy writes."""
        size = n * geometry.c * geometry.padded_plane + 2 * geometry.slack
        if size * dtype.itemsize > self.KEEP_BYTES:
            return np.zeros(size, dtype)
        key = (geometry.signature, dtype)
        buffer = self.padded_inputs.get(key)
        if buffer is None or buffer.size < size:
            if buffer is None and len(self.padded_inputs) >= self.LIMIT:
                self.padded_inputs.pop(next(iter(self.padded_inputs)))
            buffer = self.padded_inputs[key] = np.zeros(size, dtype)
        # A buffer made for a larger batch: its first n planes. The slack after them is
        # then the next plane's first row: a zero row when p_h >= 1, else data of an
        # earlier call, which only wrapped positions read (zeroed after the copy).
        return buffer[:size]

    def take(self, name, shape, dtype):
        size = 1
        for s in shape:
            size *= s
        if size * dtype.itemsize > self.KEEP_BYTES:
            return np.empty(shape, dtype)
        buffer = self.scratch.get((name, dtype))
        if buffer is None or buffer.size < size:
            buffer = self.scratch[(name, dtype)] = np.empty(size, dtype)
        return buffer[:size].reshape(shape)


_buffers = _Buffers()


def _columns(geometry, x, image_major, ones):
    """The columns of x (n, C, H*W) in a scratch buffer: (n, K, H*W) image-major, else
    (K, n * H*W), K = C * KW * KH in (c, j, i) order; with ones=True one more row of
    ones after the K (per image, image-major), which turns a bias column of the weight
    into the bias added by the product itself (image-major), or makes the product's last
    row the gradient summed over positions, grad_bias (channel-major)."""
    n, c = x.shape[:2]
    dtype = x.dtype
    flat = _buffers.padded(geometry, n, dtype)
    planes = flat[geometry.slack:geometry.slack + n * c * geometry.padded_plane]
    rows = geometry.pad_rows * geometry.w
    planes.reshape(n, c, geometry.padded_plane)[:, :, rows:rows + geometry.plane] = x
    item = dtype.itemsize
    plane = item * geometry.padded_plane
    k, kh, kw, length = geometry.k, geometry.kh, geometry.kw, geometry.plane
    extra = 1 if ones else 0
    # Strides of (n, c, j, i, p); the view starts p_w elements (the slack) before plane 0.
    n_s, c_s, j_s, i_s = c * plane, plane, item * geometry.step_j, item * geometry.step_i
    if image_major:
        cols = _buffers.take("image-major columns", (n, k + extra, length), dtype)
        block = cols[:, :k].reshape(n, c, kw, kh, length)
        view = np.ndarray(block.shape, dtype, flat, strides=(n_s, c_s, j_s, i_s, item))
    else:
        cols = _buffers.take("channel-major columns", (k + extra, n * length), dtype)
        block = cols[:k].reshape(c, kw, kh, n, length)
        view = np.ndarray(block.shape, dtype, flat, strides=(c_s, j_s, i_s, n_s, item))
    np.copyto(block, view)
    for j, wrapped in geometry.wraps:
        if image_major:
            rows_of_j = block[:, :, j].reshape(n, c, kh * geometry.h, geometry.w)
        else:
            rows_of_j = block[:, j].reshape(c, kh * n * geometry.h, geometry.w)
        rows_of_j[..., wrapped] = 0
    if ones:
        cols[..., k, :] = 1
    return cols


def _column_weight(w, bias=None):
    """w (O, C, KH, KW) as (O, C * KW * KH), the columns' (c, j, i) order; with the bias
    as one more column (for columns with a row of ones)."""
    o = w.shape[0]
    if bias is None:
        return w.transpose(0, 1, 3, 2).reshape(o, -1)
    wm = np.empty((o, w[0].size + 1), w.dtype)
    wm[:, :-1].reshape(w.shape[:2] + (w.shape[3], w.shape[2]))[...] = w.transpose(0, 1, 3, 2)
    wm[:, -1] = bias
    return wm


def conv_same(x, w, bias, padding, dilation):
    """conv(x, w) + bias for x (N, C, H, W), w (O, C, KH, KW), stride 1, padding
    d*(k-1)/2: (N, O, H, W), in x's dtype. Image-major columns, chunk by chunk, one product
    per image straight into the result (the bias with it: a row of ones in the columns)."""
    n, c, h, wd = x.shape
    o = w.shape[0]
    geometry = _geometry(c, h, wd, w.shape[2:], dilation, padding)
    wm = _column_weight(w, bias)
    result = np.empty((n, o, h * wd), x.dtype)
    flat = x.reshape(n, c, h * wd)
    step = geometry.step(n, x.itemsize)
    for at in range(0, n, step):
        stop = min(at + step, n)
        cols = _columns(geometry, flat[at:stop], True, bias is not None)
        np.matmul(wm, cols, out=result[at:stop])
    return result.reshape(n, o, h, wd)


def weight_grad_same(x, g, kernel, padding, dilation, bias_grad=False):
    """d(sum(conv_same(x, w) * g)) / dw: (O, C, KH, KW) = cols @ g^T over all positions,
    channel-major columns, chunk by chunk. bias_grad=True: (grad_weight, grad_bias), the
    latter from the columns' row of ones in the same product."""
    n, c, h, wd = x.shape
    o = g.shape[1]
    geometry = _geometry(c, h, wd, kernel, dilation, padding)
    flat = x.reshape(n, c, h * wd)
    gm = g.reshape(n, o, h * wd)
    step = geometry.step(n, x.itemsize)
    total = None
    for at in range(0, n, step):
        stop = min(at + step, n)
        m = stop - at
        cols = _columns(geometry, flat[at:stop], False, bias_grad)
        rows = _buffers.take("gradient rows", (o, m, geometry.plane), g.dtype)
        np.copyto(rows, gm[at:stop].transpose(1, 0, 2))
        # cols @ g^T (K, O): OpenBLAS runs this order faster than g @ cols^T (the long
        # M = m * H*W axis is the inner one of the big operand).
        part = np.matmul(cols, rows.reshape(o, m * geometry.plane).T)
        total = part if total is None else total + part
    gw = total[:geometry.k].T.reshape(o, c, geometry.kw, geometry.kh)
    gw = np.ascontiguousarray(gw.transpose(0, 1, 3, 2))
    return (gw, total[geometry.k].copy()) if bias_grad else gw


def input_grad_same(g, w, padding, dilation):
    """d(sum(conv_same(x, w) * g)) / dx: sliding w over x is adjoint to sliding w flipped,
    its in/out channels swapped, over g, with the padding d*(k-1) - p, which for a
    same-size convolution is p again. g (N, O, H, W), w (O, C, KH, KW) -> (N, C, H, W)."""
    flipped = np.ascontiguousarray(w[:, :, ::-1, ::-1].transpose(1, 0, 2, 3))
    return conv_same(g, flipped, None, padding, dilation)
