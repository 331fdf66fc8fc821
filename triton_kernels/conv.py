"""Convolution (1-D, 2-D, 3-D; strided, padded, dilated, grouped, transposed) and its
backward on the `cuda` device: two gather kernels around the matmul kernel.

    im2col_kernel   windows of an image laid out as matrix rows (one row per window,
                    one column per (channel, kernel offset)); padding reads as 0
    col2im_kernel   its adjoint: each image pixel sums the window entries that cover
                    it (a gather, so no atomics and a deterministic sum), plus a bias

A convolution is then one matrix product per group (the groups are bmm's batch):

    regular:     out[g]  = im2col(x)[g] @ W[g]^T                 (N*P, O/G)
    transposed:  out     = col2im(x_rows[g] @ W[g])              (adjoint of the above)

and its backward is the other one of the pair:

    regular:     grad_input  = col2im(grad_rows[g] @ W[g])       (a transposed conv)
                 grad_weight = grad_rows[g]^T @ im2col(x)[g]
    transposed:  grad_input  = im2col(grad)[g] @ W[g]^T          (a regular conv)
                 grad_weight = x_rows[g]^T @ im2col(grad)[g]
    both:        grad_bias   = grad summed over batch and space

"rows" are an image copied channels-last, (G, N*P, C/G). Every spatial rank runs the
3-D kernels: a 1-D or 2-D problem gets leading spatial dims of size 1 (kernel 1,
stride 1, no padding), which cost nothing but an index that is always 0.

A channels_last conv2d takes direct kernels over NHWC memory instead (the section at the
end): no window matrix, no layout copies.
"""
from __future__ import annotations

import triton
import triton.language as tl

from tensorplay import _dtype as dt
from tensorplay.errors import ShapeError
from tensorplay.kernel_support.ops import call_below_autograd, shape_rule
from tensorplay.kernel_support.results import factory, numel_of
from tensorplay.library import Library, ShapeRule, kernel
from triton_kernels._launch import INTERPRETED, launch, needs_wide_index, new_tensor, \
    operands, pointer
from triton_kernels.linalg import product
from triton_kernels.pointwise import run

# NCHW kernels: a channels_last call reaches them through the layout-conversion
# fallback of kernel selection, which lays their 4-D results out channels_last again.
NCHW = "contiguous_format"

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
    cols_ptr, bias_ptr, out_ptr,  # window matrix (any strides); bias [C]; image [N, C, S]
    C, D, H, W,  # image channels and spatial sizes (out is contiguous)
    KD, KH, KW,  # kernel
    OD, OH, OW,  # windows along each dim
    st_d, st_h, st_w, pad_d, pad_h, pad_w, dil_d, dil_h, dil_w,
    CG,  # channels per group
    sc_g, sc_n, sc_p, sc_c, sc_k,  # matrix strides: group, batch, window, channel, offset
    ROWS,  # N * D*H*W image pixels
    HAS_BIAS: tl.constexpr,
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
    if HAS_BIAS:
        acc += tl.load(bias_ptr + c, mask=c_ok, other=0).to(ACC)[None, :]
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


def col2im_into(cols, matrix_strides, out, bias, kernel, stride, padding, dilation, windows,
                groups):
    """out (N, C, *S), contiguous = the sum of the window entries covering each pixel of
    `cols` (read at `matrix_strides`, as im2col_into writes them), plus `bias`."""
    sizes = out._impl.sizes
    n, c = sizes[:2]
    rows_n = n * numel_of(sizes[2:])
    if not rows_n or not c:
        return out
    block_r, block_c, grid = _tiles(rows_n, c)
    launch("col2im", col2im_kernel, grid, pointer(cols),
           pointer(bias if bias is not None else cols), pointer(out), c,
           *_lead(sizes[2:], 1), *_geometry(kernel, stride, padding, dilation, windows),
           c // groups, *matrix_strides, rows_n, HAS_BIAS=bias is not None,
           ACC=_TL_ACC[acc_dtype(out._impl.dtype)],
           WIDE=needs_wide_index(rows_n * c, cols, out), BLOCK_R=block_r, BLOCK_C=block_c)
    return out


# ---- the matrix forms of a convolution ------------------------------------------------------
def _unfold(image, kernel, stride, padding, dilation, windows, groups):
    """(G, N*P, C/G * K): the windows of image (N, C, *S) as rows, per group, contiguous."""
    n, c = image._impl.sizes[:2]
    p, k, cg = numel_of(windows), numel_of(kernel), c // groups
    cols = new_tensor((groups, n * p, cg * k), image._impl.dtype, image._impl.device)
    strides = (n * p * cg * k, p * cg * k, cg * k, k, 1)
    return im2col_into(image, cols, strides, kernel, stride, padding, dilation, windows,
                       groups)


def _channel_rows(image, groups):
    """(G, N*P, C/G): image (N, C, *S) copied channels-last, as a view per group."""
    sizes = image._impl.sizes
    n, c = sizes[:2]
    last = image.permute([0] + list(range(2, len(sizes))) + [1]).contiguous()
    return last.view([n * numel_of(sizes[2:]), groups, c // groups]).permute([1, 0, 2])


def _weight_matrix(weight, groups):
    """weight (A, B, *K) viewed as (G, A/G, B * K)."""
    a = weight._impl.sizes[0]
    return weight.reshape([groups, a // groups, -1])


def _windows_to_image(r, n, spatial, dtype, bias):
    """The product (G, N*P, O) -> the image (N, G*O, *spatial) in `dtype`, + bias: one
    strided copy that also rounds a float32 product of half inputs once."""
    g, _, o = r._impl.sizes
    p = numel_of(spatial)
    out = new_tensor((n, g * o) + tuple(spatial), dtype, r._impl.device)
    src = r.view([g, n, p, o]).permute([1, 0, 3, 2])        # (N, G, O, P)
    dst = out.view([n, g, o, p])
    if bias is not None:
        run("add", dst, (src, bias.view([1, g, o, 1])), dtype)
    else:
        run("copy", dst, (src,), dtype)
    return out


def _conv(image, wmat, kernel, stride, padding, dilation, windows, groups, bias):
    """A regular convolution of image (N, C, *S) by wmat (G, C/G * K, O/G): the windows
    times the weight, per group. `windows` may be fewer than fit (a transposed conv's
    gradient reads only the first ones)."""
    dtype = image._impl.dtype
    cols = _unfold(image, kernel, stride, padding, dilation, windows, groups)
    r = product(cols, wmat, acc_dtype(dtype) if dtype.is_floating_point else dtype)
    return _windows_to_image(r, image._impl.sizes[0], windows, dtype, bias)


def _conv_transpose(image, wmat, kernel, stride, padding, dilation, out_spatial, groups,
                    bias):
    """The adjoint of _conv: image (N, C, *S) by wmat (G, C/G, O/G * K) into
    (N, O, *out_spatial): each pixel's channels times the weight give its window's entries,
    which col2im sums back into the image."""
    dtype = image._impl.dtype
    sizes = image._impl.sizes
    acc = acc_dtype(dtype)
    cols = product(_channel_rows(image, groups), wmat, acc)      # (G, N*P, O/G * K)
    n, windows = sizes[0], tuple(sizes[2:])
    p, k = numel_of(windows), numel_of(kernel)
    ok = cols._impl.sizes[2]
    out = new_tensor((n, groups * (ok // k)) + tuple(out_spatial), dtype, image._impl.device)
    strides = (n * p * ok, p * ok, ok, k, 1)
    return col2im_into(cols, strides, out, bias, kernel, stride, padding, dilation, windows,
                       groups)


def _weight_grad(rows_of, windows_of, kernel, stride, padding, dilation, windows, groups,
                 weight_sizes):
    """rows_of's channel rows (G, N*P, A/G), transposed, times windows_of's windows
    (G, N*P, B/G * K): the weight gradient (A, B/G, *K) of either convolution."""
    rows = _channel_rows(rows_of, groups)
    cols = _unfold(windows_of, kernel, stride, padding, dilation, windows, groups)
    gw = product(rows.permute([0, 2, 1]), cols, rows_of._impl.dtype)
    return gw.view(list(weight_sizes))


def _check_rank(op, input):
    k = len(input._impl.sizes) - 2
    if k > MAX_SPATIAL:
        raise ShapeError(f"{op}(): the cuda kernels handle 1 to {MAX_SPATIAL} spatial dims, "
                         f"but argument 'input' has {k} (shape {list(input._impl.sizes)})",
                         op=op, arg="input")


# ---- the ops -------------------------------------------------------------------------------
@kernel(layout=NCHW)
def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                groups):
    """out = conv(input, weight) + bias, or its transposed form (see the module doc)."""
    op = "convolution"
    spec = shape_rule("conv.convolution")(
        op, (input, weight, bias, stride, padding, dilation, transposed, output_padding, groups))
    _, (x, w, b) = operands(op, input=input, weight=weight, bias=bias)
    _check_rank(op, x)
    kernel = tuple(w._impl.sizes[2:])
    out_spatial = tuple(spec.sizes[2:])
    if transposed:
        return _conv_transpose(x, _weight_matrix(w, groups), kernel, stride, padding,
                               dilation, out_spatial, groups, b)
    wmat = _weight_matrix(w, groups).permute([0, 2, 1])
    return _conv(x, wmat, kernel, stride, padding, dilation, out_spatial, groups, b)


@kernel(layout=NCHW)
def convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
                         transposed, output_padding, groups, output_mask):
    """(grad_input, grad_weight, grad_bias), each None where output_mask says so."""
    op = "convolution_backward"
    shape_rule("conv.convolution_backward")(
        op, (grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
             output_padding, groups, output_mask))
    _, (g, x, w) = operands(op, grad_output=grad_output, input=input, weight=weight)
    _check_rank(op, x)
    kernel = tuple(w._impl.sizes[2:])
    in_spatial, grad_spatial = tuple(x._impl.sizes[2:]), tuple(g._impl.sizes[2:])
    geometry = (kernel, stride, padding, dilation)
    gi = gw = gb = None
    if output_mask[0]:
        if transposed:
            wmat = _weight_matrix(w, groups).permute([0, 2, 1])
            gi = _conv(g, wmat, *geometry, in_spatial, groups, None)
        else:
            gi = _conv_transpose(g, _weight_matrix(w, groups), *geometry, in_spatial, groups,
                                 None)
    if output_mask[1]:
        if transposed:
            gw = _weight_grad(x, g, *geometry, in_spatial, groups, w._impl.sizes)
        else:
            gw = _weight_grad(g, x, *geometry, grad_spatial, groups, w._impl.sizes)
    if output_mask[2]:
        dims = [0] + list(range(2, len(g._impl.sizes)))
        dtype = g._impl.dtype
        gb = call_below_autograd("sum.dim_IntList", g, tuple(dims), False, acc_dtype(dtype))
        gb = gb.to(dtype)
    return gi, gw, gb


# ---- NHWC kernel: conv2d of channels_last inputs -----------------------------------------
# A direct convolution over NHWC memory, with no im2col matrix and no layout copies: a
# program computes a BLOCK_M x BLOCK_N tile of (output pixel, output channel) and, for
# each kernel offset (kh, kw), adds the product of the BLOCK_M input pixels' channel runs
# (contiguous in channels_last memory) by the weight's (channel, output channel) block:
#
#     out[m, o] = bias[o] + sum over kh, kw, c of x[n, ih, iw, c] * w[o, c, kh, kw]
#
# with (ih, iw) = (oh, ow) * stride - padding + (kh, kw) * dilation (outside reads 0).
# Sums run in float32 (half inputs are upcast in the kernel), then round once.
@triton.jit
def conv2d_nhwc_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr,  # input (N, C, H, W) any strides; weight (O, C, KH, KW)
    C, H, W, O, OH, OW, M,  # M = N * OH * OW output pixels; out is (N, OH, OW, O)
    sx_n, sx_c, sx_h, sx_w, sw_o, sw_c, sw_h, sw_w,
    KH, KW, st_h, st_w, pad_h, pad_w, dil_h, dil_w,
    HAS_BIAS: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    m = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    o = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    n = m // (OH * OW)
    oh = (m // OW) % OH
    ow = m % OW
    o_ok = o < O
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for kh in range(0, KH):
        ih = oh * st_h - pad_h + kh * dil_h
        for kw in range(0, KW):
            iw = ow * st_w - pad_w + kw * dil_w
            pixel_ok = (m < M) & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
            x_base = x_ptr + n * sx_n + ih * sx_h + iw * sx_w
            w_base = w_ptr + kh * sw_h + kw * sw_w
            for c0 in range(0, C, BLOCK_K):
                c = c0 + tl.arange(0, BLOCK_K)
                c_ok = c < C
                x = tl.load(x_base[:, None] + c[None, :] * sx_c,
                            mask=pixel_ok[:, None] & c_ok[None, :], other=0)
                w = tl.load(w_base + c[:, None] * sw_c + o[None, :] * sw_o,
                            mask=c_ok[:, None] & o_ok[None, :], other=0)
                acc += tl.dot(x.to(tl.float32), w.to(tl.float32), input_precision="ieee")
    if HAS_BIAS:
        acc += tl.load(b_ptr + o, mask=o_ok, other=0).to(tl.float32)[None, :]
    tl.store(out_ptr + m[:, None] * O + o[None, :], acc.to(out_ptr.dtype.element_ty),
             mask=(m < M)[:, None] & o_ok[None, :])


# tl.dot takes tiles of at least 16 in each dim.
NHWC_BLOCKS = dict(BLOCK_M=64, BLOCK_N=32, BLOCK_K=16)
# The forward kernel over 8 warps: over Triton's default 4, ptxas caps it at 96 registers
# and spills 12 bytes a thread for fp16/bf16 (74 registers over 8 warps, no spill;
# triton_kernels/COMPILE_REPORT.md).
NHWC_FORWARD_WARPS = 8


@triton.jit
def conv2d_nhwc_grad_input_kernel(
    g_ptr, w_ptr, out_ptr,  # grad_output (N, O, OH, OW) any strides; weight (O, C, KH, KW)
    C, H, W, O, OH, OW, M,  # M = N * H * W input pixels; out is (N, H, W, C)
    sg_n, sg_o, sg_h, sg_w, sw_o, sw_c, sw_h, sw_w,
    KH, KW, st_h, st_w, pad_h, pad_w, dil_h, dil_w,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    # A gather, as col2im: input pixel (ih, iw) meets kernel offset (kh, kw) in at most
    # one output, the (oh, ow) with oh * stride = ih + pad - kh * dilation. Its gradient
    # row (the O output channels) times the weight's (O, C) block at (kh, kw).
    m = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    c = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    n = m // (H * W)
    ih = (m // W) % H
    iw = m % W
    c_ok = c < C
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for kh in range(0, KH):
        th = ih + pad_h - kh * dil_h
        oh = th // st_h
        for kw in range(0, KW):
            tw = iw + pad_w - kw * dil_w
            ow = tw // st_w
            hit = (m < M) & (th >= 0) & (th % st_h == 0) & (oh < OH) & \
                (tw >= 0) & (tw % st_w == 0) & (ow < OW)
            g_base = g_ptr + n * sg_n + oh * sg_h + ow * sg_w
            w_base = w_ptr + kh * sw_h + kw * sw_w
            for o0 in range(0, O, BLOCK_K):
                o = o0 + tl.arange(0, BLOCK_K)
                o_ok = o < O
                g = tl.load(g_base[:, None] + o[None, :] * sg_o,
                            mask=hit[:, None] & o_ok[None, :], other=0)
                w = tl.load(w_base + o[:, None] * sw_o + c[None, :] * sw_c,
                            mask=o_ok[:, None] & c_ok[None, :], other=0)
                acc += tl.dot(g.to(tl.float32), w.to(tl.float32), input_precision="ieee")
    tl.store(out_ptr + m[:, None] * C + c[None, :], acc.to(out_ptr.dtype.element_ty),
             mask=(m < M)[:, None] & c_ok[None, :])


@triton.jit
def conv2d_nhwc_grad_weight_kernel(
    g_ptr, x_ptr, out_ptr,  # grad_output, input (any strides); out: weight (O, C, KH, KW)
    C, H, W, O, OH, OW, M,  # M = N * OH * OW output pixels, the sum's length
    sg_n, sg_o, sg_h, sg_w, sx_n, sx_c, sx_h, sx_w,
    KH, KW, st_h, st_w, pad_h, pad_w, dil_h, dil_w,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    # One (O, C) tile of one kernel offset (program axis 2): the gradient rows, transposed,
    # times the input rows each output pixel read at that offset, summed over the pixels.
    o = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    c = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    k = tl.program_id(2)
    kh = k // KW
    kw = k % KW
    o_ok = o < O
    c_ok = c < C
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for p0 in range(0, M, BLOCK_K):
        p = p0 + tl.arange(0, BLOCK_K).to(tl.int64)
        n = p // (OH * OW)
        oh = (p // OW) % OH
        ow = p % OW
        ih = oh * st_h - pad_h + kh * dil_h
        iw = ow * st_w - pad_w + kw * dil_w
        inside = (p < M) & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        g = tl.load(g_ptr + (n * sg_n + oh * sg_h + ow * sg_w)[None, :] + o[:, None] * sg_o,
                    mask=o_ok[:, None] & (p < M)[None, :], other=0)          # (O, pixels)
        x = tl.load(x_ptr + (n * sx_n + ih * sx_h + iw * sx_w)[:, None] + c[None, :] * sx_c,
                    mask=inside[:, None] & c_ok[None, :], other=0)          # (pixels, C)
        acc += tl.dot(g.to(tl.float32), x.to(tl.float32), input_precision="ieee")
    dst = out_ptr + (o[:, None] * C + c[None, :]) * (KH * KW) + k
    tl.store(dst, acc.to(out_ptr.dtype.element_ty), mask=o_ok[:, None] & c_ok[None, :])


def convolution_nhwc(input, weight, bias, stride, padding, dilation, transposed,
                     output_padding, groups):
    """conv2d of a channels_last input, its result written channels_last (see above)."""
    op = "convolution"
    spec = shape_rule("conv.convolution")(
        op, (input, weight, bias, stride, padding, dilation, transposed, output_padding, groups))
    device, (x, w, b) = operands(op, input=input, weight=weight, bias=bias)
    n, c, h, w_ = x._impl.sizes
    o, _, kh, kw = w._impl.sizes
    oh, ow = spec.sizes[2:]
    out = factory.empty_strided(spec.sizes, (oh * ow * o, 1, ow * o, o), dtype=spec.dtype,
                                device=device)
    m = n * oh * ow
    if m and o:
        grid = (triton.cdiv(m, NHWC_BLOCKS["BLOCK_M"]), triton.cdiv(o, NHWC_BLOCKS["BLOCK_N"]))
        launch(op, conv2d_nhwc_kernel, grid, pointer(x), pointer(w),
               pointer(b if b is not None else w), pointer(out), c, h, w_, o, oh, ow, m,
               *x._impl.strides, *w._impl.strides, kh, kw, *stride, *padding, *dilation,
               HAS_BIAS=b is not None, **NHWC_BLOCKS, num_warps=NHWC_FORWARD_WARPS)
    return out


def convolution_backward_nhwc(grad_output, input, weight, bias_sizes, stride, padding,
                              dilation, transposed, output_padding, groups, output_mask):
    """(grad_input channels_last, grad_weight, grad_bias) of convolution_nhwc."""
    op = "convolution_backward"
    shape_rule("conv.convolution_backward")(
        op, (grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
             output_padding, groups, output_mask))
    device, (g, x, w) = operands(op, grad_output=grad_output, input=input, weight=weight)
    n, c, h, w_ = x._impl.sizes
    o, _, kh, kw = w._impl.sizes
    oh, ow = g._impl.sizes[2:]
    dtype = g._impl.dtype
    geometry = (kh, kw, *stride, *padding, *dilation)
    block_m, block_n = NHWC_BLOCKS["BLOCK_M"], NHWC_BLOCKS["BLOCK_N"]
    gi = gw = gb = None
    if output_mask[0]:
        gi = factory.empty_strided(x._impl.sizes, (h * w_ * c, 1, w_ * c, c), dtype=dtype,
                                   device=device)
        if n * h * w_ and c:
            launch(op, conv2d_nhwc_grad_input_kernel,
                   (triton.cdiv(n * h * w_, block_m), triton.cdiv(c, block_n)), pointer(g),
                   pointer(w), pointer(gi), c, h, w_, o, oh, ow, n * h * w_,
                   *g._impl.strides, *w._impl.strides, *geometry, **NHWC_BLOCKS)
    if output_mask[1]:
        gw = new_tensor(w._impl.sizes, dtype, device)
        if o and c and kh * kw:
            if n * oh * ow == 0:
                call_below_autograd("zero_", gw)
            else:
                launch(op, conv2d_nhwc_grad_weight_kernel,
                       (triton.cdiv(o, block_m), triton.cdiv(c, block_n), kh * kw),
                       pointer(g), pointer(x), pointer(gw), c, h, w_, o, oh, ow, n * oh * ow,
                       *g._impl.strides, *x._impl.strides, *geometry, **NHWC_BLOCKS)
    if output_mask[2]:
        gb = call_below_autograd("sum.dim_IntList", g, (0, 2, 3), False, acc_dtype(dtype))
        gb = gb.to(dtype)
    return gi, gw, gb


# The NHWC kernels cover the plain conv2d (float types, no groups, not transposed); other
# channels_last calls take the NCHW kernels through the layout-conversion fallback.
def _plain_conv2d(input, weight, transposed, groups):
    return len(input._impl.sizes) == 4 and not transposed and groups == 1


PLAIN_CONV2D = ShapeRule("conv2d, not transposed, groups 1", lambda input, weight, bias,
                         stride, padding, dilation, transposed, output_padding, groups:
                         _plain_conv2d(input, weight, transposed, groups))
PLAIN_CONV2D_BACKWARD = ShapeRule(
    "conv2d, not transposed, groups 1", lambda grad_output, input, weight, bias_sizes, stride,
    padding, dilation, transposed, output_padding, groups, output_mask:
    _plain_conv2d(input, weight, transposed, groups))
HALF_AND_FLOAT = {dt.float16, dt.bfloat16, dt.float32}
nhwc = Library("CUDA", "triton_kernels.conv (NHWC)")
nhwc.impl("convolution", convolution_nhwc, priority=10, layout="channels_last",
          dtypes=HALF_AND_FLOAT, shape=PLAIN_CONV2D)
nhwc.impl("convolution_backward", convolution_backward_nhwc, priority=10,
          layout="channels_last", dtypes=HALF_AND_FLOAT, shape=PLAIN_CONV2D_BACKWARD)
