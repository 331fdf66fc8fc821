"""Padding on the `cuda` device: constant (negative pads crop), reflect, replicate and
circular, and the backward of the last three.

Every mode is an index map per padded dim: padded position o reads input position
i = o - left, mapped into range by the mode (as cpu_kernels/padding.py):

    constant   i itself, or `value` where i is outside [0, size)
    reflect    |i| mirrored at both ends     (-1 -> 1,  size -> size - 2)
    replicate  clamp(i, 0, size - 1)
    circular   i mod size

One kernel walks the padded positions of a [B, P0, P1, P2, T] view (up to three padded
dims P between the unpadded leading dims B and trailing dims T). The forward is a
gather through the map; the backward is its adjoint, adding each gradient into the
position it was read from (tl.atomic_add: a border pixel is read several times), except
for circular padding, whose backward follows PyTorch's composition (_circular_backward).
constant_pad_nd may pad more than three dims: it pads three at a time, innermost first.
"""
from __future__ import annotations

import math

import numpy as np
import triton
import triton.language as tl

from tensorplay._device_transfer import from_host
from tensorplay._memory_format import contiguous_format
from tensorplay.kernel_support.ops import shape_rule
from triton_kernels._launch import INTERPRETED, launch, new_tensor, operands, pointer
from triton_kernels._spatial import accumulator, finish
from triton_kernels.copy import clone

BLOCK = 4096 if INTERPRETED else 512     # padded positions per program
MODE_IDS = {"constant": 0, "reflect": 1, "replicate": 2, "circular": 3}


@triton.jit
def _source(o, left, size, MODE: tl.constexpr):
    """(input position, inside) read by padded position o along one dim."""
    i = o - left
    if MODE == 1:       # reflect
        i = tl.abs(i)
        i = tl.where(i >= size, 2 * (size - 1) - i, i)
    elif MODE == 2:     # replicate
        i = tl.minimum(tl.maximum(i, 0), size - 1)
    elif MODE == 3:     # circular (% keeps the dividend's sign, hence the second %)
        i = ((i % size) + size) % size
    return i, (i >= 0) & (i < size)


@triton.jit
def pad_kernel(
    padded_ptr,  # the padded side: the result (forward) or grad_output (backward)
    plain_ptr,  # the unpadded side: the input (forward) or the accumulator (backward)
    value_ptr,  # MODE == constant: the fill value, one element of the padded dtype
    total, P0, P1, P2, T,  # padded positions; the padded side's dims (B is implied)
    I0, I1, I2,  # the plain side's padded dims
    L0, L1, L2,  # left pads (negative: crop)
    ob, o0, o1, o2, ot,  # the padded side's strides
    ib, i0s, i1s, i2s, it,  # the plain side's strides
    MODE: tl.constexpr,  # MODE_IDS
    BACKWARD: tl.constexpr,
    BLOCK: tl.constexpr,
):
    # Memory traffic: one read and one write (or atomic add) per padded position.
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    t = offs % T
    rest = offs // T
    p2 = rest % P2
    rest = rest // P2
    p1 = rest % P1
    rest = rest // P1
    p0 = rest % P0
    b = rest // P0
    j0, in0 = _source(p0, L0, I0, MODE)
    j1, in1 = _source(p1, L1, I1, MODE)
    j2, in2 = _source(p2, L2, I2, MODE)
    inside = mask & in0 & in1 & in2
    padded = padded_ptr + b * ob + p0 * o0 + p1 * o1 + p2 * o2 + t * ot
    plain = plain_ptr + b * ib + j0 * i0s + j1 * i1s + j2 * i2s + t * it
    if BACKWARD:
        g = tl.load(padded, mask=mask)
        tl.atomic_add(plain, g.to(plain_ptr.dtype.element_ty), mask=inside)
    else:
        x = tl.load(plain, mask=inside)
        if MODE == 0:
            x = tl.where(inside, x, tl.load(value_ptr))
        tl.store(padded, x, mask=mask)


def _view(t, first, count):
    """t reshaped to [B, P0, P1, P2, T], with the `count` <= 3 dims from `first` on as P
    (missing ones: size 1, stride 0): (tensor, sizes, strides). The reshape copies only
    when t's leading or trailing dims do not merge into one stride, which never happens
    for the sides the kernel writes (a new contiguous result or accumulator)."""
    sizes = list(t._impl.sizes)
    lead, tail = math.prod(sizes[:first]), math.prod(sizes[first + count:])
    v = t.reshape([lead] + sizes[first:first + count] + [tail])
    fill = 3 - count
    return (v, [lead] + [1] * fill + list(v._impl.sizes[1:]),
            [v._impl.strides[0]] + [0] * fill + list(v._impl.strides[1:]))


def _run(op, padded, plain, first, pads, mode, backward, value=None):
    """pad_kernel over `padded` for its dims first .. first + len(pads) / 2 - 1, whose pads
    are listed innermost first (F.pad's order)."""
    count = len(pads) // 2
    padded, p_sizes, p_strides = _view(padded, first, count)
    plain, i_sizes, i_strides = _view(plain, first, count)
    lefts = [0] * (3 - count) + [pads[2 * k] for k in reversed(range(count))]
    total = math.prod(p_sizes)
    if total:
        out = pointer(padded)
        launch(op, pad_kernel, (triton.cdiv(total, BLOCK),), out, pointer(plain),
               pointer(value) if value is not None else out, total, *p_sizes[1:],
               *i_sizes[1:4], *lefts, *p_strides, *i_strides, MODE=MODE_IDS[mode],
               BACKWARD=backward, BLOCK=BLOCK)


def constant_pad_nd(self, pad, value):
    shape_rule("padding.constant_pad_nd")("constant_pad_nd", (self, pad, value))
    device, _ = operands("constant_pad_nd", self=self)
    # The value travels as a one-element tensor of self's dtype: a Python float argument
    # would reach the kernel as float32 (wrong for float64 and large int64 values).
    fill = from_host(np.array(value).astype(self._impl.dtype.np), self._impl.dtype,
                     device)
    ndim, x = len(self._impl.sizes), self
    for k in range(0, max(len(pad), 2), 6):      # three dims a round, innermost first
        group = list(pad[k:k + 6])
        first = ndim - len(group) // 2 - k // 2
        sizes = list(x._impl.sizes)
        for i in range(len(group) // 2):
            sizes[ndim - 1 - k // 2 - i] += group[2 * i] + group[2 * i + 1]
        out = new_tensor(sizes, self._impl.dtype, device)
        _run("constant_pad_nd", out, x, first, group, "constant", False, fill)
        x = out
    return x


def _pad_nd(self, pad, mode):
    spec = shape_rule("padding.pad_nd")("_pad_nd", (self, pad, mode))
    device, _ = operands("_pad_nd", self=self)
    out = new_tensor(spec.sizes, self._impl.dtype, device)
    _run("_pad_nd", out, self, len(spec.sizes) - len(pad) // 2, pad, mode, False)
    return out


def _circular_backward(grad_output, pad):
    """PyTorch defines circular padding by composition: it copies the input into the
    middle of the result, then, innermost dim first, each border from the opposite end
    of the (already padded) result. Its backward undoes those copies in reverse order,
    adding each border's gradient into the middle, one rounding per add in the
    gradient's dtype. The same adds here (the pointwise kernel on narrowed views) give
    PyTorch's result to the bit, also for half types, where a sum rounded once differs
    from it by more than the tolerance when the terms cancel. (Pads >= 0 only: with a
    negative pad PyTorch's copies no longer follow the index map that _pad_nd uses.)"""
    g = clone(grad_output, contiguous_format)
    middle = g
    ndim = len(g._impl.sizes)
    for i in reversed(range(len(pad) // 2)):          # outermost padded dim first
        d, left, right = ndim - 1 - i, pad[2 * i], pad[2 * i + 1]
        size = g._impl.sizes[d]
        if right:
            g.narrow(d, left, right).add_(g.narrow(d, size - right, right))
        if left:
            g.narrow(d, size - right - left, left).add_(g.narrow(d, 0, left))
        middle = middle.narrow(d, left, size - left - right)
    return clone(middle, contiguous_format)


def _pad_nd_backward(grad_output, input_sizes, pad, mode):
    """grad_input[j] = the sum of grad_output over the padded positions that read j."""
    op = "_pad_nd_backward"
    spec = shape_rule("padding.pad_nd_backward")(op, (grad_output, input_sizes, pad, mode))
    device, _ = operands(op, grad_output=grad_output)
    if mode == "circular" and min(pad) >= 0:
        return _circular_backward(grad_output, pad)
    acc = accumulator(spec.sizes, grad_output._impl.dtype, device)
    _run(op, grad_output, acc, len(spec.sizes) - len(pad) // 2, pad, mode, True)
    return finish(acc, grad_output._impl.dtype)
