"""The discrete Fourier transform on the `cuda` device: a radix-2 Stockham FFT in Triton for
power-of-two lengths, LAPACK-style host fallbacks (pocketfft on a host copy) for the rest.

Triton has no complex type, so a complex tensor is read through its float view
(`view_as_real`: the last dim holds (re, im)), and a transform along one dim runs on a
contiguous float tensor of shape (rows, n, 2): the dim moved last, every other dim folded
into `rows`.

The Stockham autosort FFT (Van Loan, "Computational Frameworks for the FFT", 1.7) does the
log2(n) butterfly stages of the Cooley-Tukey FFT, but each stage reads one buffer and
writes the other, in an order that leaves the result in natural order: no bit-reversal
permutation. Stage j (s = 2**j, the length of the sub-transforms still to combine is
m = n / s) pairs element t with element t + n/2, for t in [0, n/2):

    p, q = t // s, t % s                 w = exp(-2 pi i p / m) = twiddle[p * s]
    y[q + 2 s p]     = x[t] + x[t + n/2]
    y[q + 2 s p + s] = (x[t] - x[t + n/2]) * w

One launch per stage: every butterfly of a stage can run at once (one program takes BLOCK
butterflies of one row), and the launch boundary is the barrier between stages. The
twiddles exp(-2 pi i k / n), k < n/2, are computed once on the host in float64 (sin and
cos of large angles in float32 would lose digits) and read as a table; the inverse
transform reads their conjugates. The normalization (1, 1/n or 1/sqrt(n)) is applied by
the last stage.

Which ops run here: _fft_c2c when every transformed dim has a power-of-two length;
_fft_r2c and _fft_c2r then too, through c2c (a real signal is a complex one with zero
imaginary parts; the half spectrum of c2r is first completed by its Hermitian symmetry).
Any other length takes the `_on_host` kernels at the end (ShapeRule POWER_OF_TWO decides),
which log themselves each call.
"""
from __future__ import annotations

import logging
import math

import numpy as np
import triton
import triton.language as tl

from tensorplay import _dtype as dt
from tensorplay._device_transfer import from_host
from triton_kernels._launch import INTERPRETED, launch, new_tensor, pointer
from triton_kernels.pointwise import run

log = logging.getLogger("tensorplay.dispatch")

# Butterflies per program: the interpreter pays per program, a GPU wants many programs.
BLOCK = 4096 if INTERPRETED else 512


@triton.jit
def stockham_stage_kernel(
    x_ptr,  # the stage's input, (rows, n, 2) contiguous floats
    y_ptr,  # the stage's output, same shape
    tw_ptr,  # twiddles exp(-/+ 2 pi i k / n), k < n/2, as (n/2, 2) floats
    half,  # n / 2
    s,  # 2**stage: the stride between the halves a butterfly writes
    scale_ptr,  # the normalization (one element of the data's dtype: a Python float
    #            argument would arrive as float32), applied by the last stage only
    LAST: tl.constexpr,
    BLOCK: tl.constexpr,
):
    # Memory traffic per stage: each element read once and written once.
    row = tl.program_id(1).to(tl.int64)
    t = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = t < half
    base = row * half * 4                 # row * n complex numbers * 2 floats
    p = t // s
    q = t - p * s
    a_re = tl.load(x_ptr + base + 2 * t, mask=mask)
    a_im = tl.load(x_ptr + base + 2 * t + 1, mask=mask)
    b_re = tl.load(x_ptr + base + 2 * (t + half), mask=mask)
    b_im = tl.load(x_ptr + base + 2 * (t + half) + 1, mask=mask)
    w_re = tl.load(tw_ptr + 2 * (p * s), mask=mask)
    w_im = tl.load(tw_ptr + 2 * (p * s) + 1, mask=mask)
    s_re = a_re + b_re
    s_im = a_im + b_im
    d_re = a_re - b_re
    d_im = a_im - b_im
    t_re = d_re * w_re - d_im * w_im
    t_im = d_re * w_im + d_im * w_re
    if LAST:
        scale = tl.load(scale_ptr)
        s_re, s_im, t_re, t_im = s_re * scale, s_im * scale, t_re * scale, t_im * scale
    out0 = base + 2 * (q + 2 * s * p)     # y[q + 2 s p]
    out1 = out0 + 2 * s                   # y[q + 2 s p + s]
    tl.store(y_ptr + out0, s_re, mask=mask)
    tl.store(y_ptr + out0 + 1, s_im, mask=mask)
    tl.store(y_ptr + out1, t_re, mask=mask)
    tl.store(y_ptr + out1 + 1, t_im, mask=mask)


def is_power_of_two(n):
    return n >= 1 and n & (n - 1) == 0


_twiddle_tables = {}


def twiddles(n, forward, dtype, device):
    """exp(-2 pi i k / n) for k < n/2 (the conjugates for the inverse transform), as a
    (n/2, 2) float tensor on `device`; kept, since a model transforms the same lengths
    over and over."""
    key = (n, forward, dtype, device)
    table = _twiddle_tables.get(key)
    if table is None:
        sign = -1.0 if forward else 1.0
        angle = sign * 2.0 * np.pi * np.arange(n // 2) / n
        pairs = np.stack([np.cos(angle), np.sin(angle)], axis=-1)
        table = from_host(pairs.astype(dtype.np), dtype, device)
        if len(_twiddle_tables) > 64:
            _twiddle_tables.clear()
        _twiddle_tables[key] = table
    return table


def stockham(pairs, forward, scale):
    """The DFT along dim 1 of `pairs`, a contiguous float32/float64 tensor (rows, n, 2) with
    n a power of two, times `scale`: forward exp(-2 pi i jk/n), else exp(+2 pi i jk/n).
    Returns a new tensor of the same shape."""
    impl = pairs._impl
    rows, n, _ = impl.sizes
    dtype, device = impl.dtype, impl.device
    if n == 1 or rows == 0:      # no stage: the transform of one point is the point
        result = new_tensor(impl.sizes, dtype, device)
        run("copy", result, (pairs * scale if scale != 1.0 else pairs,), dtype)
        return result
    table = twiddles(n, forward, dtype, device)
    factor = from_host(np.array([scale]), dtype, device)
    stages = int(math.log2(n))
    half = n // 2
    block = min(BLOCK, triton.next_power_of_2(half))
    grid = (triton.cdiv(half, block), rows)
    x = pairs
    buffers = [new_tensor(impl.sizes, dtype, device), new_tensor(impl.sizes, dtype, device)]
    for stage in range(stages):
        y = buffers[stage % 2]
        last = stage == stages - 1
        launch("fft_stockham_stage", stockham_stage_kernel, grid, pointer(x), pointer(y),
               pointer(table), half, 1 << stage, pointer(factor), LAST=last, BLOCK=block)
        x = y
    return x
