"""Convolution (1-D, 2-D, 3-D, transposed, grouped) and its backward, by im2col.

A convolution is one matrix product per group once the input's windows are laid
out as rows ("im2col"):

    cols[g]  = windows of the input, (N * out_pixels, C_in/G * kernel_numel)
    out[g]   = cols[g] @ weight[g].T                  (N * out_pixels, C_out/G)

A transposed convolution is the adjoint of that map: multiply first, then add the
columns back into an image (`add_windows`, "col2im"). The backward of each is the
other one, which is why both live here. The only Python loops run over groups
(one np.matmul does all of them) and kernel offsets (inside col2im).
"""
from __future__ import annotations

import numpy as np

from tensorplay.meta import nn_spatial as rules
from cpu_kernels._common import accumulate_dtype, out
from cpu_kernels._windows import add_windows, pad_spatial, windows


def _compute_dtype(dtype):
    """Half types in float32 (as PyTorch accumulates them); integers in int64, which wraps
    back to the same value modulo 2**bits as PyTorch's own integer arithmetic."""
    if dtype.is_floating_point:
        return accumulate_dtype(dtype)
    return np.int64


def _numel(sizes):
    return int(np.prod(sizes, dtype=np.int64))


def _im2col(x, kernel, stride, padding, dilation, groups, out_sizes=None):
    """(G, N * P, C/G * K) rows of windows, and the output's spatial sizes. `out_sizes`
    keeps only the first windows along each dim (a transposed convolution's output_padding
    can leave windows that no gradient position reads)."""
    n, c = x.shape[:2]
    k = len(kernel)
    win = windows(pad_spatial(x, padding), kernel, stride, dilation)   # (N, C, *O, *K)
    if out_sizes is not None:
        win = win[(slice(None), slice(None)) + tuple(slice(0, s) for s in out_sizes)]
    out_sizes = win.shape[2:2 + k]
    win = win.reshape((n, groups, c // groups) + win.shape[2:])
    # (G, N, *O, C/G, *K): one copy, made by the reshape.
    order = (1, 0) + tuple(range(3, 3 + k)) + (2,) + tuple(range(3 + k, 3 + 2 * k))
    cols = win.transpose(order).reshape(groups, n * _numel(out_sizes),
                                        c // groups * _numel(kernel))
    return cols, out_sizes


def _conv(x, w, stride, padding, dilation, groups):
    """Regular convolution of arrays: x (N, C_in, *S), w (C_out, C_in/G, *K)."""
    n = x.shape[0]
    c_out, kernel = w.shape[0], w.shape[2:]
    cols, out_sizes = _im2col(x, kernel, stride, padding, dilation, groups)
    wm = w.reshape(groups, c_out // groups, -1).transpose(0, 2, 1)     # (G, C/G * K, O/G)
    r = np.matmul(cols, wm)                                            # (G, N * P, O/G)
    r = r.reshape((groups, n) + tuple(out_sizes) + (c_out // groups,))
    k = len(kernel)
    r = r.transpose((1, 0, 2 + k) + tuple(range(2, 2 + k)))            # (N, G, O/G, *O)
    return r.reshape((n, c_out) + tuple(out_sizes))


def _conv_transpose(x, w, stride, padding, dilation, output_padding, groups):
    """Transposed convolution of arrays: x (N, C_in, *S), w (C_in, C_out/G, *K)."""
    n, c_in = x.shape[:2]
    spatial, kernel = x.shape[2:], w.shape[2:]
    k = len(kernel)
    cg_out = w.shape[1]
    # cols[g] = w[g]^T @ x[g] laid out (O/G * K, N * P): each kernel offset's slice is then
    # a run of whole images, which col2im adds with contiguous reads.
    xm = x.reshape(n, groups, c_in // groups, _numel(spatial)).transpose(1, 2, 0, 3)
    xm = xm.reshape(groups, c_in // groups, n * _numel(spatial))      # (G, C/G, N * P)
    wm = w.reshape(groups, c_in // groups, -1).transpose(0, 2, 1)      # (G, O/G * K, C/G)
    cols = np.matmul(wm, xm)                                           # (G, O/G * K, N * P)
    cols = cols.reshape((groups, cg_out) + tuple(kernel) + (n,) + tuple(spatial))
    # A view (N, G, O/G, *S, *K) for add_windows.
    order = (2 + k, 0, 1) + tuple(range(3 + k, 3 + 2 * k)) + tuple(range(2, 2 + k))
    cols = cols.transpose(order)
    # The full image the windows cover, plus output_padding; then drop `padding`.
    full = [(i - 1) * s + d * (kk - 1) + 1 + op for i, kk, s, d, op
            in zip(spatial, kernel, stride, dilation, output_padding)]
    image = add_windows(cols, full, stride, dilation)
    image = image.reshape((n, groups * cg_out) + tuple(full))
    sizes = rules.conv_output_sizes(x.shape, w.shape, stride, padding, dilation, True,
                                    output_padding)
    keep = tuple(slice(p, p + s) for p, s in zip(padding, sizes))
    return image[(slice(None), slice(None)) + keep]


def _conv_weight_grad(x, g, kernel, stride, padding, dilation, groups):
    """d(sum(conv(x, w) * g)) / dw for a regular convolution: (C_out, C_in/G, *K).
    `g` may cover fewer output positions than the windows do (the transposed case)."""
    g_sizes = g.shape[2:]
    cols, _ = _im2col(x, kernel, stride, padding, dilation, groups, g_sizes)
    n, c_out = g.shape[:2]
    gm = g.reshape(n, groups, c_out // groups, _numel(g_sizes)).transpose(1, 0, 3, 2)
    gm = gm.reshape(groups, n * _numel(g_sizes), c_out // groups)     # (G, N * P, O/G)
    # cols^T @ gm rather than gm^T @ cols: both operands then run along their long
    # N * P axis in memory order, which OpenBLAS handles several times faster.
    gw = np.matmul(cols.transpose(0, 2, 1), gm)                        # (G, C/G * K, O/G)
    gw = gw.transpose(0, 2, 1)
    return gw.reshape((c_out, x.shape[1] // groups) + tuple(kernel))


def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                groups):
    """out = conv(input, weight) + bias, or its transposed form (see the module doc)."""
    spec = rules.convolution("convolution", (input, weight, bias, stride, padding, dilation,
                                             transposed, output_padding, groups))
    dtype = input._impl.dtype
    acc = _compute_dtype(dtype)
    x = input._impl.array().astype(acc, copy=False)
    w = weight._impl.array().astype(acc, copy=False)
    if transposed:
        r = _conv_transpose(x, w, stride, padding, dilation, output_padding, groups)
    else:
        r = _conv(x, w, stride, padding, dilation, groups)
    if bias is not None:
        r = r + bias._impl.array().astype(acc).reshape((-1,) + (1,) * (r.ndim - 2))
    assert r.shape == tuple(spec.sizes)
    return out(np.ascontiguousarray(r), dtype)


def convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
                         transposed, output_padding, groups, output_mask):
    """(grad_input, grad_weight, grad_bias), each None where output_mask says so.

        regular:     grad_input  = conv_transpose(grad, weight)     (col2im of grad @ W)
                     grad_weight = grad^T @ im2col(input)
        transposed:  grad_input  = conv(grad, weight)
                     grad_weight = input^T @ im2col(grad)
        both:        grad_bias   = grad summed over batch and space
    """
    rules.convolution_backward("convolution_backward", (
        grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
        output_padding, groups, output_mask))
    dtype = input._impl.dtype
    acc = _compute_dtype(dtype)
    g = grad_output._impl.array().astype(acc, copy=False)
    x = input._impl.array().astype(acc, copy=False)
    w = weight._impl.array().astype(acc, copy=False)
    kernel = w.shape[2:]
    spatial = x.shape[2:]
    gi = gw = gb = None
    if output_mask[0]:
        if transposed:
            gi = _conv(g, w, stride, padding, dilation, groups)
            gi = gi[(slice(None), slice(None)) + tuple(slice(0, s) for s in spatial)]
        else:
            # The output_padding that makes the transposed conv give back input's sizes.
            made = rules.conv_output_sizes(g.shape, w.shape, stride, padding, dilation, True,
                                           (0,) * len(kernel))
            extra = tuple(s - m for s, m in zip(spatial, made))
            gi = _conv_transpose(g, w, stride, padding, dilation, extra, groups)
        gi = out(np.ascontiguousarray(gi), dtype)
    if output_mask[1]:
        if transposed:
            gw = _conv_weight_grad(g, x, kernel, stride, padding, dilation, groups)
        else:
            gw = _conv_weight_grad(x, g, kernel, stride, padding, dilation, groups)
        gw = out(np.ascontiguousarray(gw), dtype)
    if output_mask[2]:
        gb = out(g.sum(axis=(0,) + tuple(range(2, g.ndim))), dtype)
    return gi, gw, gb
