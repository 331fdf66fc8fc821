"""Convolution (1-D, 2-D, 3-D, transposed, grouped) and its backward, by im2col.

A convolution is one matrix product per group once the input's windows are laid
out as columns ("im2col"):

    cols[g]  = windows of the input, (C_in/G * kernel_numel, N * L)
    out[g]   = weight[g] @ cols[g]                    (C_out/G, N * L)
    grad_weight[g] = grad[g] @ cols[g]^T              (the same columns, one product)
    grad_cols[g]   = weight[g]^T @ grad[g]            then added back into an image
                                                      ("col2im"): grad_input

The columns are laid out channel- and kernel-major, (C, *K, N, L), so that the long
axis of both products is N * L and the copy that builds them reads runs of the input.
Two layouts of the L positions:

  runs (stride 1, the common case): the padded input is read as one flat array per
      channel; kernel offset k starts at a fixed flat position off_k, and output
      position o (on the padded grid) reads element off_k + o. Every kernel offset's
      column block is then one contiguous run per (channel, image):

          padded row width Wp = W + 2p;  L = OH * Wp;  off_(kh,kw) = kh*d*Wp + kw*d
          cols[c, kh, kw, n, :] = flat(padded x[n, c])[off : off + L]

      The Wp - OW extra positions per row are wrapped garbage: the forward crops them,
      and the backward feeds them zero gradients. For the digits CNN's 8x8 images this
      computes 25% more products but makes the copy 3.5x faster than windows ending in
      3-element kernel rows.
  windows (any stride): L = the output positions, read through a strided view.

A transposed convolution is the adjoint of the map above: multiply first, then add the
columns back into an image (`add_windows`, col2im). The only Python loops run over
kernel offsets (inside col2im).
"""
from __future__ import annotations

import itertools
import math
import threading

import copy
import numpy as np

from tensorplay import _dtype as dt
from tensorplay.dispatch.plan_cache import plans
from tensorplay.kernel_support.arguments import conv_output_sizes
from tensorplay.kernel_support.ops import shape_rule
from tensorplay.library import Library, ShapeRule, kernel
from cpu_kernels._common import accumulate_dtype, nhwc_rows, out, out_channels_last
from cpu_kernels._windows import add_windows, pad_spatial, windows

# NCHW kernels: a channels_last call reaches them through the layout-conversion
# fallback of kernel selection, which lays their 4-D results out channels_last again.
NCHW = "contiguous_format"


class _Scratch(threading.local):
    """Per-thread buffers for the arrays that never leave this module (padded input,
    columns, products, col2im image), reused from call to call.

    Fresh multi-megabyte NumPy arrays are mapped and unmapped by malloc each time (it
    returns freed memory at the top of the heap to the system), and every first touch of
    a page is then a fault: for the digits CNN's second layer that was half the time of
    convolution_backward. Buffers above KEEP_BYTES are not kept, so the memory held stays
    bounded. Nothing returned to a caller is ever a view of these buffers.
    """

    KEEP_BYTES = 32 * 1024 * 1024

    def __init__(self):
        self.buffers = {}

    def take(self, name, shape, dtype, zero=False):
        """A C-contiguous array of `shape` (contents undefined unless zero=True) that stays
        valid until the next take(name) in this thread."""
        dtype = np.dtype(dtype)
        size = math.prod(shape)
        if size * dtype.itemsize > self.KEEP_BYTES:
            return np.zeros(shape, dtype) if zero else np.empty(shape, dtype)
        buffer = self.buffers.get((name, dtype))
        if buffer is None or buffer.size < size:
            buffer = self.buffers[(name, dtype)] = np.empty(size, dtype)
        view = buffer[:size].reshape(shape)
        if zero:
            view.fill(0)
        return view


_scratch = _Scratch()


def _compute_dtype(dtype):
    """Half types in float32 (as PyTorch accumulates them); integers in int64, which wraps
    back to the same value modulo 2**bits as PyTorch's own integer arithmetic."""
    if dtype.is_floating_point:
        return accumulate_dtype(dtype)
    return np.int64


def _numel(sizes):
    return math.prod(sizes)


def _run_layout(spatial, kernel, padding, dilation):
    """The padded buffer the run layout reads: the padded sizes, except that rows (the last
    dim) of 2-D and 3-D inputs share their padding: a row is [p zeros][W values], so its
    right padding is the next row's left padding (the last row's lies in the slack after
    the buffer). That leaves d*(k-1) - p garbage positions per output row instead of
    d*(k-1): 1 instead of 2 for a 3x3 kernel with padding 1, 10% less work on 8x8 images.
    Rows must still be at least as long as the output rows: p <= d*(k-1)."""
    padded = [s + 2 * p for s, p in zip(spatial, padding)]
    if len(spatial) > 1 and padding[-1] <= dilation[-1] * (kernel[-1] - 1):
        padded[-1] = spatial[-1] + padding[-1]
    return tuple(padded)


class _Columns:
    """im2col of x (N, C, *S) for a kernel: `cols` (G, C/G * K, N * L) and where its L
    positions lie (see the module doc). The geometry (everything but `cols`) depends on
    the shapes only: it is the conv's execution plan, made once per signature and kept
    in the plan cache (`_columns`); `filled(x)` is a copy of it with x's columns.

    Attributes:
        cols: the columns, contiguous.
        out_sizes: the convolution's output spatial sizes.
        grid: the L positions as an array shape (runs: the padded grid's rows; windows:
            out_sizes); the outputs are grid[:out_sizes] in every dim.
        runs: the run layout (stride 1); else the windows layout.
    """

    def __init__(self, shape, kernel, stride, padding, dilation, groups):
        """The geometry for an input of `shape`."""
        self.shape = tuple(shape)
        self.kernel, self.padding = tuple(kernel), padding
        self.stride, self.dilation = stride, dilation
        self.groups = groups
        padded = tuple(s + 2 * p for s, p in zip(shape[2:], padding))
        self.padded = padded
        self.out_sizes = tuple((p - d * (k - 1) - 1) // st + 1 for p, k, d, st
                               in zip(padded, kernel, dilation, stride))
        self.runs = all(st == 1 for st in stride)
        self.cols = None
        if self.runs:
            self.layout = _run_layout(shape[2:], kernel, padding, dilation)
            self.plane = _numel(self.layout)
            # Row-major strides of the buffer; L covers the first dim's output rows.
            self.pstrides = [_numel(self.layout[i + 1:]) for i in range(len(padded))]
            self.grid = (self.out_sizes[0],) + self.layout[1:]
            self.offsets = [sum(k * d * ps for k, d, ps in zip(ks, dilation, self.pstrides))
                            for ks in itertools.product(*(range(k) for k in kernel))]
        else:
            self.grid = self.out_sizes

    def filled(self, x):
        """A copy of this geometry holding x's columns."""
        cols = copy.copy(self)
        cols.cols = cols._im2col(x)
        return cols

    def _im2col(self, x):
        n, c = self.shape[:2]
        groups, kernel = self.groups, self.kernel
        cg = c // groups
        length = _numel(self.grid)
        if self.runs:
            flat = self.padded_flat(x)
            item = flat.itemsize
            view = np.lib.stride_tricks.as_strided(
                flat, (groups, cg) + kernel + (n, length),
                tuple(item * v for v in (cg * self.plane, self.plane)) +
                tuple(item * d * ps for d, ps in zip(self.dilation, self.pstrides)) +
                (item * c * self.plane, item), writeable=False)
        else:
            win = windows(pad_spatial(x, self.padding), kernel, self.stride,
                          self.dilation)                                # (N, C, *O, *K)
            win = win.reshape((n, groups, cg) + win.shape[2:])
            k = len(kernel)
            order = ((1, 2) + tuple(range(3 + k, 3 + 2 * k)) + (0,) +
                     tuple(range(3, 3 + k)))
            view = win.transpose(order)                       # (G, C/G, *K, N, *O)
        # The one copy of the forward pass.
        cols = _scratch.take("cols", view.shape, view.dtype)
        np.copyto(cols, view)
        return cols.reshape(groups, cg * _numel(kernel), n * length)

    def padded_flat(self, x):
        """x zero-padded, flattened, with room after the last plane for the runs that
        start near its end (their tails are garbage positions)."""
        n, c = x.shape[:2]
        length = _numel(self.grid)
        slack = max(0, max(self.offsets) + length - self.plane)
        flat = _scratch.take("padded", (n * c * self.plane + slack,), x.dtype, zero=True)
        image = flat[:n * c * self.plane].reshape((n, c) + self.layout)
        image[(slice(None), slice(None)) +
              tuple(slice(p, p + s) for p, s in zip(self.padding, x.shape[2:]))] = x
        return flat

    def crop(self, r):
        """(..., *grid) -> (..., *out_sizes): the real outputs (a view)."""
        k = len(self.grid)
        return r[(Ellipsis,) + tuple(slice(0, s) for s in self.out_sizes[-k:])]

    def on_grid(self, g):
        """A gradient (N, C_out, *sizes) as (G, C_out/G, N * L), zero at the grid's garbage
        positions (so they add nothing to either gradient). `sizes` may be smaller than
        out_sizes: a transposed convolution's output_padding leaves windows no gradient
        position reads."""
        n, c_out = g.shape[:2]
        groups = self.groups
        k = len(self.grid)
        moved = g.reshape((n, groups, c_out // groups) + g.shape[2:])
        moved = moved.transpose((1, 2, 0) + tuple(range(3, 3 + k)))   # (G, O/G, N, *O)
        shape = (groups, c_out // groups, n) + self.grid
        if tuple(g.shape[2:]) == self.grid:
            grid = _scratch.take("grid", shape, g.dtype)
            np.copyto(grid, moved)
        else:
            grid = _scratch.take("grid", shape, g.dtype, zero=True)
            grid[(Ellipsis,) + tuple(slice(0, s) for s in g.shape[2:])] = moved
        return grid.reshape(groups, c_out // groups, n * _numel(self.grid))

    def zero_garbage(self, a):
        """a (G, R, N * L) with its garbage positions (run layout) set to 0, in place.

        NOTE: a zero gradient at a garbage position is not enough to make it add nothing:
        0 * inf and 0 * NaN are NaN. A non-finite input element that a garbage position
        reads (wrapped around from another row) would poison grad_weight, and a
        non-finite weight would put NaN into garbage positions of the columns' gradient,
        which col2im adds into real pixels. PyTorch's gradient is finite there."""
        if not self.runs:
            return a
        k = len(self.grid)
        grid = a.reshape(a.shape[:2] + (self.shape[0],) + self.grid)
        for i in range(1, k):   # the first dim's rows are all real
            index = (slice(None),) * (3 + i) + (slice(self.out_sizes[i], None),)
            grid[index] = 0
        return a

    def add_back(self, dcols):
        """col2im: dcols (G, C/G * K, N * L) added into an (N, C, *S) image, the padding
        dropped. The run layout adds one strided block per kernel offset; the windows
        layout goes through add_windows."""
        n, c = self.shape[:2]
        groups = self.groups
        cg = c // groups
        k = len(self.kernel)
        keep = (slice(None), slice(None)) + tuple(slice(p, p + s) for p, s
                                                  in zip(self.padding, self.shape[2:]))
        if not self.runs:
            d = dcols.reshape((groups, cg) + self.kernel + (n,) + self.out_sizes)
            order = ((2 + k, 0, 1) + tuple(range(3 + k, 3 + 2 * k)) +
                     tuple(range(2, 2 + k)))                           # (N, G, C/G, *O, *K)
            image = add_windows(d.transpose(order), self.padded, self.stride, self.dilation)
            return np.ascontiguousarray(image.reshape((n, c) + self.padded)[keep])
        length = _numel(self.grid)
        dcols = dcols.reshape((groups, cg, len(self.offsets), n, length))
        slack = max(0, max(self.offsets) + length - self.plane)
        flat = _scratch.take("image", (n * c * self.plane + slack,), dcols.dtype, zero=True)
        item = flat.itemsize
        for i, off in enumerate(self.offsets):
            # The runs of one offset never overlap each other: L <= one plane.
            block = np.lib.stride_tricks.as_strided(
                flat[off:], (groups, cg, n, length),
                (item * cg * self.plane, item * self.plane, item * c * self.plane, item))
            block += dcols[:, :, i]
        # A copy: the image is a scratch buffer.
        return np.array(flat[:n * c * self.plane].reshape((n, c) + self.layout)[keep])


def _columns(shape, kernel, stride, padding, dilation, groups, x=None):
    """The im2col geometry of a conv from the plan cache; with x's columns when given."""
    signature = (tuple(shape), tuple(kernel), tuple(stride), tuple(padding), tuple(dilation),
                 groups)
    plan = plans.get("cpu.conv.im2col", signature,
                     lambda: _Columns(shape, kernel, stride, padding, dilation, groups))
    return plan if x is None else plan.filled(x)


def _conv(x, w, stride, padding, dilation, groups, bias=None):
    """Regular convolution of arrays: x (N, C_in, *S), w (C_out, C_in/G, *K), plus bias."""
    n = x.shape[0]
    c_out, kernel = w.shape[0], w.shape[2:]
    cols = _columns(x.shape, kernel, stride, padding, dilation, groups, x)
    wm = w.reshape(groups, c_out // groups, -1)                        # (G, O/G, C/G * K)
    r = _scratch.take("product", (groups, c_out // groups, cols.cols.shape[2]),
                      np.result_type(wm, cols.cols))
    np.matmul(wm, cols.cols, out=r)                                    # (G, O/G, N * L)
    if bias is not None:   # into the contiguous product: a broadcast along its rows
        r += bias.reshape(groups, c_out // groups, 1)
    r = cols.crop(r.reshape((groups, c_out // groups, n) + cols.grid))
    k = len(kernel)
    result = np.empty((n, c_out) + cols.out_sizes, r.dtype)
    # The second copy: the product's (O, N) order to the output's (N, O), garbage dropped.
    np.copyto(result.reshape((n, groups, c_out // groups) + cols.out_sizes),
              r.transpose((2, 0, 1) + tuple(range(3, 3 + k))))        # (N, G, O/G, *O)
    return result


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
    sizes = conv_output_sizes(x.shape, w.shape, stride, padding, dilation, True,
                              output_padding)
    keep = tuple(slice(p, p + s) for p, s in zip(padding, sizes))
    return image[(slice(None), slice(None)) + keep]


def _weight_grad(cols, gm, kernel):
    """d(sum(conv(x, w) * g)) / dw for a regular convolution: (C_out, C_in/G, *K), one
    product per group of the gradient on the grid (`gm`, from cols.on_grid) with the
    columns of x."""
    groups, cg_out = gm.shape[:2]
    # cols @ gm^T, then transposed: OpenBLAS runs this order 1.4x faster than gm @ cols^T
    # (the long N * L axis is the inner one of the big operand, which it packs best).
    gw = np.matmul(cols.cols, gm.transpose(0, 2, 1))                   # (G, C/G * K, O/G)
    gw = np.ascontiguousarray(gw.transpose(0, 2, 1))                   # (G, O/G, C/G * K)
    return gw.reshape((groups * cg_out, cols.shape[1] // groups) + tuple(kernel))


def _input_grad(cols, gm, w):
    """d(sum(conv(x, w) * g)) / dx for a regular convolution: col2im of W^T @ g."""
    groups, cg_out = gm.shape[:2]
    wm = w.reshape(groups, cg_out, -1)                                 # (G, O/G, C/G * K)
    dcols = _scratch.take("dcols", (groups, wm.shape[2], gm.shape[2]), np.result_type(wm, gm))
    np.matmul(wm.transpose(0, 2, 1), gm, out=dcols)                    # (G, C/G * K, N * L)
    return cols.add_back(cols.zero_garbage(dcols))


def _conv_backward(x, g, w, stride, padding, dilation, groups, need_input, need_weight):
    """(grad_input, grad_weight) of a regular convolution y = conv(x, w), given g = dL/dy
    (None where not needed). `g` may cover fewer output positions than x's windows (when
    this serves a transposed convolution, whose output_padding adds positions)."""
    kernel = w.shape[2:]
    cols = _columns(x.shape, kernel, stride, padding, dilation, groups,
                    x if need_weight else None)
    gm = cols.on_grid(g)                                               # (G, O/G, N * L)
    if need_weight:
        cols.cols = cols.zero_garbage(cols.cols)
    gw = _weight_grad(cols, gm, kernel) if need_weight else None
    gi = _input_grad(cols, gm, w) if need_input else None
    return gi, gw


@kernel(layout=NCHW)
def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                groups):
    """out = conv(input, weight) + bias, or its transposed form (see the module doc)."""
    spec = shape_rule("conv.convolution")(
        "convolution", (input, weight, bias, stride, padding, dilation, transposed, output_padding,
                        groups))
    dtype = input._impl.dtype
    acc = _compute_dtype(dtype)
    x = input._impl.array().astype(acc, copy=False)
    w = weight._impl.array().astype(acc, copy=False)
    if transposed:
        r = _conv_transpose(x, w, stride, padding, dilation, output_padding, groups)
        if bias is not None:
            r = r + bias._impl.array().astype(acc).reshape((-1,) + (1,) * (r.ndim - 2))
    else:
        b = None if bias is None else bias._impl.array().astype(acc, copy=False)
        r = _conv(x, w, stride, padding, dilation, groups, b)
    assert r.shape == tuple(spec.sizes)
    return out(np.ascontiguousarray(r), dtype)


@kernel(layout=NCHW)
def convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
                         transposed, output_padding, groups, output_mask):
    """(grad_input, grad_weight, grad_bias), each None where output_mask says so.

        regular:     grad_input  = col2im(W^T @ grad)
                     grad_weight = grad @ im2col(input)^T    (one im2col, grad laid out once)
        transposed:  grad_input  = conv(grad, weight)
                     grad_weight = input^T @ im2col(grad)
        both:        grad_bias   = grad summed over batch and space
    """
    shape_rule("conv.convolution_backward")(
        "convolution_backward", (grad_output, input, weight, bias_sizes, stride, padding, dilation,
                                 transposed, output_padding, groups, output_mask))
    dtype = input._impl.dtype
    acc = _compute_dtype(dtype)
    g = grad_output._impl.array().astype(acc, copy=False)
    x = input._impl.array().astype(acc, copy=False)
    w = weight._impl.array().astype(acc, copy=False)
    spatial = x.shape[2:]
    gi = gw = gb = None
    if transposed:
        # y = conv_transpose(x, w) is the adjoint of the regular conv(., w): its input
        # gradient is the regular convolution of g, its weight gradient the regular one
        # with the roles of input and gradient swapped.
        if output_mask[0]:
            gi = _conv(g, w, stride, padding, dilation, groups)
            gi = gi[(slice(None), slice(None)) + tuple(slice(0, s) for s in spatial)]
        if output_mask[1]:
            _, gw = _conv_backward(g, x, w, stride, padding, dilation, groups, False, True)
    elif output_mask[0] or output_mask[1]:
        gi, gw = _conv_backward(x, g, w, stride, padding, dilation, groups, output_mask[0],
                                output_mask[1])
    if gi is not None:
        gi = out(np.ascontiguousarray(gi), dtype)
    if gw is not None:
        gw = out(np.ascontiguousarray(gw), dtype)
    if output_mask[2]:
        gb = out(g.sum(axis=(0,) + tuple(range(2, g.ndim))), dtype)
    return gi, gw, gb


# ---- specialised candidates: the 1x1 convolution -------------------------------------
def _is_1x1(input, weight, bias, stride, padding, dilation, transposed, output_padding,
            groups):
    return (not transposed and groups == 1 and len(weight.shape) == 4
            and weight.shape[2] == 1 and weight.shape[3] == 1
            and all(s == 1 for s in stride) and not any(padding))


ONE_BY_ONE = ShapeRule("2-D, 1x1 kernel, stride 1, no padding, groups 1", _is_1x1)


def convolution_1x1(input, weight, bias, stride, padding, dilation, transposed,
                    output_padding, groups):
    """A 1x1 convolution is one matrix product per image, with no column copy:

        out[n] = weight (C_out, C_in) @ input[n] (C_in, H * W)  (+ bias)

    The generic kernel would copy the input into columns of the same numbers and copy
    the (C_out, N, L) product back to (N, C_out, L); contiguous inputs make both views
    free here (benchmarks/bench_kernel_selection.py measures the difference)."""
    spec = shape_rule("conv.convolution")(
        "convolution", (input, weight, bias, stride, padding, dilation, transposed, output_padding,
                        groups))
    x = input._impl.array()
    n, c, h, w = x.shape
    r = np.matmul(weight._impl.array().reshape(-1, c), x.reshape(n, c, h * w))
    if bias is not None:
        r += bias._impl.array().reshape(-1, 1)
    return out(r.reshape(spec.sizes), input._impl.dtype)


def _is_1x1_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
                     transposed, output_padding, groups, output_mask):
    return _is_1x1(input, weight, None, stride, padding, dilation, transposed,
                   output_padding, groups)


ONE_BY_ONE_BACKWARD = ShapeRule("2-D, 1x1 kernel, stride 1, no padding, groups 1",
                                _is_1x1_backward)


def convolution_backward_1x1(grad_output, input, weight, bias_sizes, stride, padding,
                             dilation, transposed, output_padding, groups, output_mask):
    """The gradients of out[n] = W @ x[n] (contiguous, 1x1), with no column copy:

        grad_input[n] = W^T @ grad[n]
        grad_weight   = sum over n and positions of grad[n] x[n]^T
        grad_bias     = grad summed over batch and space
    """
    shape_rule("conv.convolution_backward")(
        "convolution_backward", (grad_output, input, weight, bias_sizes, stride, padding, dilation,
                                 transposed, output_padding, groups, output_mask))
    dtype = input._impl.dtype
    x = input._impl.array()
    n, c, h, w = x.shape
    g = grad_output._impl.array().astype(x.dtype, copy=False).reshape(n, -1, h * w)
    wm = weight._impl.array().reshape(-1, c)                           # (C_out, C_in)
    gi = gw = gb = None
    if output_mask[0]:
        gi = out(np.matmul(wm.T, g).reshape(n, c, h, w), dtype)
    if output_mask[1]:
        gw = out(np.tensordot(g, x.reshape(n, c, h * w), axes=([0, 2], [0, 2]))
                 .reshape(weight._impl.sizes), dtype)
    if output_mask[2]:
        gb = out(g.sum(axis=(0, 2)), dtype)
    return gi, gw, gb


# In NHWC memory a 1x1 convolution is one product of the (N * H * W, C) rows, in place of
# one per image: no copy on the way in or out.
def convolution_1x1_nhwc(input, weight, bias, stride, padding, dilation, transposed,
                         output_padding, groups):
    """out rows = input rows (N * H * W, C_in) @ weight^T (C_in, C_out)  (+ bias)."""
    spec = shape_rule("conv.convolution")(
        "convolution", (input, weight, bias, stride, padding, dilation, transposed, output_padding,
                        groups))
    x = input._impl.array()
    n, c, h, w = x.shape
    r = np.matmul(nhwc_rows(x), weight._impl.array().reshape(-1, c).T)
    if bias is not None:
        r += bias._impl.array()
    return out_channels_last(r.reshape(n, h, w, -1), spec.dtype)


def convolution_backward_1x1_nhwc(grad_output, input, weight, bias_sizes, stride, padding,
                                  dilation, transposed, output_padding, groups, output_mask):
    """grad_input rows = grad rows @ W;  grad_weight = grad rows^T @ input rows."""
    shape_rule("conv.convolution_backward")(
        "convolution_backward", (grad_output, input, weight, bias_sizes, stride, padding, dilation,
                                 transposed, output_padding, groups, output_mask))
    dtype = input._impl.dtype
    x = input._impl.array()
    n, c, h, w = x.shape
    g = nhwc_rows(grad_output._impl.array().astype(x.dtype, copy=False))   # (M, C_out)
    gi = gw = gb = None
    if output_mask[0]:
        gi = out_channels_last(np.matmul(g, weight._impl.array().reshape(-1, c))
                               .reshape(n, h, w, c), dtype)
    if output_mask[1]:
        gw = out(np.matmul(g.T, nhwc_rows(x)).reshape(weight._impl.sizes), dtype)
    if output_mask[2]:
        gb = out(g.sum(axis=0), dtype)
    return gi, gw, gb


# Registered next to the kernels: they outrank the generic `convolution` that
# tensorplay/_backend_loading.py registers from ops.yaml, for the calls their constraints admit.
specialised = Library("CPU", "cpu_kernels.conv (specialised)")
specialised.impl("convolution", convolution_1x1, priority=10,
                 dtypes={dt.float32, dt.float64}, contiguous=True, shape=ONE_BY_ONE)
specialised.impl("convolution_backward", convolution_backward_1x1, priority=10,
                 dtypes={dt.float32, dt.float64}, contiguous=True, shape=ONE_BY_ONE_BACKWARD)
specialised.impl("convolution", convolution_1x1_nhwc, priority=10,
                 dtypes={dt.float32, dt.float64}, layout="channels_last", shape=ONE_BY_ONE)
specialised.impl("convolution_backward", convolution_backward_1x1_nhwc, priority=10,
                 dtypes={dt.float32, dt.float64}, layout="channels_last",
                 shape=ONE_BY_ONE_BACKWARD)
