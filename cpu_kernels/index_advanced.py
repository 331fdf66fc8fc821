"""Advanced indexing: `index.Tensor` (x[idx]) and `index_put` / `index_put_` (x[idx] = v).

The indices become one NumPy key: `slice(None)` for a None entry, the int64 array
for an index tensor, and a mask's `nonzero()` columns for a bool mask. NumPy's
advanced indexing then has PyTorch's semantics exactly (shapes in
tensorplay/meta/indexing_advanced.py):

    index:                      out = self[key]
    index_put_:                 self[key] = values                (repeats: one wins)
    index_put_(accumulate=True): np.add.at(self, key, values)     (repeats add up)
"""
from __future__ import annotations

import numpy as np

from tensorplay._impl import contiguous_strides
from tensorplay.library import kernel
from tensorplay.meta import indexing_advanced as rules
from tensorplay.meta.indexing import check_in_range
from tensorplay.meta.layout import index_strides
from cpu_kernels._common import out, out_strided, write_target, written
from cpu_kernels.index_select import add_rows


def numpy_key(op, self, indices):
    """The NumPy index for `indices`, every integer checked against its dimension."""
    sizes = self._impl.sizes
    key = []
    dim = 0
    for t in indices:
        if t is None:
            key.append(slice(None))
            dim += 1
            continue
        a = t._impl.array()
        if rules.is_mask(t):
            key += list(np.nonzero(a.astype(bool)))
            dim += a.ndim
            continue
        a = a.astype(np.int64, copy=False)
        check_in_range(op, a, sizes[dim], dim, arg="indices", allow_negative=True)
        key.append(a)
        dim += 1
    return tuple(key)


def index(self, indices):
    rules.index("index", (self, indices))
    key = numpy_key("index", self, indices)
    impl = self._impl
    a = impl.array()
    result = a[key]
    if np.may_share_memory(result, a):   # no tensor among the indices: a[...] is a view
        result = result.copy()
    if len(key) == 1 and getattr(key[0], "ndim", 0) == 1 and \
            impl.strides == contiguous_strides(impl.sizes):
        # x[idx] on a row-major x (embedding-like, the common case): row-major too.
        return out(result, impl.dtype)
    operands = [None if isinstance(k, slice) else (k.shape, (1,) * k.ndim) for k in key]
    for d, t in enumerate(indices):      # an index tensor's own layout (a mask's columns:
        if t is not None and not rules.is_mask(t):    # 1-D, any stride will do)
            operands[_key_position(indices, d)] = (t._impl.sizes, t._impl.strides)
    strides = index_strides(result.shape, impl.sizes, impl.strides, operands)
    return out_strided(result, impl.dtype, strides)


def _key_position(indices, i):
    """The position in numpy_key's key (one entry per dim of self) of `indices[i]`."""
    return sum(t.dim() if t is not None and rules.is_mask(t) else 1 for t in indices[:i])


@kernel(family=True)
def index_put(op, self, indices, values, accumulate):
    """index_put and index_put_."""
    rules.index_put(op, (self, indices, values, accumulate))
    target = write_target(op, self)
    key = numpy_key(op, self, indices)
    v = values._impl.array()
    if accumulate and len(key) == 1 and key[0].ndim <= 1:
        # x[idx] with one index vector (embedding-like; also what x[idx]'s backward does)
        idx = key[0].reshape(-1) % max(target.shape[0], 1)   # negative indices count back
        add_rows(target, idx, np.broadcast_to(v, (len(idx),) + target.shape[1:]))
    elif accumulate:
        np.add.at(target, key, v)
    else:
        target[key] = v
    return written(op, self, target, keep_layout=True)
