"""`tp.linalg`: PyTorch's linear-algebra namespace, as far as TensorPlay's ops reach.

The functions are the `linalg_*` ops of ops.yaml (decompositions in
tensorplay/composite/linalg.py), named here as `torch.linalg` names them.
"""
from tensorplay._generated.functional import (  # noqa: F401
    linalg_cholesky as cholesky, linalg_cholesky_ex as cholesky_ex,
    linalg_diagonal as diagonal, linalg_householder_product as householder_product,
    linalg_inv as inv, linalg_inv_ex as inv_ex, linalg_lstsq as lstsq, linalg_qr as qr,
    linalg_matmul as matmul, linalg_matrix_norm as matrix_norm,
    linalg_matrix_power as matrix_power, linalg_multi_dot as multi_dot, linalg_norm as norm,
    linalg_slogdet as slogdet, linalg_solve as solve, linalg_vecdot as vecdot,
    linalg_vector_norm as vector_norm,
)
from tensorplay.errors import LinAlgError  # noqa: F401

__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "diagonal", "householder_product", "inv",
           "inv_ex", "lstsq", "matmul", "matrix_norm", "matrix_power", "multi_dot", "norm", "qr",
           "slogdet", "solve", "vecdot", "vector_norm"]
