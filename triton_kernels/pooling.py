"""Max, average and adaptive pooling on the `cuda` device, forward and backward.

Inputs are (C, H, W) or (N, C, H, W), read through their own strides (see _spatial.nchw).
One forward kernel serves all four pools: each program computes BLOCK output elements
and loops over the window offsets (u, v). A window along one dim is (start, count):

    regular   start = o * stride - padding,        count = kernel  (offsets u * dilation)
    adaptive  start = floor(o * n / out),          count = ceil((o + 1) * n / out) - start

and offsets outside the input are skipped (zero padding for an average, -inf for a max:
the first in-range element always starts a max, so no sentinel value is needed).

The backwards:
    average   a gather: each input pixel sums grad / divisor over the windows covering it
              (a contiguous range of outputs per dim, at most ceil(kernel / stride) long)
    max       a scatter through the saved indices: tl.atomic_add into a float buffer,
              since overlapping windows may send several gradients to one pixel

With NHWC=True each kernel numbers its elements (n, h, w, c) in place of (n, c, h, w):
the kernels registered for channels_last inputs (the section at the end).
"""
from __future__ import annotations

import triton
import triton.language as tl

from tensorplay import _dtype as dt
from tensorplay.errors import DimError
from tensorplay.kernel_support.arguments import pool_params
from tensorplay.kernel_support.ops import call_below_autograd, shape_rule
from tensorplay.kernel_support.results import factory
from tensorplay.library import Library, kernel
from triton_kernels import _math
from triton_kernels._launch import (
    INTERPRETED, compute_dtype, launch, new_tensor, operands, pointer,
)
from triton_kernels._spatial import accumulator, finish, nchw, split

# NCHW kernels: a channels_last call reaches them through the layout-conversion
# fallback of kernel selection, which lays their 4-D results out channels_last again.
NCHW = "contiguous_format"

BLOCK = 4096 if INTERPRETED else 256     # output (or input) elements per program


@triton.jit
def _window(o, size, out_size, kernel, stride, padding, ADAPTIVE: tl.constexpr):
    """(first position, number of positions) of output o's window along one dim."""
    if ADAPTIVE:
        start = (o * size) // out_size
        return start, ((o + 1) * size + out_size - 1) // out_size - start
    else:
        return o * stride - padding, o * 0 + kernel


@triton.jit
def _avg_divisor(hstart, wstart, H, W, KH, KW, PH, PW, divisor_override,
                 COUNT_PAD: tl.constexpr, OVERRIDE: tl.constexpr):
    """What avg_pool2d divides a window's sum by: the window's area inside the padded
    input (COUNT_PAD) or inside the input itself, unless divisor_override is given."""
    if OVERRIDE:
        return (hstart * 0 + divisor_override).to(tl.float32)
    else:
        hend = tl.minimum(hstart + KH, H + PH)
        wend = tl.minimum(wstart + KW, W + PW)
        if not COUNT_PAD:
            hstart = tl.maximum(hstart, 0)
            wstart = tl.maximum(wstart, 0)
            hend = tl.minimum(hend, H)
            wend = tl.minimum(wend, W)
        return ((hend - hstart) * (wend - wstart)).to(tl.float32)


@triton.jit
def pool_kernel(
    x_ptr,  # the input, (N, C, H, W) through strides sn, sc, sh, sw
    out_ptr,  # the result, (N, C, OH, OW) contiguous, or (N, OH, OW, C) if NHWC
    idx_ptr,  # POOL == "max": the argmax's flat position h * W + w in its plane (same layout)
    total, C, H, W, OH, OW,
    sn, sc, sh, sw,
    KH, KW, SH, SW, PH, PW, DH, DW,  # adaptive: KH, KW are the largest window's extent
    divisor_override,
    POOL: tl.constexpr,  # "max" or "avg"
    ADAPTIVE: tl.constexpr,
    COUNT_PAD: tl.constexpr,
    OVERRIDE: tl.constexpr,
    ACC: tl.constexpr,  # float32 for half types, else the input's dtype
    NHWC: tl.constexpr,  # outputs in (N, OH, OW, C) order: neighbouring lanes, channels
    BLOCK: tl.constexpr,
):
    # Memory traffic: each output reads its KH * KW window (cached across neighbours).
    # Offsets in int64: N * C * H * W may pass 2**31.
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    if NHWC:
        # Neighbouring lanes take neighbouring channels, which a channels_last input
        # stores side by side: each window offset is one contiguous load per program.
        n, oh, ow, c = split(offs, OH, OW, C)
    else:
        n, c, oh, ow = split(offs, C, OH, OW)
    base = x_ptr + n * sn + c * sc
    hstart, hcount = _window(oh, H, OH, KH, SH, PH, ADAPTIVE)
    wstart, wcount = _window(ow, W, OW, KW, SW, PW, ADAPTIVE)
    acc = tl.zeros([BLOCK], ACC)
    best = tl.zeros([BLOCK], tl.int64) - 1           # max: no element taken yet
    for u in range(0, KH):
        h = hstart + u * DH
        row_ok = mask & (u < hcount) & (h >= 0) & (h < H)
        for v in range(0, KW):
            w = wstart + v * DW
            ok = row_ok & (v < wcount) & (w >= 0) & (w < W)
            x = _math.convert(tl.load(base + h * sh + w * sw, mask=ok, other=0), ACC)
            if POOL == "max":
                # The first maximum; a NaN beats any number (as np.argmax and torch).
                take = ok & ((best < 0) | (x > acc) | ((x != x) & (acc == acc)))
                acc = tl.where(take, x, acc)
                best = tl.where(take, h * W + w, best)
            else:
                acc += x
    if POOL == "max":
        tl.store(idx_ptr + offs, best, mask=mask)
    else:
        if ADAPTIVE:
            divisor = (hcount * wcount).to(tl.float32)
        else:
            divisor = _avg_divisor(hstart, wstart, H, W, KH, KW, PH, PW, divisor_override,
                                   COUNT_PAD, OVERRIDE)
        acc = acc / divisor.to(ACC)
    tl.store(out_ptr + offs, _math.convert(acc, out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def avg_pool_backward_kernel(
    grad_ptr,  # grad_output, (N, C, OH, OW) through strides sn, sc, sh, sw
    out_ptr,  # grad_input, (N, C, H, W) contiguous, or (N, H, W, C) if NHWC
    total, C, H, W, OH, OW,
    sn, sc, sh, sw,
    KH, KW, SH, SW, PH, PW,
    STEPS_H, STEPS_W,  # the most outputs whose windows cover one input pixel, per dim
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
        n, h, w, c = split(offs, H, W, C)
    else:
        n, c, h, w = split(offs, C, H, W)
    base = grad_ptr + n * sn + c * sc
    # The outputs whose windows hold h: [oh_lo, oh_hi) (and likewise for w).
    if ADAPTIVE:
        oh_lo = (h * OH) // H
        oh_hi = ((h + 1) * OH + H - 1) // H
        ow_lo = (w * OW) // W
        ow_hi = ((w + 1) * OW + W - 1) // W
    else:
        oh_lo = tl.where(h + PH < KH, 0, (h + PH - KH) // SH + 1)
        oh_hi = tl.minimum((h + PH) // SH + 1, OH)
        ow_lo = tl.where(w + PW < KW, 0, (w + PW - KW) // SW + 1)
        ow_hi = tl.minimum((w + PW) // SW + 1, OW)
    acc = tl.zeros([BLOCK], ACC)
    for i in range(0, STEPS_H):
        oh = oh_lo + i
        hstart, hcount = _window(oh, H, OH, KH, SH, PH, ADAPTIVE)
        for j in range(0, STEPS_W):
            ow = ow_lo + j
            wstart, wcount = _window(ow, W, OW, KW, SW, PW, ADAPTIVE)
            ok = mask & (oh < oh_hi) & (ow < ow_hi)
            g = _math.convert(tl.load(base + oh * sh + ow * sw, mask=ok, other=0), ACC)
            if ADAPTIVE:
                divisor = (hcount * wcount).to(tl.float32)
            else:
                divisor = _avg_divisor(hstart, wstart, H, W, KH, KW, PH, PW,
                                       divisor_override, COUNT_PAD, OVERRIDE)
            acc += tl.where(ok, g / divisor.to(ACC), 0)   # (a masked window's divisor may be 0)
    tl.store(out_ptr + offs, _math.convert(acc, out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def max_pool_backward_kernel(
    grad_ptr,  # grad_output, (N, C, OH, OW) through strides gn, gc, gh, gw
    idx_ptr,  # the saved indices, same shape, through strides in_, ic, ih, iw
    acc_ptr,  # (N, C, H * W) float accumulator, zeroed, or (N, H * W, C) if NHWC
    total, C, OH, OW, plane,
    gn, gc, gh, gw, in_, ic, ih, iw,
    NHWC: tl.constexpr,
    BLOCK: tl.constexpr,
):
    # A scatter: overlapping windows may pick the same pixel, hence atomic adds.
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    n, c, oh, ow = split(offs, C, OH, OW)
    g = tl.load(grad_ptr + n * gn + c * gc + oh * gh + ow * gw, mask=mask, other=0)
    idx = tl.load(idx_ptr + n * in_ + c * ic + oh * ih + ow * iw, mask=mask, other=0)
    if NHWC:
        target = (n * plane + idx) * C + c
    else:
        target = (n * C + c) * plane + idx
    tl.atomic_add(acc_ptr + target, _math.convert(g, acc_ptr.dtype.element_ty), mask=mask)


# ---- launchers ------------------------------------------------------------------------
def _grid(total):
    return (triton.cdiv(total, BLOCK),)


def _result(sizes, dtype, device, nhwc):
    """A new (N, C, H, W) result: contiguous, or stored channels_last if `nhwc`."""
    if not nhwc:
        return new_tensor(sizes, dtype, device)
    _, c, h, w = sizes
    return factory.empty_strided(sizes, (h * w * c, 1, w * c, c), dtype=dtype, device=device)


def _forward(op, self, out_sizes, pool, params, adaptive=False, count_pad=True,
             divisor_override=None, nhwc=False):
    """Launch pool_kernel; returns (values, indices or None)."""
    device, _ = operands(op, self=self)
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = params
    (_, C, H, W), strides = nchw(self)
    OH, OW = out_sizes[-2:]
    out = _result(out_sizes, self._impl.dtype, device, nhwc)
    indices = _result(out_sizes, dt.int64, device, nhwc) if pool == "max" else None
    total = out._impl.numel()
    if total:
        launch(op, pool_kernel, _grid(total), pointer(self), pointer(out),
               pointer(indices if indices is not None else out), total, C, H, W, OH, OW,
               *strides, kh, kw, sh, sw, ph, pw, dh, dw, divisor_override or 1,
               POOL=pool, ADAPTIVE=adaptive, COUNT_PAD=count_pad,
               OVERRIDE=divisor_override is not None,
               ACC=compute_dtype(self._impl.dtype), NHWC=nhwc, BLOCK=BLOCK)
    return out, indices


def _adaptive_extent(size, out_size):
    """The longest adaptive window along one dim (the adaptive kernel's loop bound)."""
    return max(-(-(o + 1) * size // out_size) - o * size // out_size for o in range(out_size))


def _adaptive_params(self, out_sizes):
    H, W = self._impl.sizes[-2:]
    OH, OW = out_sizes[-2:]
    extent = (_adaptive_extent(H, OH) if OH else 0, _adaptive_extent(W, OW) if OW else 0)
    return extent, (1, 1), (0, 0), (1, 1)


@kernel(layout=NCHW)
def max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode):
    op = "max_pool2d_with_indices"
    spec, _ = shape_rule("pooling.max_pool2d_with_indices")(
        op, (self, kernel_size, stride, padding, dilation, ceil_mode))
    params = pool_params(op, kernel_size, stride, padding, dilation)
    return _forward(op, self, spec.sizes, "max", params)


@kernel(layout=NCHW)
def avg_pool2d(self, kernel_size, stride, padding, ceil_mode, count_include_pad,
               divisor_override):
    op = "avg_pool2d"
    spec = shape_rule("pooling.avg_pool2d")(
        op, (self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override))
    params = pool_params(op, kernel_size, stride, padding, (1, 1))
    return _forward(op, self, spec.sizes, "avg", params, count_pad=count_include_pad,
                    divisor_override=divisor_override)[0]


@kernel(layout=NCHW)
def adaptive_avg_pool2d(self, output_size):
    op = "adaptive_avg_pool2d"
    spec = shape_rule("pooling.adaptive_avg_pool2d")(op, (self, output_size))
    return _forward(op, self, spec.sizes, "avg", _adaptive_params(self, spec.sizes),
                    adaptive=True)[0]


@kernel(layout=NCHW)
def adaptive_max_pool2d(self, output_size):
    op = "adaptive_max_pool2d"
    spec, _ = shape_rule("pooling.adaptive_max_pool2d")(op, (self, output_size))
    return _forward(op, self, spec.sizes, "max", _adaptive_params(self, spec.sizes),
                    adaptive=True)


def _avg_backward(op, grad_output, self, params, steps, adaptive, count_pad=True,
                  divisor_override=None, nhwc=False):
    device, _ = operands(op, grad_output=grad_output, self=self)
    (kh, kw), (sh, sw), (ph, pw), _ = params
    (_, C, H, W), _ = nchw(self)
    (_, _, OH, OW), strides = nchw(grad_output)
    out = _result(self._impl.sizes, grad_output._impl.dtype, device, nhwc)
    total = out._impl.numel()
    if total:
        launch(op, avg_pool_backward_kernel, _grid(total), pointer(grad_output), pointer(out),
               total, C, H, W, OH, OW, *strides, kh, kw, sh, sw, ph, pw, *steps,
               divisor_override or 1, ADAPTIVE=adaptive, COUNT_PAD=count_pad,
               OVERRIDE=divisor_override is not None,
               ACC=compute_dtype(grad_output._impl.dtype), NHWC=nhwc, BLOCK=BLOCK)
    return out


@kernel(layout=NCHW)
def avg_pool2d_backward(grad_output, self, kernel_size, stride, padding, ceil_mode,
                        count_include_pad, divisor_override):
    op = "avg_pool2d_backward"
    shape_rule("pooling.avg_pool2d_backward")(op, (grad_output, self, kernel_size, stride, padding,
                                                   ceil_mode, count_include_pad, divisor_override))
    params = pool_params(op, kernel_size, stride, padding, (1, 1))
    steps = tuple(triton.cdiv(k, s) for k, s in zip(params[0], params[1]))
    return _avg_backward(op, grad_output, self, params, steps, False, count_include_pad,
                         divisor_override)


@kernel(layout=NCHW)
def adaptive_avg_pool2d_backward(grad_output, self):
    op = "adaptive_avg_pool2d_backward"
    shape_rule("pooling.adaptive_avg_pool2d_backward")(op, (grad_output, self))
    out_sizes = grad_output._impl.sizes
    # Input pixel h lies in the windows of outputs [floor(h * out / n), ceil((h + 1) * out / n)):
    # the same ranges as the forward's with the roles of n and out swapped.
    steps = tuple(_adaptive_extent(o, n) if o else 0
                  for n, o in zip(self._impl.sizes[-2:], out_sizes[-2:]))
    return _avg_backward(op, grad_output, self, _adaptive_params(self, out_sizes), steps,
                         True)


def _max_backward(op, grad_output, self, indices, nhwc=False):
    device, _ = operands(op, grad_output=grad_output, self=self, indices=indices)
    (_, C, H, W), _ = nchw(self)
    (_, _, OH, OW), g_strides = nchw(grad_output)
    _, i_strides = nchw(indices)
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
        beyond = call_below_autograd("ge.Scalar", indices, H * W)
        if call_below_autograd("logical_or", below, beyond).any().item():
            raise DimError(f"{op}(): argument 'indices' holds a position outside the "
                           f"{H} x {W} input plane", op=op, arg="indices")
        launch(op, max_pool_backward_kernel, _grid(total), pointer(grad_output),
               pointer(indices), pointer(acc), total, C, OH, OW, H * W, *g_strides,
               *i_strides, NHWC=nhwc, BLOCK=BLOCK)
    if nhwc and acc._impl.dtype is not dtype:         # one rounding, keeping the layout
        result = _result(self._impl.sizes, dtype, device, nhwc=True)
        return call_below_autograd("copy_", result, acc, False)
    return acc if nhwc else finish(acc, dtype)


@kernel(layout=NCHW)
def max_pool2d_with_indices_backward(grad_output, self, kernel_size, stride, padding,
                                     dilation, ceil_mode, indices):
    op = "max_pool2d_with_indices_backward"
    shape_rule("pooling.max_pool2d_with_indices_backward")(
        op, (grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices))
    return _max_backward(op, grad_output, self, indices)


@kernel(layout=NCHW)
def adaptive_max_pool2d_backward(grad_output, self, indices):
    op = "adaptive_max_pool2d_backward"
    shape_rule("pooling.adaptive_max_pool2d_backward")(op, (grad_output, self, indices))
    return _max_backward(op, grad_output, self, indices)


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
    op = "max_pool2d_with_indices_backward"
    shape_rule("pooling.max_pool2d_with_indices_backward")(
        op, (grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices))
    return _max_backward(op, grad_output, self, indices, nhwc=True)


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
    op = "avg_pool2d_backward"
    shape_rule("pooling.avg_pool2d_backward")(op, (grad_output, self, kernel_size, stride, padding,
                                                   ceil_mode, count_include_pad, divisor_override))
    params = pool_params(op, kernel_size, stride, padding, (1, 1))
    steps = tuple(triton.cdiv(k, s) for k, s in zip(params[0], params[1]))
    return _avg_backward(op, grad_output, self, params, steps, False, count_include_pad,
                         divisor_override, nhwc=True)


def adaptive_avg_pool2d_nhwc(self, output_size):
    op = "adaptive_avg_pool2d"
    spec = shape_rule("pooling.adaptive_avg_pool2d")(op, (self, output_size))
    return _forward(op, self, spec.sizes, "avg", _adaptive_params(self, spec.sizes),
                    adaptive=True, nhwc=True)[0]


def adaptive_avg_pool2d_backward_nhwc(grad_output, self):
    op = "adaptive_avg_pool2d_backward"
    shape_rule("pooling.adaptive_avg_pool2d_backward")(op, (grad_output, self))
    out_sizes = grad_output._impl.sizes
    steps = tuple(_adaptive_extent(o, n) if o else 0
                  for n, o in zip(self._impl.sizes[-2:], out_sizes[-2:]))
    return _avg_backward(op, grad_output, self, _adaptive_params(self, out_sizes), steps,
                         True, nhwc=True)


# A channels_last call is a 4-D one: no shape rule needed.
nhwc = Library("CUDA", "triton_kernels.pooling (NHWC)")
for _name, _fn in (("max_pool2d_with_indices", max_pool2d_with_indices_nhwc),
                   ("max_pool2d_with_indices_backward", max_pool2d_with_indices_backward_nhwc),
                   ("avg_pool2d", avg_pool2d_nhwc),
                   ("avg_pool2d_backward", avg_pool2d_backward_nhwc),
                   ("adaptive_avg_pool2d", adaptive_avg_pool2d_nhwc),
                   ("adaptive_avg_pool2d_backward", adaptive_avg_pool2d_backward_nhwc)):
    nhwc.impl(_name, _fn, priority=10, layout="channels_last")


def compile_cases(quick):
    """(label, kernel, argument types, constexprs, options) for compile_check."""
    for pool, adaptive, ptr, acc in (("max", False, "*fp16", tl.float32),
                                     ("max", True, "*i32", tl.int32),
                                     ("avg", False, "*bf16", tl.float32),
                                     ("avg", True, "*fp64", tl.float64)):
        yield (f"pool {pool} adaptive={adaptive} {ptr[1:]}", pool_kernel,
               {"x_ptr": ptr, "out_ptr": ptr, "idx_ptr": "*i64"},
               dict(POOL=pool, ADAPTIVE=adaptive, COUNT_PAD=False, OVERRIDE=not adaptive,
                    ACC=acc, NHWC=not adaptive, BLOCK=256), {})
        if quick:
            break
    for adaptive in (False, True):
        yield (f"avg pool backward adaptive={adaptive}", avg_pool_backward_kernel,
               {"grad_ptr": "*fp16", "out_ptr": "*fp16"},
               dict(ADAPTIVE=adaptive, COUNT_PAD=True, OVERRIDE=False, ACC=tl.float32,
                    NHWC=adaptive, BLOCK=256), {})
    for grad, acc in (("*fp16", "*fp32"), ("*fp64", "*fp64")):
        yield (f"max pool backward {grad[1:]}", max_pool_backward_kernel,
               {"grad_ptr": grad, "idx_ptr": "*i64", "acc_ptr": acc},
               dict(NHWC=grad == "*fp16", BLOCK=256), {})
