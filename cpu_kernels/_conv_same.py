"""The same-size convolution (stride 1, padding d*(k-1)/2: the output grid is the input's)
with columns that hold no garbage positions, built by one copy.

When the output has the input's H x W, output position p = (oh, ow) and kernel offset
(i, j) read input position (oh + i*d_h - p_h, ow + j*d_w - p_w). Pad the input with p_h
zero ROWS above and below only (rows of W, no padded columns): then, on the flat padded
plane, that position is p + i*d_h*W + j*d_w - p_w, an affine function of (i, j, p). So
all the columns are one strided view of the padded input, copied once:

    cols[n, c, i, j, p] = padded[n, c].flat[p + i*d_h*W + j*d_w - p_w]

Kernel columns that shift by dx = j*d_w - p_w != 0 wrap around: output columns ow < -dx
(or ow >= W - dx) read the neighbouring row's end instead of the zero padding. They are
zeroed after the copy, one strided fill per kernel column j. The offsets are in the
weight's own (c, i, j) order, so W (O, C, KH, KW) is the product's (O, C*KH*KW) matrix
as it lies in memory: no copy (a copy with its bias as one more column; a transposed
copy for the flipped weight of grad_input). Ordering the columns (c, j, i) would merge
the fill's axes, but reordering a weight costs more: 7.5 us for 32x16x3x3, 13 us for
32x32x3x3, against 1.1 and 1.3 us for the plain copy.

Everything but the copies is made once per chunk shape (_ColumnPlan: the row-padded
buffer, whose zero rows are written when it is made and never again, the columns, a row of
ones after them, and the views that the copies go through), so that a call is four NumPy
statements and the product: for one image (batch 1) Python's overhead is most of the time.

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

A batch of many channels, either way, whose columns are not kept for a weight gradient
copies only the columns that the kernel rows share (_SharedRowPlan: each kernel row's
columns are the previous row's, W positions on), and runs one product per kernel row.
"""
from __future__ import annotations

import threading

import numpy as np

from cpu_kernels._blas import column_block, depth_block, matmul_by_columns, matmul_by_depth
from cpu_kernels._kept import last_kept
from tensorplay.dispatch.plan_cache import plans

# The batch goes through in chunks whose columns take at most this many bytes: the products
# read a chunk's columns right after the copy wrote them, still in the cache. Well within
# this machine's 1 MiB of L2 per core, with room for the padded input, the weight and the
# products' output: against PyTorch in the same run (CPU time, so that other processes'
# load does not count), a ResNet block's 32 channels on 16x16 ran forward + backward 7%
# faster at batch 32, and the whole block (batch 16) 7% faster, than with 2 MiB chunks;
# one image (300 KiB) per chunk measured the same as two.
CHUNK_BYTES = 640 * 1024


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
        self.steps = {}    # (batch, itemsize, shared, CHUNK_BYTES) -> images per chunk
        self.wraps = []
        for j in range(self.kw):
            dx = j * dilation[1] - padding[1]
            if dx < 0:
                self.wraps.append((j, slice(0, min(w, -dx))))
            elif dx > 0:
                self.wraps.append((j, slice(max(0, w - dx), w)))

    def step(self, n, itemsize, shared=False):
        """Images per chunk: at most CHUNK_BYTES of columns (the full columns' K rows of
        the plane, or with `shared` the shared-row columns' C * KW rows of the padded
        plane), the batch split evenly."""
        key = (n, itemsize, shared, CHUNK_BYTES)
        step = self.steps.get(key)
        if step is None:
            rows = self.c * self.kw * self.padded_plane if shared else self.k * self.plane
            most = max(1, CHUNK_BYTES // max(1, rows * itemsize))
            chunks = max(1, -(-n // most))    # an empty batch: one chunk of none
            step = self.steps[key] = max(1, -(-n // chunks))
        return step


def _geometry(c, h, w, kernel, dilation, padding):
    signature = (c, h, w, tuple(kernel), tuple(dilation), tuple(padding))
    return plans.get("cpu.conv.same", signature, lambda: _Geometry(signature))


class _ColumnPlan:
    """The buffers and views of one chunk shape: n images of a geometry, a dtype, a layout
    of the columns and whether they end with a row of ones. fill(x) writes x's columns.

    The columns (image-major (n, K [+1], H*W), else channel-major (K [+1], n * H*W), K =
    C * KH * KW in (c, i, j) order) may end with a row of ones, which turns a bias column
    of the weight into the bias added by the product itself (image-major), or makes the
    product's last row the gradient summed over positions, grad_bias (channel-major).
    Only the K rows are ever written after the plan is made: the ones stay."""

    def __init__(self, geometry, n, dtype, image_major, ones, cols=None):
        c, k, kh, kw, length = geometry.c, geometry.k, geometry.kh, geometry.kw, geometry.plane
        padded = np.zeros(n * c * geometry.padded_plane + 2 * geometry.slack, dtype)
        planes = padded[geometry.slack:geometry.slack + n * c * geometry.padded_plane]
        rows = geometry.pad_rows * geometry.w
        self.interior = planes.reshape(n, c, geometry.padded_plane)[:, :, rows:rows + length]
        item = dtype.itemsize
        plane = item * geometry.padded_plane
        # Strides of (n, c, i, j, p); the view starts p_w elements (the slack) before plane 0.
        n_s, c_s, i_s, j_s = c * plane, plane, item * geometry.step_i, item * geometry.step_j
        extra = 1 if ones else 0
        if image_major:
            # (`cols`: a slice of a _KeptBuffers buffer, which this plan writes into)
            self.cols = np.empty((n, k + extra, length), dtype) if cols is None else cols
            self.block = self.cols[:, :k].reshape(n, c, kh, kw, length)
            strides = (n_s, c_s, i_s, j_s, item)
            wrap_rows = [self.block[:, :, :, j].reshape(n, c, kh, geometry.h, geometry.w)[..., cut]
                         for j, cut in geometry.wraps]
        else:
            self.cols = np.empty((k + extra, n * length), dtype)
            self.block = self.cols[:k].reshape(c, kh, kw, n, length)
            strides = (c_s, i_s, j_s, n_s, item)
            wrap_rows = [self.block[:, :, j].reshape(c, kh, n * geometry.h, geometry.w)[..., cut]
                         for j, cut in geometry.wraps]
        self.window = np.ndarray(self.block.shape, dtype, padded, strides=strides)
        self.wrap_rows = wrap_rows
        if ones:
            self.cols[..., k, :] = 1
        self.gradient_rows = {}   # C_out -> (C_out, n, H*W), weight_grad_same's g laid out
        self.nbytes = padded.nbytes + (self.cols.nbytes if cols is None else 0)

    def fill(self, x):
        """x (n, C, H*W)'s columns: the real rows into the padded buffer, the one copy, the
        wrapped columns zeroed."""
        self.interior[...] = x
        np.copyto(self.block, self.window)
        for wrapped in self.wrap_rows:
            wrapped.fill(0)
        return self.cols


class _SharedRowPlan:
    """The columns of n images that every kernel row shares (_conv_shared_rows):

        cols[n, c, j, q] = row_padded[n, c].flat[q + j*d_w - p_w]   (wraps zeroed)

    for every position q of the row-padded plane, (H + 2 p_h) rows of W. Kernel row i's
    columns are then the window cols[..., i*d_h*W : i*d_h*W + H*W] of the same buffer, so
    the copy writes C * KW rows of the padded plane where the full columns hold C * KH * KW
    rows of the image: 96 x 80 against 288 x 64 values for 32 channels on 8x8 (the memory-
    efficient convolution of Cho and Brand, "MEC", 2017). fill(x) writes x's."""

    def __init__(self, geometry, n, dtype):
        c, kw, length = geometry.c, geometry.kw, geometry.padded_plane
        padded = np.zeros(n * c * length + 2 * geometry.slack, dtype)
        planes = padded[geometry.slack:geometry.slack + n * c * length]
        rows = geometry.pad_rows * geometry.w
        self.interior = planes.reshape(n, c, length)[:, :, rows:rows + geometry.plane]
        item = dtype.itemsize
        self.cols = np.empty((n, c * kw, length), dtype)
        self.block = self.cols.reshape(n, c, kw, length)
        # (n, c, j, q) of the buffer, from p_w elements (the slack) before plane 0
        self.window = np.ndarray(self.block.shape, dtype, padded,
                                 strides=(c * length * item, length * item,
                                          geometry.step_j * item, item))
        self.wrap_rows = [self.block[:, :, j].reshape(n, c, length // geometry.w,
                                                      geometry.w)[..., cut]
                          for j, cut in geometry.wraps]
        self.nbytes = padded.nbytes + self.cols.nbytes

    fill = _ColumnPlan.fill


class _ColumnPlans(threading.local):
    """Per thread, the column plans by chunk shape, most recently used last, at most
    KEEP_BYTES of buffers in all (the oldest go); a plan larger than that alone is made
    for its call and not kept. Nothing returned to a caller is a view of their buffers."""

    KEEP_BYTES = 64 * 1024 * 1024

    def __init__(self):
        self.kept = {}
        self.nbytes = 0

    def get(self, geometry, n, dtype, image_major, ones):
        return self._kept((geometry.signature, n, dtype, image_major, ones),
                          lambda: _ColumnPlan(geometry, n, dtype, image_major, ones))

    def get_shared(self, geometry, n, dtype):
        """The plan of the shared-row columns (_SharedRowPlan) of n images."""
        return self._kept((geometry.signature, n, dtype, "shared"),
                          lambda: _SharedRowPlan(geometry, n, dtype))

    def _kept(self, key, make):
        plan = self.kept.pop(key, None)
        if plan is None:
            plan = make()
            if plan.nbytes > self.KEEP_BYTES:
                return plan
            self.nbytes += plan.nbytes
            while self.nbytes > self.KEEP_BYTES:
                self.nbytes -= self.kept.pop(next(iter(self.kept))).nbytes
        self.kept[key] = plan
        return plan


_column_plans = _ColumnPlans()


# ---- the forward's columns, kept for the weight gradient ---------------------------------
# A forward given a `keep` key (cpu_kernels/_kept.py) writes its columns, chunk by chunk as
# ever, into a buffer that holds the whole batch's, and leaves them in the thread's slot;
# weight_grad_same given the same key then sums one product per image over them, cols[n]
# (K, H*W) @ g[n]^T (H*W, O), instead of copying the columns again channel-major: 0.76x
# the time of the weight gradient for the digits CNN's second layer (batch 8 to 64),
# 0.92-0.95x for 32 and 64 channels on 16x16 and 14x14. An image's product below
# KEEP_WORK multiply-adds loses (the first layer, one input channel: 1.24x slower at batch
# 32), so nothing is kept there. Nor where the whole batch's columns take more than
# KEEP_COLUMNS_BYTES: the forward then writes them far out of the cache instead of into
# the chunk's buffer, which stays in it. Forward + backward, in the same run: the digits
# CNN's second layer 0.93-0.97x at batch 1 to 64 (1.2 MB of columns at 32); 32 channels
# on 16x16 0.97-0.98x at batch 1 and 8 (2.4 MB at 8), 1.01x at 32 (9.5 MB), 1.15x at 64
# (19 MB).
KEEP_WORK = 64 * 1024
KEEP_COLUMNS_BYTES = 4 * 1024 * 1024


class _KeptBuffers(threading.local):
    """Per thread, for each chunk shape (geometry, batch, dtype, bias row) the buffer of a
    whole batch's columns and the plans of its chunks (each plan writes its slice of the
    buffer: its row of ones stays), at most KEEP_BYTES of buffers in all (the oldest go)."""

    KEEP_BYTES = 16 * 1024 * 1024

    def __init__(self):
        self.plans = {}
        self.nbytes = 0

    def chunk_plans(self, geometry, n, step, dtype, ones):
        """(buffer, [(start, stop, plan)]) writing a whole batch's columns into one buffer,
        or None when that buffer would be larger than KEEP_COLUMNS_BYTES."""
        rows = geometry.k + (1 if ones else 0)
        if n * rows * geometry.plane * dtype.itemsize > KEEP_COLUMNS_BYTES:
            return None
        key = (geometry.signature, n, step, dtype, ones)
        kept = self.plans.pop(key, None)
        if kept is None:
            cols = np.empty((n, rows, geometry.plane), dtype)
            kept = (cols, [(at, min(at + step, n),
                            _ColumnPlan(geometry, min(at + step, n) - at, dtype, True, ones,
                                        cols[at:at + step]))
                           for at in range(0, n, step)])
            self.nbytes += cols.nbytes
            while self.nbytes > self.KEEP_BYTES:
                self.nbytes -= self.plans.pop(next(iter(self.plans)))[0].nbytes
        self.plans[key] = kept
        return kept


_kept_buffers = _KeptBuffers()


class _WeightBuffers(threading.local):
    """Per thread, the buffer that _column_weight copies a weight into, by (weight shape,
    dtype, bias column, flipped): a call copies the weight (a few thousand numbers) into
    a buffer and views made once, where a new array and its views cost more than the
    copy for a small convolution. The buffer is only read by the product of the same call
    and never returned."""

    def __init__(self):
        self.kept = {}

    def get(self, shape, dtype, bias, flip):
        key = (shape, dtype, bias, flip)
        kept = self.kept.get(key)
        if kept is None:
            o, c, kh, kw = shape
            if flip:           # the flipped weight's out channels are w's in channels
                o, c = c, o
            buffer = np.empty((o, c * kh * kw + (1 if bias else 0)), dtype)
            view = buffer[:, :c * kh * kw].reshape(o, c, kh, kw)
            if len(self.kept) >= 64:
                self.kept.pop(next(iter(self.kept)))
            kept = self.kept[key] = (buffer, view)
        return kept


_weight_buffers = _WeightBuffers()


def _column_weight(w, bias=None, flip=False):
    """w (O, C, KH, KW) as (O, C * KH * KW), the columns' order: w itself when it is
    contiguous; with the bias as one more column (for columns with a row of ones), a copy.
    flip=True: the weight of the adjoint instead, w flipped in space with its in/out
    channels swapped (input_grad_same), (C, O * KH * KW). A copy lives in a thread's buffer
    (_WeightBuffers), valid until its next call."""
    if bias is None and not flip:
        return w.reshape(w.shape[0], -1)
    buffer, view = _weight_buffers.get(w.shape, w.dtype, bias is not None, flip)
    if flip:
        np.copyto(view, w[:, :, ::-1, ::-1].transpose(1, 0, 2, 3))
    else:
        np.copyto(view, w)
    if bias is not None:
        buffer[:, -1] = bias
    return buffer


def conv_same(x, w, bias, padding, dilation, flip=False, keep=None):
    """conv(x, w) + bias for x (N, C, H, W), w (O, C, KH, KW), stride 1, padding
    d*(k-1)/2: (N, O, H, W), in x's dtype. Image-major columns, chunk by chunk, one product
    per image straight into the result (the bias with it: a row of ones in the columns).
    flip=True: the convolution with w flipped in space and its channels swapped (x then
    has O channels; the result C), which input_grad_same is. `keep`: the key under which
    the columns stay for weight_grad_same (cpu_kernels/_kept.py), where that pays. Where
    none are kept, a batch of many channels runs on the columns that the kernel rows
    share instead (_conv_shared_rows; SHARED_ROWS_CHANNELS)."""
    n, c, h, wd = x.shape
    o = w.shape[1] if flip else w.shape[0]
    if n == 0 or c == 0:   # nothing to sum over: the bias alone
        result = np.zeros((n, o, h, wd), x.dtype)
        return result if bias is None else result + bias.reshape(-1, 1, 1)
    geometry = _geometry(c, h, wd, w.shape[2:], dilation, padding)
    step = geometry.step(n, x.itemsize)
    ones = bias is not None
    kept = None
    if keep is not None and (geometry.k + ones) * geometry.plane * o >= KEEP_WORK:
        kept = _kept_buffers.chunk_plans(geometry, n, step, x.dtype, ones)
    if kept is None and _shares_rows(n, c, geometry.kh):
        return _conv_shared_rows(x, w, bias, geometry, flip)
    wm = _column_weight(w, bias, flip)
    result = np.empty((n, o, h, wd), x.dtype)
    flat = x.reshape(n, c, h * wd)
    # each image's product in blocks of columns that the BLAS's small-matrix kernels take
    # (cpu_kernels/_blas.py), or whole
    width = column_block(o, wm.shape[1], geometry.plane, result.dtype)
    rows = result.reshape(n, o, h * wd)
    if kept is not None:
        cols, chunks = kept
        for at, stop, plan in chunks:
            matmul_by_columns(wm, plan.fill(flat[at:stop]), rows[at:stop], width)
        last_kept.keep(keep, cols)
        return result
    if step >= n:   # the whole batch in one chunk (a small batch): no slices to make
        plan = _column_plans.get(geometry, n, x.dtype, True, ones)
        matmul_by_columns(wm, plan.fill(flat), rows, width)
        return result
    for at in range(0, n, step):
        stop = min(at + step, n)
        plan = _column_plans.get(geometry, stop - at, x.dtype, True, ones)
        matmul_by_columns(wm, plan.fill(flat[at:stop]), rows[at:stop], width)
    return result


def weight_grad_same(x, g, kernel, padding, dilation, bias_grad=False, keep=None):
    """d(sum(conv_same(x, w) * g)) / dw: (O, C, KH, KW) = cols @ g^T over all positions,
    channel-major columns, chunk by chunk; or, where the forward kept its columns under
    `keep`, a sum of one product per image over those. bias_grad=True: (grad_weight,
    grad_bias), the latter from the columns' row of ones in the same product."""
    n, c, h, wd = x.shape
    o = g.shape[1]
    if n == 0 or c == 0:   # no columns: grad_weight is 0, grad_bias still g's sum
        gw = np.zeros((o, c) + tuple(kernel), x.dtype)
        return (gw, g.sum(axis=(0, 2, 3))) if bias_grad else gw
    geometry = _geometry(c, h, wd, kernel, dilation, padding)
    cols = last_kept.get(keep)
    if cols is not None:
        return _weight_grad_kept(cols, g, geometry, kernel, bias_grad)
    flat = x.reshape(n, c, h * wd)
    gm = g.reshape(n, o, h * wd)
    step = geometry.step(n, x.itemsize)
    # A product too large for the BLAS's small-matrix kernels runs in blocks of positions
    # (cpu_kernels/_blas.py), against g laid out position-major: each block of g is then
    # a contiguous (positions, O) matrix. (A small product, as the first layer's with its
    # one input channel, keeps g as it is: the transposing copy would cost more.)
    k = geometry.k + bias_grad         # the product's rows: the columns and the ones
    blocked = depth_block(k, step * geometry.plane, o, g.dtype) is not None
    if blocked:
        by_position = np.empty((n, geometry.plane, o), g.dtype)
        np.copyto(by_position, gm.transpose(0, 2, 1))
        by_position = by_position.reshape(n * geometry.plane, o)
    total = None
    for at in range(0, n, step):
        stop = min(at + step, n)
        m = stop - at
        plan = _column_plans.get(geometry, m, x.dtype, False, bias_grad)
        cols = plan.fill(flat[at:stop])
        if blocked:
            part = matmul_by_depth(cols, by_position[at * geometry.plane:stop * geometry.plane],
                                   depth_block(k, m * geometry.plane, o, g.dtype))
        else:
            # cols @ g^T (K, O): OpenBLAS runs this order faster than g @ cols^T (the
            # long M = m * H*W axis is the inner one of the big operand).
            part = np.matmul(cols, _channel_major(plan, gm[at:stop]).T)
        if total is None:
            total = part
        else:
            np.add(total, part, out=total)
    # (an array of its own, not a view: the leaf's .grad can then be this very array,
    # autograd/node.py's _stealable, with no clone)
    gw = np.empty((o, c, geometry.kh, geometry.kw), total.dtype)
    np.copyto(gw.reshape(o, geometry.k), total[:geometry.k].T)
    return (gw, total[geometry.k].copy()) if bias_grad else gw


def _weight_grad_kept(cols, g, geometry, kernel, bias_grad):
    """weight_grad_same from the forward's image-major columns (N, K [+1], H*W): the sum
    over images of cols[n] @ g[n]^T, g laid out position-major (each image's (H*W, O)
    matrix contiguous). Without a row of ones in them, grad_bias is g's own sum."""
    n, o = g.shape[:2]
    k = geometry.k
    by_position = np.empty((n, geometry.plane, o), g.dtype)
    np.copyto(by_position, g.reshape(n, o, geometry.plane).transpose(0, 2, 1))
    ones = cols.shape[1] > k
    rows = cols if bias_grad or not ones else cols[:, :k]
    total = np.add.reduce(np.matmul(rows, by_position), axis=0)   # (K [+1], O)
    # (an array of its own, not a view: the leaf's .grad can be this very array)
    gw = np.empty((o, geometry.c) + tuple(kernel), total.dtype)
    np.copyto(gw.reshape(o, k), total[:k].T)
    if not bias_grad:
        return gw
    return gw, (total[k].copy() if ones else g.sum(axis=(0, 2, 3)))


def _channel_major(plan, gm):
    """g's chunk (m, O, H*W) as the (O, m * H*W) matrix of channel-major positions: itself
    for one image, else copied into the plan's buffer."""
    m, o, plane = gm.shape
    if m == 1:
        return gm[0]
    rows = plan.gradient_rows.get(o)
    if rows is None:
        rows = plan.gradient_rows[o] = np.empty((o, m, plane), gm.dtype)
    np.copyto(rows, gm.transpose(1, 0, 2))
    return rows.reshape(o, m * plane)


def input_grad_same(g, w, padding, dilation):
    """d(sum(conv_same(x, w) * g)) / dx: sliding w over x is adjoint to sliding w flipped,
    its in/out channels swapped, over g, with the padding d*(k-1) - p, which for a
    same-size convolution is p again. g (N, O, H, W), w (O, C, KH, KW) -> (N, C, H, W)."""
    return conv_same(g, w, None, padding, dilation, flip=True)


# ---- the columns that the kernel rows share --------------------------------------------
# A convolution of SHARED_ROWS_CHANNELS input channels or more (C * KW >= 96 rows of
# shared columns for 3x3) takes them from SHARED_ROWS_BATCH images on, where its forward
# keeps no columns for a weight gradient (that one reads the full columns). Against the
# full columns, in the same run: grad_input of the digits CNN's second layer (g's 32
# channels on 8x8) 0.93x at batch 8, 0.84-0.85x at 32 and 64; 32 channels on 16x16
# 0.88-0.94x (both ways) at batch 8 to 64; 64 on 14x14 (batch 16) 0.86-0.87x; 64 on 8x8
# 0.84x; 32 on 28x28 0.96x. Fewer channels lost or barely gained, so they keep the full
# columns: 3 channels on 32x32 1.13-1.31x, 16 on 8x8 0.97-1.24x, 16 on 16x16 0.92-0.97x;
# so did batch 4 (1.05x; 1.0x at 1 and 2), where the products' fixed costs show.
SHARED_ROWS_CHANNELS = 32
SHARED_ROWS_BATCH = 8


def _shares_rows(n, c, kh):
    return n >= SHARED_ROWS_BATCH and c >= SHARED_ROWS_CHANNELS and kh > 1


def _conv_shared_rows(x, w, bias, geometry, flip):
    """conv_same on the shared-row columns (_SharedRowPlan): one product per kernel row
    i, W_i @ cols_i, summed, W_i (O, C * KW) the weight's row i in the columns' (c, j)
    order (flip: the flipped weight's, its channels swapped, as conv_same's); the bias
    added after the products."""
    n, c, h, wd = x.shape
    kh, kw = geometry.kh, geometry.kw
    if flip:    # rows[i] = the flipped weight's row i: w[:, :, KH-1-i, ::-1], o and c swapped
        rows = np.empty((kh, w.shape[1], w.shape[0], kw), x.dtype)
        np.copyto(rows, w[:, :, ::-1, ::-1].transpose(2, 1, 0, 3))
    else:
        rows = np.empty((kh, w.shape[0], w.shape[1], kw), x.dtype)
        np.copyto(rows, w.transpose(2, 0, 1, 3))
    o = rows.shape[1]
    rows = rows.reshape(kh, o, c * kw)
    result = np.empty((n, o, h * wd), x.dtype)
    flat = x.reshape(n, c, h * wd)
    step = geometry.step(n, x.itemsize, shared=True)
    part = np.empty((step, o, h * wd), x.dtype)
    width = column_block(o, c * kw, geometry.plane, x.dtype)   # (cpu_kernels/_blas.py)
    positions = geometry.plane
    for at in range(0, n, step):
        stop = min(at + step, n)
        cols = _column_plans.get_shared(geometry, stop - at, x.dtype).fill(flat[at:stop])
        total, term = result[at:stop], part[:stop - at]
        matmul_by_columns(rows[0], cols[..., :positions], total, width)
        for i in range(1, kh):
            shift = i * geometry.step_i
            matmul_by_columns(rows[i], cols[..., shift:shift + positions], term, width)
            total += term
    if bias is not None:
        result += bias.reshape(-1, 1)
    return result.reshape(n, o, h, wd)
