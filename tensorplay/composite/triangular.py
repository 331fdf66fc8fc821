"""The triangular factorizations written with the ops of cpu_kernels/triangular.py:
linalg.lu_factor and linalg.ldl_factor are their `_ex` forms that raise for a singular
matrix, and linalg.lu is lu_factor_ex unpacked (its derivatives.yaml entry records it as
one node, PyTorch's linalg_lu_backward). torch.lu and torch.lu_solve, the older spellings,
are lu_factor_ex and linalg.lu_solve under PyTorch's argument names."""
from __future__ import annotations

from tensorplay._generated import functional as F
from tensorplay.errors import LinAlgError, ShapeError, TensorPlayError
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
    check_matrix("linalg_lu_factor", A, "A", empty_ok=True)
    check_pivot("linalg_lu_factor", pivot)
    LU, pivots, _ = _raising("linalg_lu_factor", "linalg_lu_factor_ex",
                             lambda: F.linalg_lu_factor_ex(A, pivot=pivot, check_errors=True))
    return LU, pivots


def linalg_lu(A, pivot):
    """P, L, U with A = P L U; a singular A factors too (U has a zero on its diagonal)."""
    check_matrix("linalg_lu", A, "A", empty_ok=True)
    check_pivot("linalg_lu", pivot)
    LU, pivots, _ = F.linalg_lu_factor_ex(A, pivot=pivot)
    return F.lu_unpack(LU, pivots)


def linalg_ldl_factor(self, hermitian):
    check_square("linalg_ldl_factor", self, "self")
    LD, pivots, _ = _raising("linalg_ldl_factor", "linalg_ldl_factor_ex",
                             lambda: F.linalg_ldl_factor_ex(self, hermitian=hermitian,
                                                            check_errors=True))
    return LD, pivots


def lu(self, pivot, get_infos):
    """torch.lu: linalg.lu_factor_ex's (LU, pivots), and its infos when get_infos. A
    singular matrix factors without an error either way (its U has a zero on the
    diagonal; info says where), as PyTorch's."""
    check_matrix("lu", self, "self", empty_ok=True)
    check_pivot("lu", pivot)
    LU, pivots, info = F.linalg_lu_factor_ex(self, pivot=pivot)
    return (LU, pivots, info) if get_infos else (LU, pivots)


def lu_solve(self, LU_data, LU_pivots):
    """torch.lu_solve(b, LU, pivots): linalg.lu_solve(LU, pivots, b), whose checks name
    the arguments of this older spelling."""
    op = "lu_solve"
    if self.dim() < 2:
        raise ShapeError(f"{op}(): b should have at least 2 dimensions, but has {self.dim()} "
                         f"dimensions instead (argument 'self')", op=op, arg="self")
    if LU_data.dim() < 2:
        raise ShapeError(f"{op}(): LU_data should have at least 2 dimensions, but has "
                         f"{LU_data.dim()} dimensions instead (argument 'LU_data')", op=op,
                         arg="LU_data")
    try:
        return F.linalg_lu_solve(LU_data, LU_pivots, self)
    except TensorPlayError as e:
        names = {"LU": "LU_data", "pivots": "LU_pivots", "B": "self"}
        message = str(e).replace("linalg_lu_solve(", f"{op}(", 1)
        for new, old in names.items():
            message = message.replace(f"'{new}'", f"'{old}'")
        raise type(e)(message, op=op, arg=names.get(e.arg, e.arg)) from None
