"""The discrete Fourier transform on the CPU: the three transforms every tp.fft function
is built from (PyTorch's ATen ops; tensorplay/composite/fft.py composes them), computed by
SciPy's pocketfft on the tensors' arrays (tensorplay/kernel_support/pocketfft.py: float32
stays complex64, as in PyTorch). Each checks its arguments with its shape rule first."""
from __future__ import annotations

from tensorplay.kernel_support.ops import shape_rule
from tensorplay.kernel_support.pocketfft import c2c_array, c2r_array, r2c_array, \
    wrap_fft_dims
from cpu_kernels._common import out


def fft_r2c(self, dim, normalization, onesided):
    spec = shape_rule("fft.r2c")("_fft_r2c", (self, dim, normalization, onesided))
    a = self._impl.array()
    dims = wrap_fft_dims("_fft_r2c", dim, a.ndim)
    return out(r2c_array(a, dims, normalization, onesided), spec.dtype)


def fft_c2r(self, dim, normalization, last_dim_size):
    spec = shape_rule("fft.c2r")("_fft_c2r", (self, dim, normalization, last_dim_size))
    a = self._impl.array()
    dims = wrap_fft_dims("_fft_c2r", dim, a.ndim)
    return out(c2r_array(a, dims, normalization, last_dim_size), spec.dtype)


def fft_c2c(self, dim, normalization, forward):
    spec = shape_rule("fft.c2c")("_fft_c2c", (self, dim, normalization, forward))
    a = self._impl.array()
    dims = wrap_fft_dims("_fft_c2c", dim, a.ndim)
    return out(c2c_array(a, dims, normalization, forward), spec.dtype)
