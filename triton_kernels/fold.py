"""im2col (F.unfold) and col2im (F.fold) on the `cuda` device: two gather kernels, with
the ops' own layout (N, C * kH * kW, L) and one group.

    im2col_kernel   windows of an image laid out as matrix rows (one row per window,
                    one column per (channel, kernel offset)); padding reads as 0
    col2im_kernel   its adjoint: each image pixel sums the window entries that cover
                    it (a gather, so no atomics and a deterministic sum)

The kernels take the matrix at any strides, per (group, batch, window, channel, kernel
offset), and run every spatial rank as 3-D: a 2-D problem gets a leading spatial dim of
size 1 (kernel 1, stride 1, no padding), which costs nothing but an index that is always 0.
(Convolution does not go through them: triton_kernels/conv.py computes its windows on the
fly, an implicit GEMM.)
"""
from __future__ import annotations

import triton
import triton.language as tl

from tensorplay import _dtype as dt
from tensorplay.kernel_support.arguments import window_out_size
from tensorplay.kernel_support.ops import shape_rule
from tensorplay.kernel_support.results import numel_of
from triton_kernels._launch import INTERPRETED, launch, needs_wide_index, new_tensor, \
    operands, pointer

# Tile sizes: (image pixels or window rows) x (channels or window columns). The
# interpreter pays per program, so it takes bigger tiles.
BLOCK_ROWS = 128 if INTERPRETED else 64
BLOCK_COLS = 64 if INTERPRETED else 32
MAX_SPATIAL = 3


@triton.jit
def im2col_kernel(
    x_ptr, cols_ptr,  # image [N, C, D, H, W] (any strides) -> window matrix (any strides)
    C, D, H, W,  # image channels and spatial sizes
    sx_n, sx_c, sx_d, sx_h, sx_w,  # image strides
    KD, KH, KW,  # kernel
    OD, OH, OW,  # windows along each dim
    st_d, st_h, st_w, pad_d, pad_h, pad_w, dil_d, dil_h, dil_w,
    CG,  # channels per group: channel c is (group c // CG, channel c % CG in it)
    sc_g, sc_n, sc_p, sc_c, sc_k,  # matrix strides: group, batch, window, channel, offset
    ROWS, COLS,  # N * OD*OH*OW windows, C * KD*KH*KW columns
    WIDE: tl.constexpr,  # int64 index arithmetic
    BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr,
):
    # One BLOCK_R x BLOCK_C tile of (window, (channel, offset)) pairs: each element is one
    # image read (0 in the padding) and one matrix write.
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    if WIDE:
        rows = rows.to(tl.int64)
        cols = cols.to(tl.int64)
    windows = OD * OH * OW
    n = rows // windows
    p = rows % windows
    od = p // (OH * OW)
    oh = (p // OW) % OH
    ow = p % OW
    kernel = KD * KH * KW
    c = cols // kernel
    k = cols % kernel
    kd = k // (KH * KW)
    kh = (k // KW) % KH
    kw = k % KW
    # The image position each (window, offset) pair reads, in unpadded coordinates.
    i_d = od[:, None] * st_d - pad_d + kd[None, :] * dil_d
    i_h = oh[:, None] * st_h - pad_h + kh[None, :] * dil_h
    i_w = ow[:, None] * st_w - pad_w + kw[None, :] * dil_w
    inside = (i_d >= 0) & (i_d < D) & (i_h >= 0) & (i_h < H) & (i_w >= 0) & (i_w < W)
    mask = (rows < ROWS)[:, None] & (cols < COLS)[None, :]
    src = x_ptr + n[:, None] * sx_n + c[None, :] * sx_c + i_d * sx_d + i_h * sx_h + i_w * sx_w
    v = tl.load(src, mask=mask & inside, other=0)
    dst = cols_ptr + (c // CG)[None, :] * sc_g + n[:, None] * sc_n + p[:, None] * sc_p + \
        (c % CG)[None, :] * sc_c + k[None, :] * sc_k
    tl.store(dst, v, mask=mask)


@triton.jit
def col2im_kernel(
    cols_ptr, out_ptr,  # window matrix (any strides) -> image [N, C, S]
    C, D, H, W,  # image channels and spatial sizes (out is contiguous)
    KD, KH, KW,  # kernel
    OD, OH, OW,  # windows along each dim
    st_d, st_h, st_w, pad_d, pad_h, pad_w, dil_d, dil_h, dil_w,
    CG,  # channels per group
    sc_g, sc_n, sc_p, sc_c, sc_k,  # matrix strides: group, batch, window, channel, offset
    ROWS,  # N * D*H*W image pixels
    ACC: tl.constexpr,  # float32 (float64, int64) sums
    WIDE: tl.constexpr,
    BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr,
):
    # A BLOCK_R x BLOCK_C tile of (pixel, channel) outputs. Pixel y is covered by the
    # window o at offset k where y + pad = o * stride + k * dilation: for each of the
    # K offsets that is at most one window, read if it exists. K reads, one write.
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    if WIDE:
        rows = rows.to(tl.int64)
        c = c.to(tl.int64)
    pixels = D * H * W
    n = rows // pixels
    y = rows % pixels
    y_d = y // (H * W) + pad_d
    y_h = (y // W) % H + pad_h
    y_w = y % W + pad_w
    row_ok = rows < ROWS
    c_ok = c < C
    col_base = (c // CG) * sc_g + (c % CG) * sc_c
    acc = tl.zeros([BLOCK_R, BLOCK_C], ACC)
    for k in range(0, KD * KH * KW):
        t_d = y_d - (k // (KH * KW)) * dil_d
        t_h = y_h - ((k // KW) % KH) * dil_h
        t_w = y_w - (k % KW) * dil_w
        o_d = t_d // st_d
        o_h = t_h // st_h
        o_w = t_w // st_w
        hit = (t_d >= 0) & (t_d % st_d == 0) & (o_d < OD) & \
            (t_h >= 0) & (t_h % st_h == 0) & (o_h < OH) & \
            (t_w >= 0) & (t_w % st_w == 0) & (o_w < OW) & row_ok
        p = (o_d * OH + o_h) * OW + o_w
        src = cols_ptr + (n * sc_n + p * sc_p)[:, None] + col_base[None, :] + k * sc_k
        v = tl.load(src, mask=hit[:, None] & c_ok[None, :], other=0)
        acc += v.to(ACC)
    dst = out_ptr + (n * C * pixels + y)[:, None] + (c * pixels)[None, :]
    tl.store(dst, acc.to(out_ptr.dtype.element_ty), mask=row_ok[:, None] & c_ok[None, :])


# ---- geometry ----------------------------------------------------------------------------
def _lead(values, fill):
    """A per-spatial-dim list widened to 3 dims with leading `fill`s."""
    return [fill] * (MAX_SPATIAL - len(values)) + list(values)


def _geometry(kernel, stride, padding, dilation, windows):
    """The kernels' 15 window arguments, every list widened to 3-D."""
    return (*_lead(kernel, 1), *_lead(windows, 1), *_lead(stride, 1), *_lead(padding, 0),
            *_lead(dilation, 1))


def _tiles(rows, cols):
    block_r = min(triton.next_power_of_2(max(rows, 1)), BLOCK_ROWS)
    block_c = min(triton.next_power_of_2(max(cols, 1)), BLOCK_COLS)
    return block_r, block_c, (triton.cdiv(rows, block_r), triton.cdiv(cols, block_c))


def acc_dtype(dtype):
    """Where sums are kept: float32 for half types, int64 for integers."""
    if dtype in (dt.float16, dt.bfloat16):
        return dt.float32
    return dtype if dtype.is_floating_point else dt.int64


_TL_ACC = {dt.float32: tl.float32, dt.float64: tl.float64, dt.int64: tl.int64}


def im2col_into(image, cols, matrix_strides, kernel, stride, padding, dilation, windows,
                groups):
    """Write the windows of `image` (N, C, *S) into `cols` at `matrix_strides` =
    (group, batch, window, channel in group, kernel offset)."""
    sizes = image._impl.sizes
    n, c = sizes[:2]
    rows_n, cols_n = n * numel_of(windows), c * numel_of(kernel)
    if not rows_n or not cols_n:
        return cols
    block_r, block_c, grid = _tiles(rows_n, cols_n)
    st = image._impl.strides
    image_strides = (st[0], st[1], *_lead(st[2:], 0))
    launch("im2col", im2col_kernel, grid, pointer(image), pointer(cols), c,
           *_lead(sizes[2:], 1), *image_strides,
           *_geometry(kernel, stride, padding, dilation, windows), c // groups,
           *matrix_strides, rows_n, cols_n, WIDE=needs_wide_index(rows_n * cols_n, image, cols),
           BLOCK_R=block_r, BLOCK_C=block_c)
    return cols


def col2im_into(cols, matrix_strides, out, kernel, stride, padding, dilation, windows,
                groups):
    """out (N, C, *S), contiguous = the sum of the window entries covering each pixel of
    `cols` (read at `matrix_strides`, as im2col_into writes them)."""
    sizes = out._impl.sizes
    n, c = sizes[:2]
    rows_n = n * numel_of(sizes[2:])
    if not rows_n or not c:
        return out
    block_r, block_c, grid = _tiles(rows_n, c)
    launch("col2im", col2im_kernel, grid, pointer(cols), pointer(out), c,
           *_lead(sizes[2:], 1), *_geometry(kernel, stride, padding, dilation, windows),
           c // groups, *matrix_strides, rows_n, ACC=_TL_ACC[acc_dtype(out._impl.dtype)],
           WIDE=needs_wide_index(rows_n * c, cols, out), BLOCK_R=block_r, BLOCK_C=block_c)
    return out


# ---- the ops ------------------------------------------------------------------------------
def _batched(t, image_dims):
    """t with a leading batch dim of 1 when it has none (a view)."""
    return t.unsqueeze(0) if len(t._impl.sizes) == image_dims else t


def im2col(self, kernel_size, dilation, padding, stride):
    spec = shape_rule("fold.im2col")("im2col", (self, kernel_size, dilation, padding, stride))
    device, (x,) = operands("im2col", self=self)
    image = _batched(x, 3)
    n, c = image._impl.sizes[:2]
    blocks = tuple(window_out_size(s, k, st, p, d) for s, k, st, p, d
                   in zip(image._impl.sizes[2:], kernel_size, stride, padding, dilation))
    out = new_tensor(spec.sizes, spec.dtype, device)
    k, ck = kernel_size[0] * kernel_size[1], spec.sizes[-2]
    length = spec.sizes[-1]
    # The (N, C * K, L) layout in the kernel's terms: group, batch, window, channel, offset.
    strides = (0, ck * length, 1, k * length, length)
    im2col_into(image, out, strides, tuple(kernel_size), stride, padding, dilation, blocks, 1)
    return out


def col2im(self, output_size, kernel_size, dilation, padding, stride):
    spec = shape_rule("fold.col2im")(
        "col2im", (self, output_size, kernel_size, dilation, padding, stride))
    device, (x,) = operands("col2im", self=self)
    cols = _batched(x, 2)
    blocks = tuple(window_out_size(s, k, st, p, d) for s, k, st, p, d
                   in zip(output_size, kernel_size, stride, padding, dilation))
    k = kernel_size[0] * kernel_size[1]
    s_n, s_ck, s_l = cols._impl.strides
    strides = (0, s_n, s_l, k * s_ck, s_ck)
    out = new_tensor((cols._impl.sizes[0],) + spec.sizes[-3:], spec.dtype, device)
    col2im_into(cols, strides, out, tuple(kernel_size), stride, padding, dilation,
                blocks, 1)
    return out.view(list(spec.sizes))
