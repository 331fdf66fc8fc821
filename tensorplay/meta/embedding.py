"""Shape and dtype rules of embedding (and its backward) and one_hot."""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay.errors import ArgumentError, DTypeError, ShapeError, fmt_shape
from tensorplay.kernel_support.checks import OutSpec, check_devices
from tensorplay.meta._nn import check_index


def _sizes(t):
    return t._impl.sizes


def embedding(op, args):
    weight, indices, padding_idx, scale_grad_by_freq, sparse = args
    check_index(op, indices, "indices")
    if sparse:
        raise ArgumentError(f"{op}(): argument 'sparse' must be False: sparse gradients are "
                            f"not supported (the gradient of 'weight' is dense)", op=op,
                            arg="sparse")
    if len(_sizes(weight)) != 2:
        raise ShapeError(f"{op}(): argument 'weight' must be 2-D (num_embeddings, "
                         f"embedding_dim), but got shape {fmt_shape(_sizes(weight))}", op=op,
                         arg="weight")
    return OutSpec(tuple(_sizes(indices)) + (_sizes(weight)[1],), weight._impl.dtype)


def embedding_dense_backward(op, args):
    grad_output, indices, num_weights, padding_idx, scale_grad_by_freq = args
    check_index(op, indices, "indices")
    sizes = _sizes(grad_output)
    if tuple(sizes[:-1]) != tuple(_sizes(indices)):
        raise ShapeError(f"{op}(): argument 'grad_output' must have shape indices.shape + "
                         f"[embedding_dim], but got {fmt_shape(sizes)} for indices of shape "
                         f"{fmt_shape(_sizes(indices))}", op=op, arg="grad_output")
    return OutSpec((num_weights, sizes[-1]), grad_output._impl.dtype)


def one_hot(op, args):
    self, num_classes = args
    if self._impl.dtype is not dt.int64:
        raise DTypeError(f"{op}(): argument 'self' must be an int64 tensor of class indices, "
                         f"but got {self._impl.dtype.name}", op=op, arg="self")
    if num_classes < 0:
        if num_classes != -1:
            raise ArgumentError(f"{op}(): argument 'num_classes' must be positive or -1 "
                                f"(infer from the data), but got {num_classes}", op=op,
                                arg="num_classes")
        if self._impl.numel() == 0:
            raise ArgumentError(f"{op}(): can not infer the total number of classes from an "
                                f"empty tensor (pass argument 'num_classes')", op=op,
                                arg="num_classes")
        if self._impl.device.type == "meta":
            raise ArgumentError(f"{op}(): num_classes=-1 infers the number of classes from "
                                f"the data, which a meta tensor does not have (pass "
                                f"argument 'num_classes')", op=op, arg="num_classes")
    return OutSpec(tuple(_sizes(self)) + (num_classes,), dt.int64)


# ---- _embedding_bag --------------------------------------------------------------------
MODES = ("sum", "mean", "max")      # the ints 0, 1, 2


def offset2bag_is_empty(weight, mode, padding_idx):
    """PyTorch's CPU sum of float32/half/bfloat16 rows with no padding index takes a fast
    path (index_select_add) that never builds offset2bag, and returns it empty; the
    backward rebuilds it from the offsets."""
    return mode == 0 and padding_idx < 0 and weight._impl.dtype in (dt.float32, dt.float16,
                                                                     dt.bfloat16)


def embedding_bag(op, args):
    (weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
     include_last_offset, padding_idx) = args
    check_index(op, indices, "indices")
    check_index(op, offsets, "offsets")
    if len(_sizes(weight)) != 2:
        raise ShapeError(f"{op}(): argument 'weight' must be 2-D (num_embeddings, "
                         f"embedding_dim), but got shape {fmt_shape(_sizes(weight))}", op=op,
                         arg="weight")
    if not weight._impl.dtype.is_floating_point:
        raise DTypeError(f"{op}(): argument 'weight' must have a floating point dtype, but "
                         f"got {weight._impl.dtype.name}", op=op, arg="weight")
    for name, t in (("indices", indices), ("offsets", offsets)):
        if len(_sizes(t)) != 1:
            raise ShapeError(f"{op}(): argument '{name}' must be 1-D, but got shape "
                             f"{fmt_shape(_sizes(t))}", op=op, arg=name)
    if mode not in (0, 1, 2):
        raise ArgumentError(f"{op}(): argument 'mode' must be 0 (sum), 1 (mean) or 2 (max), "
                            f"but got {mode}", op=op, arg="mode")
    if sparse:
        raise ArgumentError(f"{op}(): argument 'sparse' must be False: sparse gradients are "
                            f"not supported (the gradient of 'weight' is dense)", op=op,
                            arg="sparse")
    if per_sample_weights is not None:
        if mode != 0:
            raise ArgumentError(f"{op}(): argument 'per_sample_weights' is only supported "
                                f"with mode='sum' (0), but got mode={MODES[mode]!r}", op=op,
                                arg="per_sample_weights")
        if tuple(_sizes(per_sample_weights)) != tuple(_sizes(indices)):
            raise ShapeError(f"{op}(): argument 'per_sample_weights' must have the shape of "
                             f"'indices' {fmt_shape(_sizes(indices))}, but got "
                             f"{fmt_shape(_sizes(per_sample_weights))}", op=op,
                             arg="per_sample_weights")
        if per_sample_weights._impl.dtype is not weight._impl.dtype:
            raise DTypeError(f"{op}(): expected argument 'per_sample_weights' to have the "
                             f"dtype of 'weight' ({weight._impl.dtype.name}), but got "
                             f"{per_sample_weights._impl.dtype.name}", op=op,
                             arg="per_sample_weights")
    check_devices(op, [(name, t) for name, t in (("weight", weight), ("indices", indices),
                                                 ("offsets", offsets),
                                                 ("per_sample_weights", per_sample_weights))
                       if t is not None])
    bags = _sizes(offsets)[0] - (1 if include_last_offset else 0)
    if bags < 0:
        raise ShapeError(f"{op}(): argument 'offsets' must hold at least one offset with "
                         f"include_last_offset=True, but got none", op=op, arg="offsets")
    n, dim = _sizes(indices)[0], _sizes(weight)[1]
    # (int32 indices with int64 offsets, or the other way: both are taken as int64, as
    # PyTorch's promoteIndicesAndOffsets does, and so are the index outputs)
    index = indices._impl.dtype if indices._impl.dtype is offsets._impl.dtype else dt.int64
    return (OutSpec((bags, dim), weight._impl.dtype),
            OutSpec((0 if offset2bag_is_empty(weight, mode, padding_idx) else n,), index),
            OutSpec((bags,), index),
            OutSpec((bags, dim) if mode == 2 else (bags,), index))
