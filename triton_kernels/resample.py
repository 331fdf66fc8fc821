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
from triton_kernels._spatial import accumulator, finish, nchw, split

BLOCK = 4096 if INTERPRETED else 512     # output elements per program


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


def compile_cases(quick):
    """(label, kernel, argument types, constexprs, options) for compile_check."""
    for mode in ("nearest", "bilinear"):
        for align, ptr, scale, acc in ((False, "*fp16", "*fp32", tl.float32),
                                       (True, "*fp64", "*fp64", tl.float64)):
            if mode == "nearest" and align:
                continue
            yield (f"upsample {mode} align={align} {ptr[1:]}", upsample_kernel,
                   {"x_ptr": ptr, "out_ptr": ptr, "scale_ptr": scale},
                   dict(MODE=mode, ALIGN=align, ACC=acc, BLOCK=512), {})
            yield (f"upsample backward {mode} align={align} {ptr[1:]}",
                   upsample_backward_kernel,
                   {"grad_ptr": ptr, "acc_ptr": scale, "scale_ptr": scale},
                   dict(MODE=mode, ALIGN=align, ACC=acc, BLOCK=512), {})


# ---- grid sampling: on a host copy --------------------------------------------------------
# No Triton kernel for grid_sampler_2d/3d yet: these copy the operands to the host, run the
# CPU's NumPy routine (cpu_kernels/resample.py) and copy the results back. explain() names
# the `_on_host` kernel; the `tensorplay.dispatch` logger says it each call.
def grid_sampler_on_host(op, input, grid, interpolation_mode, padding_mode, align_corners):
    from cpu_kernels.resample import grid_sample_arrays
    from triton_kernels.linalg import _on_host

    spec = shape_rule("resample.grid_sampler")(op, (input, grid, interpolation_mode,
                                                    padding_mode, align_corners))
    x, g = _on_host(op, input, grid)
    acc = np.float32 if x.dtype.itemsize == 2 else x.dtype
    y = grid_sample_arrays(x.astype(acc), g.astype(acc), interpolation_mode, padding_mode,
                           align_corners)
    return from_host(y, spec.dtype, input._impl.device)


def grid_sampler_backward_on_host(op, grad_output, input, grid, interpolation_mode,
                                  padding_mode, align_corners, output_mask):
    from cpu_kernels.resample import grid_sample_backward_arrays
    from triton_kernels.linalg import _on_host

    shape_rule("resample.grid_sampler_backward")(
        op, (grad_output, input, grid, interpolation_mode, padding_mode, align_corners,
             output_mask))
    go, x, g = _on_host(op, grad_output, input, grid)
    acc = np.float32 if x.dtype.itemsize == 2 else x.dtype
    grad_input, grad_grid = grid_sample_backward_arrays(
        go.astype(acc), x.astype(acc), g.astype(acc), interpolation_mode, padding_mode,
        align_corners, output_mask[0])
    dtype, device = input._impl.dtype, input._impl.device
    return (None if grad_input is None else from_host(grad_input, dtype, device),
            from_host(grad_grid, dtype, device))


grid_sampler_on_host = kernel(family=True)(grid_sampler_on_host)
grid_sampler_backward_on_host = kernel(family=True)(grid_sampler_backward_on_host)
