"""The discrete Fourier transform on NumPy arrays: SciPy's pocketfft (scipy.fft), the
library PyTorch's CPU build runs too, and the dim and normalization arguments of the three
transforms as every backend reads them.

The CPU kernels of _fft_r2c, _fft_c2r and _fft_c2c (cpu_kernels/fft.py) call these on their
tensors' data; the `cuda` device runs the same functions on a host copy for the lengths
its Stockham kernel does not take (triton_kernels/fft.py, a logged fallback).

scipy.fft, not numpy.fft: NumPy computes every transform in double precision and returns
complex128, where PyTorch keeps float32 -> complex64; SciPy keeps single precision (and
is faster on it).

`normalization` says which factor the transform is multiplied by (PyTorch's
fft_norm_mode: 0 none, 1 by 1/sqrt(n), 2 by 1/n, n the product of the transformed
lengths of the signal). SciPy names the same three factors by the direction a NumPy user
would put them in: norm="backward" leaves the forward transform unscaled and divides the
inverse by n, "forward" the other way around, "ortho" divides both by sqrt(n).
"""
from __future__ import annotations

import scipy.fft

from tensorplay.errors import DimError

__all__ = ["NONE", "BY_ROOT_N", "BY_N", "wrap_fft_dim", "wrap_fft_dims", "r2c_array",
           "c2r_array", "c2c_array"]

NONE, BY_ROOT_N, BY_N = 0, 1, 2      # PyTorch's fft_norm_mode


def wrap_fft_dim(op, dim, ndim, arg="dim"):
    """A dim of an FFT: negative dims count from the end, and, unlike most ops, a 0-dim
    tensor has no dim at all (PyTorch's maybe_wrap_dim with wrap_scalar=false)."""
    if ndim == 0:
        raise DimError(f"{op}(): Dimension specified as {dim} but tensor has no dimensions "
                       f"(argument '{arg}')", op=op, arg=arg)
    if dim < -ndim or dim >= ndim:
        raise DimError(f"{op}(): Dimension out of range (expected to be in range of "
                       f"[{-ndim}, {ndim - 1}], but got {dim}) (argument '{arg}')", op=op,
                       arg=arg)
    return dim + ndim if dim < 0 else dim


def wrap_fft_dims(op, dims, ndim, arg="dim"):
    out = [wrap_fft_dim(op, d, ndim, arg) for d in dims]
    if len(set(out)) != len(out):
        raise DimError(f"{op}(): FFT dims must be unique, but got {arg}={list(dims)} "
                       f"(argument '{arg}')", op=op, arg=arg)
    return out


def scipy_norm(normalization, forward):
    """SciPy's name for the factor `normalization` on a transform in this direction."""
    if normalization == BY_ROOT_N:
        return "ortho"
    if normalization == BY_N:
        return "forward" if forward else "backward"
    return "backward" if forward else "forward"


def r2c_array(a, dims, normalization, onesided):
    """The forward transform of a real array over `dims`: only the first n // 2 + 1
    values along the last of them when onesided (the others are their conjugates)."""
    norm = scipy_norm(normalization, forward=True)
    if onesided:
        return scipy.fft.rfftn(a, axes=dims, norm=norm)
    return scipy.fft.fftn(a, axes=dims, norm=norm)


def c2r_array(a, dims, normalization, last_dim_size):
    """The inverse transform of a Hermitian half spectrum: a real signal, last_dim_size
    samples along the last of `dims` (the imaginary parts that a real signal's spectrum
    cannot have, at 0 and n/2, are ignored, as pocketfft does for PyTorch)."""
    sizes = [a.shape[d] for d in dims[:-1]] + [last_dim_size]
    return scipy.fft.irfftn(a, s=sizes, axes=dims, norm=scipy_norm(normalization, False))


def c2c_array(a, dims, normalization, forward):
    if not dims:        # nothing to transform: a copy (the empty product n = 1)
        return a.copy()
    norm = scipy_norm(normalization, forward)
    return (scipy.fft.fftn if forward else scipy.fft.ifftn)(a, axes=dims, norm=norm)
