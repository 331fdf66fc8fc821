"""The kernels of the Sparse dispatch key, named in ops.yaml (`Sparse: kernels.add`).

Each kernel is a decomposition into the two primitives of tensorplay/sparse/coo.py
(`make_coo`, `values_of`) and dense ops on the values, with the coordinates computed in
NumPy. `tensorplay/_backend_loading.py` registers every one of them at `AutogradSparse` as well,
where it runs above autograd (like a Composite kernel): the dense ops record the graph, so
no op here needs a backward formula of its own.

The layout of the result follows PyTorch:

    sparse + sparse -> sparse      dense + sparse -> dense      sparse + dense -> error
    sparse * sparse -> sparse (the common coordinates)          sparse * dense -> sparse
    sparse @ dense  -> dense       sum() -> dense               sum(dims) -> sparse
    relu / abs / sqrt: on the coalesced values (duplicates add up first); neg: on each entry
"""
from __future__ import annotations

import numpy as np

from tensorplay import _dtype as dt
from tensorplay import _tensor_factory as factory
from tensorplay._device import device as Device
from tensorplay._frontdoor import wrap_dim, wrap_dims
from tensorplay._generated import functional as F
from tensorplay._layout import sparse_coo
from tensorplay.composite.pointwise import div_scalar, mul_scalar  # noqa: F401 (ops.yaml)
from tensorplay.errors import (
    ArgumentError, DeviceError, DimError, LayoutError, ShapeError, fmt_shape,
)
from tensorplay.sparse.coo import (
    SparseTensorImpl, coalesce, delinearize, gather_at, index_array, linearize, long_tensor,
    make_coo, require_sparse, to_dense, to_sparse, values_of, zeros_for,
)


def _sparse(t):
    return t._impl.layout is sparse_coo


def _same_size(op, self, other):
    if self._impl.sizes != other._impl.sizes:
        raise ShapeError(f"{op}(): expected sizes of 'self' and 'other' to match, but "
                         f"{fmt_shape(self._impl.sizes)} != {fmt_shape(other._impl.sizes)}",
                         op=op, arg="other")
    if self._impl.sparse_dim != other._impl.sparse_dim:
        raise ShapeError(f"{op}(): expected 'self' and 'other' to have the same number of "
                         f"sparse dims, but got {self._impl.sparse_dim} and "
                         f"{other._impl.sparse_dim}", op=op, arg="other")


def _with_values(x, values, coalesced=None):
    """`x`'s coordinates with new values (an entry-wise op keeps the pattern)."""
    impl = x._impl
    return make_coo(impl.indices, values, impl.sizes,
                    impl.coalesced if coalesced is None else coalesced)


# ---- add, sub -------------------------------------------------------------------------
def add(self, other, alpha):
    return _add("add", self, other, alpha)


def sub(self, other, alpha):
    return _add("sub", self, other, -alpha)


def _add(op, self, other, alpha):
    if not _sparse(self):
        # dense + sparse: a dense result, so the sparse operand is scattered first
        return F.add(self, to_dense(other), alpha=alpha)
    if not _sparse(other):
        raise LayoutError(f"{op}(sparse, dense) is not supported. Use {op}(dense, sparse) "
                          f"instead.", op=op, arg="other")
    _same_size(op, self, other)
    theirs = values_of(other)
    if alpha != 1:
        theirs = theirs * alpha
    indices = np.concatenate([index_array(self), index_array(other)], axis=1)
    out = make_coo(long_tensor(indices), F.cat([values_of(self), theirs]),
                   self._impl.sizes, False)
    # Two coalesced operands merge into a coalesced result, as PyTorch's do.
    if self._impl.coalesced and other._impl.coalesced:
        return coalesce(out)
    return out


def add_(self, other, alpha):
    if not _sparse(self):
        return self.add_(to_dense(other), alpha=alpha)
    result = _add("add_", self, other, alpha)
    impl = self._impl
    impl.indices = result._impl.indices
    impl.values = result._impl.values
    impl.coalesced = result._impl.coalesced
    if not impl.inference:
        impl.version.value += 1
    return self


# ---- mul, div ---------------------------------------------------------------------------
def mul(self, other):
    if not _sparse(self):
        self, other = other, self          # the product is commutative
    if _sparse(other):
        return _mul_sparse(self, other)
    if other._impl.sizes == ():
        return _with_values(self, values_of(self) * other)
    sizes = self._impl.sizes
    try:
        full = other.expand(sizes)
    except (ShapeError, RuntimeError, ValueError):
        raise ShapeError(f"mul(): the dense operand of shape {fmt_shape(other._impl.sizes)} "
                         f"does not broadcast to the sparse operand's shape {fmt_shape(sizes)}",
                         op="mul", arg="other") from None
    return _with_values(self, values_of(self) * gather_at(full, self._impl.indices, sizes))


def _mul_sparse(self, other):
    """Only coordinates present in both survive: the product elsewhere is zero."""
    _same_size("mul", self, other)
    a, b = coalesce(self), coalesce(other)
    sparse_sizes = a._impl.sizes[:a._impl.sparse_dim]
    la = linearize(index_array(a), sparse_sizes)
    lb = linearize(index_array(b), sparse_sizes)
    common, ia, ib = np.intersect1d(la, lb, assume_unique=True, return_indices=True)
    values = (values_of(a).index_select(0, long_tensor(ia))
              * values_of(b).index_select(0, long_tensor(ib)))
    return make_coo(long_tensor(delinearize(common, sparse_sizes)), values, a._impl.sizes, True)


def div(self, other):
    if not _sparse(self) or _sparse(other) or other._impl.sizes != ():
        raise LayoutError(f"div(): sparse division requires a sparse dividend and a scalar or "
                          f"zero-dim dense divisor, but got a "
                          f"{'sparse' if _sparse(other) else 'dense'} divisor of shape "
                          f"{fmt_shape(other._impl.sizes)}", op="div", arg="other")
    return _with_values(self, values_of(self) / other)


# ---- entry-wise -------------------------------------------------------------------------
def neg(self):
    return _with_values(self, -values_of(self))


def _on_coalesced(self, fn):
    """fn(x) is not fn(a) + fn(b) when x = a + b: sum the duplicates first."""
    c = coalesce(self)
    return _with_values(c, fn(values_of(c)), coalesced=True)


def relu(self):
    return _on_coalesced(self, F.relu)


def abs(self):      # noqa: A001 -- the op's name
    return _on_coalesced(self, F.abs)


def sqrt(self):
    return _on_coalesced(self, F.sqrt)


def clone(self, memory_format=None):
    if memory_format is not None:       # PyTorch refuses any, preserve_format too
        raise ArgumentError(f"clone(): unsupported memory format option {memory_format} for "
                            f"a sparse tensor (argument 'memory_format')", op="clone",
                            arg="memory_format")
    impl = self._impl
    return make_coo(impl.indices.clone(), values_of(self).clone(), impl.sizes, impl.coalesced)


def detach(self):
    impl = self._impl
    return factory.wrap(SparseTensorImpl(impl.indices, impl.values.detach(), impl.sizes,
                                         impl.coalesced))


def to_dtype(self, dtype, non_blocking, copy):
    if dtype is self._impl.dtype and not copy:
        return self
    return _with_values(self, values_of(self).to(dtype))


def to_device(self, device, dtype, non_blocking, copy):
    if Device(device).type != "cpu":
        raise DeviceError(f"to(): sparse tensors live on the cpu, but got device '{device}'",
                          op="to", arg="device")
    return to_dtype(self, self._impl.dtype if dtype is None else dtype, non_blocking, copy)


def to_float(self):
    return to_dtype(self, dt.float32, False, False)


def to_double(self):
    return to_dtype(self, dt.float64, False, False)


# ---- matrix products --------------------------------------------------------------------
def mm(self, mat2):
    """sparse @ dense: out[r] += v * mat2[c] for each entry (r, c, v), one index_add."""
    if not _sparse(self):
        # dense @ sparse = (sparse^T @ dense^T)^T
        return mm(F.t(mat2), F.t(self)).t()
    if _sparse(mat2):
        # sparse @ sparse is sparse in PyTorch: the dense product's nonzeros
        return to_sparse(mm(self, to_dense(mat2)))
    impl = self._impl
    if len(impl.sizes) != 2 or impl.sparse_dim != 2:
        raise ShapeError(f"mm(): argument 'self' must be a 2-D sparse matrix with 2 sparse "
                         f"dims, but got shape {fmt_shape(impl.sizes)} with {impl.sparse_dim}",
                         op="mm", arg="self")
    if mat2.dim() != 2 or mat2._impl.sizes[0] != impl.sizes[1]:
        raise ShapeError(f"mm(): mat1 and mat2 shapes cannot be multiplied "
                         f"({impl.sizes[0]}x{impl.sizes[1]} and "
                         f"{'x'.join(str(s) for s in mat2._impl.sizes)})", op="mm", arg="mat2")
    idx = index_array(self)
    contributions = values_of(self).unsqueeze(1) * mat2.index_select(0, long_tensor(idx[1]))
    return zeros_for(contributions, impl.sizes[0]).index_add(0, long_tensor(idx[0]),
                                                             contributions)


def addmm(self, mat1, mat2, beta, alpha):
    product = mm(mat1, mat2)
    if alpha != 1:
        product = product * alpha
    if beta == 0:
        return product
    base = to_dense(self)
    return F.add(base if beta == 1 else base * beta, product)


def matmul(self, other):
    if self.dim() == 2 and other.dim() == 2:
        return mm(self, other)
    if self.dim() == 2 and other.dim() == 1 and not _sparse(other):
        return mm(self, other.unsqueeze(1)).squeeze(1)
    raise LayoutError(f"matmul(): sparse tensors support 2-D @ 2-D and 2-D @ 1-D products, "
                      f"but got shapes {fmt_shape(self._impl.sizes)} and "
                      f"{fmt_shape(other._impl.sizes)}", op="matmul", arg="self")


# ---- reductions -------------------------------------------------------------------------
def sum(self, dtype):      # noqa: A001 -- the op's name
    return values_of(self).sum(dtype=dtype)


def sum_dim(self, dim, keepdim, dtype):
    """Summing sparse dims drops their coordinate rows (then duplicates are coalesced);
    summing dense dims sums the values. All sparse dims gone: a dense result."""
    impl = self._impl
    ndim, sparse_dim = len(impl.sizes), impl.sparse_dim
    dims = range(ndim) if dim is None or len(dim) == 0 else dim
    dims = sorted(wrap_dims("sum", "dim", dims, ndim))
    values = values_of(self)
    if dtype is not None:
        values = values.to(dtype)
    dense_dims = [d - sparse_dim + 1 for d in dims if d >= sparse_dim]
    if dense_dims:
        values = values.sum(dense_dims, keepdim=keepdim)
    summed = [d for d in dims if d < sparse_dim]
    kept = [d for d in range(sparse_dim) if d not in summed]
    if not summed:
        sizes = tuple(1 if d in dims else s for d, s in enumerate(impl.sizes)
                      if keepdim or d not in dims)
        return make_coo(impl.indices, values, sizes, impl.coalesced)
    if not kept and not keepdim:
        return values.sum(0)
    idx = index_array(self)
    if keepdim:
        idx = idx.copy()
        idx[summed] = 0
    else:
        idx = idx[kept]
    sizes = tuple(1 if d in dims else s for d, s in enumerate(impl.sizes)
                  if keepdim or d not in dims)
    return coalesce(make_coo(long_tensor(idx), values, sizes, False))


# ---- shape ------------------------------------------------------------------------------
def transpose(self, dim0, dim1):
    impl = self._impl
    ndim, sparse_dim = len(impl.sizes), impl.sparse_dim
    d0 = wrap_dim("transpose", "dim0", dim0, ndim)
    d1 = wrap_dim("transpose", "dim1", dim1, ndim)
    sizes = list(impl.sizes)
    sizes[d0], sizes[d1] = sizes[d1], sizes[d0]
    if d0 < sparse_dim and d1 < sparse_dim:
        order = list(range(sparse_dim))
        order[d0], order[d1] = order[d1], order[d0]
        # swapped coordinate rows are no longer sorted
        coalesced = impl.coalesced and d0 == d1
        return make_coo(long_tensor(index_array(self)[order]), values_of(self), sizes,
                        coalesced)
    if d0 >= sparse_dim and d1 >= sparse_dim:
        values = values_of(self).transpose(d0 - sparse_dim + 1, d1 - sparse_dim + 1)
        return make_coo(impl.indices, values, sizes, impl.coalesced)
    raise LayoutError(f"transpose(): a sparse tensor can swap two sparse dims or two dense "
                      f"dims, but dim {d0} and dim {d1} mix them (sparse_dim={sparse_dim})",
                      op="transpose", arg="dim1")


def t(self):
    ndim = len(self._impl.sizes)
    if ndim > 2:
        raise ShapeError(f"t(): expects a tensor with <= 2 dimensions, but self is {ndim}D",
                         op="t", arg="self")
    if ndim < 2:
        return self
    return transpose(self, 0, 1)


def index_select(self, dim, index):
    """Along a sparse dim, output slot j gathers the entries whose coordinate is index[j]
    (in stored order) and renumbers that coordinate to j."""
    impl = self._impl
    ndim, sparse_dim = len(impl.sizes), impl.sparse_dim
    d = wrap_dim("index_select", "dim", dim, ndim)
    if _sparse(index) or index.dim() > 1 or index._impl.dtype.is_floating_point:
        raise ShapeError(f"index_select(): argument 'index' must be a dense 0-D or 1-D integer "
                         f"tensor, but got shape {fmt_shape(index._impl.sizes)} of "
                         f"{index._impl.dtype.name}", op="index_select", arg="index")
    wanted = index.reshape(-1)._impl.array().astype(np.int64)
    if wanted.size and (wanted.min() < 0 or wanted.max() >= impl.sizes[d]):
        bad = wanted.min() if wanted.min() < 0 else wanted.max()
        raise DimError(f"index_select(): index {bad} is out of bounds for dimension {d} with "
                       f"size {impl.sizes[d]}", op="index_select", arg="index")
    sizes = list(impl.sizes)
    sizes[d] = len(wanted)
    if d >= sparse_dim:
        values = values_of(self).index_select(d - sparse_dim + 1, long_tensor(wanted))
        return make_coo(impl.indices, values, sizes, impl.coalesced)
    idx = index_array(self)
    order = np.argsort(idx[d], kind="stable")
    coords = idx[d][order]
    left = np.searchsorted(coords, wanted, side="left")
    counts = np.searchsorted(coords, wanted, side="right") - left
    slot = np.repeat(np.arange(len(wanted)), counts)
    within = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    entries = order[np.repeat(left, counts) + within]
    new_idx = idx[:, entries].copy()
    new_idx[d] = slot
    values = values_of(self).index_select(0, long_tensor(entries))
    return make_coo(long_tensor(new_idx), values, sizes, False)


# ---- softmax along a dim (tp.sparse.softmax) -----------------------------------------
def softmax(input, dim, dtype=None):      # noqa: A002 -- torch's argument name
    return _softmax("softmax", input, dim, dtype, log=False)


def log_softmax(input, dim, dtype=None):      # noqa: A002 -- torch's argument name
    return _softmax("log_softmax", input, dim, dtype, log=True)


def _softmax(op, x, dim, dtype, log):
    """Over the *specified* entries of each slice along `dim`: unspecified entries count
    as -inf, not 0, so they stay unspecified (PyTorch's torch.sparse.softmax)."""
    if not _sparse(x):
        raise LayoutError(f"{op}(): expected a sparse COO tensor for argument 'input', but got "
                          f"layout strided (use tp.{op} for dense tensors)", op=op, arg="input")
    c = coalesce(x)
    impl = c._impl
    ndim, sparse_dim = len(impl.sizes), impl.sparse_dim
    d = wrap_dim(op, "dim", dim, ndim)
    values = values_of(c)
    if dtype is not None:
        values = values.to(dtype)
    if d >= sparse_dim:
        fn = F.log_softmax if log else F.softmax
        return _with_values(c, fn(values, d - sparse_dim + 1), coalesced=True)
    # One group per slice along d: the coordinates with row d left out.
    others = [k for k in range(sparse_dim) if k != d]
    idx = index_array(c)
    key = linearize(idx[others], [impl.sizes[k] for k in others])
    _, group = np.unique(key, return_inverse=True)
    group = group.reshape(-1)
    groups = int(group.max()) + 1 if group.size else 0
    # Softmax is shift invariant: subtracting each group's max (a constant) keeps exp in range
    # and changes neither the value nor its gradient.
    arr = values.detach()._impl.array()
    peak = np.full((groups,) + arr.shape[1:], -np.inf, dtype=arr.dtype)
    np.maximum.at(peak, group, arr)
    gather = long_tensor(group)
    shifted = values - factory.from_numpy(np.ascontiguousarray(peak[group]))
    exp = shifted.exp()
    total = zeros_for(exp, groups).index_add(0, gather, exp).index_select(0, gather)
    out = shifted - total.log() if log else exp / total
    return _with_values(c, out, coalesced=True)


# ---- PyTorch's older sparse products (torch.smm, hspmm, dsmm, sspaddmm) ---------------------
# Each is the sparse @ dense product above, laid out another way. PyTorch's results are
# uncoalesced where these build them by concatenation; so are these, in the same order.
def _product_rows(op, self, mat2):
    """The rows of `self` that hold an entry (sorted) and the product's values there."""
    if not _sparse(self):
        raise LayoutError(f"{op}(): argument 'mat1' must be a sparse tensor, but got a "
                          f"{self._impl.layout} one", op=op, arg="mat1")
    if _sparse(mat2):
        raise LayoutError(f"{op}(): argument 'mat2' must be a dense tensor, but got a sparse "
                          f"one", op=op, arg="mat2")
    rows = np.unique(index_array(self)[0])
    product = mm(self, mat2)
    return rows, product.index_select(0, long_tensor(rows))


def hspmm(mat1, mat2):
    """sparse @ dense as a hybrid sparse tensor: one sparse dim (the rows of mat1 that hold
    an entry), each row's product a dense row of values."""
    rows, values = _product_rows("hspmm", mat1, mat2)
    size = (mat1._impl.sizes[0], mat2._impl.sizes[1])
    return make_coo(long_tensor(rows.reshape(1, -1)), values, size, True)


def _spread(rows, values):
    """(indices, values) of a (rows, n) block of products as 2-D COO entries, row-major."""
    n = values._impl.sizes[1]
    indices = np.stack([np.repeat(rows, n), np.tile(np.arange(n), len(rows))])
    return long_tensor(indices.reshape(2, -1)), values.reshape(-1)


def smm(self, mat2):
    """sparse @ dense as a sparse tensor: every column of each row of self that holds an
    entry (zeros included, as PyTorch's), uncoalesced."""
    rows, values = _product_rows("smm", self, mat2)
    indices, flat = _spread(rows, values)
    size = (self._impl.sizes[0], mat2._impl.sizes[1])
    return make_coo(indices, flat, size, len(rows) == 0)   # (no entries: coalesced)


def dsmm(self, mat2):
    """sparse @ dense as a dense tensor (mm)."""
    _product_rows("dsmm", self, mat2)     # the same argument checks
    return mm(self, mat2)


def sspaddmm(self, mat1, mat2, beta, alpha):
    """beta * self + alpha * (mat1 @ mat2), sparse: self's entries, then the product's
    (smm's), uncoalesced."""
    op = "sspaddmm"
    if not _sparse(self):
        raise LayoutError(f"{op}(): argument 'self' must be a sparse tensor, but got a "
                          f"{self._impl.layout} one", op=op, arg="self")
    rows, values = _product_rows(op, mat1, mat2)
    size = (mat1._impl.sizes[0], mat2._impl.sizes[1])
    if tuple(self._impl.sizes) != size:
        raise ShapeError(f"{op}(): argument 'self' must have the product's shape "
                         f"{fmt_shape(size)}, but got {fmt_shape(self._impl.sizes)}", op=op,
                         arg="self")
    indices, flat = _spread(rows, values)
    all_indices = long_tensor(np.concatenate([index_array(self), indices._impl.array()], 1))
    all_values = F.cat([values_of(self) * beta, flat * alpha])
    return make_coo(all_indices, all_values, size, all_values._impl.sizes[0] == 0)


def indices_copy(self):
    require_sparse("indices_copy", self)
    return self.indices().clone()


def values_copy(self):
    require_sparse("values_copy", self)
    return self.values().clone()
