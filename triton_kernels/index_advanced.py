"""Advanced indexing on the `cuda` device: `index.Tensor` (x[idx]) and `index_put` /
`index_put_` (x[idx] = v, accumulate=True adding up repeats).

Several index tensors are linearised: a bool mask becomes its nonzero() columns, the
integer tensors broadcast to one shape B, and each element of B gets one offset into
`self`, computed by pointwise kernels (negative indices wrapped by `%`):

    flat[b] = sum over indexed dims d of (idx_d[b] % size_d) * stride_d

Then x[idx] is one gather and x[idx] = v one scatter (or atomic add) of index_kernel
over the result's shape, whose dims are B's (walked through `flat`) and the dims no
index touched (walked at self's strides). Where B goes follows NumPy (see
tensorplay/meta/indexing_advanced.py): in place of the indexed dims when they are
adjacent, first otherwise.
"""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay._generated import functional as F
from tensorplay.library import kernel
from tensorplay.meta import indexing_advanced as rules
from tensorplay.meta.rules import broadcast
from triton_kernels._launch import broadcast_strides, new_tensor, operands
from triton_kernels.index_masked import nonzero
from triton_kernels.indexing import (
    accumulator, check_in_range, copy_of, gather_walk, value_tensor,
)


def _entries(op, self, indices):
    """(dim, int64 index tensor) for each indexed dimension, masks expanded into their
    nonzero() columns, every index checked against its dimension (negatives allowed)."""
    sizes = self._impl.sizes
    entries = []
    dim = 0
    for t in indices:
        if t is None:
            dim += 1
            continue
        t = t.to(self._impl.device)
        if rules.is_mask(t):
            coords = nonzero(t)
            entries += [(dim + k, coords.select(1, k)) for k in range(len(t._impl.sizes))]
            dim += len(t._impl.sizes)
            continue
        check_in_range(op, t, sizes[dim], dim, arg="indices", allow_negative=True)
        entries.append((dim, t if t._impl.dtype is dt.int64 else copy_of(t, dt.int64)))
        dim += 1
    return entries


def _layout(op, target, entries):
    """(result sizes, target's walk strides, the flat offsets, their walk strides)."""
    sizes, strides = target._impl.sizes, target._impl.strides
    dims = [d for d, _ in entries]
    shape = broadcast(op, [("indices", t._impl.sizes) for _, t in entries]) if entries else ()
    flat = None
    for d, t in entries:
        term = F.mul(F.remainder(t, max(sizes[d], 1)), strides[d])
        flat = term if flat is None else F.add(flat, term)
    flat = copy_of(flat.expand(shape)) if flat is not None else \
        value_tensor(0, dt.int64, target._impl.device)
    b_walk = list(flat._impl.strides)
    rest = [d for d in range(len(sizes)) if d not in dims]
    adjacent = dims == list(range(dims[0], dims[-1] + 1)) if dims else True
    before = [d for d in rest if adjacent and dims and d < dims[0]]
    after = [d for d in rest if d not in before]
    out_sizes = [sizes[d] for d in before] + list(shape) + [sizes[d] for d in after]
    target_walk = [strides[d] for d in before] + [0] * len(shape) + [strides[d] for d in after]
    flat_walk = [0] * len(before) + b_walk + [0] * len(after)
    return out_sizes, target_walk, flat, flat_walk


def index(self, indices):
    spec = rules.index("index", (self, indices))
    device, (x,) = operands("index", self=self)
    entries = _entries("index", x, indices)
    sizes, walk, flat, flat_walk = _layout("index", x, entries)
    out = new_tensor(spec.sizes, spec.dtype, device)
    # flat offsets are never negative: dim_size (the wrap) is unused, dim_stride is 1
    gather_walk(out.view(sizes), x, flat, sizes, list(out.view(sizes)._impl.strides), walk,
                flat_walk, 0, 1)
    return out


@kernel(family=True)
def index_put(op, self, indices, values, accumulate):
    """index_put and index_put_."""
    spec = rules.index_put(op, (self, indices, values, accumulate))
    device, (x, v) = operands(op, self=self, values=values)
    entries = _entries(op, x, indices)
    target = x if spec is rules.SELF else copy_of(x)
    buffer, finish = accumulator(target) if accumulate else (target, lambda result: result)
    sizes, walk, flat, flat_walk = _layout(op, buffer, entries)
    gather_walk(buffer, v, flat, sizes, walk, broadcast_strides(v, sizes), flat_walk, 0, 1,
                mode="add" if accumulate else "scatter")
    finish(target)
    return target
