"""tp.nn.functional: embedding with PyTorch's full signature (max_norm renormalizes the
rows it reads, in place, then the op picks them) and one_hot."""
from __future__ import annotations

from tensorplay._generated import functional as _F
from tensorplay._generated import functional as _ops
from tensorplay.autograd.grad_mode import no_grad

__all__ = ["embedding", "one_hot"]


def _embedding_renorm_(weight, indices, max_norm, norm_type):
    """Scale, in place, each row of `weight` that `indices` picks whose norm exceeds
    max_norm down to max_norm (PyTorch's embedding_renorm_: max_norm / (norm + 1e-7))."""
    with no_grad():
        rows = _ops.unique(indices.reshape(-1))
        picked = _ops.index_select(weight, 0, rows)
        norms = _ops.norm(picked, float(norm_type), [1], True)
        scale = _ops.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        _ops.index_copy_(weight, 0, rows, picked * scale)
    return weight


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of `weight` picked by `input`; row `padding_idx` gets no gradient.

    NOTE: max_norm modifies `weight` in place before the lookup, as PyTorch does, so a
    weight used elsewhere in the same graph must be cloned first."""
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    return _lookup(input, weight, padding_idx, scale_grad_by_freq=scale_grad_by_freq,
                   sparse=sparse)


def _lookup(input, weight, padding_idx=None, *, scale_grad_by_freq=False, sparse=False):
    """Rows of `weight` selected by the indices in `input`; row `padding_idx` gets no
    gradient. (No max_norm: renormalizing rows in place is not supported.)"""
    if padding_idx is None:
        padding_idx = -1
    elif padding_idx < 0:
        padding_idx += weight.shape[0]
    return _F.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)


def one_hot(tensor, num_classes=-1):
    return _F.one_hot(tensor, num_classes)
