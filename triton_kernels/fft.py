"""The discrete Fourier transform on the `cuda` device: a radix-2 Stockham FFT in Triton for
power-of-two lengths, host fallbacks (pocketfft on a host copy) for the rest.

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

The kernels say `takes_complex=True`: they compute complex tensors (through their float
views), so the kernel registry hands them complex calls instead of running the CPU kernel
on host copies (dispatch/kernel_selection.py's complex-on-host fallback).

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

from tensorplay._device_transfer import from_host, to_host
from tensorplay.kernel_support.ops import call_below_autograd, shape_rule
from tensorplay.kernel_support.pocketfft import BY_N, BY_ROOT_N, c2c_array, c2r_array, \
    r2c_array, wrap_fft_dims
from tensorplay.library import Library, ShapeRule, kernel
from triton_kernels._complex import pairs as float_pairs
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


# ---- the transforms of ops.yaml, on the complex tensors' float views ----------------------
def _transform_pairs(pairs, dims, normalization, forward):
    """The DFT of the complex tensor whose real view is `pairs` (..., 2), along each of
    `dims` in turn (a multi-dimensional DFT is the one-dimensional ones, one dim at a
    time): each dim moved last and copied to (rows, n, 2), transformed, moved back. The
    factor 1/n (or 1/sqrt(n)) of a dim is applied by its own last stage, so the product
    of the dims' factors is the transform's."""
    last = pairs.dim() - 1
    for d in dims:
        n = pairs.shape[d]
        order = [i for i in range(last) if i != d] + [d, last]
        moved = pairs.permute(order).contiguous()
        rows = moved.numel() // (2 * n) if n else 0
        if normalization == BY_N:
            scale = 1.0 / n
        elif normalization == BY_ROOT_N:
            scale = 1.0 / math.sqrt(n)
        else:
            scale = 1.0
        done = stockham(moved.view([rows, n, 2]), forward, scale).view(list(moved.shape))
        pairs = done.permute([order.index(i) for i in range(last + 1)])
    return pairs


def _complex_result(pairs, dtype):
    """A new complex tensor of `dtype` holding the (..., 2) float pairs."""
    sizes = tuple(pairs.shape[:-1])
    result = new_tensor(sizes, dtype, pairs._impl.device)
    _copy_into(float_pairs(result), pairs)
    return result


def _copy_into(dst, src):
    call_below_autograd("copy_", dst, src, False)


def _lengths_are_powers_of_two(self, dim, last_dim_size=None):
    ndim = len(self._impl.sizes)
    if ndim == 0 or any(not -ndim <= d < ndim for d in dim):
        return False        # a bad dim: the host fallback raises the shape rule's error
    lengths = [self._impl.sizes[d] for d in dim]
    if last_dim_size is not None and lengths:
        lengths[-1] = last_dim_size
    return all(is_power_of_two(n) for n in lengths)


POWER_OF_TWO = ShapeRule("every transformed length a power of two (radix-2 Stockham)",
                         lambda self, dim, *rest: _lengths_are_powers_of_two(self, dim))
POWER_OF_TWO_SIGNAL = ShapeRule(
    "every transformed length of the real signal a power of two (radix-2 Stockham)",
    lambda self, dim, normalization, last_dim_size:
        _lengths_are_powers_of_two(self, dim, last_dim_size))


@kernel(shape=POWER_OF_TWO, takes_complex=True)
def fft_c2c(self, dim, normalization, forward):
    shape_rule("fft.c2c")("_fft_c2c", (self, dim, normalization, forward))
    dims = wrap_fft_dims("_fft_c2c", dim, len(self._impl.sizes))
    pairs = _transform_pairs(float_pairs(self), dims, normalization, forward)
    return _complex_result(pairs, self._impl.dtype)


@kernel(shape=POWER_OF_TWO, takes_complex=True)
def fft_r2c(self, dim, normalization, onesided):
    """A real signal is a complex one with zero imaginary parts: (x, 0) pairs transformed
    by c2c (twice the work of a real-input FFT, which packs two real values into one
    complex one; this one is the plain definition), then only the first n // 2 + 1
    values kept along the last dim when onesided."""
    shape_rule("fft.r2c")("_fft_r2c", (self, dim, normalization, onesided))
    dims = wrap_fft_dims("_fft_r2c", dim, len(self._impl.sizes))
    impl = self._impl
    pairs = new_tensor(impl.sizes + (2,), impl.dtype, impl.device)
    pairs.zero_()
    _copy_into(pairs.select(-1, 0), self)
    spectrum = _transform_pairs(pairs, dims, normalization, True)
    if onesided:
        last = dims[-1]
        spectrum = spectrum.narrow(last, 0, impl.sizes[last] // 2 + 1)
    return _complex_result(spectrum, impl.dtype.to_complex())


@kernel(shape=POWER_OF_TWO_SIGNAL, takes_complex=True)
def fft_c2r(self, dim, normalization, last_dim_size):
    """The inverse c2c over every dim but the last; then along the last, the half
    spectrum completed by Hermitian symmetry, X[n - k] = conj(X[k]) for the missing
    k = n // 2 + 1 .. n - 1, transformed back, and the real parts kept (the imaginary
    parts of X[0] and X[n/2], which a real signal's spectrum cannot have, end up in the
    imaginary parts of the result and are dropped, as pocketfft drops them)."""
    shape_rule("fft.c2r")("_fft_c2r", (self, dim, normalization, last_dim_size))
    dims = wrap_fft_dims("_fft_c2r", dim, len(self._impl.sizes))
    pairs = float_pairs(self)
    if len(dims) > 1:
        pairs = _transform_pairs(pairs, dims[:-1], normalization, False)
    last = dims[-1]
    n = last_dim_size
    half = n // 2 + 1
    sizes = list(pairs.shape)
    sizes[last] = n
    full = new_tensor(sizes, pairs.dtype, self._impl.device)
    _copy_into(full.narrow(last, 0, half), pairs)
    if n > half:
        mirrored = pairs.narrow(last, 1, n - half).flip([last])     # X[n-k], k >= half
        rest = full.narrow(last, half, n - half)
        _copy_into(rest.select(-1, 0), mirrored.select(-1, 0))
        _copy_into(rest.select(-1, 1), -mirrored.select(-1, 1))     # conjugated
    signal = _transform_pairs(full, [last], normalization, False)
    return signal.select(-1, 0).contiguous()


# ---- other lengths: pocketfft on a host copy -------------------------------------------------
def _on_host(op, t):
    """t's elements as a host array (its float view copied row-major first: the copy
    kernels know floats), with a log line: explain() names the kernel too."""
    log.info("%s on cuda: a transformed length is not a power of two, pocketfft on a host "
             "copy", op)
    impl = t._impl
    if impl.dtype.is_complex:
        pairs = to_host(float_pairs(t).contiguous())
        return pairs.view(impl.dtype.np)[..., 0]
    return to_host(t.contiguous())


def fft_c2c_on_host(self, dim, normalization, forward):
    spec = shape_rule("fft.c2c")("_fft_c2c", (self, dim, normalization, forward))
    a = _on_host("_fft_c2c", self)
    dims = wrap_fft_dims("_fft_c2c", dim, a.ndim)
    return from_host(c2c_array(a, dims, normalization, forward), spec.dtype,
                     self._impl.device)


def fft_r2c_on_host(self, dim, normalization, onesided):
    spec = shape_rule("fft.r2c")("_fft_r2c", (self, dim, normalization, onesided))
    a = _on_host("_fft_r2c", self)
    dims = wrap_fft_dims("_fft_r2c", dim, a.ndim)
    return from_host(r2c_array(a, dims, normalization, onesided), spec.dtype,
                     self._impl.device)


def fft_c2r_on_host(self, dim, normalization, last_dim_size):
    spec = shape_rule("fft.c2r")("_fft_c2r", (self, dim, normalization, last_dim_size))
    a = _on_host("_fft_c2r", self)
    dims = wrap_fft_dims("_fft_c2r", dim, a.ndim)
    return from_host(c2r_array(a, dims, normalization, last_dim_size), spec.dtype,
                     self._impl.device)


# The Stockham kernels are the ones ops.yaml names, for power-of-two lengths; any other
# length (and the errors of bad arguments) goes to these, registered below them.
host_fallback = Library("CUDA", "triton_kernels.fft (host fallback)")
host_fallback.impl("_fft_c2c", fft_c2c_on_host, priority=-10, takes_complex=True)
host_fallback.impl("_fft_r2c", fft_r2c_on_host, priority=-10, takes_complex=True)
host_fallback.impl("_fft_c2r", fft_c2r_on_host, priority=-10, takes_complex=True)
