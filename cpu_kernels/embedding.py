"""Dropout, embedding and one_hot kernels, and the backward of relu and threshold."""
from __future__ import annotations

import numpy as np

from tensorplay import _dtype as dt
from tensorplay import _random_draws as draws
from tensorplay._random import get
from tensorplay.errors import DimError
from tensorplay.meta import nn_layers as rules
from cpu_kernels._common import array_as, out, out_like


def native_dropout(input, p, train, generator):
    """Zero each element with probability p and scale the rest by 1 / (1 - p), so the
    expected value is unchanged. Returns (output, keep mask).

        keep = bernoulli(1 - p)       a double uniform < 1 - p per element, in order,
                                      from `generator` (or the default one)
        out  = (input * keep) * scale   scale = 1 / (1 - p) rounded to input's dtype
                                        (p == 1: all zeros)
    Not training: (a copy of the input, an all-True mask).
    """
    rules.native_dropout("native_dropout", (input, p, train, generator))
    a = input._impl.array()
    dtype = input._impl.dtype
    if train is False:
        return out(a.copy(), dtype), out(np.ones(a.shape, np.bool_), dt.bool)
    keep = draws.bernoulli_scalar(get(generator), a.size, 1.0 - p).reshape(a.shape)
    scale = 0.0 if p == 1 else 1.0 / (1.0 - p)
    return out((a * keep.astype(a.dtype)) * np.asarray(scale, a.dtype), dtype), out(keep, dt.bool)


# Same-width unsigned integers, to select a float or its +0.0 with a bitwise and.
_BITS = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def threshold_backward(grad_output, self, threshold):
    """grad_output where self > threshold (or is NaN), else 0: relu's and threshold's
    backward, broadcasting and promoting like a binary op.

        out[i] = 0 if self[i] <= threshold else grad_output[i]

    NOTE: np.where with a mask that changes every few elements runs ~15x slower than
    arithmetic, and grad * keep would turn an infinite gradient at a dropped position
    into NaN. So floats are selected bitwise: keep (0 or 1) negated is 0 or all ones,
    and grad's bits `and` that are the gradient or +0.0, exactly.
    """
    spec = rules.threshold_backward("threshold_backward", (grad_output, self, threshold))
    g = array_as(grad_output, spec.dtype)
    x = array_as(self, spec.dtype)
    with np.errstate(invalid="ignore"):
        keep = ~(x <= threshold)
    g, keep = np.broadcast_arrays(g, keep)
    bits = _BITS.get(g.dtype.itemsize) if spec.dtype.is_floating_point else None
    if bits is None:           # integers (and bool): the product is exact
        result = np.multiply(g, keep, dtype=g.dtype)
    else:
        mask = keep.astype(bits)
        np.negative(mask, out=mask)
        result = np.bitwise_and(g.view(bits), mask).view(g.dtype)
    # NOTE: laid out like self first, then grad_output: PyTorch's binary-op iterator
    # takes them in that order (its threshold_backward is threshold(self, ..., grad)).
    return out_like(result, spec.dtype, self, grad_output)


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
    rules.embedding("embedding", (weight, indices, padding_idx, scale_grad_by_freq, sparse))
    w = weight._impl.array()
    idx = _indices("embedding", indices, w.shape[0], "indices")
    return out(w[idx], weight._impl.dtype)


def embedding_dense_backward(grad_output, indices, num_weights, padding_idx,
                             scale_grad_by_freq):
    """Scatter-add each gradient row into the row its index selected; repeated indices
    accumulate, the padding row gets none.

        for each position i:  grad_weight[indices[i]] += grad_output[i] (/ count[indices[i]])
    """
    spec = rules.embedding_dense_backward("embedding_dense_backward",
                                          (grad_output, indices, num_weights, padding_idx,
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
    rules.one_hot("one_hot", (self, num_classes))
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
