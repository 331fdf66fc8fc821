"""`tp.linalg`: PyTorch's linear-algebra namespace, as far as TensorPlay's ops reach.

The functions are the `linalg_*` ops of ops.yaml (decompositions in
tensorplay/composite/linalg.py), named here as `torch.linalg` names them.
"""
from tensorplay._generated.functional import (  # noqa: F401
    linalg_cholesky as cholesky, linalg_cholesky_ex as cholesky_ex, linalg_cond as cond,
    linalg_det as det, linalg_diagonal as diagonal, linalg_eigh as eigh,
    linalg_eigvalsh as eigvalsh, linalg_inv as inv, linalg_inv_ex as inv_ex,
    linalg_matmul as matmul, linalg_matrix_norm as matrix_norm,
    linalg_matrix_power as matrix_power, linalg_matrix_rank as matrix_rank,
    linalg_multi_dot as multi_dot, linalg_norm as norm, linalg_pinv as pinv,
    linalg_slogdet as slogdet, linalg_solve as solve, linalg_svd as svd,
    linalg_svdvals as svdvals, linalg_vecdot as vecdot, linalg_vector_norm as vector_norm,
)
from tensorplay.errors import LinAlgError  # noqa: F401

__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "cond", "det", "diagonal", "eigh",
           "eigvalsh", "inv", "inv_ex", "matmul", "matrix_norm", "matrix_power", "matrix_rank",
           "multi_dot", "norm", "pinv", "slogdet", "solve", "svd", "svdvals", "vecdot",
           "vector_norm"]
