"""The window functions of signal processing, as PyTorch's factories make them:
`tp.hann_window(8)`, `hamming_window`, `bartlett_window`, `blackman_window`,
`kaiser_window` (aten/src/ATen/native/TensorFactories.cpp).

`layout` and `pin_memory` are accepted as PyTorch's are (strided, no pinned memory here).
A *periodic* window (the default: the one spectral analysis wants) is the symmetric
window one sample longer, with that last sample dropped. The values are computed in
float64 and converted to the dtype asked for, which must be a floating one.
"""
from __future__ import annotations

import numpy as np
from scipy import special

from tensorplay import _dtype as dt
from tensorplay import _tensor_factory as factory
from tensorplay.errors import ArgumentError, DTypeError

__all__ = ["hann_window", "hamming_window", "bartlett_window", "blackman_window",
           "kaiser_window"]


def _window(op, window_length, periodic, dtype, device, requires_grad, values):
    """The window of `values(n)` (the symmetric window of n samples) as a tensor."""
    dtype = dt.get_default_dtype() if dtype is None else dtype
    if not dtype.is_floating_point:
        raise DTypeError(f"{op}(): expects floating point dtypes, got: {dtype}", op=op,
                         arg="dtype")
    if type(window_length) is not int or window_length < 0:
        raise ArgumentError(f"{op}(): argument 'window_length' must be a non-negative int, "
                            f"but got {window_length!r}", op=op, arg="window_length")
    if window_length <= 1:
        data = np.ones(window_length)
    else:
        n = window_length + 1 if periodic else window_length
        data = values(n)[:window_length]
    return factory.tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)


def _cosine_sum(n, *coefficients):
    """sum_k (-1)^k a_k cos(2 pi k i / (n - 1)), i = 0 .. n-1 (Hann, Hamming, Blackman)."""
    phase = np.arange(n) * (2 * np.pi / (n - 1))
    return sum((-1) ** k * a * np.cos(k * phase) for k, a in enumerate(coefficients))


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                requires_grad=False, pin_memory=False):
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n: _cosine_sum(n, 0.5, 0.5))


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None,
                   layout=None, device=None, requires_grad=False, pin_memory=False):
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n: _cosine_sum(n, alpha, beta))


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    requires_grad=False, pin_memory=False):
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n: _cosine_sum(n, 0.42, 0.5, 0.08))


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    requires_grad=False, pin_memory=False):
    def triangle(n):
        return 1 - np.abs(np.arange(n) * (2 / (n - 1)) - 1)
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad,
                   triangle)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None,
                  device=None, requires_grad=False, pin_memory=False):
    def kaiser(n):
        half = (n - 1) / 2
        return special.i0(beta * np.sqrt(np.clip(1 - ((np.arange(n) - half) / half) ** 2,
                                                 0, None))) / special.i0(beta)
    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad,
                   kaiser)
