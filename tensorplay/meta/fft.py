"""Shape/dtype rules of the three transforms the FFT functions are built from (PyTorch's
_fft_r2c, _fft_c2r and _fft_c2c), and the argument checks the public fft_* functions
share (tensorplay/composite/fft.py calls these before it composes the transforms).

    _fft_r2c(self, dim, normalization, onesided)      real -> complex; the last dim of
                                                        `dim` keeps n // 2 + 1 values when
                                                        onesided (the rest are conjugates)
    _fft_c2r(self, dim, normalization, last_dim_size)  complex half spectrum -> real
                                                        signal of last_dim_size samples
    _fft_c2c(self, dim, normalization, forward)       complex -> complex

`normalization` is PyTorch's fft_norm_mode: 0 none, 1 by 1/sqrt(n), 2 by 1/n, n the
product of the transformed lengths (the signal's, not the half spectrum's).
"""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay.errors import ArgumentError, DTypeError, ShapeError, fmt_shape
from tensorplay.kernel_support.checks import OutSpec
# the dim and normalization arguments, as the kernels read them too
from tensorplay.kernel_support.pocketfft import (  # noqa: F401
    BY_N, BY_ROOT_N, NONE, wrap_fft_dim, wrap_fft_dims,
)

def fft_dtype(op, dtype, require_complex, arg="input"):
    """PyTorch's promote_type_fft: integers and bool compute in the default float dtype,
    half types are refused, and a complex transform turns float32/float64 into
    complex64/complex128."""
    if dtype.is_complex:
        return dtype
    if not dtype.is_floating_point:
        dtype = dt.get_default_dtype()
    if dtype not in (dt.float32, dt.float64):
        raise DTypeError(f"{op}(): Unsupported dtype {dtype.name} (argument '{arg}'): the "
                         f"FFT takes float32, float64, complex64 and complex128", op=op,
                         arg=arg)
    return dtype.to_complex() if require_complex else dtype


def check_normalization(op, normalization):
    if normalization not in (NONE, BY_ROOT_N, BY_N):
        raise ArgumentError(f"{op}(): argument 'normalization' must be 0 (none), 1 (by "
                            f"1/sqrt(n)) or 2 (by 1/n), but got {normalization!r}", op=op,
                            arg="normalization")


def _check_input(op, self, complex_input):
    dtype = self._impl.dtype
    if complex_input and not dtype.is_complex:
        raise DTypeError(f"{op}(): expects a complex input tensor, but got {dtype.name} "
                         f"(argument 'self')", op=op, arg="self")
    if not complex_input and dtype not in (dt.float32, dt.float64):
        raise DTypeError(f"{op}(): expects a float32 or float64 input tensor, but got "
                         f"{dtype.name} (argument 'self')", op=op, arg="self")


def _dims(op, self, dim, allow_empty):
    if not dim and not allow_empty:
        raise ShapeError(f"{op}(): must transform at least one axis (argument 'dim' is "
                         f"empty)", op=op, arg="dim")
    return wrap_fft_dims(op, dim, len(self._impl.sizes))


def r2c(op, args):
    self, dim, normalization, onesided = args
    _check_input(op, self, complex_input=False)
    check_normalization(op, normalization)
    dims = _dims(op, self, dim, allow_empty=False)
    sizes = list(self._impl.sizes)
    if onesided:
        sizes[dims[-1]] = sizes[dims[-1]] // 2 + 1
    return OutSpec(tuple(sizes), self._impl.dtype.to_complex())


def c2r(op, args):
    self, dim, normalization, last_dim_size = args
    _check_input(op, self, complex_input=True)
    check_normalization(op, normalization)
    dims = _dims(op, self, dim, allow_empty=False)
    if last_dim_size < 1:
        raise ShapeError(f"{op}(): Invalid number of data points ({last_dim_size}) specified "
                         f"(argument 'last_dim_size')", op=op, arg="last_dim_size")
    sizes = list(self._impl.sizes)
    if sizes[dims[-1]] != last_dim_size // 2 + 1:
        raise ShapeError(f"{op}(): expected the input's size along dim {dims[-1]} to be "
                         f"last_dim_size // 2 + 1 = {last_dim_size // 2 + 1} (the half "
                         f"spectrum of {last_dim_size} points), but got shape "
                         f"{fmt_shape(sizes)} (argument 'self')", op=op, arg="self")
    sizes[dims[-1]] = last_dim_size
    return OutSpec(tuple(sizes), self._impl.dtype.to_real())


def c2c(op, args):
    self, dim, normalization, forward = args
    _check_input(op, self, complex_input=True)
    check_normalization(op, normalization)
    _dims(op, self, dim, allow_empty=True)
    return OutSpec(self._impl.sizes, self._impl.dtype)

