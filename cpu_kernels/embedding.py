"""Embedding (rows of a table picked by index), its backward, and one_hot."""
from __future__ import annotations

import numpy as np

from tensorplay import _dtype as dt
from tensorplay.errors import DimError
from tensorplay.kernel_support.ops import shape_rule
from cpu_kernels._common import out


def _indices(op, t, num, arg):
    """The index array as int64, every entry checked to lie in [0, num)."""
    idx = t._impl.array().astype(np.int64, copy=False)
    bad = (idx < 0) | (idx >= num)
    if bad.any():
        raise DimError(f"{op}(): index {idx[bad].reshape(-1)[0]} is out of range in argument "
                       f"'{arg}' (expected indices in [0, {num - 1}])", op=op, arg=arg)
    return idx


def embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse):
    """out[..., :] = weight[indices[...], :] (a copy: rows gathered by index)."""
    shape_rule("embedding.embedding")(
        "embedding", (weight, indices, padding_idx, scale_grad_by_freq, sparse))
    w = weight._impl.array()
    idx = _indices("embedding", indices, w.shape[0], "indices")
    return out(w[idx], weight._impl.dtype)


def embedding_dense_backward(grad_output, indices, num_weights, padding_idx,
                             scale_grad_by_freq):
    """Scatter-add each gradient row into the row its index selected; repeated indices
    accumulate, the padding row gets none.

        for each position i:  grad_weight[indices[i]] += grad_output[i] (/ count[indices[i]])
    """
    spec = shape_rule("embedding.embedding_dense_backward")(
        "embedding_dense_backward", (grad_output, indices, num_weights, padding_idx,
                                     scale_grad_by_freq))
    g = grad_output._impl.array()
    acc = np.float32 if g.dtype.itemsize == 2 else g.dtype
    g = g.reshape(-1, g.shape[-1]).astype(acc, copy=False)
    idx = _indices("embedding_dense_backward", indices, num_weights, "indices").reshape(-1)
    if scale_grad_by_freq:
        counts = np.bincount(idx, minlength=num_weights)
        g = g / counts[idx][:, None]
    result = np.zeros((num_weights, g.shape[1]), acc)
    np.add.at(result, idx, g)
    if 0 <= padding_idx < num_weights:
        result[padding_idx] = 0
    return out(result, spec.dtype)


def one_hot(self, num_classes):
    """out[..., c] = 1 where self[...] == c; num_classes=-1 takes max(self) + 1."""
    shape_rule("embedding.one_hot")("one_hot", (self, num_classes))
    a = self._impl.array()
    if a.size and a.min() < 0:
        raise DimError(f"one_hot(): Class values must be non-negative (argument 'self' holds "
                       f"{a.min()})", op="one_hot", arg="self")
    if num_classes == -1:
        num_classes = int(a.max()) + 1
    elif a.size and a.max() >= num_classes:
        raise DimError(f"one_hot(): Class values must be smaller than num_classes "
                       f"({num_classes}), but argument 'self' holds {a.max()}", op="one_hot",
                       arg="self")
    return out((a[..., None] == np.arange(num_classes)).astype(np.int64), dt.int64)
