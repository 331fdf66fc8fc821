"""embedding's backward and double backward.

Written with TensorPlay ops only, so they can be differentiated again.
"""
from __future__ import annotations

from tensorplay._generated import functional as F


def embedding_backward(grad, indices, weight_sizes, padding_idx, scale_grad_by_freq):
    return F.embedding_dense_backward(grad, indices, weight_sizes[0], padding_idx,
                                      scale_grad_by_freq)


def embedding_dense_double_backward(grad, indices, padding_idx, scale_grad_by_freq):
    """The transpose of the scatter-add: gather the rows of `grad` by index, 0 at the
    padding index, divided by each index's count with scale_grad_by_freq."""
    rows = F.embedding(grad, indices)
    keep = (indices != padding_idx).unsqueeze(-1)
    if scale_grad_by_freq:
        flat = indices.reshape((-1,))
        counts = (flat.unsqueeze(1) == flat.unsqueeze(0)).sum(1, dtype=grad.dtype)
        rows = rows / counts.reshape(tuple(indices.shape) + (1,))
    return F.where(keep, rows, 0.0)
