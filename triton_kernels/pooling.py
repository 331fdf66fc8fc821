"""Max, average, adaptive and fractional pooling on the `cuda` device, forward and
backward, over 2 spatial dims (H, W) or 3 (D, H, W).

Inputs are (C, *spatial) or (N, C, *spatial), read through their own strides (see
`_volume`: a 2-D input is a 3-D one of depth 1, so one set of kernels serves both).
One forward kernel serves all four pools: each program computes BLOCK output elements
and loops over the window offsets (s, u, v). A window along one dim is (start, count):

    regular   start = o * stride - padding,        count = kernel  (offsets u * dilation)
    adaptive  start = floor(o * n / out),          count = ceil((o + 1) * n / out) - start

and offsets outside the input are skipped (zero padding for an average, -inf for a max:
the first in-range element always starts a max, so no sentinel value is needed).
Fractional max pooling has its own forward kernel (its windows start at positions drawn
from random samples, see fractional_kernel).

The backwards:
    average   a gather: each input pixel sums grad / divisor over the windows covering it
              (a contiguous range of outputs per dim, at most ceil(kernel / stride) long)
    max       a scatter through the saved indices: tl.atomic_add into a float buffer,
              since overlapping windows may send several gradients to one pixel

With NHWC=True each kernel numbers its elements (n, h, w, c) in place of (n, c, h, w):
the kernels registered for channels_last 2-D inputs (the section at the end).
"""
from __future__ import annotations

import triton
import triton.language as tl

from tensorplay import _dtype as dt
from tensorplay.errors import DimError
from tensorplay.kernel_support.arguments import pool_params, spatial_dims
from tensorplay.kernel_support.ops import call_below_autograd, shape_rule
from tensorplay.kernel_support.results import factory
from tensorplay.library import Library, kernel
from triton_kernels import _math
from triton_kernels._launch import (
    INTERPRETED, compute_dtype, launch, new_tensor, operands, pointer,
)
from triton_kernels._spatial import accumulator, finish

# NCHW kernels: a channels_last call reaches them through the layout-conversion
# fallback of kernel selection, which lays their 4-D results out channels_last again.
NCHW = "contiguous_format"

BLOCK = 4096 if INTERPRETED else 256     # output (or input) elements per program


def _volume(t, nd):
    """(sizes, strides) of a (C, *spatial) or (N, C, *spatial) tensor as (N, C, D, H, W)
    each: N = 1 (stride 0) when unbatched, D = 1 (stride 0) when 2-D, so one kernel indexes
    every case without a copy."""
    sizes, strides = tuple(t._impl.sizes), tuple(t._impl.strides)
    if len(sizes) == nd + 1:
        sizes, strides = (1,) + sizes, (0,) + strides
    if nd == 2:
        sizes, strides = sizes[:2] + (1,) + sizes[2:], strides[:2] + (0,) + strides[2:]
    return sizes, strides


def _three(values, fill):
    """A 2-D parameter list as the 3-D one, with `fill` for the depth."""
    values = tuple(values)
    return values if len(values) == 3 else (fill,) + values


@triton.jit
def split5(offs, A, B, C, D):
    """The five coordinates of flat positions in a contiguous (?, A, B, C, D) tensor."""
    d = offs % D
    t = offs // D
    c = t % C
    t = t // C
    b = t % B
    t = t // B
    return t // A, t % A, b, c, d


@triton.jit
def _window(o, size, out_size, kernel, stride, padding, ADAPTIVE: tl.constexpr):
    """(first position, number of positions) of output o's window along one dim."""
    if ADAPTIVE:
        start = (o * size) // out_size
        return start, ((o + 1) * size + out_size - 1) // out_size - start
    else:
        return o * stride - padding, o * 0 + kernel


@triton.jit
def _span(start, size, kernel, padding, COUNT_PAD: tl.constexpr):
    """How many positions of a window starting at `start` avg_pool divides by along one dim:
    those inside the padded input (COUNT_PAD), or inside the input itself."""
    end = tl.minimum(start + kernel, size + padding)
    if not COUNT_PAD:
        start = tl.maximum(start, 0)
        end = tl.minimum(end, size)
    return end - start


@triton.jit
def _avg_divisor(tstart, hstart, wstart, T, H, W, KT, KH, KW, PT, PH, PW, divisor_override,
                 COUNT_PAD: tl.constexpr, OVERRIDE: tl.constexpr):
    """What avg_pool divides a window's sum by: the window's volume inside the padded
    input (COUNT_PAD) or inside the input itself, unless divisor_override is given."""
    if OVERRIDE:
        return (hstart * 0 + divisor_override).to(tl.float32)
    else:
        return (_span(tstart, T, KT, PT, COUNT_PAD) * _span(hstart, H, KH, PH, COUNT_PAD)
                * _span(wstart, W, KW, PW, COUNT_PAD)).to(tl.float32)


@triton.jit
def pool_kernel(
    x_ptr,  # the input, (N, C, T, H, W) through strides sn, sc, st, sh, sw
    out_ptr,  # the result, (N, C, OT, OH, OW) contiguous, or (N, OT, OH, OW, C) if NHWC
    idx_ptr,  # POOL == "max": the argmax's flat position (t * H + h) * W + w (same layout)
    total, C, T, H, W, OT, OH, OW,
    sn, sc, st, sh, sw,
    KT, KH, KW, ST, SH, SW, PT, PH, PW, DT, DH, DW,  # adaptive: K* are the largest extents
    divisor_override,
    POOL: tl.constexpr,  # "max" or "avg"
    ADAPTIVE: tl.constexpr,
    COUNT_PAD: tl.constexpr,
    OVERRIDE: tl.constexpr,
    ACC: tl.constexpr,  # float32 for half types, else the input's dtype
    NHWC: tl.constexpr,  # outputs in (N, OH, OW, C) order: neighbouring lanes, channels
    BLOCK: tl.constexpr,
):
    # Memory traffic: each output reads its KT * KH * KW window (cached across neighbours).
    # Offsets in int64: N * C * T * H * W may pass 2**31.
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    if NHWC:
        # Neighbouring lanes take neighbouring channels, which a channels_last input
        # stores side by side: each window offset is one contiguous load per program.
        n, ot, oh, ow, c = split5(offs, OT, OH, OW, C)
    else:
        n, c, ot, oh, ow = split5(offs, C, OT, OH, OW)
    base = x_ptr + n * sn + c * sc
    tstart, tcount = _window(ot, T, OT, KT, ST, PT, ADAPTIVE)
    hstart, hcount = _window(oh, H, OH, KH, SH, PH, ADAPTIVE)
    wstart, wcount = _window(ow, W, OW, KW, SW, PW, ADAPTIVE)
    acc = tl.zeros([BLOCK], ACC)
    best = tl.zeros([BLOCK], tl.int64) - 1           # max: no element taken yet
    for s in range(0, KT):
        t = tstart + s * DT
        depth_ok = mask & (s < tcount) & (t >= 0) & (t < T)
        for u in range(0, KH):
            h = hstart + u * DH
            row_ok = depth_ok & (u < hcount) & (h >= 0) & (h < H)
            for v in range(0, KW):
                w = wstart + v * DW
                ok = row_ok & (v < wcount) & (w >= 0) & (w < W)
                x = _math.convert(tl.load(base + t * st + h * sh + w * sw, mask=ok, other=0),
                                  ACC)
                if POOL == "max":
                    # The first maximum; a NaN beats any number (as np.argmax and torch).
                    take = ok & ((best < 0) | (x > acc) | ((x != x) & (acc == acc)))
                    acc = tl.where(take, x, acc)
                    best = tl.where(take, (t * H + h) * W + w, best)
                else:
                    acc += x
    if POOL == "max":
        tl.store(idx_ptr + offs, best, mask=mask)
    else:
        if ADAPTIVE:
            divisor = (tcount * hcount * wcount).to(tl.float32)
        else:
            divisor = _avg_divisor(tstart, hstart, wstart, T, H, W, KT, KH, KW, PT, PH, PW,
                                   divisor_override, COUNT_PAD, OVERRIDE)
        acc = acc / divisor.to(ACC)
    tl.store(out_ptr + offs, _math.convert(acc, out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _fractional_start(o, u, size, out_size, kernel, ACC: tl.constexpr):
    """The first position of output o's window along one dim, for the plane's random
    sample u (PyTorch's generate_intervals):

        alpha = (size - kernel) / (out_size - 1)
        start = int((o + u) * alpha) - int(u * alpha),  the last window ending at the edge
    """
    alpha = (o * 0 + size - kernel).to(ACC) / tl.maximum(o * 0 + out_size - 1, 1).to(ACC)
    start = ((o.to(ACC) + u) * alpha).to(tl.int64) - (u * alpha).to(tl.int64)
    return tl.where(o == out_size - 1, size - kernel, start)


@triton.jit
def fractional_kernel(
    x_ptr,  # the input, (N, C, T, H, W) through strides sn, sc, st, sh, sw
    samples_ptr,  # the random samples, (N, C, nd) through strides un, uc, ud
    out_ptr,  # the result, (N, C, OT, OH, OW) contiguous
    idx_ptr,  # the argmax's flat position (t * H + h) * W + w, same layout
    total, C, T, H, W, OT, OH, OW,
    sn, sc, st, sh, sw, un, uc, ud,
    KT, KH, KW,
    ND: tl.constexpr,  # 2 or 3 spatial dims
    ACC: tl.constexpr,
    BLOCK: tl.constexpr,
):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    n, c, ot, oh, ow = split5(offs, C, OT, OH, OW)
    sample = samples_ptr + n * un + c * uc
    # PyTorch's order of the samples: (W, H) for 2-D, (D, H, W) for 3-D
    uh = _math.convert(tl.load(sample + ud, mask=mask, other=0), ACC)
    hstart = _fractional_start(oh, uh, H, OH, KH, ACC)
    if ND == 3:
        ut = _math.convert(tl.load(sample, mask=mask, other=0), ACC)
        uw = _math.convert(tl.load(sample + 2 * ud, mask=mask, other=0), ACC)
        tstart = _fractional_start(ot, ut, T, OT, KT, ACC)
    else:
        uw = _math.convert(tl.load(sample, mask=mask, other=0), ACC)
        tstart = ot * 0
    wstart = _fractional_start(ow, uw, W, OW, KW, ACC)
    base = x_ptr + n * sn + c * sc
    acc = tl.zeros([BLOCK], ACC)
    best = tl.zeros([BLOCK], tl.int64) - 1
    for s in range(0, KT):
        t = tstart + s
        for u in range(0, KH):
            h = hstart + u
            for v in range(0, KW):
                w = wstart + v
                x = _math.convert(tl.load(base + t * st + h * sh + w * sw, mask=mask,
                                          other=0), ACC)
                take = mask & ((best < 0) | (x > acc) | ((x != x) & (acc == acc)))
                acc = tl.where(take, x, acc)
                best = tl.where(take, (t * H + h) * W + w, best)
    tl.store(idx_ptr + offs, best, mask=mask)
    tl.store(out_ptr + offs, _math.convert(acc, out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _covering(i, size, out_size, kernel, stride, padding, ADAPTIVE: tl.constexpr):
    """[lo, hi): the outputs whose windows hold input position i along one dim."""
    if ADAPTIVE:
        return (i * out_size) // size, ((i + 1) * out_size + size - 1) // size
    else:
        lo = tl.where(i + padding < kernel, 0, (i + padding - kernel) // stride + 1)
        return lo, tl.minimum((i + padding) // stride + 1, out_size)


@triton.jit
def avg_pool_backward_kernel(
    grad_ptr,  # grad_output, (N, C, OT, OH, OW) through strides sn, sc, st, sh, sw
    out_ptr,  # grad_input, (N, C, T, H, W) contiguous, or (N, H, W, C) if NHWC
    total, C, T, H, W, OT, OH, OW,
    sn, sc, st, sh, sw,
    KT, KH, KW, ST, SH, SW, PT, PH, PW,
    STEPS_T, STEPS_H, STEPS_W,  # the most outputs whose windows cover one input pixel, per dim
    divisor_override,
    ADAPTIVE: tl.constexpr,
    COUNT_PAD: tl.constexpr,
    OVERRIDE: tl.constexpr,
    ACC: tl.constexpr,
    NHWC: tl.constexpr,
    BLOCK: tl.constexpr,
):
    # A gather (no atomics): each input pixel reads the gradients of the windows on it.
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    if NHWC:
        n, t, h, w, c = split5(offs, T, H, W, C)
    else:
        n, c, t, h, w = split5(offs, C, T, H, W)
    base = grad_ptr + n * sn + c * sc
    ot_lo, ot_hi = _covering(t, T, OT, KT, ST, PT, ADAPTIVE)
    oh_lo, oh_hi = _covering(h, H, OH, KH, SH, PH, ADAPTIVE)
    ow_lo, ow_hi = _covering(w, W, OW, KW, SW, PW, ADAPTIVE)
    acc = tl.zeros([BLOCK], ACC)
    for k in range(0, STEPS_T):
        ot = ot_lo + k
        tstart, tcount = _window(ot, T, OT, KT, ST, PT, ADAPTIVE)
        for i in range(0, STEPS_H):
            oh = oh_lo + i
            hstart, hcount = _window(oh, H, OH, KH, SH, PH, ADAPTIVE)
            for j in range(0, STEPS_W):
                ow = ow_lo + j
                wstart, wcount = _window(ow, W, OW, KW, SW, PW, ADAPTIVE)
                ok = mask & (ot < ot_hi) & (oh < oh_hi) & (ow < ow_hi)
                g = _math.convert(tl.load(base + ot * st + oh * sh + ow * sw, mask=ok,
                                          other=0), ACC)
                if ADAPTIVE:
                    divisor = (tcount * hcount * wcount).to(tl.float32)
                else:
                    divisor = _avg_divisor(tstart, hstart, wstart, T, H, W, KT, KH, KW, PT,
                                           PH, PW, divisor_override, COUNT_PAD, OVERRIDE)
                # (a masked window's divisor may be 0)
                acc += tl.where(ok, g / divisor.to(ACC), 0)
    tl.store(out_ptr + offs, _math.convert(acc, out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def max_pool_backward_kernel(
    grad_ptr,  # grad_output, (N, C, OT, OH, OW) through strides gn, gc, gt, gh, gw
    idx_ptr,  # the saved indices, same shape, through strides in_, ic, it, ih, iw
    acc_ptr,  # (N, C, plane) float accumulator, zeroed, or (N, plane, C) if NHWC
    total, C, OT, OH, OW, plane,
    gn, gc, gt, gh, gw, in_, ic, it, ih, iw,
    NHWC: tl.constexpr,
    BLOCK: tl.constexpr,
):
    # A scatter: overlapping windows may pick the same pixel, hence atomic adds.
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    n, c, ot, oh, ow = split5(offs, C, OT, OH, OW)
    g = tl.load(grad_ptr + n * gn + c * gc + ot * gt + oh * gh + ow * gw, mask=mask, other=0)
    idx = tl.load(idx_ptr + n * in_ + c * ic + ot * it + oh * ih + ow * iw, mask=mask,
                  other=0)
    if NHWC:
        target = (n * plane + idx) * C + c
    else:
        target = (n * C + c) * plane + idx
    tl.atomic_add(acc_ptr + target, _math.convert(g, acc_ptr.dtype.element_ty), mask=mask)


# ---- launchers ------------------------------------------------------------------------
def _grid(total):
    return (triton.cdiv(total, BLOCK),)


def _result(sizes, dtype, device, nhwc):
    """A new (N, C, *spatial) result: contiguous, or stored channels_last if `nhwc`."""
    if not nhwc:
        return new_tensor(sizes, dtype, device)
    _, c, h, w = sizes
    return factory.empty_strided(sizes, (h * w * c, 1, w * c, c), dtype=dtype, device=device)


def _forward(op, self, out_sizes, pool, params, adaptive=False, count_pad=True,
             divisor_override=None, nhwc=False):
    """Launch pool_kernel; returns (values, indices or None)."""
    device, _ = operands(op, self=self)
    nd = len(params[0])
    kernel, stride, padding, dilation = (_three(p, f) for p, f in zip(params, (1, 1, 0, 1)))
    (_, C, T, H, W), strides = _volume(self, nd)
    OT, OH, OW = _three(out_sizes[-nd:], 1)
    out = _result(out_sizes, self._impl.dtype, device, nhwc)
    indices = _result(out_sizes, dt.int64, device, nhwc) if pool == "max" else None
    total = out._impl.numel()
    if total:
        launch(op, pool_kernel, _grid(total), pointer(self), pointer(out),
               pointer(indices if indices is not None else out), total, C, T, H, W,
               OT, OH, OW, *strides, *kernel, *stride, *padding, *dilation,
               divisor_override or 1, POOL=pool, ADAPTIVE=adaptive, COUNT_PAD=count_pad,
               OVERRIDE=divisor_override is not None,
               ACC=compute_dtype(self._impl.dtype), NHWC=nhwc, BLOCK=BLOCK)
    return out, indices


def _adaptive_extent(size, out_size):
    """The longest adaptive window along one dim (the adaptive kernel's loop bound)."""
    return max(-(-(o + 1) * size // out_size) - o * size // out_size for o in range(out_size))


def _adaptive_params(self, out_sizes, nd=2):
    extent = tuple(_adaptive_extent(n, o) if o else 0
                   for n, o in zip(self._impl.sizes[-nd:], out_sizes[-nd:]))
    return extent, (1,) * nd, (0,) * nd, (1,) * nd


def _max_pool(op, self, kernel_size, stride, padding, dilation, ceil_mode):
    nd = spatial_dims(op)
    spec, _ = shape_rule(f"pooling.{op}")(
        op, (self, kernel_size, stride, padding, dilation, ceil_mode))
    params = pool_params(op, kernel_size, stride, padding, dilation, nd)
    return _forward(op, self, spec.sizes, "max", params)


@kernel(layout=NCHW)
def max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode):
    return _max_pool("max_pool2d_with_indices", self, kernel_size, stride, padding, dilation,
                     ceil_mode)


def max_pool3d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode):
    return _max_pool("max_pool3d_with_indices", self, kernel_size, stride, padding, dilation,
                     ceil_mode)


def _avg_pool(op, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override):
    nd = spatial_dims(op)
    spec = shape_rule(f"pooling.{op}")(
        op, (self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override))
    params = pool_params(op, kernel_size, stride, padding, (1,) * nd, nd)
    return _forward(op, self, spec.sizes, "avg", params, count_pad=count_include_pad,
                    divisor_override=divisor_override)[0]


@kernel(layout=NCHW)
def avg_pool2d(self, kernel_size, stride, padding, ceil_mode, count_include_pad,
               divisor_override):
    return _avg_pool("avg_pool2d", self, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def avg_pool3d(self, kernel_size, stride, padding, ceil_mode, count_include_pad,
               divisor_override):
    return _avg_pool("avg_pool3d", self, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def _adaptive(op, self, output_size, pool):
    nd = spatial_dims(op)
    spec = shape_rule(f"pooling.{op}")(op, (self, output_size))
    sizes = (spec[0] if pool == "max" else spec).sizes
    result = _forward(op, self, sizes, pool, _adaptive_params(self, sizes, nd), adaptive=True)
    return result if pool == "max" else result[0]


@kernel(layout=NCHW)
def adaptive_avg_pool2d(self, output_size):
    return _adaptive("adaptive_avg_pool2d", self, output_size, "avg")


def adaptive_avg_pool3d(self, output_size):
    return _adaptive("adaptive_avg_pool3d", self, output_size, "avg")


@kernel(layout=NCHW)
def adaptive_max_pool2d(self, output_size):
    return _adaptive("adaptive_max_pool2d", self, output_size, "max")


def adaptive_max_pool3d(self, output_size):
    return _adaptive("adaptive_max_pool3d", self, output_size, "max")


def _fractional(op, self, kernel_size, output_size, random_samples):
    nd = spatial_dims(op)
    spec, _ = shape_rule(f"pooling.{op}")(op, (self, kernel_size, output_size,
                                               random_samples))
    device, _ = operands(op, self=self, random_samples=random_samples)
    (_, C, T, H, W), strides = _volume(self, nd)
    OT, OH, OW = _three(output_size, 1)
    out = new_tensor(spec.sizes, self._impl.dtype, device)
    indices = new_tensor(spec.sizes, dt.int64, device)
    total = out._impl.numel()
    if total:
        launch(op, fractional_kernel, _grid(total), pointer(self), pointer(random_samples),
               pointer(out), pointer(indices), total, C, T, H, W, OT, OH, OW, *strides,
               *random_samples._impl.strides, *_three(kernel_size, 1), ND=nd,
               ACC=compute_dtype(self._impl.dtype), BLOCK=BLOCK)
    return out, indices


def fractional_max_pool2d(self, kernel_size, output_size, random_samples):
    return _fractional("fractional_max_pool2d", self, kernel_size, output_size,
                       random_samples)


def fractional_max_pool3d(self, kernel_size, output_size, random_samples):
    return _fractional("fractional_max_pool3d", self, kernel_size, output_size,
                       random_samples)


def _avg_backward(op, grad_output, self, params, steps, adaptive, count_pad=True,
                  divisor_override=None, nhwc=False):
    device, _ = operands(op, grad_output=grad_output, self=self)
    nd = len(params[0])
    kernel, stride, padding = (_three(p, f) for p, f in zip(params[:3], (1, 1, 0)))
    (_, C, T, H, W), _ = _volume(self, nd)
    (_, _, OT, OH, OW), strides = _volume(grad_output, nd)
    out = _result(self._impl.sizes, grad_output._impl.dtype, device, nhwc)
    total = out._impl.numel()
    if total:
        launch(op, avg_pool_backward_kernel, _grid(total), pointer(grad_output), pointer(out),
               total, C, T, H, W, OT, OH, OW, *strides, *kernel, *stride, *padding,
               *_three(steps, 1), divisor_override or 1, ADAPTIVE=adaptive,
               COUNT_PAD=count_pad, OVERRIDE=divisor_override is not None,
               ACC=compute_dtype(grad_output._impl.dtype), NHWC=nhwc, BLOCK=BLOCK)
    return out


def _avg_pool_backward(op, grad_output, self, kernel_size, stride, padding, ceil_mode,
                       count_include_pad, divisor_override, nhwc=False):
    nd = spatial_dims(op)
    shape_rule(f"pooling.{op}")(op, (grad_output, self, kernel_size, stride, padding,
                                     ceil_mode, count_include_pad, divisor_override))
    params = pool_params(op, kernel_size, stride, padding, (1,) * nd, nd)
    steps = tuple(triton.cdiv(k, s) for k, s in zip(params[0], params[1]))
    return _avg_backward(op, grad_output, self, params, steps, False, count_include_pad,
                         divisor_override, nhwc)


@kernel(layout=NCHW)
def avg_pool2d_backward(grad_output, self, kernel_size, stride, padding, ceil_mode,
                        count_include_pad, divisor_override):
    return _avg_pool_backward("avg_pool2d_backward", grad_output, self, kernel_size, stride,
                              padding, ceil_mode, count_include_pad, divisor_override)


def avg_pool3d_backward(grad_output, self, kernel_size, stride, padding, ceil_mode,
                        count_include_pad, divisor_override):
    return _avg_pool_backward("avg_pool3d_backward", grad_output, self, kernel_size, stride,
                              padding, ceil_mode, count_include_pad, divisor_override)


def _adaptive_avg_backward(op, grad_output, self, nhwc=False):
    nd = spatial_dims(op)
    shape_rule(f"pooling.{op}")(op, (grad_output, self))
    out_sizes = grad_output._impl.sizes
    # Input pixel h lies in the windows of outputs [floor(h * out / n), ceil((h + 1) * out / n)):
    # the same ranges as the forward's with the roles of n and out swapped.
    steps = tuple(_adaptive_extent(o, n) if o else 0
                  for n, o in zip(self._impl.sizes[-nd:], out_sizes[-nd:]))
    return _avg_backward(op, grad_output, self, _adaptive_params(self, out_sizes, nd), steps,
                         True, nhwc=nhwc)


@kernel(layout=NCHW)
def adaptive_avg_pool2d_backward(grad_output, self):
    return _adaptive_avg_backward("adaptive_avg_pool2d_backward", grad_output, self)


def adaptive_avg_pool3d_backward(grad_output, self):
    return _adaptive_avg_backward("adaptive_avg_pool3d_backward", grad_output, self)


def _max_backward(op, grad_output, self, indices, nhwc=False):
    nd = spatial_dims(op)
    device, _ = operands(op, grad_output=grad_output, self=self, indices=indices)
    (_, C, T, H, W), _ = _volume(self, nd)
    (_, _, OT, OH, OW), g_strides = _volume(grad_output, nd)
    _, i_strides = _volume(indices, nd)
    dtype = grad_output._impl.dtype
    if nhwc:    # as `accumulator` makes it, but stored channels_last
        acc_dtype = dt.float32 if dtype in (dt.float16, dt.bfloat16) else dtype
        acc = call_below_autograd("zero_", _result(self._impl.sizes, acc_dtype, device, nhwc=True))
    else:
        acc = accumulator(self._impl.sizes, dtype, device)
    total = grad_output._impl.numel()
    if total:
        # One host sync: the interpreter (and a GPU) would write out of bounds through a
        # bad index, so check them all first with a device reduction.
        below = call_below_autograd("lt.Scalar", indices, 0)
        beyond = call_below_autograd("ge.Scalar", indices, T * H * W)
        if call_below_autograd("logical_or", below, beyond).any().item():
            sizes = " x ".join(map(str, self._impl.sizes[-nd:]))
            raise DimError(f"{op}(): argument 'indices' holds a position outside the "
                           f"{sizes} input plane", op=op, arg="indices")
        launch(op, max_pool_backward_kernel, _grid(total), pointer(grad_output),
               pointer(indices), pointer(acc), total, C, OT, OH, OW, T * H * W, *g_strides,
               *i_strides, NHWC=nhwc, BLOCK=BLOCK)
    if nhwc and acc._impl.dtype is not dtype:         # one rounding, keeping the layout
        result = _result(self._impl.sizes, dtype, device, nhwc=True)
        return call_below_autograd("copy_", result, acc, False)
    return acc if nhwc else finish(acc, dtype)


def _max_pool_backward(op, grad_output, self, kernel_size, stride, padding, dilation,
                       ceil_mode, indices, nhwc=False):
    shape_rule(f"pooling.{op}")(
        op, (grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices))
    return _max_backward(op, grad_output, self, indices, nhwc)


@kernel(layout=NCHW)
def max_pool2d_with_indices_backward(grad_output, self, kernel_size, stride, padding,
                                     dilation, ceil_mode, indices):
    return _max_pool_backward("max_pool2d_with_indices_backward", grad_output, self,
                              kernel_size, stride, padding, dilation, ceil_mode, indices)


def max_pool3d_with_indices_backward(grad_output, self, kernel_size, stride, padding,
                                     dilation, ceil_mode, indices):
    return _max_pool_backward("max_pool3d_with_indices_backward", grad_output, self,
                              kernel_size, stride, padding, dilation, ceil_mode, indices)


def _indices_backward(op, grad_output, self, *args):
    """The backward of adaptive and fractional max pooling: the scatter through indices."""
    shape_rule(f"pooling.{op}")(op, (grad_output, self) + args)
    return _max_backward(op, grad_output, self, args[-1])


@kernel(layout=NCHW)
def adaptive_max_pool2d_backward(grad_output, self, indices):
    return _indices_backward("adaptive_max_pool2d_backward", grad_output, self, indices)


def adaptive_max_pool3d_backward(grad_output, self, indices):
    return _indices_backward("adaptive_max_pool3d_backward", grad_output, self, indices)


def fractional_max_pool2d_backward(grad_output, self, kernel_size, output_size, indices):
    return _indices_backward("fractional_max_pool2d_backward", grad_output, self,
                             kernel_size, output_size, indices)


def fractional_max_pool3d_backward(grad_output, self, kernel_size, output_size, indices):
    return _indices_backward("fractional_max_pool3d_backward", grad_output, self,
                             kernel_size, output_size, indices)


# ---- NHWC kernels: pooling of channels_last inputs ------------------------------------
# The same kernels with NHWC=True: lanes walk the channels (contiguous in a channels_last
# input) and results are written channels_last, with none of the two layout copies of the
# fallback. Indices stay flat (H, W) plane positions, as PyTorch returns them.
def max_pool2d_with_indices_nhwc(self, kernel_size, stride, padding, dilation, ceil_mode):
    op = "max_pool2d_with_indices"
    spec, _ = shape_rule("pooling.max_pool2d_with_indices")(
        op, (self, kernel_size, stride, padding, dilation, ceil_mode))
    params = pool_params(op, kernel_size, stride, padding, dilation)
    return _forward(op, self, spec.sizes, "max", params, nhwc=True)


def max_pool2d_with_indices_backward_nhwc(grad_output, self, kernel_size, stride, padding,
                                          dilation, ceil_mode, indices):
    return _max_pool_backward("max_pool2d_with_indices_backward", grad_output, self,
                              kernel_size, stride, padding, dilation, ceil_mode, indices,
                              nhwc=True)


def avg_pool2d_nhwc(self, kernel_size, stride, padding, ceil_mode, count_include_pad,
                    divisor_override):
    op = "avg_pool2d"
    spec = shape_rule("pooling.avg_pool2d")(
        op, (self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override))
    params = pool_params(op, kernel_size, stride, padding, (1, 1))
    return _forward(op, self, spec.sizes, "avg", params, count_pad=count_include_pad,
                    divisor_override=divisor_override, nhwc=True)[0]


def avg_pool2d_backward_nhwc(grad_output, self, kernel_size, stride, padding, ceil_mode,
                             count_include_pad, divisor_override):
    return _avg_pool_backward("avg_pool2d_backward", grad_output, self, kernel_size, stride,
                              padding, ceil_mode, count_include_pad, divisor_override,
                              nhwc=True)


def adaptive_avg_pool2d_nhwc(self, output_size):
    op = "adaptive_avg_pool2d"
    spec = shape_rule("pooling.adaptive_avg_pool2d")(op, (self, output_size))
    return _forward(op, self, spec.sizes, "avg", _adaptive_params(self, spec.sizes),
                    adaptive=True, nhwc=True)[0]


def adaptive_avg_pool2d_backward_nhwc(grad_output, self):
    return _adaptive_avg_backward("adaptive_avg_pool2d_backward", grad_output, self,
                                  nhwc=True)


# A channels_last call is a 4-D one: no shape rule needed.
nhwc = Library("CUDA", "triton_kernels.pooling (NHWC)")
for _name, _fn in (("max_pool2d_with_indices", max_pool2d_with_indices_nhwc),
                   ("max_pool2d_with_indices_backward", max_pool2d_with_indices_backward_nhwc),
                   ("avg_pool2d", avg_pool2d_nhwc),
                   ("avg_pool2d_backward", avg_pool2d_backward_nhwc),
                   ("adaptive_avg_pool2d", adaptive_avg_pool2d_nhwc),
                   ("adaptive_avg_pool2d_backward", adaptive_avg_pool2d_backward_nhwc)):
    nhwc.impl(_name, _fn, priority=10, layout="channels_last")
