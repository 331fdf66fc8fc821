"""tp.nn.functional: cosine_similarity and pairwise_distance (the ops), pdist (composed)."""
from __future__ import annotations

import numpy as np

from tensorplay._creation import tensor
from tensorplay._generated import functional as _F
from tensorplay._generated import functional as _ops
from tensorplay.errors import ShapeError, fmt_shape

__all__ = ["cosine_similarity", "pairwise_distance", "pdist"]


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    return _F.cosine_similarity(x1, x2, dim, eps)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    return _F.pairwise_distance(x1, x2, float(p), eps, keepdim)


def pdist(input, p=2):
    """The p-norm distances between the rows of (N, M), for i < j in row-major order:
    an N * (N - 1) / 2 vector."""
    if input.dim() != 2:
        raise ShapeError(f"pdist(): expected a 2-D input (N, M), but got shape "
                         f"{fmt_shape(tuple(input.shape))} (argument 'input')", op="pdist",
                         arg="input")
    rows, cols = np.triu_indices(input.shape[0], k=1)
    i = tensor(rows.astype(np.int64), device=input.device)
    j = tensor(cols.astype(np.int64), device=input.device)
    diff = _ops.index_select(input, 0, i) - _ops.index_select(input, 0, j)
    return _ops.norm(diff, float(p), [1], False)
