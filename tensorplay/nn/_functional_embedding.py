"""tp.nn.functional: embedding and embedding_bag with PyTorch's full signatures (max_norm
renormalizes the rows they read, in place, then the op picks them) and one_hot."""
from __future__ import annotations

from tensorplay._generated import functional as _F
from tensorplay._generated import functional as _ops
from tensorplay import _creation
from tensorplay.autograd.grad_mode import no_grad
from tensorplay.errors import ArgumentError, ShapeError, fmt_shape

__all__ = ["embedding", "embedding_bag", "one_hot"]


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


_BAG_MODES = {"sum": 0, "mean": 1, "max": 2}


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2,
                  scale_grad_by_freq=False, mode="mean", sparse=False, per_sample_weights=None,
                  include_last_offset=False, padding_idx=None):
    """Sums, means or maxima of bags of rows of `weight`: torch's F.embedding_bag.

    input 2-D (B, L): B bags of L indices each (offsets must be None); input 1-D: the bags
    are input[offsets[b]:offsets[b + 1]]. per_sample_weights (input's shape, mode='sum'
    only) scales each row before the sum."""
    op = "embedding_bag"
    shape = fmt_shape(tuple(input.shape))
    if per_sample_weights is not None and \
            tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ShapeError(f"{op}(): if argument 'per_sample_weights' "
                         f"({fmt_shape(tuple(per_sample_weights.shape))}) is not None, then "
                         f"it must have the same shape as the input ({shape})", op=op,
                         arg="per_sample_weights")
    if weight.dim() != 2:
        raise ShapeError(f"{op}(): argument 'weight' has to be a 2D Tensor, but got Tensor of "
                         f"dimension {weight.dim()}", op=op, arg="weight")
    if input.dim() == 2:
        if offsets is not None:
            raise ArgumentError(f"{op}(): if input is 2D, then argument 'offsets' has to be "
                                f"None, as input is treated as a mini-batch of fixed length "
                                f"sequences", op=op, arg="offsets")
        offsets = _creation.arange(0, input.numel(), input.shape[1], dtype=input.dtype,
                                   device=input.device)
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None or offsets.dim() != 1:
            got = "None" if offsets is None else f"shape {fmt_shape(tuple(offsets.shape))}"
            raise ShapeError(f"{op}(): argument 'offsets' has to be a 1D Tensor for a 1D "
                             f"input, but got {got}", op=op, arg="offsets")
    else:
        raise ShapeError(f"{op}(): argument 'input' has to be a 1D or 2D Tensor, but got "
                         f"shape {shape}", op=op, arg="input")
    if mode not in _BAG_MODES:
        raise ArgumentError(f"{op}(): argument 'mode' has to be one of sum, mean or max, but "
                            f"got {mode!r}", op=op, arg="mode")
    if mode == "max" and scale_grad_by_freq:
        raise ArgumentError(f"{op}(): max mode does not support scaling the gradient by the "
                            f"frequency (argument 'scale_grad_by_freq')", op=op,
                            arg="scale_grad_by_freq")
    if per_sample_weights is not None and mode != "sum":
        raise ArgumentError(f"{op}(): argument 'per_sample_weights' was not None; it is only "
                            f"supported for mode='sum' (got mode={mode!r})", op=op,
                            arg="per_sample_weights")
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    return _ops.embedding_bag(weight, input, offsets, scale_grad_by_freq, _BAG_MODES[mode],
                              sparse, per_sample_weights, include_last_offset, padding_idx)[0]
