"""Indexing along one dimension on the `cuda` device: gather / scatter (and their
reductions), index_select / index_add / index_copy / index_fill, take, embedding and
its backward. Each builds a walk for triton_kernels/indexing.py's kernels:

    op                  walk over       out / src / idx walked at            indexed
    gather              index.shape     out, self (dim 0), index             self
    index_select        out.shape       out, self (dim 0), index on dim only self
    take                index.shape     out, -, index                        self.flat
    embedding           [*idx, D]       out, weight column, idx row          weight
    scatter, _add       index.shape     self (dim 0), src, index             self
    index_copy, _add    source.shape    self (dim 0), source, index on dim   self
    index_fill          self, dim=len   self (dim 0), 0-dim value, index     self

("dim 0": the stride along `dim` is 0 in the walk; the index value times the real stride
replaces it.) Sums use atomic adds (triton_kernels.indexing.accumulator gives half
types a float32 buffer); prod/amax/amin/mean use the deterministic reduce_kernel.
"""
from __future__ import annotations

from cpu_kernels import nn_misc      # its index check, for the identical error on a bad index
from tensorplay._generated import functional as F
from tensorplay.library import kernel
from tensorplay.meta import indexing as rules
from tensorplay.meta import nn_layers as nn_rules
from tensorplay.meta import reduction as reduce_rules
from tensorplay.meta.rules import wrap_dim
from triton_kernels._launch import new_tensor, operands
from triton_kernels.indexing import (
    accumulator, as_1d, atomic_dtype, check_in_range, copy_of, gather_walk, reduce_walk,
    value_tensor, zeroed,
)


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
    spec = rules.gather("gather", (self, dim, index, sparse_grad))
    return _gather("gather", self, dim, index, spec.dtype)


def gather_along(self, dim, index):
    spec = reduce_rules.gather_along("_gather_along", (self, dim, index))
    if not self._impl.sizes:
        operands("_gather_along", self=self, index=index)
        return copy_of(self, spec.dtype)
    # NumPy's take_along_axis (the CPU kernel) counts negative indices from the end
    return _gather("_gather_along", self, dim, index, spec.dtype, allow_negative=True)


def take(self, index):
    """self viewed as 1-D, indexed by `index` (negative values count from the end)."""
    spec = rules.take("take", (self, index))
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
    spec = rules.index_select("index_select", (self, dim, index))
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
    scatter_add_ (reduce 'sum'); their parameters: rules.scatter_params."""
    rules.scatter(op, (self, dim, index) + params)
    src, reduce = rules.scatter_params(op, params)
    return _scatter(op, self, dim, index, src, _LEGACY[reduce] if reduce else None)


@kernel(family=True)
def scatter_reduce(op, self, dim, index, src, reduce, include_self):
    """scatter_reduce and scatter_reduce_."""
    rules.scatter_reduce(op, (self, dim, index, src, reduce, include_self))
    return _scatter(op, self, dim, index, src, reduce, include_self)


def scatter_add_along(self, dim, index, sizes):
    """zeros(sizes), then out[..., index[..., i, ...], ...] += self[..., i, ...] along dim."""
    op = "_scatter_add_along"
    spec = reduce_rules.scatter_add_along(op, (self, dim, index, sizes))
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
    check_in_range(op, idx, x._impl.sizes[d], d)
    target = x if op.endswith("_") else copy_of(x)
    src = as_1d(src)
    if alpha is not None and alpha != 1:
        src = F.mul(src, alpha)
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
    rules.index_add(op, (self, dim, index, source, alpha))
    return _index_source(op, self, dim, index, source, alpha)


@kernel(family=True)
def index_copy(op, self, dim, index, source):
    """index_copy and index_copy_."""
    rules.index_copy(op, (self, dim, index, source))
    return _index_source(op, self, dim, index, source)


@kernel(family=True)
def index_fill(op, self, dim, index, value):
    """index_fill and index_fill_, the value a Scalar or a 0-dim Tensor."""
    rules.index_fill(op, (self, dim, index, value))
    is_tensor = getattr(value, "_impl", None) is not None
    device, (x, idx, v) = operands(op, self=self, index=index,
                                   value=value if is_tensor else None)
    d = wrap_dim(op, dim, len(self._impl.sizes))
    x = as_1d(x)
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


# ---- embedding -------------------------------------------------------------------------
def _check_embedding_indices(op, indices, num):
    check_in_range(op, indices, num, 0, arg="indices",
                   raise_from=lambda host: nn_misc._indices(op, indices.cpu(), num, "indices"))


def embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse):
    """out[..., :] = weight[indices[...], :]: a gather over [*indices.shape, D]."""
    spec = nn_rules.embedding("embedding", (weight, indices, padding_idx, scale_grad_by_freq,
                                            sparse))
    device, (w, idx) = operands("embedding", weight=weight, indices=indices)
    num = w._impl.sizes[0]
    _check_embedding_indices("embedding", idx, num)
    out = new_tensor(spec.sizes, spec.dtype, device)
    rank = len(idx._impl.sizes)
    gather_walk(out, w, idx, spec.sizes, _strides(out), [0] * rank + [w._impl.strides[1]],
                _strides(idx) + [0], num, w._impl.strides[0])
    return out


def embedding_dense_backward(grad_output, indices, num_weights, padding_idx,
                             scale_grad_by_freq):
    """grad_weight[indices[i]] += grad_output[i] (/ count[indices[i]]) by atomic adds into
    a float32 (float64) buffer; the padding row is zeroed afterwards."""
    op = "embedding_dense_backward"
    spec = nn_rules.embedding_dense_backward(op, (grad_output, indices, num_weights,
                                                  padding_idx, scale_grad_by_freq))
    device, (g, idx) = operands(op, grad_output=grad_output, indices=indices)
    _check_embedding_indices(op, idx, num_weights)
    acc = atomic_dtype(spec.dtype)
    width = g._impl.sizes[-1]
    rows = idx._impl.numel()
    g = g.reshape([rows, width])
    idx = idx.reshape([rows])
    if scale_grad_by_freq and rows:
        counts = zeroed((num_weights,), acc, device)
        one = value_tensor(1, acc, device)
        gather_walk(counts, one, idx, [rows], [0], [0], _strides(idx), num_weights, 1,
                    mode="add")
        per_row = new_tensor((rows, 1), acc, device)
        gather_walk(per_row, counts, idx, [rows], [1], [0], _strides(idx), num_weights, 1)
        g = F.div(copy_of(g, acc), per_row)
    result = zeroed((num_weights, width), acc, device)
    gather_walk(result, g, idx, [rows, width], [0, 1], _strides(g), _strides(idx) + [0],
                num_weights, width, mode="add")
    if 0 <= padding_idx < num_weights:
        result.narrow(0, padding_idx, 1).fill_(0)
    return result if acc is spec.dtype else copy_of(result, spec.dtype)
