"""`tp.linalg`: PyTorch's linear-algebra namespace, as far as TensorPlay's ops reach.

The functions are the `linalg_*` ops of ops.yaml (decompositions in
tensorplay/composite/linalg.py), named here as `torch.linalg` names them.
"""
from tensorplay._generated.functional import (  # noqa: F401
    linalg_cholesky as cholesky, linalg_cholesky_ex as cholesky_ex, linalg_inv as inv,
    linalg_inv_ex as inv_ex, linalg_matrix_norm as matrix_norm, linalg_norm as norm,
    linalg_slogdet as slogdet, linalg_solve as solve, linalg_vector_norm as vector_norm,
)
from tensorplay.errors import LinAlgError  # noqa: F401

__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "inv", "inv_ex", "matrix_norm", "norm",
           "slogdet", "solve", "vector_norm"]
