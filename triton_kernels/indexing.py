"""Indexing along one dimension on the `cuda` device: gather / scatter (and their
reductions), index_select / index_add / index_copy / index_fill, take, embedding and
its backward. Each builds a walk for triton_kernels/_indexing.py's kernels:

    op                  walk over       out / src / idx walked at            indexed
    gather              index.shape     out, self (dim 0), index             self
    index_select        out.shape       out, self (dim 0), index on dim only self
    take                index.shape     out, -, index                        self.flat
    embedding           [*idx, D]       out, weight column, idx row          weight
    scatter, _add       index.shape     self (dim 0), src, index             self
    index_copy, _add    source.shape    self (dim 0), source, index on dim   self
    index_fill          self, dim=len   self (dim 0), 0-dim value, index     self

("dim 0": the stride along `dim` is 0 in the walk; the index value times the real stride
replaces it.) Sums use atomic adds (triton_kernels._indexing.accumulator gives half
types a float32 buffer); prod/amax/amin/mean use the deterministic reduce_kernel.
"""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay.kernel_support.arguments import fills_nothing, reads_no_index, scatter_params
from tensorplay.kernel_support.checks import (
    SELF, broadcast, check_masked_scatter_count, is_mask, wrap_dim,
)
from tensorplay.kernel_support.ops import call_below_autograd, shape_rule
from tensorplay.library import kernel
from triton_kernels._indexing import (
    accumulator, as_1d, atomic_dtype, check_in_range, compact, copy_of, gather_walk,
    reduce_walk, value_tensor, zeroed,
)
from triton_kernels._launch import broadcast_strides, new_tensor, operands
from triton_kernels.pointwise import run


def _strides(t):
    return list(t._impl.strides)


def _without(t, d):
    """t's strides with dimension d's set to 0 (the index supplies that coordinate)."""
    strides = _strides(t)
    strides[d] = 0
    return strides


def _along(t, index, d):
    """A vector index's walk strides over a tensor of t's rank: its stride on d only."""
    strides = [0] * len(t._impl.sizes)
    strides[d] = index._impl.strides[0] if index._impl.sizes else 0
    return strides


def add_walk(target, values, idx, sizes, value_strides, idx_strides, d):
    """target[.., idx, ..] += values along d with atomic adds, through a buffer when
    target's dtype has no atomics or target is not contiguous."""
    buffer, finish = accumulator(target)
    gather_walk(buffer, values, idx, sizes, _without(buffer, d), value_strides, idx_strides,
                buffer._impl.sizes[d], buffer._impl.strides[d], mode="add")
    finish(target)


# ---- gather / take ---------------------------------------------------------------------
def _gather(op, self, dim, index, dtype, allow_negative=False):
    device, (x, idx) = operands(op, self=self, index=index)
    x, idx = as_1d(x), as_1d(idx)
    d = wrap_dim(op, dim, len(x._impl.sizes))
    size = x._impl.sizes[d]
    check_in_range(op, idx, size, d, allow_negative=allow_negative)
    out = new_tensor(index._impl.sizes, dtype, device)
    # a size-1 dim of self broadcasts against the index (take_along_dim's rule)
    src_strides = [0 if s == 1 else st for s, st in zip(x._impl.sizes, _without(x, d))]
    gather_walk(as_1d(out), x, idx, idx._impl.sizes, _strides(as_1d(out)), src_strides,
                _strides(idx), size, x._impl.strides[d])
    return out


def gather(self, dim, index, sparse_grad):
    spec = shape_rule("indexing.gather")("gather", (self, dim, index, sparse_grad))
    return _gather("gather", self, dim, index, spec.dtype)


def gather_along(self, dim, index):
    spec = shape_rule("indexing.gather_along")("_gather_along", (self, dim, index))
    if not self._impl.sizes:
        operands("_gather_along", self=self, index=index)
        return copy_of(self, spec.dtype)
    # NumPy's take_along_axis (the CPU kernel) counts negative indices from the end
    return _gather("_gather_along", self, dim, index, spec.dtype, allow_negative=True)


def take(self, index):
    """self viewed as 1-D, indexed by `index` (negative values count from the end)."""
    spec = shape_rule("indexing.take")("take", (self, index))
    device, (x, idx) = operands("take", self=self, index=index)
    flat = x.reshape([-1])
    n = flat._impl.sizes[0]
    check_in_range("take", idx, n, 0, allow_negative=True)
    out = new_tensor(spec.sizes, spec.dtype, device)
    idx = as_1d(idx)
    gather_walk(as_1d(out), flat, idx, idx._impl.sizes, _strides(as_1d(out)),
                [0] * len(idx._impl.sizes), _strides(idx), n, flat._impl.strides[0])
    return out


def select(x, d, idx):
    """The slices of x at the (already checked) vector idx along d: index_select's walk,
    also repeat_interleave's."""
    sizes = list(x._impl.sizes)
    sizes[d] = idx._impl.numel()
    out = new_tensor(sizes, x._impl.dtype, x._impl.device)
    gather_walk(out, x, idx, sizes, _strides(out), _without(x, d), _along(x, idx, d),
                x._impl.sizes[d], x._impl.strides[d])
    return out


def index_select(self, dim, index):
    spec = shape_rule("indexing.index_select")("index_select", (self, dim, index))
    _, (x, idx) = operands("index_select", self=self, index=index)
    x = as_1d(x)
    d = wrap_dim("index_select", dim, len(self._impl.sizes))
    check_in_range("index_select", idx, x._impl.sizes[d], d)
    return select(x, d, idx).view(spec.sizes)


# ---- scatter ---------------------------------------------------------------------------
def _scatter(op, self, dim, index, src, reduce=None, include_self=True):
    """scatter (reduce None), scatter_add / scatter(reduce='add') / scatter_reduce 'sum'
    (atomic adds), and the other reductions (reduce_kernel). A `src` that is a number
    is a 0-dim tensor walked at stride 0."""
    is_tensor = getattr(src, "_impl", None) is not None
    device, (x, idx, s) = operands(op, self=self, index=index, src=src if is_tensor else None)
    d = wrap_dim(op, dim, len(self._impl.sizes))
    x, idx = as_1d(x), as_1d(idx)
    check_in_range(op, idx, x._impl.sizes[d], d)
    target = x if op.endswith("_") else copy_of(x)
    values = as_1d(s) if is_tensor else value_tensor(src, self._impl.dtype, device)
    value_strides = _strides(values) if is_tensor else [0] * len(idx._impl.sizes)
    sizes = idx._impl.sizes
    if reduce is None:
        gather_walk(target, values, idx, sizes, _without(target, d), value_strides,
                    _strides(idx), target._impl.sizes[d], target._impl.strides[d],
                    mode="scatter")
    elif reduce == "sum":
        if not include_self:     # the places written start from 0 instead of self
            gather_walk(target, value_tensor(0, target._impl.dtype, device), idx, sizes,
                        _without(target, d), [0] * len(sizes), _strides(idx),
                        target._impl.sizes[d], target._impl.strides[d], mode="scatter")
        add_walk(target, values, idx, sizes, value_strides, _strides(idx), d)
    else:
        reduce_walk(target, values, idx, d, reduce, include_self)
    return self if op.endswith("_") else target.view(self._impl.sizes)


_LEGACY = {"add": "sum", "multiply": "prod"}    # scatter(reduce=) names -> scatter_reduce's


@kernel(family=True)
def scatter(op, self, dim, index, *params):
    """scatter and scatter_ (src or value, with an optional reduce), and scatter_add and
    scatter_add_ (reduce 'sum'); their parameters: scatter_params."""
    shape_rule("indexing.scatter")(op, (self, dim, index) + params)
    src, reduce = scatter_params(op, params)
    return _scatter(op, self, dim, index, src, _LEGACY[reduce] if reduce else None)


@kernel(family=True)
def scatter_reduce(op, self, dim, index, src, reduce, include_self):
    """scatter_reduce and scatter_reduce_."""
    shape_rule("indexing.scatter_reduce")(op, (self, dim, index, src, reduce, include_self))
    return _scatter(op, self, dim, index, src, reduce, include_self)


def scatter_add_along(self, dim, index, sizes):
    """zeros(sizes), then out[..., index[..., i, ...], ...] += self[..., i, ...] along dim."""
    op = "_scatter_add_along"
    spec = shape_rule("indexing.scatter_add_along")(op, (self, dim, index, sizes))
    device, (x, idx) = operands(op, self=self, index=index)
    if not x._impl.sizes:
        return copy_of(x, spec.dtype)
    d = wrap_dim(op, dim, len(x._impl.sizes))
    # np.add.at (the CPU kernel) counts negative indices from the end
    check_in_range(op, idx, spec.sizes[d], d, allow_negative=True)
    result = zeroed(spec.sizes, atomic_dtype(spec.dtype), device)
    add_walk(result, x, idx, x._impl.sizes, _strides(x), _strides(idx), d)
    return result if result._impl.dtype is spec.dtype else copy_of(result, spec.dtype)


# ---- index_add / index_copy / index_fill -----------------------------------------------
def _index_source(op, self, dim, index, source, alpha=None):
    """index_copy (alpha None: plain stores) and index_add (atomic adds of alpha*source)."""
    device, (x, idx, src) = operands(op, self=self, index=index, source=source)
    d = wrap_dim(op, dim, len(self._impl.sizes))
    x = as_1d(x)
    target = x if op.endswith("_") else copy_of(x)
    if reads_no_index(op, self, source):
        return self if op.endswith("_") else target.view(self._impl.sizes)
    check_in_range(op, idx, x._impl.sizes[d], d)
    src = as_1d(src)
    if alpha is not None and alpha != 1:
        src = call_below_autograd("mul.Scalar", src, alpha)
    sizes, along = src._impl.sizes, _along(x, idx, d)
    if alpha is None:
        gather_walk(target, src, idx, sizes, _without(target, d), _strides(src), along,
                    target._impl.sizes[d], target._impl.strides[d], mode="scatter")
    else:
        add_walk(target, src, idx, sizes, _strides(src), along, d)
    return self if op.endswith("_") else target.view(self._impl.sizes)


@kernel(family=True)
def index_add(op, self, dim, index, source, alpha):
    """index_add and index_add_."""
    shape_rule("indexing.index_add")(op, (self, dim, index, source, alpha))
    return _index_source(op, self, dim, index, source, alpha)


@kernel(family=True)
def index_copy(op, self, dim, index, source):
    """index_copy and index_copy_."""
    shape_rule("indexing.index_copy")(op, (self, dim, index, source))
    return _index_source(op, self, dim, index, source)


@kernel(family=True)
def index_fill(op, self, dim, index, value):
    """index_fill and index_fill_, the value a Scalar or a 0-dim Tensor."""
    shape_rule("indexing.index_fill")(op, (self, dim, index, value))
    is_tensor = getattr(value, "_impl", None) is not None
    device, (x, idx, v) = operands(op, self=self, index=index,
                                   value=value if is_tensor else None)
    d = wrap_dim(op, dim, len(self._impl.sizes))
    x = as_1d(x)
    if fills_nothing(op, self, dim):
        return self if op.endswith("_") else copy_of(x).view(self._impl.sizes)
    # index_fill alone among these accepts negative indices, as in PyTorch
    check_in_range(op, idx, x._impl.sizes[d], d, allow_negative=True)
    target = x if op.endswith("_") else copy_of(x)
    fill = value_tensor(v if is_tensor else value, self._impl.dtype, device)
    sizes = list(x._impl.sizes)
    sizes[d] = idx._impl.numel()
    gather_walk(target, fill, idx, sizes, _without(target, d), [0] * len(sizes),
                _along(x, idx, d), target._impl.sizes[d], target._impl.strides[d],
                mode="scatter")
    return self if op.endswith("_") else target.view(self._impl.sizes)


def _running_count(keep):
    """(count, pos): the inclusive cumsum of the flat mask `keep` and its total."""
    pos = call_below_autograd("cumsum", keep.reshape([-1]), 0, dt.int64)
    count = pos[-1].item() if keep._impl.numel() else 0    # host sync: the output's size
    return count, pos


def _flat_mask(mask, sizes):
    """The mask broadcast to `sizes`, as a new contiguous 1-D tensor."""
    return copy_of(mask.expand(sizes)).reshape([-1])


# ---- masked_fill -----------------------------------------------------------------------
@kernel(family=True)
def masked_fill(op, self, mask, value):
    """masked_fill and masked_fill_, the value a Scalar or a 0-dim Tensor."""
    spec = shape_rule("indexing.masked_fill")(op, (self, mask, value))
    is_tensor = getattr(value, "_impl", None) is not None
    device, (x, m, v) = operands(op, self=self, mask=mask, value=value if is_tensor else None)
    fill = value_tensor(v if is_tensor else value, self._impl.dtype, device)
    out = self if spec is SELF else new_tensor(spec.sizes, spec.dtype, device)
    return run("where", out, (m, fill, x), self._impl.dtype)


# ---- masked_select / masked_scatter / nonzero ----------------------------------------------
def masked_select(self, mask):
    # The rule checks (devices, a bool mask, shapes that broadcast) and answers that the
    # length depends on the values; the kernel counts them.
    shape_rule("indexing.masked_select")("masked_select", (self, mask))
    sizes = broadcast("masked_select", [("self", self._impl.sizes), ("mask", mask._impl.sizes)])
    device, (x, m) = operands("masked_select", self=self, mask=mask)
    keep = _flat_mask(m, sizes)
    count, pos = _running_count(keep)
    out = new_tensor((count,), self._impl.dtype, device)
    return compact(out, copy_of(x.expand(sizes)).reshape([-1]), keep, pos)


@kernel(family=True)
def masked_scatter(op, self, mask, source):
    """masked_scatter and masked_scatter_."""
    spec = shape_rule("indexing.masked_scatter")(op, (self, mask, source))
    device, (x, m, src) = operands(op, self=self, mask=mask, source=source)
    sizes = self._impl.sizes if spec is SELF else spec.sizes
    keep = _flat_mask(m, sizes)
    count, pos = _running_count(keep)
    check_masked_scatter_count(op, count, source)
    target = self if spec is SELF else copy_of(x.expand(sizes))
    if count:
        # Every element reads source[pos - 1]; before the first kept one that is -1,
        # which the kernel wraps to source's last element (in bounds, and discarded
        # by the `where` below).
        flat = src.reshape([-1])
        taken = new_tensor(sizes, self._impl.dtype, device)
        rows = taken.reshape([-1])
        before = call_below_autograd("sub.Scalar", pos, 1, 1)
        gather_walk(rows, flat, before, [keep._impl.numel()], [1], [0], [1],
                    flat._impl.numel(), flat._impl.strides[0])
        run("where", target, (keep.view(sizes), taken, target), self._impl.dtype)
    return target


def nonzero(self):
    """The coordinates of the non-zero elements, one row each, in row-major order: the
    flat positions compacted, then split into coordinates by pointwise // and %."""
    device, (x,) = operands("nonzero", self=self)
    keep = call_below_autograd("ne.Scalar", x, 0).reshape([-1])
    count, pos = _running_count(keep)
    sizes = x._impl.sizes
    out = new_tensor((count, len(sizes)), dt.int64, device)
    if count and sizes:
        flat = compact(new_tensor((count,), dt.int64, device), None, keep, pos, index=True)
        for k in range(len(sizes) - 1, -1, -1):
            column = out.select(1, k)
            coordinate = call_below_autograd("remainder.Scalar", flat, sizes[k])
            run("copy", column, (coordinate,), dt.int64)
            flat = call_below_autograd("floor_divide.Scalar", flat, sizes[k])
    return out


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
        if is_mask(t):
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
        wrapped = call_below_autograd("remainder.Scalar", t, max(sizes[d], 1))
        term = call_below_autograd("mul.Scalar", wrapped, strides[d])
        flat = term if flat is None else call_below_autograd("add.Tensor", flat, term, 1)
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
    spec = shape_rule("indexing.index")("index", (self, indices))
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
    spec = shape_rule("indexing.index_put")(op, (self, indices, values, accumulate))
    device, (x, v) = operands(op, self=self, values=values)
    entries = _entries(op, x, indices)
    target = x if spec is SELF else copy_of(x)
    buffer, finish = accumulator(target) if accumulate else (target, lambda result: result)
    sizes, walk, flat, flat_walk = _layout(op, buffer, entries)
    gather_walk(buffer, v, flat, sizes, walk, broadcast_strides(v, sizes), flat_walk, 0, 1,
                mode="add" if accumulate else "scatter")
    finish(target)
    return target
