"""The triangular factorizations written with the ops of cpu_kernels/triangular.py:
linalg.lu_factor and linalg.ldl_factor are their `_ex` forms that raise for a singular
matrix, and linalg.lu is lu_factor_ex unpacked (its derivatives.yaml entry records it as
one node, PyTorch's linalg_lu_backward)."""
from __future__ import annotations

from tensorplay._generated import functional as F
from tensorplay.errors import LinAlgError
from tensorplay.meta.triangular import check_matrix
from tensorplay.meta.linalg import check_square
from tensorplay.kernel_support.lapack_triangular import check_pivot


def _raising(op, ex_op, call):
    """`call()` with check_errors=True, its LinAlgError worded as `op`'s (the `_ex` form
    raised it: PyTorch's message names the op the user called)."""
    try:
        return call()
    except LinAlgError as e:
        raise LinAlgError(str(e).replace(f"{ex_op}(", f"{op}(", 1), op=op) from None


def linalg_lu_factor(A, pivot):
    check_matrix("linalg_lu_factor", A, "A")
    check_pivot("linalg_lu_factor", pivot)
    LU, pivots, _ = _raising("linalg_lu_factor", "linalg_lu_factor_ex",
                             lambda: F.linalg_lu_factor_ex(A, pivot=pivot, check_errors=True))
    return LU, pivots


def linalg_lu(A, pivot):
    """P, L, U with A = P L U; a singular A factors too (U has a zero on its diagonal)."""
    check_matrix("linalg_lu", A, "A")
    check_pivot("linalg_lu", pivot)
    LU, pivots, _ = F.linalg_lu_factor_ex(A, pivot=pivot)
    return F.lu_unpack(LU, pivots)


def linalg_ldl_factor(self, hermitian):
    check_square("linalg_ldl_factor", self, "self")
    LD, pivots, _ = _raising("linalg_ldl_factor", "linalg_ldl_factor_ex",
                             lambda: F.linalg_ldl_factor_ex(self, hermitian=hermitian,
                                                            check_errors=True))
    return LD, pivots
