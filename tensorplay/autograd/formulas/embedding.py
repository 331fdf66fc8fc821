"""embedding's backward and double backward; embedding_bag's backward.

Written with TensorPlay ops only, so they can be differentiated again.
"""
from __future__ import annotations

from tensorplay import _creation
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


# ---- _embedding_bag ----------------------------------------------------------------------
def _bag_of_each_index(indices, offsets, include_last_offset):
    """bag[i]: the bag position i falls in (the last start offset at or before i)."""
    starts = offsets[:-1] if include_last_offset else offsets
    at = _creation.arange(indices.shape[0], dtype=offsets.dtype, device=offsets.device)
    return F.searchsorted(starts, at, right=True) - 1


def embedding_bag_backward(grad, weight_sizes, indices, offsets, bag_size, max_indices,
                           scale_grad_by_freq, mode, per_sample_weights, include_last_offset,
                           padding_idx):
    """The gradient of the table (PyTorch's _embedding_bag_dense_backward): for sum and
    mean each index's row gets its bag's gradient (/ the bag's size for mean, * its
    per-sample weight), as embedding's backward scatters it (the padding row gets none,
    scale_grad_by_freq divides by each index's count); for max each (bag, column)'s
    gradient goes to the row its maximum came from, empty bags giving nothing. Only the
    table's sizes are saved, as PyTorch's (a write into the table before backward is no
    error)."""
    num_weights, dim = weight_sizes
    if mode == 2:
        kept = F.where((bag_size > 0).unsqueeze(1), grad, 0.0)
        table = grad.new_zeros((num_weights, dim))
        return F.scatter_add(table, 0, max_indices.long(), kept)
    bag = _bag_of_each_index(indices, offsets, include_last_offset)
    rows = F.index_select(grad, 0, bag)
    if mode == 1:
        size = F.index_select(bag_size, 0, bag).clamp(min=1).to(grad.dtype)
        rows = rows / size.unsqueeze(1)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.unsqueeze(1)
    return F.embedding_dense_backward(rows, indices, num_weights, padding_idx,
                                      scale_grad_by_freq)


def embedding_bag_per_sample_weights_backward(grad, weight, indices, offsets, mode,
                                              include_last_offset, padding_idx):
    """d out[bag[i]] / d psw[i] = weight[indices[i]]: the dot of the two rows (0 at the
    padding index)."""
    bag = _bag_of_each_index(indices, offsets, include_last_offset)
    dots = (F.index_select(grad, 0, bag) * F.index_select(weight, 0, indices)).sum(1)
    return F.where(indices != padding_idx, dots, 0.0)


def embedding_bag_jvp(weight_p, weight_t, indices, offsets, mode, per_sample_weights_p,
                      per_sample_weights_t, include_last_offset, padding_idx, bag_size,
                      max_indices):
    """The output's tangent. sum and mean are linear in the table and (sum only) in the
    per-sample weights: the op on weight_t, plus the op with the weights' tangent. max
    copies one row's element per (bag, column): the tangent read at max_indices (0 for an
    empty bag)."""
    if mode == 2:
        picked = F.gather(weight_t, 0, max_indices.long().clamp(min=0))
        return F.where((bag_size > 0).unsqueeze(1), picked, 0.0)
    out = F._embedding_bag(weight_t, indices, offsets, False, mode, False,
                           per_sample_weights_p, include_last_offset, padding_idx)[0]
    if per_sample_weights_t is not None:
        out = out + F._embedding_bag(weight_p, indices, offsets, False, mode, False,
                                     per_sample_weights_t, include_last_offset,
                                     padding_idx)[0]
    return out
