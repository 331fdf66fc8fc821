"""Shape and dtype rules of embedding (and its backward) and one_hot."""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay.errors import ArgumentError, DTypeError, ShapeError, fmt_shape
from tensorplay.kernel_support.checks import OutSpec
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
