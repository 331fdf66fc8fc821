"""embedding_bag: torch.embedding_bag's two overloads, both _embedding_bag (a padding_idx of
None is -1, none)."""
from __future__ import annotations

from tensorplay._generated import functional as F
from tensorplay.errors import ArgumentError


def embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
                  per_sample_weights, include_last_offset):
    """(output, offset2bag, bag_size, max_indices): PyTorch's four results."""
    return F._embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
                            per_sample_weights, include_last_offset, -1)


def embedding_bag_padding_idx(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
                              per_sample_weights, include_last_offset, padding_idx):
    """padding_idx in [-num_embeddings, num_embeddings), negative counted from the end."""
    if padding_idx is None:
        padding_idx = -1
    else:
        rows = weight.shape[0]
        if not -rows <= padding_idx < rows:
            raise ArgumentError(f"embedding_bag(): argument 'padding_idx' must be within the "
                                f"number of embeddings, -{rows} through {rows - 1}, but got "
                                f"{padding_idx}", op="embedding_bag", arg="padding_idx")
        padding_idx = padding_idx + rows if padding_idx < 0 else padding_idx
    return F._embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
                            per_sample_weights, include_last_offset, padding_idx)
