"""Sparse COO tensors: the impl, and the two primitives every sparse kernel is built from.

A COO tensor of size (s0, ..., s[k-1], d0, ...) stores

    indices  int64 [k, nnz]        column j: the sparse coordinates of entry j
    values   [nnz, d0, ...]        entry j's value (a dense block when there are dense dims)

Entries may repeat a coordinate: they add up. `coalesce()` sums the duplicates and sorts
the coordinates, which is what `is_coalesced()` promises.

Only two functions carry their own backward:

    make_coo(indices, values, size)   values -> sparse   grad: the sparse grad read at indices
    values_of(x)                      sparse -> values   grad: a sparse tensor with x's indices

Every sparse kernel (tensorplay/sparse/kernels.py) is written with these two and dense
ops on the values (index_select, index_add, exp...), so it can run *above* autograd, as a
Composite kernel does: the graph records the dense ops, and gradients reach the values of
a sparse tensor and the dense operands without one hand-written formula per op.
Coordinates are integers: they are computed with NumPy and never need a gradient.
"""
from __future__ import annotations

import numpy as np

from tensorplay import _dtype as dt
from tensorplay import _tensor_factory as factory
from tensorplay._formatting import OPTIONS, format_data
from tensorplay._generated import functional as F
from tensorplay._impl import TensorImpl, numel_of
from tensorplay._layout import sparse_coo, strided
from tensorplay.autograd.function import Function
from tensorplay.dispatch.keys import DispatchKey
from tensorplay.errors import DeviceError, DimError, LayoutError, ShapeError, fmt_shape

SPARSE_KEYS = (1 << DispatchKey.Sparse) | (1 << DispatchKey.AutogradSparse)


class SparseTensorImpl(TensorImpl):
    """A tensor made of an indices tensor and a values tensor; it has no storage and no
    strides. Its key set routes every op to the Sparse key, ahead of the dense backends."""

    __slots__ = ("indices", "values", "coalesced")
    layout = sparse_coo

    def __init__(self, indices, values, sizes, coalesced):
        v = values._impl
        super().__init__(None, tuple(sizes), (), 0, v.dtype, v.device, inference=v.inference,
                         contiguous=False)      # not contiguous: what torch answers
        self.indices = indices
        self.values = values
        self.coalesced = coalesced

    # A sparse tensor has no strided memory: reading it is an error, not a wrong answer.
    # (TensorImpl.__init__ assigns both; the setters drop what it gives.)
    @property
    def strides(self):
        raise LayoutError("sparse tensors do not have strides", op="stride", arg="self")

    @strides.setter
    def strides(self, value):
        pass

    @property
    def storage(self):
        raise LayoutError("Cannot access storage of a sparse tensor (layout sparse_coo)",
                          op="untyped_storage", arg="self")

    @storage.setter
    def storage(self, value):
        pass

    def key_set(self):
        if self.inference:
            return 1 << DispatchKey.Sparse
        return SPARSE_KEYS

    def array(self):
        raise LayoutError("can't convert a sparse tensor to numpy; use .to_dense() first",
                          op="numpy", arg="self")

    @property
    def sparse_dim(self):
        return self.indices._impl.sizes[0]

    @property
    def nnz(self):
        return self.values._impl.sizes[0]


def is_sparse(t):
    return t._impl.layout is sparse_coo


def require_sparse(op, t, arg="self"):
    if t._impl.layout is not sparse_coo:
        raise LayoutError(f"{op}(): expected a sparse COO tensor for argument '{arg}', but got "
                          f"layout strided", op=op, arg=arg)
    return t._impl


# ---- coordinates (NumPy, no gradient) ---------------------------------------------------
def index_array(t):
    """The int64 [sparse_dim, nnz] coordinates of a sparse tensor, as NumPy."""
    return t._impl.indices._impl.array()


def linearize(idx, sparse_sizes):
    """Row-major position of each coordinate column in the sparse dims: one int per entry,
    so 'same coordinate' becomes 'same integer' and lexicographic order becomes `<`."""
    lin = np.zeros(idx.shape[1], dtype=np.int64)
    for d, size in enumerate(sparse_sizes):
        lin = lin * size + idx[d]
    return lin


def delinearize(lin, sparse_sizes):
    """The inverse of `linearize`: a [sparse_dim, n] int64 array."""
    if not sparse_sizes:
        return np.zeros((0, len(lin)), dtype=np.int64)
    return np.stack(np.unravel_index(lin, sparse_sizes)).astype(np.int64).reshape(
        len(sparse_sizes), len(lin))


def long_tensor(arr):
    return factory.from_numpy(np.ascontiguousarray(arr, dtype=np.int64))


def zeros_for(values, rows):
    """Zeros shaped like `rows` entries of `values` (same dtype and device)."""
    shape = (rows,) + tuple(values._impl.sizes[1:])
    return factory.zeros(shape, dtype=values._impl.dtype, device=values._impl.device)


# ---- the two primitives -----------------------------------------------------------------
class MakeCoo(Function):
    """values -> a sparse tensor with these indices. Backward: d(out)/d(values[j]) reads
    the output gradient at coordinate j (duplicates each get the whole gradient there)."""

    @staticmethod
    def forward(ctx, values, indices, size, coalesced):
        ctx.indices = indices
        ctx.size = size
        impl = SparseTensorImpl(indices, values.detach(), size, coalesced)
        return factory.wrap(impl)

    @staticmethod
    def backward(ctx, grad):
        return gather_at(grad, ctx.indices, ctx.size), None, None, None


class ValuesOf(Function):
    """A sparse tensor -> its values (entries in stored order, duplicates kept).
    Backward: the values' gradient becomes a sparse gradient with the tensor's pattern.

    NOTE: a sparse gradient means what a sparse tensor means: duplicates add up. The
    entries sharing a coordinate c all receive dL/dx[c], so each contributes its share
    dL/dx[c] / (number of entries at c); summed, they give dL/dx[c] once, and make_coo's
    backward reads that back for every one of them."""

    @staticmethod
    def forward(ctx, x):
        impl = x._impl
        ctx.indices = impl.indices
        ctx.size = impl.sizes
        ctx.coalesced = impl.coalesced
        ctx.shares = None if impl.coalesced else _shares(x)
        return impl.values.detach()

    @staticmethod
    def backward(ctx, grad):
        if ctx.shares is not None:
            grad = grad / ctx.shares.to(grad.dtype)
        return make_coo(ctx.indices, grad, ctx.size, ctx.coalesced)


def _shares(x):
    """How many entries of `x` share each entry's coordinate (None when none repeats),
    shaped to divide the values."""
    impl = x._impl
    lin = linearize(index_array(x), impl.sizes[:impl.sparse_dim])
    _, inverse, counts = np.unique(lin, return_inverse=True, return_counts=True)
    if not len(counts) or counts.max() <= 1:
        return None
    per_entry = counts[inverse.reshape(-1)].astype(np.float64)
    shape = (len(per_entry),) + (1,) * (len(impl.sizes) - impl.sparse_dim)
    return factory.from_numpy(per_entry.reshape(shape))


def make_coo(indices, values, size, coalesced):
    return MakeCoo.apply(values, indices, tuple(size), coalesced)


def values_of(x):
    return ValuesOf.apply(x)


def gather_at(grad, indices, size):
    """`grad` (dense or sparse, of shape `size`) read at each coordinate column of
    `indices`: a tensor shaped like the values. Built from differentiable ops, so a
    backward through make_coo can itself be differentiated."""
    sparse_dim = indices._impl.sizes[0]
    lin = linearize(indices._impl.array(), size[:sparse_dim])
    if grad._impl.layout is strided:
        rows = grad.reshape((numel_of(size[:sparse_dim]),) + tuple(size[sparse_dim:]))
        return rows.index_select(0, long_tensor(lin))
    g = coalesce(grad)
    glin = linearize(index_array(g), size[:sparse_dim])
    gvalues = values_of(g)
    pos = np.searchsorted(glin, lin)
    found = np.zeros(len(lin), dtype=bool)
    inside = pos < len(glin)
    found[inside] = glin[pos[inside]] == lin[inside]
    pick = np.where(found, pos, len(glin))        # a missing coordinate reads the zero row
    padded = F.cat([gvalues, zeros_for(gvalues, 1)])
    return padded.index_select(0, long_tensor(pick))


# ---- construction -----------------------------------------------------------------------
def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None,
                      requires_grad=False, check_invariants=None, is_coalesced=None):
    """A sparse COO tensor from coordinates and values, as `torch.sparse_coo_tensor`.

    Args:
        indices: int [sparse_dim, nnz] coordinates (a tensor or nested lists).
        values: [nnz, *dense_sizes] values (a tensor or nested lists).
        size: the full size; inferred from the largest coordinates when omitted.
        is_coalesced: promise that the coordinates are unique and sorted.
        check_invariants: accepted for PyTorch's signature; the coordinates are always
            checked against `size` here (a NumPy min/max, cheap next to any kernel).
    Returns:
        a tensor with `layout == tp.sparse_coo`. Gradients flow to `values`.

    >>> s = tp.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [3., 4., 5.], (2, 3))
    >>> s.to_dense()
    tensor([[0., 0., 3.],
            [4., 0., 5.]])
    """
    op = "sparse_coo_tensor"
    if not isinstance(indices, factory.Tensor):
        indices = factory.tensor(indices, dtype=dt.int64)
    elif indices._impl.dtype is not dt.int64:
        indices = indices.to(dt.int64)
    if not isinstance(values, factory.Tensor):
        values = factory.tensor(values, dtype=dtype)
    elif dtype is not None and values._impl.dtype is not dtype:
        values = values.to(dtype)
    if device is not None and str(device) != "cpu" or values._impl.device.type != "cpu":
        raise DeviceError(f"{op}(): sparse tensors live on the cpu, but got device "
                          f"'{device or values._impl.device}'", op=op, arg="device")
    if indices._impl.layout is not strided or values._impl.layout is not strided:
        raise LayoutError(f"{op}(): indices and values must be dense tensors", op=op)
    isizes, vsizes = indices._impl.sizes, values._impl.sizes
    if len(isizes) != 2:
        raise ShapeError(f"{op}(): argument 'indices' must be 2-D [sparse_dim, nnz], but got "
                         f"shape {fmt_shape(isizes)}", op=op, arg="indices")
    if len(vsizes) == 0 or vsizes[0] != isizes[1]:
        raise ShapeError(f"{op}(): argument 'values' must have nnz = {isizes[1]} rows (one per "
                         f"column of indices), but got shape {fmt_shape(vsizes)}",
                         op=op, arg="values")
    idx = indices.detach()._impl.array()
    sparse_dim = isizes[0]
    if size is None:
        top = idx.max(axis=1) + 1 if idx.shape[1] else np.zeros(sparse_dim, dtype=np.int64)
        size = tuple(int(s) for s in top) + tuple(vsizes[1:])
    size = tuple(int(s) for s in size)
    if len(size) != sparse_dim + len(vsizes) - 1 or size[sparse_dim:] != tuple(vsizes[1:]):
        raise ShapeError(f"{op}(): argument 'size' {fmt_shape(size)} does not fit indices "
                         f"{fmt_shape(isizes)} and values {fmt_shape(vsizes)}: expected "
                         f"{sparse_dim} sparse sizes followed by {fmt_shape(vsizes[1:])}",
                         op=op, arg="size")
    if idx.size:
        low, high = idx.min(axis=1), idx.max(axis=1)
        for d in range(sparse_dim):
            if low[d] < 0 or high[d] >= size[d]:
                bad = low[d] if low[d] < 0 else high[d]
                raise DimError(f"{op}(): argument 'indices' row {d} holds {bad}, out of range "
                               f"for size {size[d]} (expected 0 <= index < {size[d]})",
                               op=op, arg="indices")
    coalesced = isizes[1] <= 1 if is_coalesced is None else bool(is_coalesced)
    indices = indices.detach()
    if requires_grad:
        out = make_coo(indices, values.detach(), size, coalesced)
        out._impl.set_requires_grad(True)
        return out
    return make_coo(indices, values, size, coalesced)


# ---- conversions ------------------------------------------------------------------------
def coalesce(x):
    """Duplicates summed, coordinates sorted; `x` itself when it is coalesced already."""
    impl = require_sparse("coalesce", x)
    if impl.coalesced:
        return x
    sparse_sizes = impl.sizes[:impl.sparse_dim]
    unique, inverse = np.unique(linearize(index_array(x), sparse_sizes), return_inverse=True)
    values = values_of(x)
    summed = zeros_for(values, len(unique)).index_add(0, long_tensor(inverse.reshape(-1)),
                                                      values)
    return make_coo(long_tensor(delinearize(unique, sparse_sizes)), summed, impl.sizes, True)


def to_dense(x):
    """The dense tensor a sparse one stands for (duplicates add up)."""
    if x._impl.layout is strided:
        return x
    impl = x._impl
    sparse_sizes = impl.sizes[:impl.sparse_dim]
    values = values_of(x)
    lin = linearize(index_array(x), sparse_sizes)
    rows = zeros_for(values, numel_of(sparse_sizes)).index_add(0, long_tensor(lin), values)
    return rows.reshape(impl.sizes)


def to_sparse(t, sparse_dim=None):
    """A coalesced sparse tensor holding the nonzero entries of a dense one; with
    `sparse_dim`, the trailing dims stay dense (an entry is kept if any of it is nonzero)."""
    op = "to_sparse"
    if t._impl.layout is sparse_coo:
        return t
    sizes = t._impl.sizes
    sparse_dim = len(sizes) if sparse_dim is None else int(sparse_dim)
    if not 0 <= sparse_dim <= len(sizes):
        raise DimError(f"{op}(): argument 'sparse_dim' must be in [0, {len(sizes)}] for a "
                       f"{len(sizes)}-D tensor, but got {sparse_dim}", op=op, arg="sparse_dim")
    if t._impl.device.type != "cpu":
        raise DeviceError(f"{op}(): sparse tensors live on the cpu, but got device "
                          f"'{t._impl.device}'", op=op, arg="self")
    sparse_sizes = sizes[:sparse_dim]
    rows = t.reshape((numel_of(sparse_sizes),) + tuple(sizes[sparse_dim:]))
    arr = rows.detach()._impl.array()
    keep = np.nonzero(arr.reshape(arr.shape[0], -1).any(axis=1))[0].astype(np.int64)
    values = rows.index_select(0, long_tensor(keep))
    return make_coo(long_tensor(delinearize(keep, sparse_sizes)), values, sizes, True)


def sparse_mask(t, mask):
    """A coalesced sparse tensor: `t` read at the coordinates of the sparse `mask`."""
    op = "sparse_mask"
    mimpl = require_sparse(op, mask, "mask")
    if t._impl.layout is not strided:
        raise LayoutError(f"{op}(): argument 'self' must be a dense tensor, but got a sparse "
                          f"one", op=op, arg="self")
    if t._impl.sizes != mimpl.sizes:
        raise ShapeError(f"{op}(): argument 'mask' of shape {fmt_shape(mimpl.sizes)} must "
                         f"have the shape of 'self', {fmt_shape(t._impl.sizes)}",
                         op=op, arg="mask")
    m = coalesce(mask)
    indices = m._impl.indices
    return make_coo(indices, gather_at(t, indices, mimpl.sizes), mimpl.sizes, True)


# ---- printing ---------------------------------------------------------------------------
def sparse_repr(x):
    """PyTorch's layout: indices, values, then size, nnz, dtype, layout and grad_fn."""
    impl = x._impl
    indent = " " * len("tensor(")
    lines = [f"tensor(indices={_data(impl.indices, len('tensor(indices=tensor('))},",
             f"{indent}values={_data(impl.values, len('       values=tensor('))},"]
    tail = [f"size={tuple(impl.sizes)}", f"nnz={impl.nnz}"]
    if impl.dtype not in (dt.get_default_dtype(), dt.int64, dt.bool):
        tail.append(f"dtype=tensorplay.{impl.dtype.name}")
    tail.append("layout=tensorplay.sparse_coo")
    if impl.grad_fn is not None:
        tail.append(f"grad_fn=<{impl.grad_fn.name()}>")
    elif impl.requires_grad:
        tail.append("requires_grad=True")
    return "\n".join(lines) + "\n" + _wrapped(tail, indent) + ")"


def _wrapped(items, indent):
    """`a, b, c` from `indent` on, starting a new line where one would pass the width."""
    text = indent + items[0]
    line = len(text)
    for item in items[1:]:
        if line + len(item) + 2 > OPTIONS.linewidth:
            text += ",\n" + indent + item
            line = len(indent) + len(item)
        else:
            text += ", " + item
            line += len(item) + 2
    return text


def _data(t, indent):
    """`tensor([...])` with no dtype of its own (the tail names it), sized when empty."""
    arr = t.detach()._impl.array()
    body = format_data(arr, indent=indent)
    if arr.size == 0:
        body += f", size={tuple(arr.shape)}"
    return f"tensor({body})"
