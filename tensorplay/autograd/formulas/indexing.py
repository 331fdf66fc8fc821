"""Backward helpers for the indexing ops (see derivatives.yaml, section `indexing`).

The pattern throughout: what a forward op *reads* at some indices, its backward
*adds* into zeros at the same indices (gather -> scatter_add, index_select ->
index_add, index -> index_put(accumulate=True), take -> index_add on the flat
view); what a forward op *overwrites* gets a zero gradient there (`fill` with 0).
All of them are TensorPlay ops, so the backward is differentiable again.
"""
from __future__ import annotations

from tensorplay import _creation
from tensorplay import _dtype as dt
from tensorplay._generated import functional as F
from tensorplay._impl import contiguous_strides, numel_of
from tensorplay.autograd.formulas.core import sum_to
from tensorplay.kernel_support.checks import broadcast


def _zeros(sizes, like):
    return _creation.zeros(tuple(sizes), dtype=like.dtype, device=like.device)


def pad_to(grad, sizes):
    """`grad` in the leading corner of zeros of `sizes` (a scatter's `src` may be larger
    than its index; the elements no index reaches get no gradient)."""
    sizes = tuple(sizes)
    if tuple(grad.shape) == sizes:
        return grad
    out = _zeros(sizes, grad)
    corner = out
    for d, n in enumerate(grad.shape):
        corner = corner.slice(d, 0, n)
    corner.copy_(grad)
    return out


# NOTE: gather, take, masked_select and the source of index_add/index_copy read only the
# shape of the tensor they take, but PyTorch's formulas take the tensor itself, so it is
# saved and an in-place change of it before backward raises there. Saving it here too
# keeps the two libraries raising alike (which tensors a node saves is visible).
def gather_backward(grad, self, dim, index):
    return F.scatter_add(_zeros(self.shape, grad), dim, index, grad)


def gather_along_backward(grad, self, dim, index):
    """_gather_along, PyTorch's gather without index broadcasting: self is saved, as
    gather's is."""
    return F._scatter_add_along(grad, dim, index, self.shape)


def scatter_src_backward(grad, dim, index, src_sizes):
    return pad_to(grad.gather(dim, index), src_sizes)


def scatter_reduce_backward(grad, self, dim, index, src, reduce, include_self, result):
    """(grad_self, grad_src) of scatter_reduce, following PyTorch's formulas."""
    if reduce == "sum":
        grad_self, grad_src = grad, grad.gather(dim, index)
    elif reduce == "prod":
        grad_self, grad_src = _prod_backward(grad, self, dim, index, src, include_self, result)
    elif reduce == "mean":
        n = _creation.ones_like(grad) if include_self else _creation.zeros_like(grad)
        n = n.scatter_add(dim, index, _creation.ones_like(src))
        n = n.masked_fill(n == 0, 1)
        grad_self = grad / n
        grad_src = grad.gather(dim, index) / n.gather(dim, index)
    else:
        # amax / amin: the gradient is shared evenly by every value equal to the result.
        value = result.gather(dim, index)
        self_is_result = self == result
        src_is_result = src == value
        count = self_is_result.to(grad.dtype).scatter_add(dim, index,
                                                          src_is_result.to(grad.dtype))
        shared = grad / count
        grad_self = self_is_result * shared
        grad_src = src_is_result * shared.gather(dim, index)
    if not include_self:
        grad_self = grad_self.scatter(dim, index, 0)
    return grad_self, pad_to(grad_src, src.shape)


def _prod_backward(grad, self, dim, index, src, include_self, result):
    """d(product)/d(factor) = product of the other factors. Dividing the result by the
    factor fails for zeros, so (as PyTorch does) zeros are replaced by 1 before the
    product is taken again: that gives "the others" exactly where one zero sits."""
    masked_self = self.masked_fill(self == 0, 1)
    masked_self_result = masked_self.scatter_reduce(dim, index, src, "prod",
                                                    include_self=include_self)
    grad_self = grad * masked_self_result / masked_self
    src_zero = src == 0
    zeros_per_slot = _creation.zeros_like(grad).scatter_add(dim, index, src_zero.to(grad.dtype))
    single_zero = src_zero * (zeros_per_slot.gather(dim, index) == 1)
    masked_src_result = self.scatter_reduce(dim, index, src.masked_fill(single_zero, 1), "prod",
                                            include_self=include_self)
    grad_src = F.where(single_zero, (grad * masked_src_result).gather(dim, index),
                       (grad * result).gather(dim, index) / src.masked_fill(src_zero, 1))
    return grad_self, grad_src


def index_select_backward(grad, sizes, dim, index):
    return F.index_add(_zeros(sizes, grad), dim, index, grad)


def index_source_backward(grad, dim, index, source, alpha):
    """index_add / index_copy: the gradient of the slices that were written."""
    picked = grad.index_select(dim, index)
    if alpha != 1:
        picked = picked * alpha
    return picked.reshape(source.shape)


def filled_value_backward(grad, mask):
    """index_fill / masked_fill with a tensor value: the value went to every filled
    position once (repeated indices fill once), so its gradient is the sum of grad there.
    Selected by where (PyTorch's masked_select), not grad minus the unfilled part: a NaN
    or inf in the gradient of a position the value never reached must not leak in."""
    return F.where(mask, grad, 0).sum()


def masked_select_backward(grad, self, mask):
    self_sizes = tuple(self.shape)
    sizes = broadcast("masked_select", [("self", tuple(self_sizes)),
                                        ("mask", tuple(mask.shape))])
    return sum_to(_zeros(sizes, grad).masked_scatter(mask, grad), self_sizes)


def masked_scatter_source_backward(grad, mask, source_sizes):
    """The masked elements of grad, in order, then zeros for the source elements that
    were not used, in source's shape."""
    n = 1
    for s in source_sizes:
        n *= s
    return pad_to(grad.masked_select(mask), (n,)).view(tuple(source_sizes))


def take_backward(grad, self, index):
    sizes = tuple(self.shape)
    n = 1
    for s in sizes:
        n *= s
    flat = index.reshape(-1)
    flat = F.where(flat < 0, flat + n, flat)
    return F.index_add(_zeros((n,), grad), 0, flat, grad.reshape(-1)).view(tuple(sizes))


def index_backward(grad, sizes, indices):
    return F.index_put(_zeros(sizes, grad), indices, grad, accumulate=True)


def index_put_self_backward(grad, indices, accumulate):
    """Accumulating keeps self's values (gradient passes); overwriting replaces them."""
    if accumulate:
        return grad
    return F.index_put(grad, indices, _zeros((), grad))


def index_put_values_backward(grad, indices, values_sizes):
    return sum_to(F.index(grad, indices), values_sizes)


# ---- as_strided ----------------------------------------------------------------------
def _positions(sizes, strides, offset, device):
    """The storage position of each element of the view (sizes, strides, offset),
    row-major: offset + sum_d i_d * stride_d, built by broadcasting one arange per dim."""
    pos = _creation.full((), offset, dtype=dt.int64, device=device)
    ndim = len(sizes)
    for d, (size, stride) in enumerate(zip(sizes, strides)):
        shape = [1] * ndim
        shape[d] = size
        pos = pos + _creation.arange(size, device=device).view(shape) * stride
    return pos.expand(tuple(sizes))


def _extent(sizes, strides, offset):
    if any(s == 0 for s in sizes):
        return 0
    return offset + 1 + sum((s - 1) * st for s, st in zip(sizes, strides))


def as_strided_backward(grad, in_sizes, in_strides, in_offset, size, stride, storage_offset):
    """Route the gradient through the storage both views share: add grad into a
    storage-shaped buffer at the output's positions (overlapping output elements add
    up), then read the input's positions back. Where the input itself overlaps (an
    expanded tensor), each storage slot's gradient is shared by the elements reading it.

    It reads the input's geometry only (sizes, strides, storage offset: saved facts, as
    PyTorch saves TensorGeometry(self)), so an in-place change of the input after the
    call leaves the backward working; as_strided_, whose input the op itself changes,
    saves the geometry from before it."""
    in_sizes, in_strides = tuple(in_sizes), tuple(in_strides)
    out_offset = in_offset if storage_offset is None else storage_offset
    n = max(_extent(in_sizes, in_strides, in_offset), _extent(size, stride, out_offset))
    if numel_of(in_sizes) == 0:
        return _zeros(in_sizes, grad)
    out_pos = _positions(size, stride, out_offset, grad.device).reshape(-1)
    in_pos = _positions(in_sizes, in_strides, in_offset, grad.device)
    storage = F.index_add(_zeros((n,), grad), 0, out_pos, grad.reshape(-1))
    count = F.index_add(_zeros((n,), grad), 0, in_pos.reshape(-1),
                        _creation.ones(numel_of(in_sizes), dtype=grad.dtype,
                                       device=grad.device))
    storage = storage / count.masked_fill(count == 0, 1)
    return storage.take(in_pos)


def as_strided_scatter_backward(grad, in_sizes, in_strides, in_offset, src_sizes, size,
                                stride, storage_offset):
    """(grad_self, grad_src) of as_strided_scatter, through the storage as above: the
    result has self's geometry (contiguous where self overlaps: it was cloned plainly);
    its elements at the positions src was written to came from src, the others from self.

    NOTE: PyTorch (2.13) asserts that self is contiguous when it requires grad, and its
    gradient for self is the part src overwrote instead of the rest; this one is the
    derivative of the forward (checked by gradcheck). It reads self's geometry only
    (saved facts, as PyTorch saves TensorGeometry(self))."""
    in_sizes, in_strides = tuple(in_sizes), tuple(in_strides)
    if any(st == 0 and sz > 1 for sz, st in zip(in_sizes, in_strides)):
        in_strides, in_offset = contiguous_strides(in_sizes), 0
    out_offset = in_offset if storage_offset is None else storage_offset
    if numel_of(in_sizes) == 0 or numel_of(size) == 0:
        return grad.clone() if numel_of(size) == 0 else _zeros(in_sizes, grad), \
            _zeros(src_sizes, grad)
    n = max(_extent(in_sizes, in_strides, in_offset), _extent(size, stride, out_offset))
    in_pos = _positions(in_sizes, in_strides, in_offset, grad.device)
    src_pos = _positions(size, stride, out_offset, grad.device).reshape(-1)
    written = _zeros((n,), grad).index_fill(0, src_pos, 1).take(in_pos)
    storage = F.index_add(_zeros((n,), grad), 0, in_pos.reshape(-1), grad.reshape(-1))
    return grad * (1 - written), storage.take(src_pos).reshape(tuple(src_sizes))


def index_reduce_backward(grad, self, dim, index, source, reduce, include_self, result):
    """(grad_self, grad_source) of index_reduce: scatter_reduce's, with the index vector
    spread over source's shape as the forward spreads it."""
    from tensorplay.composite.indexing import spread_index
    d = dim % max(self.dim(), 1)
    return scatter_reduce_backward(grad, self, d, spread_index(index, d, source), source,
                                   reduce, include_self, result)


# ---- tangents (forward mode) -----------------------------------------------------------
def scatter_reduce_jvp(self_p, self_t, dim, index, src_p, src_t, reduce, include_self,
                       result):
    """sum and mean are linear: the op on the tangents. amax/amin: the mean of the tangents
    of the values equal to the result (PyTorch's formula). prod (which PyTorch's forward
    mode lacks): each self element reaches only its own output and each src element only
    the output its index names, so J t = d_self * self_t + scatter_add(d_src * src_t),
    with d_self, d_src the backward's gradients for grad = 1."""
    if reduce in ("sum", "mean"):
        return self_t.scatter_reduce(dim, index, src_t, reduce, include_self=include_self)
    if reduce in ("amax", "amin"):
        value = result.gather(dim, index)
        self_is_result = self_p == result
        src_is_result = src_p == value
        count = self_is_result.to(self_t.dtype).scatter_reduce(
            dim, index, src_is_result.to(self_t.dtype), "sum", include_self=include_self)
        return F.where(self_is_result, self_t, 0.0).scatter_reduce(
            dim, index, F.where(src_is_result, src_t, 0.0), "sum",
            include_self=include_self) / count
    d_self, d_src = scatter_reduce_backward(_creation.ones_like(result), self_p, dim, index,
                                            src_p, reduce, include_self, result)
    return (d_self * self_t).scatter_add(dim, index, d_src * src_t)


def scatter_with_reduce_jvp(self_p, self_t, dim, index, src_p, src_t, reduce, result):
    """scatter(reduce='add' / 'multiply') is scatter_reduce('sum' / 'prod') keeping self."""
    return scatter_reduce_jvp(self_p, self_t, dim, index, src_p, src_t,
                              "sum" if reduce == "add" else "prod", True, result)


def scatter_value_reduce_jvp(self_t, dim, index, value, reduce):
    """Adding a constant leaves the tangent; multiplying by one scales it there."""
    if reduce == "add":
        return self_t.clone()
    return self_t.scatter(dim, index, value, reduce=reduce)


def index_reduce_jvp(self_p, self_t, dim, index, source_p, source_t, reduce, include_self,
                     result):
    """index_reduce is scatter_reduce with the index vector spread over source's shape."""
    from tensorplay.composite.indexing import spread_index
    d = dim % max(self_p.dim(), 1)
    return scatter_reduce_jvp(self_p, self_t, d, spread_index(index, d, source_p), source_p,
                              source_t, reduce, include_self, result)
