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
    # one row per index (spelled out: NumPy cannot infer -1 when the rows are empty)
    g = g.reshape(int(np.prod(indices._impl.sizes)), g.shape[-1]).astype(acc, copy=False)
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


# ---- _embedding_bag --------------------------------------------------------------------
def bag_of_each_index(op, offsets, n, include_last_offset):
    """bag[i]: the bag index i falls in, from the bags' start offsets (checked: the first
    is 0, none decreases, none passes n). With include_last_offset the last offset only
    closes the last bag, which, as in PyTorch, then runs to the end of the indices."""
    starts = offsets[:-1] if include_last_offset else offsets
    if starts.size and starts[0] != 0:
        raise DimError(f"{op}(): offsets[0] has to be 0, i.e., the first sequence in the "
                       f"mini-batch has to start from position 0, but argument 'offsets' "
                       f"starts at {starts[0]}", op=op, arg="offsets")
    if offsets.size and offsets[-1] > n:
        raise DimError(f"{op}(): offsets[-1] can not be greater than the input's length {n}, "
                       f"but argument 'offsets' ends at {offsets[-1]}", op=op, arg="offsets")
    if np.any(np.diff(offsets) < 0):
        raise DimError(f"{op}(): argument 'offsets' must be non-decreasing, but got "
                       f"{offsets.tolist()}", op=op, arg="offsets")
    return np.searchsorted(starts, np.arange(n), side="right") - 1


def embedding_bag_arrays(op, w, idx, offsets, mode, psw, include_last_offset, padding_idx):
    """(output, offset2bag, bag_size, max_indices) as PyTorch's CPU kernel returns them:

        sum/mean  out[b] = sum of psw[i] * w[idx[i]] over the bag's i (mean: / its size)
        max       out[b, d] = max of w[idx[i], d], and the row it came from (first on ties)

    padding_idx's entries count for nothing (nor in the bag's size); an empty bag is 0.
    bag_size is only filled for mean and max; max_indices is bag_size for mean, 0 for sum.
    """
    n, (rows, dim) = idx.shape[0], w.shape
    bad = (idx < 0) | (idx >= rows)
    if bad.any():
        raise DimError(f"{op}(): index {idx[bad][0]} is out of range in argument 'indices' "
                       f"(expected indices in [0, {rows - 1}])", op=op, arg="indices")
    bag = bag_of_each_index(op, offsets, n, include_last_offset)
    bags = offsets.shape[0] - (1 if include_last_offset else 0)
    keep = idx != padding_idx
    size = np.bincount(bag[keep], minlength=bags)[:bags]
    picked = w[idx]
    if psw is not None:
        picked = picked * psw[:, None]
    if mode == 2:
        # PyTorch's loop: a bag's first row, then each later row that is greater (`>`, so
        # the first of ties). A NaN first row stays (nothing is greater); a later NaN is
        # never greater, so it is skipped.
        result = np.full((bags, dim), -np.inf, w.dtype)
        np.maximum.at(result, bag[keep], np.where(np.isnan(picked[keep]), -np.inf,
                                                  picked[keep]))
        hit = np.where(keep[:, None] & (picked == result[bag]), np.arange(n)[:, None], n)
        first = np.full((bags, dim), n)
        np.minimum.at(first, bag, hit)
        opener = np.full(bags, n)
        np.minimum.at(opener, bag[keep], np.flatnonzero(keep))
        if n:
            opened = opener < n
            nan_first = opened[:, None] & np.isnan(picked[np.minimum(opener, n - 1)])
            result = np.where(nan_first, np.nan, result)
            first = np.where(nan_first, opener[:, None], first)
        max_indices = np.where(first < n, idx[np.minimum(first, n - 1)] if n else 0, 0)
        result = np.where(size[:, None] > 0, result, 0)
    else:
        result = np.zeros((bags, dim), w.dtype)
        np.add.at(result, bag[keep], picked[keep])
        if mode == 1:
            result = result / np.maximum(size, 1)[:, None].astype(w.dtype)
        # (a copy: the same values as bag_size for mean, but its own memory, as PyTorch's;
        # one array for both made an in-place write into one change the other)
        max_indices = size.copy() if mode == 1 else np.zeros(bags, np.int64)
    bag_size = size if mode else np.zeros(bags, np.int64)
    return result, bag, bag_size, max_indices


def _embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
                   per_sample_weights, include_last_offset, padding_idx):
    """Bags of rows of `weight` reduced by sum, mean or max (nn.EmbeddingBag)."""
    op = "_embedding_bag"
    specs = shape_rule("embedding.embedding_bag")(
        op, (weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
             include_last_offset, padding_idx))
    acc = np.float32 if weight._impl.dtype.itemsize == 2 else weight._impl.dtype.np
    psw = None if per_sample_weights is None else \
        per_sample_weights._impl.array().astype(acc, copy=False)
    result, bag, bag_size, max_indices = embedding_bag_arrays(
        op, weight._impl.array().astype(acc, copy=False),
        indices._impl.array().astype(np.int64, copy=False),
        offsets._impl.array().astype(np.int64, copy=False), mode, psw, include_last_offset,
        padding_idx)
    index = specs[1].dtype
    bag = bag[:specs[1].sizes[0]]      # empty where PyTorch's sum fast path leaves it so
    return (out(result, weight._impl.dtype), out(bag, index), out(bag_size, index),
            out(max_indices, index))
