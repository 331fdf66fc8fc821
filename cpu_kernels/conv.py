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
kernel offsets (inside col2im) and chunks of the batch.

The kernel registry picks among these forms by shape (explain() names the one that ran):

  convolution                    one wide product per group, W @ cols (G, O/G, N * L),
                                 then the (C_out, N) result transposed to (N, C_out)
  convolution_per_image          16+ output positions per image: one product per image
                                 into the output's own order, the batch in chunks whose
                                 columns fit CHUNK_BYTES; the columns kept for the backward
  convolution_backward           one call for every gradient the mask asks for; the
                                 weight gradient from the forward's kept columns when they
                                 are still there, the input gradient by col2im
  convolution_backward_transposed_input   stride 1: the input gradient as a convolution
                                 of the gradient with the flipped weight (no col2im)
  convolution_same, convolution_backward_same   stride 1, padding d*(k-1)/2 (3x3 with
                                 padding 1): the output grid is the input's, so columns
                                 without garbage positions by one copy of the row-padded
                                 input (cpu_kernels/_conv_same.py), per-image products
                                 straight into the output, bias and grad_bias inside the
                                 products; the columns kept for the weight gradient where
                                 that pays (cpu_kernels/_kept.py)
  convolution_winograd, convolution_backward_winograd   tp.backends.cpu.allow_winograd
                                 on, 3x3, stride 1, padding 1, 32 or more input channels:
                                 the output (and grad_input) by Winograd's F(2x2, 3x3)
                                 (cpu_kernels/_conv_winograd.py), 16/36 of the products
  convolution_nhwc, convolution_backward_nhwc   channels_last: the row form, rows @ W^T
  convolution_1x1 (+ _nhwc)      1x1 kernels: one product, no columns at all
"""
from __future__ import annotations

import itertools
import math
import threading
import weakref

import copy
import numpy as np

from tensorplay import _dtype as dt
from tensorplay.dispatch.plan_cache import plans
from tensorplay.kernel_support import cpu_switches
from tensorplay.kernel_support.arguments import conv_output_sizes
from tensorplay.kernel_support.ops import shape_rule
from tensorplay.kernel_support.results import grad_state
from tensorplay.library import Library, ShapeRule, kernel
from cpu_kernels._blas import column_block, matmul_by_columns
from cpu_kernels._common import accumulate_dtype, nhwc_rows, out, out_channels_last, tensor_key
from cpu_kernels._windows import add_windows, pad_spatial, windows
from cpu_kernels._conv_same import conv_same, input_grad_same, weight_grad_same
from cpu_kernels._kept import last_kept
from cpu_kernels._conv_winograd import winograd_conv

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


# ---- what a call's shapes decide, once per signature -----------------------------------
# Before any NumPy work a convolution call picks its kernel (the candidates' shape rules
# below) and checks its arguments (the Meta rule, tensorplay/meta/conv.py). Both read only
# the sizes (and dtypes, devices) of the tensors and the int arguments, so they are worked
# out once per such signature and looked up after that: for one small image (batch 1)
# evaluating them on every call took more time than the products.
def _signature(input, weight, bias, stride, padding, dilation, transposed, output_padding,
               groups):
    """What the forward's shape rules read (ShapeRule's `signature`), with the switch that
    allows WINOGRAD."""
    return (tuple(input._impl.sizes), tuple(weight._impl.sizes), tuple(stride),
            tuple(padding), tuple(dilation), transposed, groups, cpu_switches.allow_winograd)


def _backward_signature(grad_output, input, weight, bias_sizes, stride, padding, dilation,
                        transposed, output_padding, groups, output_mask):
    """What the backward's shape rules read: the forward's, and whether grad_input is
    wanted."""
    return (tuple(input._impl.sizes), tuple(weight._impl.sizes), tuple(stride),
            tuple(padding), tuple(dilation), transposed, groups, bool(output_mask[0]),
            cpu_switches.allow_winograd)


def _checked(args):
    """The Meta rule's OutSpec of a forward call (its typed error for bad arguments),
    kept in the plan cache per signature: a signature that passed the checks once passes
    them again; one that fails is not kept and raises on every call."""
    (input, weight, bias, stride, padding, dilation, transposed, output_padding,
     groups) = args
    key = (tensor_key(input), tensor_key(weight), tensor_key(bias), tuple(stride),
           tuple(padding), tuple(dilation), transposed, tuple(output_padding), groups)
    return plans.get("cpu.conv.checked", key,
                     lambda: shape_rule("conv.convolution")("convolution", args))


def _checked_backward(args):
    """The Meta rule of a backward call (_checked's, for convolution_backward)."""
    (grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
     output_padding, groups, output_mask) = args
    key = (tensor_key(grad_output), tensor_key(input), tensor_key(weight),
           None if bias_sizes is None else tuple(bias_sizes), tuple(stride),
           tuple(padding), tuple(dilation), transposed, tuple(output_padding), groups,
           tuple(output_mask))
    return plans.get("cpu.conv.checked_backward", key,
                     lambda: shape_rule("conv.convolution_backward")("convolution_backward",
                                                                    args))


def _compute_dtype(dtype):
    """Half types in float32 (as PyTorch accumulates them); complex types as they are;
    integers in int64, which wraps back to the same value modulo 2**bits as PyTorch's own
    integer arithmetic."""
    if dtype.is_floating_point:
        return accumulate_dtype(dtype)
    if dtype.is_complex:
        return dtype.np
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

    def filled_into(self, x, name):
        """filled(x), the columns written into the scratch buffer `name`."""
        cols = copy.copy(self)
        cols.cols = cols._im2col(x, name)
        return cols

    def per_image_product(self, wm):
        """wm (G, O/G, C/G * K) times each image's columns: (N, G, O/G, *grid), the output's
        own (N, C_out) order, so no transpose follows. The columns stay in their (G, C/G * K,
        N * L) layout: image n's block is a strided view that BLAS reads in place (its rows
        N * L apart), as fast as contiguous columns and a third faster than one wide
        product (32 x 144 @ 144 x 2304 for the digits CNN's second layer), whose (C_out, N)
        result would also need the transpose."""
        n = self.shape[0]
        groups = self.groups
        length = _numel(self.grid)
        per_image = self.cols.reshape(groups, -1, n, length).transpose(2, 0, 1, 3)
        r = _scratch.take("product", (n, groups, wm.shape[1], length),
                          np.result_type(wm, self.cols))
        # (in blocks of columns where the BLAS's small-matrix kernels take them:
        # cpu_kernels/_blas.py)
        matmul_by_columns(wm, per_image, r,
                          column_block(wm.shape[1], wm.shape[2], length, r.dtype))
        return r.reshape((n, groups * wm.shape[1]) + self.grid)

    def _im2col(self, x, name="cols"):
        n, c = self.shape[:2]
        groups, kernel = self.groups, self.kernel
        cg = c // groups
        length = _numel(self.grid)
        if self.runs:
            flat = self.padded_flat(x)
            item = flat.itemsize
            # An overlapping view of the buffer (np.ndarray over it: as_strided's checks
            # cost more than the copy of a small batch).
            view = np.ndarray(
                (groups, cg) + kernel + (n, length), flat.dtype, flat,
                strides=tuple(item * v for v in (cg * self.plane, self.plane)) +
                tuple(item * d * ps for d, ps in zip(self.dilation, self.pstrides)) +
                (item * c * self.plane, item))
        else:
            win = windows(pad_spatial(x, self.padding), kernel, self.stride,
                          self.dilation)                                # (N, C, *O, *K)
            win = win.reshape((n, groups, cg) + win.shape[2:])
            k = len(kernel)
            order = ((1, 2) + tuple(range(3 + k, 3 + 2 * k)) + (0,) +
                     tuple(range(3, 3 + k)))
            view = win.transpose(order)                       # (G, C/G, *K, N, *O)
        # The one copy of the forward pass.
        cols = _scratch.take(name, view.shape, view.dtype)
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


# A chunk of the batch whose columns take at most this many bytes: the per-image products
# read a chunk's columns right after im2col wrote them, while they are still in the cache
# (2 MiB: this machine's L2 is 1 MiB per core; half of it measured slower, the copy and
# the products each paying more calls).
CHUNK_BYTES = 2 * 1024 * 1024


def _conv(x, w, stride, padding, dilation, groups, bias=None, per_image=False, keep=None):
    """Regular convolution of arrays: x (N, C_in, *S), w (C_out, C_in/G, *K), plus bias.

    per_image=False: one wide product W @ cols (G, O/G, N * L), then transposed to the
    output's (N, O) order. per_image=True: one product per image (see
    _Columns.per_image_product), the batch in chunks of CHUNK_BYTES of columns. `keep`: a
    key under which the columns stay for the backward (cpu_kernels/_kept.py), when one chunk
    holds the whole batch."""
    n = x.shape[0]
    c_out, kernel = w.shape[0], w.shape[2:]
    wm = w.reshape(groups, c_out // groups, -1)                        # (G, O/G, C/G * K)
    if per_image:
        geometry = _columns(x.shape, kernel, stride, padding, dilation, groups)
        result = np.empty((n, c_out) + geometry.out_sizes, np.result_type(x, w))
        image_bytes = wm.shape[2] * groups * _numel(geometry.grid) * x.itemsize
        chunks = max(1, math.ceil(n * image_bytes / CHUNK_BYTES))
        step = max(1, math.ceil(n / chunks))             # (an empty batch: one empty chunk)
        keep = keep if step >= n else None
        b = None if bias is None else bias.reshape((-1,) + (1,) * len(kernel))
        for at in range(0, n, step):
            part = x[at:at + step]
            cols = geometry if step >= n else _columns(part.shape, kernel, stride, padding,
                                                       dilation, groups)
            cols = cols.filled_into(part, "cols" if keep is None else "kept cols")
            if keep is not None:
                last_kept.keep(keep, cols)
            r = cols.crop(cols.per_image_product(wm))
            # The one pass over the product: cropped to the real outputs, bias added.
            if b is None:
                np.copyto(result[at:at + step], r)
            else:
                np.add(r, b, out=result[at:at + step])
        return result
    cols = _columns(x.shape, kernel, stride, padding, dilation, groups, x)
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


def _finite(a):
    """Whether every element of `a` is finite, by one sum (a NaN or inf makes the sum
    non-finite; a sum that overflows only says "maybe not", which is safe)."""
    return a.dtype.kind not in "fc" or bool(np.isfinite(a.sum()))


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
    if not _finite(w):   # else the garbage positions are W^T @ 0 = 0 already
        dcols = cols.zero_garbage(dcols)
    return cols.add_back(dcols)


def _input_grad_transposed(g, w, padding, dilation, groups):
    """d(sum(conv(x, w) * g)) / dx of a stride-1 convolution as a convolution of g: the
    adjoint of sliding w over x is sliding w, flipped and with its in/out channels swapped,
    over g padded by d*(k-1) - p. A copy of g's windows (im2col, C_out channels) in place of
    col2im's strided adds (C_in channels), and per-image products that write the input's
    (N, C_in) order directly."""
    c_out, cg, *kernel = w.shape
    k = len(kernel)
    flipped = w.reshape((groups, c_out // groups, cg) + tuple(kernel))
    flipped = flipped.transpose((0, 2, 1) + tuple(range(3, 3 + k)))    # (G, C/G, O/G, *K)
    flipped = flipped[(Ellipsis,) + (slice(None, None, -1),) * k]
    flipped = np.ascontiguousarray(flipped).reshape((groups * cg, c_out // groups) +
                                                    tuple(kernel))
    pad = tuple(d * (kk - 1) - p for kk, p, d in zip(kernel, padding, dilation))
    return _conv(g, flipped, (1,) * k, pad, dilation, groups, per_image=True)


def _conv_backward(x, g, w, stride, padding, dilation, groups, need_input, need_weight,
                   keep=None, transposed_input=False):
    """(grad_input, grad_weight) of a regular convolution y = conv(x, w), given g = dL/dy
    (None where not needed). `g` may cover fewer output positions than x's windows (when
    this serves a transposed convolution, whose output_padding adds positions).

    `keep`: the key of the forward's columns (cpu_kernels/_kept.py), used instead of a second
    im2col when they are still there. `transposed_input`: the input gradient as a
    convolution of g (_input_grad_transposed; stride 1 only) where the weight is finite,
    else col2im."""
    kernel = w.shape[2:]
    geometry = _columns(x.shape, kernel, stride, padding, dilation, groups)
    gm = gi = gw = None
    if need_weight:
        cols = last_kept.get(keep)
        if cols is None:
            cols = geometry.filled(x)
        # A garbage position (run layout) gets a zero gradient, which adds nothing to
        # grad_weight unless the column there is not finite (0 * inf is NaN).
        if not _finite(x):
            cols.cols = cols.zero_garbage(cols.cols)
        gm = geometry.on_grid(g)                                       # (G, O/G, N * L)
        gw = _weight_grad(cols, gm, kernel)
    # The transposed form pads g with zeros, which a non-finite weight would turn into NaN
    # (0 * inf) where PyTorch's sum has no term: col2im then, which adds only real terms.
    if need_input and transposed_input and _finite(w):
        gi = _input_grad_transposed(g, w, padding, dilation, groups)
    elif need_input:
        gi = _input_grad(geometry, geometry.on_grid(g) if gm is None else gm, w)
    return gi, gw


def _keep_key(input, acc, stride, padding, dilation, groups, kernel):
    """What names the columns of `input` for a conv: its memory (the storage, held weakly,
    and where the view lies in it), its version (an in-place write changes it), the compute
    dtype and the geometry."""
    impl = input._impl
    return (weakref.ref(impl.storage), impl.offset, impl.sizes, impl.strides,
            impl.version.value, acc, tuple(stride), tuple(padding), tuple(dilation), groups,
            tuple(kernel))


def _convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                 groups, per_image):
    spec = _checked((input, weight, bias, stride, padding, dilation, transposed, output_padding,
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
        keep = None
        if per_image:
            keep = _keep_key(input, acc, stride, padding, dilation, groups, w.shape[2:])
        r = _conv(x, w, stride, padding, dilation, groups, b, per_image, keep)
    assert r.shape == tuple(spec.sizes)
    return out(np.ascontiguousarray(r), dtype)


@kernel(layout=NCHW)
def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                groups):
    """out = conv(input, weight) + bias, or its transposed form (see the module doc): one
    wide product per group."""
    return _convolution(input, weight, bias, stride, padding, dilation, transposed,
                        output_padding, groups, per_image=False)


def _convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
                          transposed, output_padding, groups, output_mask, transposed_input):
    _checked_backward((grad_output, input, weight, bias_sizes, stride, padding, dilation,
                       transposed, output_padding, groups, output_mask))
    dtype = input._impl.dtype
    acc = _compute_dtype(dtype)
    g = grad_output._impl.array().astype(acc, copy=False)
    x = input._impl.array().astype(acc, copy=False)
    w = weight._impl.array().astype(acc, copy=False)
    # Complex numbers: each gradient sums the incoming gradient times the conjugate of the
    # other factor (grad_input from conj(w), grad_weight from conj(x)), PyTorch's
    # convention, as linear's backward (cpu_kernels/linalg.py); the forward's columns, of
    # x itself, are then not the ones wanted.
    complex_ = np.dtype(acc).kind == "c"
    x_adj, w_adj = (x.conj(), w.conj()) if complex_ else (x, w)
    spatial = x.shape[2:]
    gi = gw = gb = None
    if transposed:
        # y = conv_transpose(x, w) is the adjoint of the regular conv(., w): its input
        # gradient is the regular convolution of g, its weight gradient the regular one
        # with the roles of input and gradient swapped.
        if output_mask[0]:
            gi = _conv(g, w_adj, stride, padding, dilation, groups)
            gi = gi[(slice(None), slice(None)) + tuple(slice(0, s) for s in spatial)]
        if output_mask[1]:
            _, gw = _conv_backward(g, x_adj, w, stride, padding, dilation, groups, False,
                                   True)
    elif output_mask[0] or output_mask[1]:
        keep = None if complex_ else _keep_key(input, acc, stride, padding, dilation, groups,
                                               w.shape[2:])
        gi, gw = _conv_backward(x_adj, g, w_adj, stride, padding, dilation, groups,
                                output_mask[0], output_mask[1], keep, transposed_input)
    if gi is not None:
        gi = out(np.ascontiguousarray(gi), dtype)
    if gw is not None:
        gw = out(np.ascontiguousarray(gw), dtype)
    if output_mask[2]:
        gb = out(g.sum(axis=(0,) + tuple(range(2, g.ndim))), dtype)
    return gi, gw, gb


@kernel(layout=NCHW)
def convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
                         transposed, output_padding, groups, output_mask):
    """(grad_input, grad_weight, grad_bias), each None where output_mask says so.

        regular:     grad_input  = col2im(W^T @ grad)
                     grad_weight = grad @ im2col(input)^T    (one im2col, grad laid out once;
                                                              the forward's when kept)
        transposed:  grad_input  = conv(grad, weight)
                     grad_weight = input^T @ im2col(grad)
        both:        grad_bias   = grad summed over batch and space
    """
    return _convolution_backward(grad_output, input, weight, bias_sizes, stride, padding,
                                 dilation, transposed, output_padding, groups, output_mask,
                                 transposed_input=False)


# ---- specialised candidates: products per image ----------------------------------------
def _positions(input, weight, stride, padding, dilation):
    """Output positions per image of a regular convolution; 0 for arguments that make
    none (the kernel's shape rule then raises the typed error). Evaluated on every
    convolution call (the shape rules are part of the kernel registry's cache key), so
    written out on the sizes."""
    sizes, kernel = input._impl.sizes, weight._impl.sizes[2:]
    k = len(kernel)
    if k < 1 or len(sizes) != k + 2 or not len(stride) == len(padding) == len(dilation) == k:
        return 0
    total = 1
    for i, kk, s, p, d in zip(sizes[2:], kernel, stride, padding, dilation):
        if s < 1:
            return 0
        o = (i + 2 * p - d * (kk - 1) - 1) // s + 1
        if o <= 0:
            return 0
        total *= o
    return total


# Below 16 positions an image's product is too small for BLAS to run it well: one wide
# product over the whole batch is faster there.
PER_IMAGE_POSITIONS = 16


def _is_per_image(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                  groups):
    return (not transposed and
            _positions(input, weight, stride, padding, dilation) >= PER_IMAGE_POSITIONS)


PER_IMAGE = ShapeRule(f"regular, {PER_IMAGE_POSITIONS} or more output positions per image",
                      _is_per_image,
                      signature=_signature)


def convolution_per_image(input, weight, bias, stride, padding, dilation, transposed,
                          output_padding, groups):
    """The regular convolution as one product per image, W @ cols[n], into the output's
    (N, C_out) order (_Columns.per_image_product), the batch in chunks that keep the
    columns in the cache; the columns stay for the backward (convolution_backward reuses
    them)."""
    return _convolution(input, weight, bias, stride, padding, dilation, transposed,
                        output_padding, groups, per_image=True)


def _is_transposed_input(grad_output, input, weight, bias_sizes, stride, padding, dilation,
                         transposed, output_padding, groups, output_mask):
    kernel = weight.shape[2:]
    return (bool(output_mask[0]) and not transposed
            and _positions(input, weight, stride, padding, dilation) >= PER_IMAGE_POSITIONS
            and all(s == 1 for s in stride)
            and all(p <= d * (k - 1) for p, d, k in zip(padding, dilation, kernel)))


TRANSPOSED_INPUT = ShapeRule("regular, stride 1, padding <= dilation * (kernel - 1), "
                             f"{PER_IMAGE_POSITIONS} or more output positions per image",
                             _is_transposed_input,
                             signature=_backward_signature)


def convolution_backward_transposed_input(grad_output, input, weight, bias_sizes, stride,
                                          padding, dilation, transposed, output_padding,
                                          groups, output_mask):
    """convolution_backward with the input gradient as a convolution of the gradient
    (_input_grad_transposed) in place of col2im."""
    return _convolution_backward(grad_output, input, weight, bias_sizes, stride, padding,
                                 dilation, transposed, output_padding, groups, output_mask,
                                 transposed_input=True)


# ---- specialised candidates: the 1x1 convolution -------------------------------------
def _is_1x1(input, weight, bias, stride, padding, dilation, transposed, output_padding,
            groups):
    return (not transposed and groups == 1 and len(weight.shape) == 4
            and weight.shape[2] == 1 and weight.shape[3] == 1
            and all(s == 1 for s in stride) and not any(padding))


ONE_BY_ONE = ShapeRule("2-D, 1x1 kernel, stride 1, no padding, groups 1", _is_1x1,
                       signature=_signature)


def convolution_1x1(input, weight, bias, stride, padding, dilation, transposed,
                    output_padding, groups):
    """A 1x1 convolution is one matrix product per image, with no column copy:

        out[n] = weight (C_out, C_in) @ input[n] (C_in, H * W)  (+ bias)

    The generic kernel would copy the input into columns of the same numbers and copy
    the (C_out, N, L) product back to (N, C_out, L); contiguous inputs make both views
    free here (benchmarks/bench_kernel_selection.py measures the difference)."""
    spec = _checked((input, weight, bias, stride, padding, dilation, transposed, output_padding,
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
                                _is_1x1_backward,
                                signature=_backward_signature)


def convolution_backward_1x1(grad_output, input, weight, bias_sizes, stride, padding,
                             dilation, transposed, output_padding, groups, output_mask):
    """The gradients of out[n] = W @ x[n] (contiguous, 1x1), with no column copy:

        grad_input[n] = W^T @ grad[n]
        grad_weight   = sum over n and positions of grad[n] x[n]^T
        grad_bias     = grad summed over batch and space
    """
    _checked_backward((grad_output, input, weight, bias_sizes, stride, padding, dilation,
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
    spec = _checked((input, weight, bias, stride, padding, dilation, transposed, output_padding,
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
    _checked_backward((grad_output, input, weight, bias_sizes, stride, padding, dilation,
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


# ---- specialised candidates: the channels_last row form ---------------------------------
# In NHWC memory a pixel's channels are one run, so the columns can be laid out as rows,
# one per output position: rows (N * L, KH * KW * C) with a kernel offset's C channels
# contiguous, and the product rows @ W^T (KH * KW * C, C_out) is the output's own NHWC
# rows: no transpose on either side (the GEMM measurements: 213 us against 242
# for the column form at K = 144, 430 against 630 at K = 288). The rows read the padded
# NHWC image as the run layout reads NCHW planes: position r of image n starts at flat
# pixel r, kernel offset (kh, kw) adds kh*d*Wp + kw*d pixels, so rows[n, r, kh, kw, :] is
# image[n].flat_pixels[r + off] (L = OH * Wp positions per image, the Wp - OW extra ones
# per row garbage, cropped from the output and fed zero gradients).
def _nhwc_columns(shape, kernel, padding, dilation):
    """The geometry of the row form for an NCHW-indexed input of `shape` (stride 1): the
    padded layout (_run_layout), output sizes, positions per image and offsets, in pixels."""
    spatial = shape[2:]
    layout = _run_layout(spatial, kernel, padding, dilation)
    out_sizes = tuple(s + 2 * p - d * (k - 1) for s, p, d, k
                      in zip(spatial, padding, dilation, kernel))
    width = layout[1]
    return layout, out_sizes, out_sizes[0] * width


def _nhwc_rows(x, kernel, padding, dilation):
    """(rows (N * L, KH * KW * C), output sizes, padded row width, L) of x (N, H, W, C)."""
    n, h, wd, c = x.shape
    kh, kw = kernel
    layout, out_sizes, length = _nhwc_columns((n, c, h, wd), kernel, padding, dilation)
    hp, wp = layout
    plane = hp * wp * c
    offsets = [(i * dilation[0] * wp + j * dilation[1]) * c for i in range(kh)
               for j in range(kw)]
    slack = max(0, max(offsets) + length * c - plane)
    flat = _scratch.take("padded", (n * plane + slack,), x.dtype, zero=True)
    image = flat[:n * plane].reshape(n, hp, wp, c)
    image[:, padding[0]:padding[0] + h, padding[1]:padding[1] + wd] = x
    item = flat.itemsize
    view = np.ndarray((n, length, kh, kw, c), flat.dtype, flat,
                      strides=(item * plane, item * c, item * dilation[0] * wp * c,
                               item * dilation[1] * c, item))
    rows = _scratch.take("cols", view.shape, view.dtype)
    np.copyto(rows, view)
    return rows.reshape(n * length, -1), out_sizes, wp, length


def _row_chunks(x, kernel, padding, dilation):
    """(start, stop) of the chunks of the batch whose rows take at most CHUNK_BYTES (as the
    per-image products' columns: rows read right after they are written)."""
    n, _, _, c = x.shape
    _, _, length = _nhwc_columns((1, c) + x.shape[1:3], kernel, padding, dilation)
    image_bytes = length * _numel(kernel) * c * x.itemsize
    step = math.ceil(n / max(1, math.ceil(n * image_bytes / CHUNK_BYTES)))
    return [(at, min(at + step, n)) for at in range(0, n, step)]


def _conv_rows(x, w, padding, dilation, bias=None):
    """Regular stride-1 2-D convolution in the row form: x (N, H, W, C) NHWC, w (O, C, KH,
    KW) -> (N, OH, OW, O) NHWC (see above), the batch in chunks."""
    c_out = w.shape[0]
    wr = w.transpose(0, 2, 3, 1).reshape(c_out, -1)                    # (O, KH * KW * C)
    result = None
    for at, stop in _row_chunks(x, w.shape[2:], padding, dilation):
        rows, out_sizes, wp, length = _nhwc_rows(x[at:stop], w.shape[2:], padding, dilation)
        if result is None:
            result = np.empty((x.shape[0],) + out_sizes + (c_out,), np.result_type(rows, wr))
        r = _scratch.take("product", (rows.shape[0], c_out), result.dtype)
        np.matmul(rows, wr.T, out=r)
        r = r.reshape(stop - at, out_sizes[0], wp, c_out)[:, :, :out_sizes[1]]
        if bias is None:
            np.copyto(result[at:stop], r)
        else:
            np.add(r, bias, out=result[at:stop])
    return result


def _is_row_form(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                 groups):
    return (not transposed and groups == 1 and len(stride) == 2 and stride[0] == 1
            and stride[1] == 1 and _positions(input, weight, stride, padding, dilation) >= 1)


ROW_FORM = ShapeRule("2-D, stride 1, groups 1", _is_row_form,
                     signature=_signature)


def convolution_nhwc(input, weight, bias, stride, padding, dilation, transposed,
                     output_padding, groups):
    """The channels_last convolution in the row form: out rows = rows @ W^T (+ bias)."""
    spec = _checked((input, weight, bias, stride, padding, dilation, transposed, output_padding,
                     groups))
    dtype = input._impl.dtype
    x = input._impl.array().transpose(0, 2, 3, 1)                      # NHWC, a view
    b = None if bias is None else bias._impl.array()
    r = _conv_rows(x, weight._impl.array().astype(x.dtype, copy=False), padding, dilation, b)
    return out_channels_last(r, spec.dtype)


def _is_row_form_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
                          transposed, output_padding, groups, output_mask):
    kernel = weight.shape[2:]
    return (_is_row_form(input, weight, None, stride, padding, dilation, transposed,
                         output_padding, groups)
            and all(p <= d * (k - 1) for p, d, k in zip(padding, dilation, kernel)))


ROW_FORM_BACKWARD = ShapeRule("2-D, stride 1, groups 1, padding <= dilation * (kernel - 1)",
                              _is_row_form_backward,
                              signature=_backward_signature)


def convolution_backward_nhwc(grad_output, input, weight, bias_sizes, stride, padding,
                              dilation, transposed, output_padding, groups, output_mask):
    """The gradients of the row form, in NHWC:

        grad_weight = G^T @ rows        (G: the gradient's rows on the grid, 0 at garbage)
        grad_input  = the row form of G with W flipped and its channels swapped, padded
                      by d*(k-1) - p (the transposed convolution, _input_grad_transposed)
        grad_bias   = G summed over rows
    """
    _checked_backward((grad_output, input, weight, bias_sizes, stride, padding, dilation,
                       transposed, output_padding, groups, output_mask))
    dtype = input._impl.dtype
    x = input._impl.array().transpose(0, 2, 3, 1)
    w = weight._impl.array().astype(x.dtype, copy=False)
    g = grad_output._impl.array().astype(x.dtype, copy=False).transpose(0, 2, 3, 1)
    n, oh, ow, c_out = g.shape
    gi = gw = gb = None
    if output_mask[1]:
        finite = _finite(x)
        gr = 0
        for at, stop in _row_chunks(x, w.shape[2:], padding, dilation):
            rows, _, wp, length = _nhwc_rows(x[at:stop], w.shape[2:], padding, dilation)
            grid = _scratch.take("grid", (stop - at, oh, wp, c_out), g.dtype)
            grid[:, :, :ow] = g[at:stop]
            grid[:, :, ow:] = 0
            if not finite:   # 0 * inf at a garbage position: rows there set to 0
                rows.reshape(stop - at, oh, wp, -1)[:, :, ow:] = 0
            gr = gr + np.matmul(grid.reshape(rows.shape[0], c_out).T, rows)   # (O, K * C)
        gw = out(gr.reshape((c_out,) + tuple(w.shape[2:]) + (w.shape[1],))
                 .transpose(0, 3, 1, 2), dtype)
    if output_mask[0]:
        k = w.shape[2:]
        if _finite(w):
            flipped = np.ascontiguousarray(w[:, :, ::-1, ::-1].transpose(1, 0, 2, 3))
            pad = tuple(d * (kk - 1) - p for kk, p, d in zip(k, padding, dilation))
            gi = out_channels_last(_conv_rows(g, flipped, pad, dilation), dtype)
        else:   # col2im adds only real terms (see _conv_backward)
            gi, _ = _conv_backward(np.ascontiguousarray(x.transpose(0, 3, 1, 2)),
                                   np.ascontiguousarray(g.transpose(0, 3, 1, 2)), w,
                                   stride, padding, dilation, groups, True, False)
            gi = out_channels_last(np.ascontiguousarray(gi.transpose(0, 2, 3, 1)), dtype)
    if output_mask[2]:
        gb = out(g.sum(axis=(0, 1, 2)), dtype)
    return gi, gw, gb


# ---- specialised candidates: the same-size convolution -----------------------------------
# Stride 1 and padding d*(k-1)/2 (a 3x3 kernel with padding 1: the digits CNN's and a ResNet
# block's convolutions): the output grid is the input's, so the columns are one strided
# view of the input padded with zero rows (no garbage positions to crop or zero) and the
# per-image products write the output in place (cpu_kernels/_conv_same.py).
def _is_same_size(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                  groups):
    sw = weight._impl.sizes
    return (not transposed and groups == 1 and len(sw) == 4 and len(input._impl.sizes) == 4
            and len(stride) == 2 and stride[0] == 1 and stride[1] == 1
            and len(padding) == 2 and len(dilation) == 2
            and 2 * padding[0] == dilation[0] * (sw[2] - 1)
            and 2 * padding[1] == dilation[1] * (sw[3] - 1))


SAME_SIZE = ShapeRule("2-D, stride 1, groups 1, padding dilation * (kernel - 1) / 2 "
                      "(output size = input size)", _is_same_size,
                      signature=_signature)


def convolution_same(input, weight, bias, stride, padding, dilation, transposed,
                     output_padding, groups):
    """The same-size convolution (_conv_same.conv_same): columns without garbage positions
    by one copy of the row-padded input, one product per image straight into the output."""
    spec = _checked((input, weight, bias, stride, padding, dilation, transposed,
                     output_padding, groups))
    x = np.ascontiguousarray(input._impl.array())
    w = weight._impl.array()
    b = None if bias is None else bias._impl.array()
    # the columns are kept only where a weight gradient may follow
    keep = _same_keep_key(input, x, stride, padding, dilation, w.shape[2:]) \
        if grad_state.enabled and weight._impl.requires_grad else None
    return out(conv_same(x, w, b, padding, dilation, keep=keep), spec.dtype)


def _same_keep_key(input, x, stride, padding, dilation, kernel):
    """The key of the same-size form's kept columns (cpu_kernels/_kept.py): the general
    form's (_keep_key) and the form's name, so that neither takes the other's."""
    return _keep_key(input, x.dtype, stride, padding, dilation, 1, kernel) + ("same",)


def _is_same_size_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
                           transposed, output_padding, groups, output_mask):
    return _is_same_size(input, weight, None, stride, padding, dilation, transposed,
                         output_padding, groups)


SAME_SIZE_BACKWARD = ShapeRule(SAME_SIZE.description, _is_same_size_backward,
                               signature=_backward_signature)


def convolution_backward_same(grad_output, input, weight, bias_sizes, stride, padding,
                              dilation, transposed, output_padding, groups, output_mask):
    """The gradients of the same-size convolution:

        grad_weight = cols @ g^T over every position (channel-major columns)
        grad_input  = the same-size convolution of g with W flipped, channels swapped
        grad_bias   = g summed over batch and space; with grad_weight, the last row of
                      the same product (a row of ones in the columns)

    A non-finite weight goes to the generic kernel: the transposed form would multiply
    it by g's zero padding (NaN where PyTorch's sum has no term; see _conv_backward)."""
    w = weight._impl.array()
    if output_mask[0] and not _finite(w):
        return convolution_backward(grad_output, input, weight, bias_sizes, stride, padding,
                                    dilation, transposed, output_padding, groups, output_mask)
    _checked_backward((grad_output, input, weight, bias_sizes, stride, padding,
                       dilation, transposed, output_padding, groups, output_mask))
    dtype = input._impl.dtype
    x = np.ascontiguousarray(input._impl.array())
    g = np.ascontiguousarray(grad_output._impl.array().astype(x.dtype, copy=False))
    gi = gw = gb = None
    if output_mask[1]:   # grad_bias from the same product (the columns' row of ones)
        gw = weight_grad_same(x, g, w.shape[2:], padding, dilation, bool(output_mask[2]),
                              keep=_same_keep_key(input, x, stride, padding, dilation,
                                                  w.shape[2:]))
        if output_mask[2]:
            gw, gb = out(gw[0], dtype), out(gw[1], dtype)
        else:
            gw = out(gw, dtype)
    elif output_mask[2]:
        gb = out(g.sum(axis=(0, 2, 3)), dtype)
    if output_mask[0]:
        gi = out(input_grad_same(g, w, padding, dilation), dtype)
    return gi, gw, gb


# ---- specialised candidates: Winograd's 3x3 convolution ------------------------------------
# F(2x2, 3x3) (cpu_kernels/_conv_winograd.py) does 16/36 of the same-size form's products,
# at the cost of transforming the input and output tiles. Only where the user allows it
# (tp.backends.cpu.allow_winograd: its float32 error is relative to each input tile's
# largest value, see tensorplay/backends/cpu.py), and only where it measured faster than
# the same-size form (benchmarks/bench_kernel_selection.py, in the same run): 32 or more
# input channels (the products' inner dimension: at 16 it lost, 0.85-0.9x), one image's
# transforms (16 values a tile, input and output channels) within 1 MiB, the cache they
# are made in (64 channels on 28x28, 1.6 MiB: 0.9x; on 56x56, 0.6x), and 256 tiles or more
# in the batch (one or two images lost: the weight's transform and the fixed costs).
# ResNet's 32 channels on 16x16, batch 16: 1.27x forward; 64 on 14x14: 1.29x; 128 on
# 14x14: 1.4x; 32 on 28x28: 1.1x. Since the same-size form's products run in the blocks
# OpenBLAS's small-matrix kernels take (cpu_kernels/_blas.py: 32 channels, not 64), the
# 32-channel layers gain less: 1.07-1.09x forward on 16x16, 1.03-1.05x on 28x28, and
# 1.02-1.04x in grad_input; 64 on 14x14 still 1.26x forward, 1.1x grad_input.
WINOGRAD_CHANNELS = 32
WINOGRAD_IMAGE_BYTES = 1024 * 1024
WINOGRAD_TILES = 256


def _winograd_pays(n, c, o, h, w, itemsize):
    """Whether F(2x2, 3x3) measured faster than the same-size form for a convolution of n
    images of c channels, h x w, into o channels (the forward's, or grad_input's
    convolution of the gradient's channels into the input's)."""
    tiles = ((h + 1) // 2) * ((w + 1) // 2)
    return (cpu_switches.allow_winograd and c >= WINOGRAD_CHANNELS
            and tiles * 16 * (c + o) * itemsize <= WINOGRAD_IMAGE_BYTES
            and n * tiles >= WINOGRAD_TILES)


def _winograd_shape(input, weight, stride, padding, dilation, transposed, output_padding,
                    groups):
    """A 3x3 same-size convolution (stride 1, padding 1, no dilation): F(2x2, 3x3)'s."""
    return (_is_same_size(input, weight, None, stride, padding, dilation, transposed,
                          output_padding, groups)
            and tuple(weight._impl.sizes[2:]) == (3, 3) and tuple(dilation) == (1, 1))


def _is_winograd(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                 groups):
    if not _winograd_shape(input, weight, stride, padding, dilation, transposed,
                           output_padding, groups):
        return False
    n, c, h, w = input._impl.sizes
    return _winograd_pays(n, c, weight._impl.sizes[0], h, w, input._impl.dtype.itemsize)


WINOGRAD = ShapeRule(f"allow_winograd; 3x3, stride 1, padding 1, {WINOGRAD_CHANNELS}+ input "
                     "channels, transforms of 1 MiB or less an image, "
                     f"{WINOGRAD_TILES}+ tiles",
                     _is_winograd, signature=_signature)


def convolution_winograd(input, weight, bias, stride, padding, dilation, transposed,
                         output_padding, groups):
    """The 3x3 same-size convolution by Winograd's F(2x2, 3x3); where its result is not all
    finite (an infinity in a tile, an overflow in a transform), the same-size form's."""
    spec = _checked((input, weight, bias, stride, padding, dilation, transposed,
                     output_padding, groups))
    x = input._impl.array()
    w = weight._impl.array()
    b = None if bias is None else bias._impl.array()
    y = winograd_conv(x, w, b)
    if y is None:
        y = conv_same(np.ascontiguousarray(x), w, b, padding, dilation)
    return out(y, spec.dtype)


def _is_winograd_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
                          transposed, output_padding, groups, output_mask):
    """grad_input wanted, and its convolution (of the gradient's C_out channels) pays."""
    if not (output_mask[0] and _winograd_shape(input, weight, stride, padding, dilation,
                                               transposed, output_padding, groups)):
        return False
    n, c, h, w = input._impl.sizes
    return _winograd_pays(n, weight._impl.sizes[0], c, h, w, input._impl.dtype.itemsize)


WINOGRAD_BACKWARD = ShapeRule(f"allow_winograd; 3x3, stride 1, padding 1, "
                              f"{WINOGRAD_CHANNELS}+ output channels, transforms of 1 MiB "
                              f"or less an image, {WINOGRAD_TILES}+ tiles, grad_input wanted",
                              _is_winograd_backward, signature=_backward_signature)


def convolution_backward_winograd(grad_output, input, weight, bias_sizes, stride, padding,
                                  dilation, transposed, output_padding, groups, output_mask):
    """convolution_backward_same, with grad_input (the convolution of the gradient with
    the weight flipped and its channels swapped) by Winograd's F(2x2, 3x3) where its
    result is all finite."""
    args = (grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
            output_padding, groups, output_mask)
    _checked_backward(args)        # (before any loop reads the arrays: they have no bounds)
    dtype = input._impl.dtype
    w = weight._impl.array()
    gi = None
    if _finite(w):   # (else the same-size form's test sends it to the generic kernel)
        gi = winograd_conv(grad_output._impl.array().astype(dtype.np, copy=False), w,
                           flip=True)
    if gi is None:
        return convolution_backward_same(*args)
    _, gw, gb = convolution_backward_same(*args[:-1], (False,) + tuple(output_mask[1:]))
    return out(gi, dtype), gw, gb


# Registered next to the kernels: they outrank the generic `convolution` that
# tensorplay/_backend_loading.py registers from ops.yaml, for the calls their constraints admit.
specialised = Library("CPU", "cpu_kernels.conv (specialised)")
specialised.impl("convolution", convolution_per_image, priority=5, layout=NCHW,
                 shape=PER_IMAGE)
specialised.impl("convolution_backward", convolution_backward_transposed_input, priority=5,
                 layout=NCHW, shape=TRANSPOSED_INPUT)
specialised.impl("convolution", convolution_same, priority=7,
                 dtypes={dt.float32, dt.float64}, layout=NCHW, shape=SAME_SIZE)
specialised.impl("convolution_backward", convolution_backward_same, priority=7,
                 dtypes={dt.float32, dt.float64}, layout=NCHW, shape=SAME_SIZE_BACKWARD)
specialised.impl("convolution", convolution_winograd, priority=8,
                 dtypes={dt.float32, dt.float64}, layout=NCHW, shape=WINOGRAD)
specialised.impl("convolution_backward", convolution_backward_winograd, priority=8,
                 dtypes={dt.float32, dt.float64}, layout=NCHW, shape=WINOGRAD_BACKWARD)
specialised.impl("convolution", convolution_nhwc, priority=5,
                 dtypes={dt.float32, dt.float64}, layout="channels_last", shape=ROW_FORM)
specialised.impl("convolution_backward", convolution_backward_nhwc, priority=5,
                 dtypes={dt.float32, dt.float64}, layout="channels_last",
                 shape=ROW_FORM_BACKWARD)
specialised.impl("convolution", convolution_1x1, priority=10,
                 dtypes={dt.float32, dt.float64}, contiguous=True, shape=ONE_BY_ONE)
specialised.impl("convolution_backward", convolution_backward_1x1, priority=10,
                 dtypes={dt.float32, dt.float64}, contiguous=True, shape=ONE_BY_ONE_BACKWARD)
specialised.impl("convolution", convolution_1x1_nhwc, priority=10,
                 dtypes={dt.float32, dt.float64}, layout="channels_last", shape=ONE_BY_ONE)
specialised.impl("convolution_backward", convolution_backward_1x1_nhwc, priority=10,
                 dtypes={dt.float32, dt.float64}, layout="channels_last",
                 shape=ONE_BY_ONE_BACKWARD)
