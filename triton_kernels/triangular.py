"""The triangular factorizations and solves on `cuda`: no Triton kernel yet, so each
`_on_host` kernel copies its tensors to the host, runs the CPU's SciPy LAPACK routines
(tensorplay/kernel_support/lapack_triangular.py) and copies the results back, laid out
as the shape rule says. explain() shows the kernel; the `tensorplay.dispatch` logger says
it each call (triton_kernels/linalg.py's `_on_host`).
"""
from __future__ import annotations

import numpy as np

from tensorplay import _dtype as dt
from tensorplay._device_transfer import from_host
from tensorplay.kernel_support import lapack_triangular as lt
from tensorplay.kernel_support.lapack import check_info, solve_is_vector
from tensorplay.kernel_support.ops import shape_rule
from triton_kernels.linalg import _on_device, _on_host


def _int32(array, device):
    return from_host(np.array(array, dtype=np.int32, order="C"), dt.int32, device)


def linalg_lu_factor_ex_on_host(A, pivot, check_errors):
    op = "linalg_lu_factor_ex"
    specs = shape_rule("triangular.lu_factor")(op, (A, pivot, check_errors))
    # (PyTorch's CUDA backend can factor without pivoting; this fallback runs the CPU's
    # LAPACK, which cannot.)
    lt.check_pivot(op, pivot)
    a, = _on_host(op, A)
    lu, pivots, info = lt.lu_factor_ex(a)
    if check_errors:
        check_info(op, info, lt.LU_FAILED)
    device = A._impl.device
    return _on_device(lu, specs[0], device), _int32(pivots, device), _int32(info, device)


def lu_unpack_on_host(LU_data, LU_pivots, unpack_data, unpack_pivots):
    specs = shape_rule("triangular.lu_unpack")("lu_unpack", (LU_data, LU_pivots, unpack_data,
                                                            unpack_pivots))
    lu, pivots = _on_host("lu_unpack", LU_data, LU_pivots)
    lt.check_pivot_range("lu_unpack", pivots, LU_data._impl.sizes[-2])
    arrays = lt.lu_unpack(lu, pivots, unpack_data, unpack_pivots)
    return tuple(_on_device(np.ascontiguousarray(a), s, LU_data._impl.device)
                 for a, s in zip(arrays, specs))


def linalg_lu_solve_on_host(LU, pivots, B, left, adjoint):
    op = "linalg_lu_solve"
    spec = shape_rule("triangular.lu_solve")(op, (LU, pivots, B, left, adjoint))
    lu, piv, b = _on_host(op, LU, pivots, B)
    x = lt.lu_solve(lu, piv, b, left, adjoint)
    return _on_device(np.ascontiguousarray(x), spec, LU._impl.device)


def linalg_solve_ex_on_host(A, B, left, check_errors):
    op = "linalg_solve_ex"
    spec, _ = shape_rule("triangular.solve_ex")(op, (A, B, left, check_errors))
    a, b = _on_host(op, A, B)
    x, info = lt.solve_ex(a, b, left, solve_is_vector(A._impl.sizes, B._impl.sizes))
    if check_errors:
        check_info(op, info, lt.SOLVE_FAILED)
    device = A._impl.device
    return _on_device(np.ascontiguousarray(x.reshape(spec.sizes)), spec, device), \
        _int32(info, device)


def linalg_solve_triangular_on_host(self, B, upper, left, unitriangular):
    op = "linalg_solve_triangular"
    spec = shape_rule("triangular.solve_triangular")(op, (self, B, upper, left, unitriangular))
    a, b = _on_host(op, self, B)
    x = lt.solve_triangular(a, b, upper, left, unitriangular)
    return _on_device(x, spec, self._impl.device)


def triangular_solve_on_host(self, A, upper, transpose, unitriangular):
    op = "triangular_solve"
    specs = shape_rule("triangular.triangular_solve")(op, (self, A, upper, transpose,
                                                           unitriangular))
    b, a = _on_host(op, self, A)
    x = lt.solve_triangular(a, b, upper, True, unitriangular, transpose)
    coefficient = np.ascontiguousarray(np.broadcast_to(a, specs[1].sizes))
    device = A._impl.device
    return _on_device(x, specs[0], device), _on_device(coefficient, specs[1], device)


def cholesky_solve_on_host(self, input2, upper):
    op = "cholesky_solve"
    spec = shape_rule("triangular.cholesky_solve")(op, (self, input2, upper))
    b, factor = _on_host(op, self, input2)
    return _on_device(lt.cholesky_solve(b, factor, upper), spec, self._impl.device)


def cholesky_inverse_on_host(self, upper):
    op = "cholesky_inverse"
    spec = shape_rule("triangular.cholesky_inverse")(op, (self, upper))
    factor, = _on_host(op, self)
    inverse, info = lt.cholesky_inverse(factor, upper)
    check_info(op, info, lt.CHOLESKY_INVERSE_FAILED)
    return _on_device(inverse, spec, self._impl.device)


def linalg_ldl_factor_ex_on_host(self, hermitian, check_errors):
    op = "linalg_ldl_factor_ex"
    specs = shape_rule("triangular.ldl_factor")(op, (self, hermitian, check_errors))
    a, = _on_host(op, self)
    ld, pivots, info = lt.ldl_factor_ex(a)
    if check_errors:
        check_info(op, info, lt.LDL_FAILED)
    device = self._impl.device
    return _on_device(np.ascontiguousarray(ld), specs[0], device), _int32(pivots, device), \
        _int32(info, device)


def linalg_ldl_solve_on_host(LD, pivots, B, hermitian):
    op = "linalg_ldl_solve"
    spec = shape_rule("triangular.ldl_solve")(op, (LD, pivots, B, hermitian))
    ld, piv, b = _on_host(op, LD, pivots, B)
    return _on_device(lt.ldl_solve(ld, piv, b), spec, LD._impl.device)
