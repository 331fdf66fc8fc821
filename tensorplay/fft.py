"""`tp.fft`: PyTorch's discrete Fourier transform namespace (`torch.fft`).

The transforms are the `fft_*` ops of ops.yaml, named here as `torch.fft` names them (one a
line); each is composed (tensorplay/composite/fft.py, as PyTorch's SpectralOps.cpp) of
three ops with gradients of their own: _fft_r2c, _fft_c2r and _fft_c2c. The CPU runs
SciPy's pocketfft (cpu_kernels/fft.py); `cuda` a radix-2 Stockham FFT in Triton for
power-of-two lengths and pocketfft on a host copy for the others (triton_kernels/fft.py).

fftfreq and rfftfreq make tensors from nothing, as tp.arange does: they are creation
functions, written here, not ops.
"""
from tensorplay import _creation
from tensorplay import _dtype as dt
from tensorplay._generated.functional import (  # noqa: F401
    fft_fft as fft,
    fft_fft2 as fft2,
    fft_fftn as fftn,
    fft_fftshift as fftshift,
    fft_hfft as hfft,
    fft_hfft2 as hfft2,
    fft_hfftn as hfftn,
    fft_ifft as ifft,
    fft_ifft2 as ifft2,
    fft_ifftn as ifftn,
    fft_ifftshift as ifftshift,
    fft_ihfft as ihfft,
    fft_ihfft2 as ihfft2,
    fft_ihfftn as ihfftn,
    fft_irfft as irfft,
    fft_irfft2 as irfft2,
    fft_irfftn as irfftn,
    fft_rfft as rfft,
    fft_rfft2 as rfft2,
    fft_rfftn as rfftn,
)
from tensorplay.errors import ArgumentError, DTypeError

__all__ = [
    "fft", "fft2", "fftfreq", "fftn", "fftshift", "hfft", "hfft2", "hfftn", "ifft", "ifft2",
    "ifftn", "ifftshift", "ihfft", "ihfft2", "ihfftn", "irfft", "irfft2", "irfftn", "rfft",
    "rfft2", "rfftfreq", "rfftn",
]


def _frequencies(op, n, d, count, dtype, device, requires_grad, out):
    """k / (n * d) for the k of `count(n)`, in the dtype asked for (a floating or complex
    one; the default float dtype when none is)."""
    if type(n) is not int or n < 0:
        raise ArgumentError(f"{op}(): argument 'n' must be a non-negative int, but got "
                            f"{n!r}", op=op, arg="n")
    if dtype is None:
        dtype = out.dtype if out is not None else dt.get_default_dtype()
    if not (dtype.is_floating_point or dtype.is_complex):
        raise DTypeError(f"{op}(): requires a floating point or complex dtype, but got "
                         f"{dtype.name} (argument 'dtype')", op=op, arg="dtype")
    # as PyTorch: the integers k in the dtype, times the Python float 1 / (n * d)
    # (n * d = 0 gives inf, as in C++: rfftfreq(0) is [nan], 0 * inf)
    result = _creation.tensor(count(n), dtype=dtype, device=device)
    result = result * (1.0 / (n * d) if n * d else float("inf"))
    if out is not None:
        if tuple(out.shape) != tuple(result.shape):
            out.resize_(result.shape)
        return out.copy_(result)
    return result.requires_grad_(requires_grad)


def fftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False,
            pin_memory=False):
    """The sample frequencies of an n-point fft: [0, 1, ..., (n - 1) // 2, -(n // 2), ...,
    -1] / (n * d), the order fft's outputs come in."""
    def count(n):
        return list(range((n + 1) // 2)) + list(range(-(n // 2), 0))
    return _frequencies("fft_fftfreq", n, d, count, dtype, device, requires_grad, out)


def rfftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False,
             pin_memory=False):
    """The sample frequencies of an n-point rfft: [0, 1, ..., n // 2] / (n * d)."""
    def count(n):
        return list(range(n // 2 + 1))
    return _frequencies("fft_rfftfreq", n, d, count, dtype, device, requires_grad, out)
