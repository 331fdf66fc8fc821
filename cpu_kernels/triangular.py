"""Triangular factorizations and solves: LU (lu_factor_ex, lu_unpack, lu_solve), solve_ex,
the triangular solves, Cholesky's solve and inverse, LDL^T. Each checks its arguments
with its shape rule (tensorplay/meta/triangular.py), runs SciPy's LAPACK on the data
(tensorplay/kernel_support/lapack_triangular.py) and lays the result out as the rule says.
"""
from __future__ import annotations

import numpy as np

from tensorplay import _dtype as dt
from tensorplay.kernel_support import lapack_triangular as lt
from tensorplay.kernel_support.lapack import check_info, solve_is_vector
from tensorplay.kernel_support.ops import shape_rule
from cpu_kernels._common import out, out_strided


def _result(array, spec):
    return out(array, spec.dtype) if spec.strides is None else \
        out_strided(array, spec.dtype, spec.strides)


def linalg_lu_factor_ex(A, pivot, check_errors):
    specs = shape_rule("triangular.lu_factor")("linalg_lu_factor_ex", (A, pivot, check_errors))
    lt.check_pivot("linalg_lu_factor_ex", pivot)
    lu, pivots, info = lt.lu_factor_ex(A._impl.array())
    if check_errors:
        check_info("linalg_lu_factor_ex", info, lt.LU_FAILED)
    return _result(lu, specs[0]), out(pivots, dt.int32), out(info, dt.int32)


def lu_unpack(LU_data, LU_pivots, unpack_data, unpack_pivots):
    specs = shape_rule("triangular.lu_unpack")("lu_unpack", (LU_data, LU_pivots, unpack_data,
                                                            unpack_pivots))
    pivots = LU_pivots._impl.array()
    arrays = lt.lu_unpack(LU_data._impl.array(), pivots, unpack_data, unpack_pivots)
    return tuple(_result(a, s) for a, s in zip(arrays, specs))


def linalg_lu_solve(LU, pivots, B, left, adjoint):
    spec = shape_rule("triangular.lu_solve")("linalg_lu_solve", (LU, pivots, B, left, adjoint))
    x = lt.lu_solve(LU._impl.array(), pivots._impl.array(), B._impl.array(), left, adjoint)
    return _result(x, spec)


def linalg_solve_ex(A, B, left, check_errors):
    spec, _ = shape_rule("triangular.solve_ex")("linalg_solve_ex", (A, B, left, check_errors))
    vector = solve_is_vector(A._impl.sizes, B._impl.sizes)
    x, info = lt.solve_ex(A._impl.array(), B._impl.array(), left, vector)
    if check_errors:
        check_info("linalg_solve_ex", info, lt.SOLVE_FAILED)
    return _result(x.reshape(spec.sizes), spec), out(info, dt.int32)


def linalg_solve_triangular(self, B, upper, left, unitriangular):
    spec = shape_rule("triangular.solve_triangular")("linalg_solve_triangular",
                                                      (self, B, upper, left, unitriangular))
    x = lt.solve_triangular(self._impl.array(), B._impl.array(), upper, left, unitriangular)
    return _result(x, spec)


def triangular_solve(self, A, upper, transpose, unitriangular):
    specs = shape_rule("triangular.triangular_solve")("triangular_solve", (self, A, upper,
                                                                          transpose,
                                                                          unitriangular))
    a = A._impl.array()
    x = lt.solve_triangular(a, self._impl.array(), upper, True, unitriangular, transpose)
    # The second result is A, broadcast to the batch, copied (PyTorch's "cloned_coefficient")
    # (.copy(): broadcast_to's array is a read-only view of A's, which an in-place write
    # into the result would hit)
    coefficient = np.broadcast_to(a, specs[1].sizes).copy()
    return _result(x, specs[0]), _result(coefficient, specs[1])


def cholesky_solve(self, input2, upper):
    spec = shape_rule("triangular.cholesky_solve")("cholesky_solve", (self, input2, upper))
    x = lt.cholesky_solve(self._impl.array(), input2._impl.array(), upper)
    return _result(x, spec)


def cholesky_inverse(self, upper):
    spec = shape_rule("triangular.cholesky_inverse")("cholesky_inverse", (self, upper))
    inverse, info = lt.cholesky_inverse(self._impl.array(), upper)
    check_info("cholesky_inverse", info, lt.CHOLESKY_INVERSE_FAILED)
    return _result(inverse, spec)


# `hermitian` picks LAPACK's hetrf/hetrs over sytrf/sytrs for complex matrices; for real
# ones (all TensorPlay has yet) a symmetric and a Hermitian matrix are the same thing.
def linalg_ldl_factor_ex(self, hermitian, check_errors):
    specs = shape_rule("triangular.ldl_factor")("linalg_ldl_factor_ex", (self, hermitian,
                                                                        check_errors))
    ld, pivots, info = lt.ldl_factor_ex(self._impl.array())
    if check_errors:
        check_info("linalg_ldl_factor_ex", info, lt.LDL_FAILED)
    return _result(ld, specs[0]), out(pivots, dt.int32), out(info, dt.int32)


def linalg_ldl_solve(LD, pivots, B, hermitian):
    spec = shape_rule("triangular.ldl_solve")("linalg_ldl_solve", (LD, pivots, B, hermitian))
    x = lt.ldl_solve(LD._impl.array(), pivots._impl.array(), B._impl.array())
    return _result(x, spec)
