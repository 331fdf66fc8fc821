"""Shape/dtype rules of the SVD, the symmetric eigendecomposition and the determinant.

The vectors (U, Vh, eigenvectors) are laid out as LAPACK writes them and PyTorch returns
them: row-major batches of column-major matrices (kernel_support/layout.lapack_strides);
the values (S, eigenvalues) and det are plain row-major.
"""
from __future__ import annotations

from tensorplay.errors import ArgumentError, DTypeError, ShapeError, fmt_shape
from tensorplay.kernel_support.checks import OutSpec
from tensorplay.kernel_support.layout import lapack_strides
from tensorplay.meta.linalg import check_lapack_dtype, check_square


def check_matrix(op, A, name="A", *, empty_ok=False):
    """A stack of (any shape of) float32/float64 matrices: what gesdd takes."""
    sizes = A._impl.sizes
    if len(sizes) < 2:
        raise ShapeError(f"{op}(): the input tensor '{name}' must have at least 2 "
                         f"dimensions, but got shape {fmt_shape(sizes)}", op=op, arg=name)
    check_lapack_dtype(op, A, name, empty_ok=empty_ok)


def check_driver(op, driver):
    """PyTorch takes `driver=` only for cuSOLVER (CUDA); on the CPU any driver is an error.
    TensorPlay runs gesdd on every device, so it refuses a driver everywhere."""
    if driver is not None:
        raise ArgumentError(f"{op}(): keyword argument 'driver' is only supported on CUDA "
                            f"inputs with the cuSOLVER backend (TensorPlay runs LAPACK's "
                            f"gesdd on every device), but got driver={driver!r}", op=op,
                            arg="driver")


def check_uplo(op, UPLO):
    if UPLO not in ("L", "U", "l", "u"):
        raise ArgumentError(f"{op}(): expected 'UPLO' to be 'L' or 'U', but got {UPLO!r}",
                            op=op, arg="UPLO")


def svd(op, args):
    """(U, S, Vh): U [*, m, m or k], S [*, k], Vh [*, n or k, n] with k = min(m, n);
    U and Vh are empty ([0]) when compute_uv is False."""
    A, full_matrices, compute_uv, driver = args
    check_matrix(op, A)
    check_driver(op, driver)
    sizes = A._impl.sizes
    batch, (m, n) = sizes[:-2], sizes[-2:]
    k = min(m, n)
    dtype = A._impl.dtype
    S = OutSpec(batch + (k,), dtype)
    if not compute_uv:
        return OutSpec((0,), dtype), S, OutSpec((0,), dtype)
    u = batch + (m, m if full_matrices else k)
    vh = batch + (n if full_matrices else k, n)
    return OutSpec(u, dtype, lapack_strides(u)), S, OutSpec(vh, dtype, lapack_strides(vh))


def eigh(op, args):
    """(eigenvalues [*, n], eigenvectors [*, n, n]); the vectors are empty ([0]) when
    compute_v is False."""
    A, UPLO, compute_v = args
    check_square(op, A, empty_ok=True)     # (PyTorch: any empty A, in its own dtype)
    check_uplo(op, UPLO)
    sizes = A._impl.sizes
    dtype = A._impl.dtype
    values = OutSpec(sizes[:-1], dtype)
    if not compute_v:
        return values, OutSpec((0,), dtype)
    return values, OutSpec(sizes, dtype, lapack_strides(sizes))


def det(op, args):
    A = args[0]
    check_square(op, A)
    return OutSpec(A._impl.sizes[:-2], A._impl.dtype)
