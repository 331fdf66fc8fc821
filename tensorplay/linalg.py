"""`tp.linalg`: PyTorch's linear-algebra namespace, as far as TensorPlay's ops reach.

The functions are the `linalg_*` ops of ops.yaml (decompositions in
tensorplay/composite/linalg.py and tensorplay/composite/triangular.py), named here as
`torch.linalg` names them.
"""
from tensorplay._generated.functional import (  # noqa: F401
    linalg_cholesky as cholesky, linalg_cholesky_ex as cholesky_ex,
    linalg_diagonal as diagonal, linalg_inv as inv, linalg_inv_ex as inv_ex,
    linalg_ldl_factor as ldl_factor, linalg_ldl_factor_ex as ldl_factor_ex,
    linalg_ldl_solve as ldl_solve, linalg_lu as lu, linalg_lu_factor as lu_factor,
    linalg_lu_factor_ex as lu_factor_ex, linalg_lu_solve as lu_solve,
    linalg_matmul as matmul, linalg_matrix_norm as matrix_norm,
    linalg_matrix_power as matrix_power, linalg_multi_dot as multi_dot, linalg_norm as norm,
    linalg_slogdet as slogdet, linalg_solve as solve, linalg_solve_ex as solve_ex,
    linalg_solve_triangular as solve_triangular, linalg_vecdot as vecdot,
    linalg_vector_norm as vector_norm,
)
from tensorplay.errors import LinAlgError  # noqa: F401

__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "diagonal", "inv", "inv_ex",
           "ldl_factor", "ldl_factor_ex", "ldl_solve", "lu", "lu_factor", "lu_factor_ex",
           "lu_solve", "matmul", "matrix_norm", "matrix_power", "multi_dot", "norm", "slogdet",
           "solve", "solve_ex", "solve_triangular", "vecdot", "vector_norm"]
