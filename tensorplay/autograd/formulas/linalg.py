"""Backward helpers of linear algebra (linear, diag, diagonal), written with TensorPlay
ops so they can be differentiated again."""
from __future__ import annotations

from tensorplay import _creation


def linear_weight_backward(grad, input):  # noqa: A002 - the schema's name
    """d weight = sum over the batch of grad^T input: flatten the batch dims, one mm."""
    out_features, in_features = grad.shape[-1], input.shape[-1]
    return grad.reshape([-1, out_features]).t().mm(input.reshape([-1, in_features]))


def diag_backward(grad, sizes, diagonal):
    """diag of a vector: the gradient's diagonal; diag of a matrix: the gradient placed
    on the matrix's diagonal."""
    if len(sizes) == 1:
        return grad.diagonal(diagonal)
    return diagonal_backward(grad, sizes, diagonal, 0, 1)


def diagonal_backward(grad, sizes, offset, dim1, dim2):
    out = _creation.zeros(sizes, dtype=grad.dtype, device=grad.device)
    out.diagonal(offset, dim1, dim2).copy_(grad)
    return out


