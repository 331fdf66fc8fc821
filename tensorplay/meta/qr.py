"""Shape/dtype rules of QR and least squares: linalg_qr, geqrf, linalg_lstsq (and the
checks of the Householder products, which are Composite: tensorplay/composite/qr.py).

Factors are laid out as LAPACK writes them and PyTorch returns them: row-major batches
of column-major matrices (kernel_support/layout.lapack_strides).
"""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay.errors import ArgumentError, DTypeError, ShapeError, fmt_shape
from tensorplay.kernel_support.checks import OutSpec, broadcast, check_devices
from tensorplay.kernel_support.lapack_qr import DRIVERS, lstsq_is_vector
from tensorplay.kernel_support.layout import lapack_strides
from tensorplay.meta.linalg import same_dtype

QR_MODES = ("reduced", "complete", "r")


def _sizes(t):
    return t._impl.sizes


def check_matrices(op, name, t):
    """A stack of float32/float64 matrices (LAPACK's real types: no half types, no
    integers)."""
    sizes = _sizes(t)
    if len(sizes) < 2:
        raise ShapeError(f"{op}(): the input tensor '{name}' must have at least 2 "
                         f"dimensions, but got shape {fmt_shape(sizes)}", op=op, arg=name)
    check_lapack_dtype(op, name, t)


def check_lapack_dtype(op, name, t):
    dtype = t._impl.dtype
    if not dtype.is_floating_point:
        raise DTypeError(f"{op}(): expected a floating point tensor as input ('{name}'), but "
                         f"got {dtype.name}", op=op, arg=name)
    if dtype.itemsize < 4:
        raise DTypeError(f"{op}(): low precision dtypes are not supported ('{name}'), got "
                         f"{dtype.name}", op=op, arg=name)


def parse_qr_mode(op, mode):
    """(whether Q is computed, whether it is the reduced one), as PyTorch's
    _parse_qr_mode reads mode."""
    if mode not in QR_MODES:
        raise ArgumentError(f"{op}(): received unrecognized 'mode' {mode!r} but expected one "
                            f"of 'reduced' (default), 'r', or 'complete'", op=op, arg="mode")
    return mode != "r", mode != "complete"


def linalg_qr(op, args):
    """Q (m x k reduced, m x m complete, an empty (0,) for mode 'r') and R (k x n, or
    m x n complete), k = min(m, n)."""
    A, mode = args
    check_matrices(op, "A", A)
    compute_q, reduced = parse_qr_mode(op, mode)
    *batch, m, n = _sizes(A)
    k = min(m, n)
    q_cols, r_rows = (k, k) if reduced else (m, m)
    q = tuple(batch) + (m, q_cols)
    r = tuple(batch) + (r_rows, n)
    dtype = A._impl.dtype
    q_spec = OutSpec(q, dtype, lapack_strides(q)) if compute_q else OutSpec((0,), dtype)
    return q_spec, OutSpec(r, dtype, lapack_strides(r))


def geqrf(op, args):
    """The compact factorization (A's shape, LAPACK's layout) and tau (min(m, n) per
    matrix)."""
    self = args[0]
    check_matrices(op, "self", self)
    sizes = _sizes(self)
    dtype = self._impl.dtype
    return (OutSpec(sizes, dtype, lapack_strides(sizes)),
            OutSpec(sizes[:-2] + (min(sizes[-2:]),), dtype))


def linalg_lstsq(op, args):
    """(solution, residuals, rank, singular_values). Which are empty depends on the
    driver; residuals also on the ranks (data): for gelsd/gelss this rule assumes full
    rank, as the kernel finds it for any matrix that is not rank-deficient."""
    self, b, rcond, driver = args
    a_sizes, b_sizes = _sizes(self), _sizes(b)
    if len(a_sizes) < 2:
        raise ShapeError(f"{op}(): the input tensor 'self' must have at least 2 dimensions, "
                         f"but got shape {fmt_shape(a_sizes)}", op=op, arg="self")
    if not (0 <= len(a_sizes) - len(b_sizes) <= 1):
        raise ShapeError(f"{op}(): 'self'.dim() must be greater or equal to 'b'.dim() and "
                         f"('self'.dim() - 'b'.dim()) <= 1, but got shapes "
                         f"{fmt_shape(a_sizes)} and {fmt_shape(b_sizes)}", op=op, arg="b")
    vector = lstsq_is_vector(a_sizes, b_sizes)
    if len(a_sizes) == len(b_sizes) + 1 and not vector:
        # (PyTorch's own result here depends on how its kernel lines up the batches)
        raise ShapeError(f"{op}(): 'b' with one dimension less than 'self' must be a batch "
                         f"of vectors of shape 'self'.shape[:-1] = {fmt_shape(a_sizes[:-1])},"
                         f" but got shape {fmt_shape(b_sizes)}", op=op, arg="b")
    m, n = a_sizes[-2:]
    rows = b_sizes[-1] if vector else b_sizes[-2]
    if rows != m:
        raise ShapeError(f"{op}(): 'self'.size(-2) should match 'b'.size("
                         f"{-1 if vector else -2}), but got shapes {fmt_shape(a_sizes)} "
                         f"and {fmt_shape(b_sizes)}", op=op, arg="b")
    same_dtype(op, [("self", self), ("b", b)])
    check_lapack_dtype(op, "self", self)
    check_devices(op, [("self", self), ("b", b)])
    driver = lstsq_driver(op, driver)
    b_batch = b_sizes[:-1] if vector else b_sizes[:-2]
    batch = broadcast(op, [("self", a_sizes[:-2]), ("b", b_batch)])
    k = 1 if vector else b_sizes[-1]
    dtype = self._impl.dtype
    solution = batch + ((n,) if vector else (n, k))
    residuals = batch + (k,) if m > n and driver != "gelsy" else (0,)
    # rank and singular values depend on A alone: A's batch shape (PyTorch's)
    rank = a_sizes[:-2] if driver != "gels" else (0,)
    singular_values = a_sizes[:-2] + (min(m, n),) if driver in ("gelsd", "gelss") else (0,)
    # PyTorch's solution is the top n rows of the (max(m, n), k) column-major buffer that
    # LAPACK solved in place (b's rows, padded to n): its strides step over max(m, n) rows
    buffer = lapack_strides(batch + (max(m, n), k))
    strides = buffer[:-1] if vector else buffer
    return (OutSpec(solution, dtype, strides),
            OutSpec(residuals, dtype), OutSpec(rank, dt.int64),
            OutSpec(singular_values, dtype))


def lstsq_driver(op, driver):
    """The driver's name (default: 'gelsy', PyTorch's on the CPU)."""
    if driver is None:
        return "gelsy"
    if driver not in DRIVERS:
        raise ArgumentError(f"{op}(): parameter 'driver' should be one of (gels, gelsy, "
                            f"gelsd, gelss), but got {driver!r}", op=op, arg="driver")
    return driver
