"""index_select, index_add, index_copy, index_fill: whole slices picked by a vector of
indices along one dimension.

Each kernel moves `dim` to the front (a NumPy view, no copy) so that `moved[idx]` is
the list of slices the indices name:

    index_select:  out[..., j, ...] = self[..., index[j], ...]
    index_add:     out[..., index[j], ...] += alpha * source[..., j, ...]   (repeats add up)
    index_copy:    out[..., index[j], ...] = source[..., j, ...]
    index_fill:    out[..., index[j], ...] = value
"""
from __future__ import annotations

import numpy as np

from tensorplay.library import kernel
from tensorplay.meta import indexing as rules
from tensorplay.meta.rules import wrap_dim
from cpu_kernels._common import out, write_target, written


def _front(a, dim):
    """`a` with `dim` first; 0-dim arrays act as 1-D arrays of one element."""
    return np.moveaxis(a.reshape(1) if a.ndim == 0 else a, dim, 0)


def _checked_index(op, self, dim, index, allow_negative=False):
    d = wrap_dim(op, dim, len(self._impl.sizes))
    idx = index._impl.array().reshape(-1)
    size = self._impl.sizes[d] if self._impl.sizes else 1
    rules.check_in_range(op, idx, size, d, allow_negative=allow_negative)
    return d, idx


def index_select(self, dim, index):
    spec = rules.index_select("index_select", (self, dim, index))
    d, idx = _checked_index("index_select", self, dim, index)
    picked = np.take(_front(self._impl.array(), d), idx, axis=0)
    return out(np.moveaxis(picked, 0, d).reshape(spec.sizes), self._impl.dtype)


def _source(source, d):
    return _front(source._impl.array(), d)


def add_rows(target, idx, rows):
    """target[idx[j]] += rows[j] for every j, repeated indices adding up.

    np.add.at adds one element at a time. Instead, add in rounds: each round takes the
    first remaining occurrence of every distinct index, which has no repeats, so one
    vectorised `+=` does it. Rounds = the largest multiplicity (1 without repeats), and
    each index still receives its rows in their original order, as np.add.at would.
    """
    remaining = np.arange(len(idx))
    while remaining.size:
        _, first = np.unique(idx[remaining], return_index=True)
        take = remaining[first]
        target[idx[take]] += rows[take]
        remaining = np.delete(remaining, first)


@kernel(family=True)
def index_add(op, self, dim, index, source, alpha):
    """index_add and index_add_."""
    rules.index_add(op, (self, dim, index, source, alpha))
    target = write_target(op, self)
    d, idx = _checked_index(op, self, dim, index)
    src = _source(source, d)
    if alpha != 1:
        src = src * np.array(alpha).astype(src.dtype)
    add_rows(_front(target, d), idx, src.reshape((len(idx),) + src.shape[1:]))
    return written(op, self, target)


@kernel(family=True)
def index_copy(op, self, dim, index, source):
    """index_copy and index_copy_."""
    rules.index_copy(op, (self, dim, index, source))
    target = write_target(op, self)
    d, idx = _checked_index(op, self, dim, index)
    src = _source(source, d)
    _front(target, d)[idx] = src.reshape((len(idx),) + src.shape[1:])
    return written(op, self, target)


def _fill_value(value, dtype):
    if getattr(value, "_impl", None) is not None:
        value = value._impl.array()
    return np.array(value).astype(dtype.np)


@kernel(family=True)
def index_fill(op, self, dim, index, value):
    """index_fill and index_fill_, the value a Scalar or a 0-dim Tensor."""
    rules.index_fill(op, (self, dim, index, value))
    target = write_target(op, self)
    # index_fill alone among these accepts negative indices, as in PyTorch.
    d, idx = _checked_index(op, self, dim, index, allow_negative=True)
    _front(target, d)[idx] = _fill_value(value, self._impl.dtype)
    return written(op, self, target, keep_layout=True)
