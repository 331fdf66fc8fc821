"""`tp.linalg`: PyTorch's linear-algebra namespace, as far as TensorPlay's ops reach.

The functions are the `linalg_*` ops of ops.yaml (decompositions in
tensorplay/composite/linalg.py), named here as `torch.linalg` names them.
"""
from tensorplay._generated.functional import (  # noqa: F401
    linalg_matrix_norm as matrix_norm, linalg_norm as norm, linalg_vector_norm as vector_norm,
)

__all__ = ["matrix_norm", "norm", "vector_norm"]
