"""The 3x3 convolution (stride 1, padding 1) by Winograd's minimal filtering, F(2x2, 3x3):
each 2x2 block of the output from one 4x4 tile of the input in 16 multiplications where
the direct sum takes 36 (Lavin and Gray, "Fast Algorithms for Convolutional Neural
Networks", 2015).

For one input and one output channel, with d the 4x4 input tile whose top-left corner is
(2a - 1, 2b - 1) (the padding of 1 is the zeros around the input) and g the 3x3 kernel,
the 2x2 output block at (2a, 2b) is

    Y = A^T [ (G g G^T) * (B^T d B) ] A          (* elementwise, 4x4)

    B^T = [1  0 -1  0]     G = [ 1    0    0 ]     A^T = [1  1  1  0]
          [0  1  1  0]         [1/2  1/2  1/2]           [0  1 -1 -1]
          [0 -1  1  0]         [1/2 -1/2  1/2]
          [0  1  0 -1]         [ 0    0    1 ]

B^T d B and A^T m A are additions only. Summed over the input channels, the elementwise
product becomes 16 matrix products, one per position k of the 4x4 tile, in the row form
(one row per tile, the channels along it):

    U[k] = (G g G^T)[k]    (C_in, C_out)     the weight, transformed once a call
    V[k] = (B^T d B)[k]    (tiles, C_in)     the input
    M[k] = V[k] @ U[k]     (tiles, C_out)    one batched product (np.matmul)

and each tile's output block is A^T M A. The products hold 16/36 of the direct sum's
multiplications; what they cost on top are the transforms, compiled loops
(cpu_kernels/_loops.py) whose innermost loop runs along the channels, on images laid out
channels-last (N, H, W, C) for them. V and M are stored tile-major, (tiles, 16, C): as
(16, tiles, C) the loops' 16 streams of stores lay a power of two apart and evicted each
other from the cache (the input transform ran 9x slower). The batch goes through in
chunks whose V and M stay in the cache.

Numerics: the transforms add and subtract before the products, so an infinity or NaN in
a tile spreads to the tile's whole output block as NaN, where the direct sum gives an
infinity at some positions; and values near the largest float can overflow in a
transform where the direct sum does not. A result that is not all finite is therefore
computed again by the caller's direct form. For finite inputs the result is as close to
the float64 convolution as the im2col form's (measured relative error 2-3e-7 in float32,
against 4-7e-7 for im2col): each output is a shorter sum.
"""
from __future__ import annotations

import numpy as np

from cpu_kernels._loops import loop

# Each chunk's V and M (the input's and the output's transforms) take at most this many
# bytes: a ResNet block's 32 channels on 16x16 measured 2 images a chunk (512 KiB) as
# fast as 4 or 8 and 1.4x faster than the whole batch of 32 at once.
CHUNK_BYTES = 512 * 1024


def winograd_conv(x, w, bias=None, flip=False):
    """conv(x, w) + bias, x (N, C, H, W) and w (O, C, 3, 3) float32 or float64, stride 1,
    padding 1: (N, O, H, W) in x's dtype, or None where that result is not all finite
    (the caller then runs the direct form; see the module doc). flip=True: the
    convolution with w flipped in space and its channels swapped (x then has O channels,
    the result C), which grad_input is."""
    n, c, h, wd = x.shape
    u = np.empty((16, w.shape[0 if flip else 1], w.shape[1 if flip else 0]), x.dtype)
    _weight_tiles(w, flip, u)
    o = u.shape[2]
    th, tw = (h + 1) // 2, (wd + 1) // 2       # an odd H or W: the last tiles half outside
    tiles = th * tw
    step = max(1, min(n, CHUNK_BYTES // (tiles * 16 * (c + o) * x.itemsize)))
    # (chunk, H + 2, W + 2, C): the padding's zeros written once, each chunk's images copied
    # into the interior, channels last
    padded = np.zeros((step, 2 * th + 2, 2 * tw + 2, c), x.dtype)
    v = np.empty((step * tiles, 16, c), x.dtype)
    m = np.empty((step * tiles, 16, o), x.dtype)
    result = np.empty((n, 2 * th, 2 * tw, o), x.dtype)
    shift = np.zeros(o, x.dtype) if bias is None else np.ascontiguousarray(bias, x.dtype)
    with np.errstate(all="ignore"):     # (a result that is not finite is not used)
        for at in range(0, n, step):
            k = min(step, n - at)
            chunk = padded[:k]
            chunk[:, 1:h + 1, 1:wd + 1] = x[at:at + k].transpose(0, 2, 3, 1)
            tv, tm = v[:k * tiles], m[:k * tiles]
            _input_tiles(chunk, tv)
            np.matmul(tv.transpose(1, 0, 2), u, out=tm.transpose(1, 0, 2))
            _output_tiles(tm, shift, result[at:at + k])
    if not np.isfinite(result).all():
        return None
    return np.ascontiguousarray(result[:, :h, :wd].transpose(0, 3, 1, 2))


@loop
def _weight_tiles(w, flip, u):
    """u[k, c, o] = (G g G^T)[k // 4, k % 4] for each 3x3 kernel g = w[o, c] (flip: g =
    w[c, o] turned by 180 degrees, u then (16, O, C)), made in double and rounded once to
    u's dtype. G g G^T: each column of g (a, b, c) becomes (a, (a + b + c) / 2,
    (a - b + c) / 2, c), then each row of that the same way."""
    g = np.empty((3, 3))                   # one kernel, in double
    h = np.empty((4, 3))                   # G g: its columns transformed
    for i in range(u.shape[1]):
        for j in range(u.shape[2]):
            for r in range(3):
                for s in range(3):
                    if flip:
                        g[r, s] = w[i, j, 2 - r, 2 - s]
                    else:
                        g[r, s] = w[j, i, r, s]
            for s in range(3):
                a, b, c = g[0, s], g[1, s], g[2, s]
                h[0, s], h[1, s], h[2, s], h[3, s] = a, (a + b + c) / 2, (a - b + c) / 2, c
            for r in range(4):             # (G g) G^T: then its rows
                a, b, c = h[r, 0], h[r, 1], h[r, 2]
                u[4 * r, i, j] = a
                u[4 * r + 1, i, j] = (a + b + c) / 2
                u[4 * r + 2, i, j] = (a - b + c) / 2
                u[4 * r + 3, i, j] = c


@loop
def _input_tiles(padded, v):
    """v[t, k, :] = (B^T d B)[k // 4, k % 4] for each tile t = (n * TH + a) * TW + b, d the
    4x4 window padded[n, 2a:2a+4, 2b:2b+4] of channels-last images (each element a row of
    channels; the innermost loop runs along them). Each row of d first (e = d B: a row
    p0 p1 p2 p3 gives p0 - p2, p1 + p2, p2 - p1, p1 - p3), then the same combination of
    e's rows (B^T e)."""
    th, tw = (padded.shape[1] - 2) // 2, (padded.shape[2] - 2) // 2
    for n in range(padded.shape[0]):
        for a in range(th):
            for b in range(tw):
                t = (n * th + a) * tw + b
                r, s = 2 * a, 2 * b
                for c in range(padded.shape[3]):
                    e00 = padded[n, r, s, c] - padded[n, r, s + 2, c]
                    e01 = padded[n, r, s + 1, c] + padded[n, r, s + 2, c]
                    e02 = padded[n, r, s + 2, c] - padded[n, r, s + 1, c]
                    e03 = padded[n, r, s + 1, c] - padded[n, r, s + 3, c]
                    e10 = padded[n, r + 1, s, c] - padded[n, r + 1, s + 2, c]
                    e11 = padded[n, r + 1, s + 1, c] + padded[n, r + 1, s + 2, c]
                    e12 = padded[n, r + 1, s + 2, c] - padded[n, r + 1, s + 1, c]
                    e13 = padded[n, r + 1, s + 1, c] - padded[n, r + 1, s + 3, c]
                    e20 = padded[n, r + 2, s, c] - padded[n, r + 2, s + 2, c]
                    e21 = padded[n, r + 2, s + 1, c] + padded[n, r + 2, s + 2, c]
                    e22 = padded[n, r + 2, s + 2, c] - padded[n, r + 2, s + 1, c]
                    e23 = padded[n, r + 2, s + 1, c] - padded[n, r + 2, s + 3, c]
                    e30 = padded[n, r + 3, s, c] - padded[n, r + 3, s + 2, c]
                    e31 = padded[n, r + 3, s + 1, c] + padded[n, r + 3, s + 2, c]
                    e32 = padded[n, r + 3, s + 2, c] - padded[n, r + 3, s + 1, c]
                    e33 = padded[n, r + 3, s + 1, c] - padded[n, r + 3, s + 3, c]
                    v[t, 0, c], v[t, 1, c] = e00 - e20, e01 - e21
                    v[t, 2, c], v[t, 3, c] = e02 - e22, e03 - e23
                    v[t, 4, c], v[t, 5, c] = e10 + e20, e11 + e21
                    v[t, 6, c], v[t, 7, c] = e12 + e22, e13 + e23
                    v[t, 8, c], v[t, 9, c] = e20 - e10, e21 - e11
                    v[t, 10, c], v[t, 11, c] = e22 - e12, e23 - e13
                    v[t, 12, c], v[t, 13, c] = e10 - e30, e11 - e31
                    v[t, 14, c], v[t, 15, c] = e12 - e32, e13 - e33


@loop
def _output_tiles(m, bias, result):
    """result[n, 2a:2a+2, 2b:2b+2, :] = A^T m A + bias for each tile t = (n * TH + a) * TW
    + b, m = M[t] (16 rows of output channels; the innermost loop runs along them): the
    rows of the 4x4 m combined first (q = A^T m: m0 + m1 + m2 and m1 - m2 - m3 of each
    column), then q's columns the same way."""
    th, tw = result.shape[1] // 2, result.shape[2] // 2
    for n in range(result.shape[0]):
        for a in range(th):
            for b in range(tw):
                t = (n * th + a) * tw + b
                r, s = 2 * a, 2 * b
                for o in range(result.shape[3]):
                    q00 = m[t, 0, o] + m[t, 4, o] + m[t, 8, o]
                    q01 = m[t, 1, o] + m[t, 5, o] + m[t, 9, o]
                    q02 = m[t, 2, o] + m[t, 6, o] + m[t, 10, o]
                    q03 = m[t, 3, o] + m[t, 7, o] + m[t, 11, o]
                    q10 = m[t, 4, o] - m[t, 8, o] - m[t, 12, o]
                    q11 = m[t, 5, o] - m[t, 9, o] - m[t, 13, o]
                    q12 = m[t, 6, o] - m[t, 10, o] - m[t, 14, o]
                    q13 = m[t, 7, o] - m[t, 11, o] - m[t, 15, o]
                    result[n, r, s, o] = q00 + q01 + q02 + bias[o]
                    result[n, r, s + 1, o] = q01 - q02 - q03 + bias[o]
                    result[n, r + 1, s, o] = q10 + q11 + q12 + bias[o]
                    result[n, r + 1, s + 1, o] = q11 - q12 - q13 + bias[o]
