"""`tp.functional` (torch.functional): the functions PyTorch writes in Python on top of
its ops (einsum, meshgrid, split, unique, ...). Here they are the same functions as
`tp.einsum` and the others."""
from __future__ import annotations

import tensorplay as _tp

__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "block_diag", "broadcast_shapes",
           "broadcast_tensors", "cartesian_prod", "cdist", "chain_matmul", "einsum", "lu",
           "meshgrid", "norm", "pca_lowrank", "split", "svd_lowrank", "tensordot", "unique",
           "unique_consecutive", "unravel_index"]


def __getattr__(name):
    if name in __all__:
        return getattr(_tp, name)
    raise AttributeError(f"module 'tensorplay.functional' has no attribute '{name}'")
