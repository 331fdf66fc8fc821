"""Nearest and bilinear upsampling of (N, C, H, W) on the `cuda` device, forward and
backward.

Along each spatial dim, output position o reads input positions i0 and i1 with weights
(1 - frac, frac) (nearest: i0 only), by PyTorch's index arithmetic:

    nearest   i0 = min(floor(o * scale), n - 1)                       (float32 math)
    bilinear  src = o * scale  (align_corners)
                    max((o + 0.5) * scale - 0.5, 0)  (pixel centres)
              i0 = floor(src), i1 = min(i0 + 1, n - 1), frac = src - i0

The forward is a gather (each output reads its 1 or 4 inputs); the backward adds each
gradient, weighted, into those same positions with tl.atomic_add (neighbouring outputs
share inputs), in a float accumulator (see _spatial.py).

The two scales travel as a two-element tensor of the compute dtype rather than as
kernel arguments: Triton passes Python floats as float32, and float64 inputs need
their scale in float64 to match PyTorch.
"""
from __future__ import annotations

import numpy as np
import triton
import triton.language as tl

from tensorplay import _dtype as dt
from tensorplay._device_transfer import from_host
from tensorplay.kernel_support.arguments import upsample_params
from tensorplay.kernel_support.ops import shape_rule
from tensorplay.library import kernel
from cpu_kernels.resample import _scale   # PyTorch's scale rule, shared with the CPU
from triton_kernels import _math
from triton_kernels._launch import (
    INTERPRETED, compute_dtype, launch, new_tensor, operands, pointer,
)
from triton_kernels._indexing import copy_of
from triton_kernels._spatial import accumulator, finish, nchw, split
from triton_kernels.copy import fill_

BLOCK = 4096 if INTERPRETED else 512     # output elements per program
GRID_BLOCK = 256 if INTERPRETED else 128    # grid points per program


@triton.jit
def _source(o, size, scale, MODE: tl.constexpr, ALIGN: tl.constexpr):
    """(i0, i1, frac) of output positions o along a dim of `size` input positions."""
    if MODE == "nearest":
        i0 = tl.minimum(tl.floor(o.to(tl.float32) * scale).to(tl.int64), size - 1)
        return i0, i0, scale * 0
    else:
        if ALIGN:
            src = o.to(scale.dtype) * scale
        else:
            src = tl.maximum((o.to(scale.dtype) + 0.5) * scale - 0.5, 0.0)
        i0 = src.to(tl.int64)               # src >= 0: truncation is floor
        i1 = tl.where(i0 < size - 1, i0 + 1, i0)
        frac = tl.minimum(tl.maximum(src - i0.to(scale.dtype), 0.0), 1.0)
        return i0, i1, frac


@triton.jit
def upsample_kernel(
    x_ptr,  # the input, (N, C, H, W) through strides sn, sc, sh, sw
    out_ptr,  # the result, (N, C, OH, OW) contiguous
    scale_ptr,  # [scale_h, scale_w] in float32 (nearest) or the compute dtype
    total, C, H, W, OH, OW,
    sn, sc, sh, sw,
    MODE: tl.constexpr,  # "nearest" or "bilinear"
    ALIGN: tl.constexpr,  # align_corners
    ACC: tl.constexpr,
    BLOCK: tl.constexpr,
):
    # Memory traffic: one write per output; 1 or 4 reads, mostly cache hits.
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    n, c, oh, ow = split(offs, C, OH, OW)
    base = x_ptr + n * sn + c * sc
    h0, h1, fh = _source(oh, H, tl.load(scale_ptr), MODE, ALIGN)
    w0, w1, fw = _source(ow, W, tl.load(scale_ptr + 1), MODE, ALIGN)
    if MODE == "nearest":
        y = tl.load(base + h0 * sh + w0 * sw, mask=mask)
    else:
        fh = fh.to(ACC)
        fw = fw.to(ACC)
        x00 = _math.convert(tl.load(base + h0 * sh + w0 * sw, mask=mask, other=0), ACC)
        x01 = _math.convert(tl.load(base + h0 * sh + w1 * sw, mask=mask, other=0), ACC)
        x10 = _math.convert(tl.load(base + h1 * sh + w0 * sw, mask=mask, other=0), ACC)
        x11 = _math.convert(tl.load(base + h1 * sh + w1 * sw, mask=mask, other=0), ACC)
        # Along H first, then W, as the CPU kernel's M_h @ x @ M_w^T.
        top = (1 - fh) * x00 + fh * x10
        bottom = (1 - fh) * x01 + fh * x11
        y = (1 - fw) * top + fw * bottom
    tl.store(out_ptr + offs, _math.convert(y, out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def upsample_backward_kernel(
    grad_ptr,  # grad_output, (N, C, OH, OW) through strides sn, sc, sh, sw
    acc_ptr,  # (N, C, H, W) float accumulator, zeroed
    scale_ptr,
    total, C, H, W, OH, OW,
    sn, sc, sh, sw,
    MODE: tl.constexpr,
    ALIGN: tl.constexpr,
    ACC: tl.constexpr,  # the accumulator's dtype
    BLOCK: tl.constexpr,
):
    # A scatter: several outputs read each input, hence atomic adds.
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    n, c, oh, ow = split(offs, C, OH, OW)
    g = _math.convert(tl.load(grad_ptr + n * sn + c * sc + oh * sh + ow * sw, mask=mask), ACC)
    base = acc_ptr + (n * C + c) * H * W
    h0, h1, fh = _source(oh, H, tl.load(scale_ptr), MODE, ALIGN)
    w0, w1, fw = _source(ow, W, tl.load(scale_ptr + 1), MODE, ALIGN)
    if MODE == "nearest":
        tl.atomic_add(base + h0 * W + w0, g, mask=mask)
    else:
        fh = fh.to(ACC)
        fw = fw.to(ACC)
        tl.atomic_add(base + h0 * W + w0, g * (1 - fh) * (1 - fw), mask=mask)
        tl.atomic_add(base + h0 * W + w1, g * (1 - fh) * fw, mask=mask)
        tl.atomic_add(base + h1 * W + w0, g * fh * (1 - fw), mask=mask)
        tl.atomic_add(base + h1 * W + w1, g * fh * fw, mask=mask)


# ---- launchers ------------------------------------------------------------------------
def _nearest_scale(in_size, out_size, scale):
    # PyTorch's nearest_idx reads o itself when the size is kept and o >> 1 when it
    # doubles, whatever scale was given; these scales give exactly that.
    if out_size == in_size:
        return np.float32(1)
    if out_size == 2 * in_size:
        return np.float32(0.5)
    return _scale(in_size, out_size, scale, False, np.float32)


def _scales(mode, in_hw, out_hw, align_corners, scales, dtype, device):
    """The [scale_h, scale_w] tensor a kernel reads (a two-number parameter upload)."""
    if mode == "nearest":
        values = [_nearest_scale(i, o, s) for i, o, s in zip(in_hw, out_hw, scales)]
        tp_dtype = dt.float32
    else:
        tp_dtype = dt.float64 if dtype is dt.float64 else dt.float32
        values = [_scale(i, o, s, align_corners, tp_dtype.np.type)
                  for i, o, s in zip(in_hw, out_hw, scales)]
    return from_host(np.array(values, tp_dtype.np), tp_dtype, device)


def _grid(total):
    return (triton.cdiv(total, BLOCK),)


@kernel(family=True)
def upsample2d(op, self, output_size, *params):
    """upsample_nearest2d and upsample_bilinear2d (their parameters: upsample_params)."""
    mode, align_corners, scales_h, scales_w = upsample_params(op, params)
    spec = shape_rule("resample.upsample2d")(op, (self, output_size))
    device, _ = operands(op, self=self)
    (_, C, H, W), strides = nchw(self)
    OH, OW = spec.sizes[-2:]
    out = new_tensor(spec.sizes, self._impl.dtype, device)
    total = out._impl.numel()
    if total:
        scale = _scales(mode, (H, W), (OH, OW), align_corners, (scales_h, scales_w),
                        self._impl.dtype, device)
        launch(op, upsample_kernel, _grid(total), pointer(self), pointer(out),
               pointer(scale), total, C, H, W, OH, OW, *strides, MODE=mode,
               ALIGN=bool(align_corners), ACC=compute_dtype(self._impl.dtype), BLOCK=BLOCK)
    return out


@kernel(family=True)
def upsample2d_backward(op, grad_output, output_size, input_size, *params):
    """The backwards of upsample_nearest2d and upsample_bilinear2d."""
    mode, align_corners, scales_h, scales_w = upsample_params(op, params)
    spec = shape_rule("resample.upsample2d_backward")(op, (grad_output, output_size, input_size))
    device, _ = operands(op, grad_output=grad_output)
    (_, C, H, W) = spec.sizes
    (_, _, OH, OW), strides = nchw(grad_output)
    acc = accumulator(spec.sizes, grad_output._impl.dtype, device)
    total = grad_output._impl.numel()
    if total:
        scale = _scales(mode, (H, W), (OH, OW), align_corners, (scales_h, scales_w),
                        grad_output._impl.dtype, device)
        launch(op, upsample_backward_kernel, _grid(total), pointer(grad_output),
               pointer(acc), pointer(scale), total, C, H, W, OH, OW, *strides, MODE=mode,
               ALIGN=bool(align_corners), ACC=compute_dtype(acc._impl.dtype), BLOCK=BLOCK)
    return finish(acc, grad_output._impl.dtype)

# ---- grid sampling ------------------------------------------------------------------------
# grid_sampler_2d / _3d (see cpu_kernels/resample.py for the arithmetic, PyTorch's
# GridSampler.h). One program handles BLOCK points of the grid: it reads each point's
# coordinates once, finds its taps (1 nearest, 2^d (bi/tri)linear, 16 bicubic) and their
# weights, then loops over the channels. The operands are contiguous copies in the compute
# dtype (float32 for half inputs), so the flat offsets are simple. The backward adds each
# weighted gradient into grad_input with atomic adds (points share taps) and writes the
# grid's gradient, summed over the channels, without atomics (one point, one program).
CUBIC_A = tl.constexpr(-0.75)   # Keys' cubic convolution parameter, as PyTorch


@triton.jit
def _unnormalize(coord, size, ALIGN: tl.constexpr):
    """(pixel coordinate, d pixel / d coord)."""
    if ALIGN:
        return (coord + 1) / 2 * (size - 1), coord * 0 + (size - 1) / 2
    else:
        return ((coord + 1) * size - 1) / 2, coord * 0 + size / 2


@triton.jit
def _pad(c, size, PAD: tl.constexpr, ALIGN: tl.constexpr):
    """(coordinate after border / reflection padding, its derivative)."""
    grad = c * 0 + 1
    if PAD == 2:
        if ALIGN:
            low = c * 0
            span = c * 0 + (size - 1)
        else:
            low = c * 0 - 0.5
            span = c * 0 + size
        rel = c - low
        sign = tl.where(rel < 0, -1.0, 1.0)
        rel = tl.abs(rel)
        flips = tl.floor(rel / span)
        extra = rel - flips * span
        even = (flips - 2 * tl.floor(flips / 2)) == 0
        c = tl.where(span == 0, 0.0, tl.where(even, extra + low, span - extra + low))
        grad = tl.where(span == 0, 0.0, tl.where(even, sign, -sign))
    if PAD >= 1:
        inside = (c > 0) & (c < size - 1)
        c = tl.minimum(tl.maximum(c, 0.0), (size - 1) * 1.0)
        grad = tl.where(inside, grad, 0.0)
    return c, grad


@triton.jit
def _cubic(t, K: tl.constexpr):
    """(weight, d weight / dt) of tap K (offset K - 1) for a point t past its floor."""
    A = CUBIC_A
    if K == 0:
        x = t + 1
        return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A, (3 * A * x - 10 * A) * x + 8 * A
    elif K == 1:
        return ((A + 2) * t - (A + 3)) * t * t + 1, (3 * (A + 2) * t - 2 * (A + 3)) * t
    elif K == 2:
        x = 1 - t
        return ((A + 2) * x - (A + 3)) * x * x + 1, -((3 * (A + 2) * x - 2 * (A + 3)) * x)
    else:
        x = 2 - t
        return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A, -((3 * A * x - 10 * A) * x + 8 * A)


@triton.jit
def _round_half_even(x):
    r = tl.floor(x + 0.5)
    tie = (r - x) == 0.5
    odd = (r - 2 * tl.floor(r / 2)) != 0
    return tl.where(tie & odd, r - 1, r)


@triton.jit
def _axis(coord, size, K: tl.constexpr, MODE: tl.constexpr, PAD: tl.constexpr,
          ALIGN: tl.constexpr):
    """Tap K of one axis: (index, weight, d weight / d grid coordinate)."""
    src, scale = _unnormalize(coord, size, ALIGN)
    if MODE == 2:
        base = tl.floor(src)
        w, dw = _cubic(src - base, K)
        at, _ = _pad(base + (K - 1), size, PAD, ALIGN)
        return at.to(tl.int64), w, dw * scale
    else:
        src, pad_grad = _pad(src, size, PAD, ALIGN)
        scale = scale * pad_grad
        if MODE == 1:
            return _round_half_even(src).to(tl.int64), src * 0 + 1, src * 0
        else:
            base = tl.floor(src)
            frac = src - base
            if K == 0:
                return base.to(tl.int64), 1 - frac, -scale
            else:
                return base.to(tl.int64) + 1, frac, scale


@triton.jit
def grid_sample_kernel(
    x_ptr,  # input, contiguous (N, C, D, H, W) (D = 1 for 2-d)
    g_ptr,  # grid, contiguous (N, P, DIM): (x, y[, z]) per point
    go_ptr,  # backward: grad_output, contiguous (N, C, P)
    out_ptr,  # forward: the result (N, C, P); backward: grad_input, zeroed (N, C, D, H, W)
    gg_ptr,  # backward: grad_grid (N, P, DIM)
    total, C, D, H, W, P,
    DIM: tl.constexpr, MODE: tl.constexpr, PAD: tl.constexpr, ALIGN: tl.constexpr,
    BACKWARD: tl.constexpr, INPUT_GRAD: tl.constexpr, BLOCK: tl.constexpr,
):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    n = offs // P
    p = offs % P
    gx = tl.load(g_ptr + offs * DIM, mask=mask, other=0)
    gy = tl.load(g_ptr + offs * DIM + 1, mask=mask, other=0)
    if DIM == 3:
        gz = tl.load(g_ptr + offs * DIM + 2, mask=mask, other=0)
    else:
        gz = gx * 0
    TAPS: tl.constexpr = 1 if MODE == 1 else (4 if MODE == 2 else 2)
    TAPS_Z: tl.constexpr = TAPS if DIM == 3 else 1
    dgx = gx * 0
    dgy = gx * 0
    dgz = gx * 0
    for c in range(0, C):
        plane = (n * C + c) * D * H * W
        acc = gx * 0
        if BACKWARD:
            go = tl.load(go_ptr + (n * C + c) * P + p, mask=mask, other=0)
        for kz in tl.static_range(TAPS_Z):
            if DIM == 3:
                iz, wz, dwz = _axis(gz, D, kz, MODE, PAD, ALIGN)
            else:
                iz = n * 0
                wz = gx * 0 + 1
                dwz = gx * 0
            for ky in tl.static_range(TAPS):
                iy, wy, dwy = _axis(gy, H, ky, MODE, PAD, ALIGN)
                for kx in tl.static_range(TAPS):
                    ix, wx, dwx = _axis(gx, W, kx, MODE, PAD, ALIGN)
                    inside = mask & (ix >= 0) & (ix < W) & (iy >= 0) & (iy < H) & \
                        (iz >= 0) & (iz < D)
                    at = plane + (iz * H + iy) * W + ix
                    value = tl.load(x_ptr + at, mask=inside, other=0)
                    if BACKWARD:
                        if INPUT_GRAD:
                            tl.atomic_add(out_ptr + at, wz * wy * wx * go, mask=inside)
                        dgx += dwx * wy * wz * value * go
                        dgy += wx * dwy * wz * value * go
                        dgz += wx * wy * dwz * value * go
                    else:
                        acc += wz * wy * wx * value
        if not BACKWARD:
            tl.store(out_ptr + (n * C + c) * P + p, acc, mask=mask)
    if BACKWARD:
        tl.store(gg_ptr + offs * DIM, dgx, mask=mask)
        tl.store(gg_ptr + offs * DIM + 1, dgy, mask=mask)
        if DIM == 3:
            tl.store(gg_ptr + offs * DIM + 2, dgz, mask=mask)


def _grid_operands(input, grid, *more):
    """Contiguous copies in the compute dtype (float32 for half inputs), and the sizes."""
    dtype = dt.float64 if input._impl.dtype is dt.float64 else dt.float32
    copies = [copy_of(t, dtype) for t in (input, grid) + more]
    sizes = tuple(input._impl.sizes)
    n, c, *spatial = sizes
    d, h, w = ([1] + spatial) if len(spatial) == 2 else spatial
    points = grid._impl.numel() // max(n * len(spatial), 1)
    return copies, dtype, (n, c, d, h, w, points, len(spatial))


@kernel(family=True)
def grid_sampler(op, input, grid, interpolation_mode, padding_mode, align_corners):
    """grid_sampler_2d and grid_sampler_3d."""
    spec = shape_rule("resample.grid_sampler")(op, (input, grid, interpolation_mode,
                                                    padding_mode, align_corners))
    operands(op, input=input, grid=grid)
    (x, g), dtype, (n, c, d, h, w, points, dim) = _grid_operands(input, grid)
    out = new_tensor(spec.sizes, dtype, input._impl.device)
    total = n * points
    if total and c:
        launch(op, grid_sample_kernel, (triton.cdiv(total, GRID_BLOCK),), pointer(x), pointer(g), pointer(x),
               pointer(out), pointer(g), total, c, d, h, w, points, DIM=dim,
               MODE=interpolation_mode, PAD=padding_mode, ALIGN=bool(align_corners),
               BACKWARD=False, INPUT_GRAD=False, BLOCK=GRID_BLOCK)
    return finish(out, spec.dtype)


@kernel(family=True)
def grid_sampler_backward(op, grad_output, input, grid, interpolation_mode, padding_mode,
                          align_corners, output_mask):
    """(grad_input, grad_grid) of grid_sampler_2d / _3d."""
    specs = shape_rule("resample.grid_sampler_backward")(
        op, (grad_output, input, grid, interpolation_mode, padding_mode, align_corners,
             output_mask))
    operands(op, grad_output=grad_output, input=input, grid=grid)
    (x, g, go), dtype, (n, c, d, h, w, points, dim) = _grid_operands(input, grid,
                                                                     grad_output)
    device = input._impl.device
    grad_input = accumulator(specs[0].sizes if specs[0] else (0,), dtype, device)
    grad_grid = new_tensor(specs[1].sizes, dtype, device)
    total = n * points
    if total:
        if not c:
            fill_(grad_grid, 0)
        else:
            launch(op, grid_sample_kernel, (triton.cdiv(total, GRID_BLOCK),), pointer(x), pointer(g), pointer(go),
                   pointer(grad_input), pointer(grad_grid), total, c, d, h, w, points,
                   DIM=dim, MODE=interpolation_mode, PAD=padding_mode,
                   ALIGN=bool(align_corners), BACKWARD=True, INPUT_GRAD=bool(output_mask[0]),
                   BLOCK=GRID_BLOCK)
    out_dtype = input._impl.dtype
    return (finish(grad_input, out_dtype) if specs[0] else None,
            finish(grad_grid, out_dtype))
