"""Shape helpers scripts reach for, composed of views and existing ops: atleast_1d/2d/3d,
meshgrid, sum_to_size, argwhere, ravel, fliplr, flipud, rot90, block_diag, cartesian_prod,
vander, unravel_index and Tensor.unfold (sliding windows as a view); column_stack, dstack,
diag_embed, diagflat and combinations."""
from __future__ import annotations

import itertools

from tensorplay import _creation, _dtype as dt
from tensorplay._frontdoor import wrap_dim
from tensorplay._generated import functional as F
from tensorplay._memory_format import contiguous_format
from tensorplay._promotion import result_type
from tensorplay.errors import ArgumentError, ShapeError, fmt_shape


def atleast_1d(self):
    return self.reshape([1]) if self.dim() == 0 else self


def atleast_2d(self):
    if self.dim() == 0:
        return self.reshape([1, 1])
    return self.unsqueeze(0) if self.dim() == 1 else self


def atleast_3d(self):
    """(n) -> (1, n, 1) and (m, n) -> (m, n, 1), as NumPy and PyTorch do."""
    n = self.dim()
    if n == 0:
        return self.reshape([1, 1, 1])
    if n == 1:
        return self.unsqueeze(0).unsqueeze(-1)
    return self.unsqueeze(-1) if n == 2 else self


def atleast_1d_sequence(tensors):
    return [atleast_1d(t) for t in tensors]


def atleast_2d_sequence(tensors):
    return [atleast_2d(t) for t in tensors]


def atleast_3d_sequence(tensors):
    return [atleast_3d(t) for t in tensors]


def meshgrid(tensors, indexing):
    """Coordinate grids: output i holds tensors[i] along dim i, expanded (views) over the
    others. indexing='xy' (Cartesian, NumPy's default) makes the first two tensors vary
    along dims 1 and 0: the 'ij' grids of the inputs with those two swapped, swapped back."""
    op = "meshgrid"
    if indexing is None:
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise ArgumentError(f"meshgrid(): argument 'indexing' must be 'ij' or 'xy', but got "
                            f"{indexing!r}", op=op, arg="indexing")
    if not tensors:
        raise ArgumentError("meshgrid(): expects a non-empty TensorList", op=op,
                            arg="tensors")
    for i, t in enumerate(tensors):
        if t.dim() > 1:
            raise ShapeError(f"meshgrid(): expects scalar or 1D tensors, but got tensor "
                             f"{i} with {t.dim()} dimensions (argument 'tensors[{i}]')", op=op,
                             arg=f"tensors[{i}]")
        if t.dtype is not tensors[0].dtype or t.device != tensors[0].device:
            raise ArgumentError(f"meshgrid(): expects all tensors to have the same dtype and "
                                f"device, but tensor {i} differs from tensor 0 (argument "
                                f"'tensors[{i}]')", op=op, arg=f"tensors[{i}]")
    ts = [t.reshape([-1]) for t in tensors]
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    sizes = [t.shape[0] for t in ts]
    grids = []
    for i, t in enumerate(ts):
        shape = [1] * len(ts)
        shape[i] = sizes[i]
        grids.append(t.reshape(shape).expand(sizes))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return grids


def fliplr(self):
    if self.dim() < 2:
        raise ShapeError(f"fliplr(): Input must be >= 2-d (argument 'self' is "
                         f"{self.dim()}-d).", op="fliplr", arg="self")
    return self.flip([1])


def flipud(self):
    if self.dim() < 1:
        raise ShapeError("flipud(): Input must be >= 1-d (argument 'self' is 0-d).",
                         op="flipud", arg="self")
    return self.flip([0])


def rot90(self, k, dims):
    """Rotates the plane of dims by 90 degrees k times, from dims[0] towards dims[1]."""
    op = "rot90"
    if len(dims) != 2:
        raise ArgumentError(f"rot90(): expected total rotation dims == 2, but got dims = "
                            f"{len(dims)} (argument 'dims')", op=op, arg="dims")
    if self.dim() < 2:
        raise ShapeError(f"rot90(): expected total dims >= 2, but got total dims = "
                         f"{self.dim()} (argument 'self')", op=op, arg="self")
    d0, d1 = (wrap_dim(op, "dims", d, self.dim()) for d in dims)
    if d0 == d1:
        raise ArgumentError(f"rot90(): expected rotation dims to be different, but got "
                            f"dim0 = {dims[0]} and dim1 = {dims[1]} (argument 'dims')", op=op,
                            arg="dims")
    k = k % 4
    if k == 1:
        return self.flip([d1]).transpose(d0, d1)
    if k == 2:
        return self.flip([d0, d1])
    if k == 3:
        return self.flip([d0]).transpose(d0, d1)
    return self.clone(memory_format=contiguous_format)   # row-major, as PyTorch's k = 0


def block_diag(tensors):
    """The matrices (0-D and 1-D tensors count as 1x1 and 1xn) along the diagonal of one
    matrix, zeros elsewhere; the dtype is the inputs' result_type."""
    op = "block_diag"
    if not tensors:
        raise ArgumentError("block_diag(): expects at least one tensor (argument 'tensors')",
                            op=op, arg="tensors")
    mats = []
    for i, t in enumerate(tensors):
        if t.dim() > 2:
            raise ShapeError(f"block_diag(): Input tensors must have 2 or fewer dimensions. "
                             f"Input {i} has {t.dim()} dimensions (argument 'tensors[{i}]')",
                             op=op, arg=f"tensors[{i}]")
        mats.append(t.reshape([1, 1]) if t.dim() == 0 else
                    t.reshape([1, -1]) if t.dim() == 1 else t)
    # torch.result_type over the inputs: a 0-D tensor's dtype counts only where its
    # category (bool < int < float) is higher, as for a binary op's 0-D operand
    dtype = result_type(*tensors)
    width = sum(m.shape[1] for m in mats)
    rows, left = [], 0
    for m in mats:
        r, c = m.shape
        pieces = [m.new_zeros((r, left), dtype=dtype), m.to(dtype),
                  m.new_zeros((r, width - left - c), dtype=dtype)]
        rows.append(F.cat(pieces, 1))
        left += c
    return F.cat(rows, 0)


def cartesian_prod(tensors):
    """Every combination of one element from each 1-D tensor, one row each (a single
    tensor comes back as itself)."""
    for i, t in enumerate(tensors):
        if t.dim() != 1:
            raise ShapeError(f"cartesian_prod(): Expect a 1D vector, but got shape "
                             f"{fmt_shape(t.shape)} (argument 'tensors[{i}]')",
                             op="cartesian_prod", arg=f"tensors[{i}]")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(tensors, "ij")
    return F.stack([g.reshape([-1]) for g in grids], 1)


def vander(x, N, increasing):
    """Columns x ** 0 ... x ** (N - 1) (reversed unless increasing), as a cumulative
    product so that no power of zero is differentiated through a log."""
    op = "vander"
    if x.dim() != 1:
        raise ShapeError(f"vander(): x must be a one-dimensional tensor (argument 'x' is "
                         f"{x.dim()}-D).", op=op, arg="x")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise ArgumentError("vander(): N must be non-negative (argument 'N').", op=op, arg="N")
    if x.dtype is dt.bool or x.dtype in (dt.uint8, dt.int8, dt.int16, dt.int32):
        x = x.to(dt.int64)
    ones = x.new_ones((x.shape[0], min(n, 1)))
    if n > 1:
        powers = F.cumprod(x.unsqueeze(1).expand([x.shape[0], n - 1]), 1)
        out = F.cat([ones, powers], 1)
    else:
        out = ones
    return out if increasing else out.flip([1])


# ---- joining ---------------------------------------------------------------------------
def stack(tensors, dim):
    if not tensors:
        raise ArgumentError("stack(): argument 'tensors' must be a non-empty list of tensors",
                            op="stack", arg="tensors")
    first = tuple(tensors[0].shape)
    for i, t in enumerate(tensors):
        if tuple(t.shape) != first:
            raise ShapeError(f"stack(): stack expects each tensor to be equal size, but got "
                             f"{fmt_shape(first)} at entry 0 and {fmt_shape(t.shape)} at entry "
                             f"{i} (argument 'tensors')", op="stack", arg="tensors")
    d = wrap_dim("stack", "dim", dim, len(first) + 1)
    return F.cat([t.unsqueeze(d) for t in tensors], d)


def hstack(tensors):
    """Along dim 1, or dim 0 when every tensor is 1-D (0-dim ones count as 1-D)."""
    ts = [t.reshape([1]) if t.dim() == 0 else t for t in tensors]
    return F.cat(ts, 0 if all(t.dim() == 1 for t in ts) else 1)


def vstack(tensors):
    """Along dim 0, after making 0-D and 1-D tensors rows (atleast_2d)."""
    return F.cat([t.reshape([1, -1]) if t.dim() < 2 else t for t in tensors], 0)


def _non_empty(op, tensors):
    if not tensors:
        raise ArgumentError(f"{op}(): expects a non-empty list of tensors (argument "
                            f"'tensors')", op=op, arg="tensors")


def column_stack(tensors):
    """Side by side as columns: 0-D and 1-D tensors become (n, 1) columns, then hstack."""
    _non_empty("column_stack", tensors)
    return hstack([t.reshape([t.numel(), 1]) if t.dim() <= 1 else t for t in tensors])


def dstack(tensors):
    """Along the third dim (depth), after atleast_3d."""
    _non_empty("dstack", tensors)
    return F.cat([atleast_3d(t) for t in tensors], 2)


# ---- diagonals -------------------------------------------------------------------------
def diag_embed(self, offset, dim1, dim2):
    """self's last dim written on the `offset` diagonal of the planes (dim1, dim2) of a
    tensor of zeros with one dim more: the inverse of diagonal(offset, dim1, dim2)."""
    op = "diag_embed"
    if self.dim() == 0:
        raise ShapeError("diag_embed(): expected a tensor with at least 1 dimension "
                         "(argument 'self'), but got a 0-D tensor", op=op, arg="self")
    n = self.dim() + 1
    d1, d2 = wrap_dim(op, "dim1", dim1, n), wrap_dim(op, "dim2", dim2, n)
    if d1 == d2:
        raise ArgumentError(f"diag_embed(): diagonal dimensions cannot be identical (arguments "
                            f"'dim1' and 'dim2': {dim1}, {dim2})", op=op, arg="dim2")
    length = abs(offset) + self.shape[-1]
    sizes = list(self.shape[:-1])
    sizes.insert(min(d1, d2), length)
    sizes.insert(max(d1, d2), length)
    out = self.new_zeros(sizes)
    # diagonal() puts the diagonal last and keeps the other dims in order: self's layout
    out.diagonal(offset, d1, d2).copy_(self)
    return out


def diagflat(self, offset):
    """The flattened input on the `offset` diagonal of a square matrix."""
    return F.diag(self.reshape([-1]), offset)


def combinations(self, r, with_replacement):
    """The r-element combinations of a vector's elements, in itertools' order, one row each.
    Which elements are combined depends on the length only, so the index is built in
    Python and the rows are picked with index_select (its gradient sums the repeats)."""
    op = "combinations"
    if self.dim() != 1:
        raise ShapeError(f"combinations(): expected a 1-D tensor (argument 'self'), but got "
                         f"shape {fmt_shape(self.shape)}", op=op, arg="self")
    if r < 0:
        raise ArgumentError(f"combinations(): argument 'r' must be non-negative, but got {r}",
                            op=op, arg="r")
    if r == 0:
        return self.new_empty([0])
    pick = itertools.combinations_with_replacement if with_replacement \
        else itertools.combinations
    index = [i for combo in pick(range(self.shape[0]), r) for i in combo]
    index = _creation.tensor(index, dtype=dt.int64, device=self.device)
    return F.index_select(self, 0, index).reshape([-1, r])


# ---- repeating -------------------------------------------------------------------------
def tile(self, dims):
    """repeat, with `dims` padded by leading 1s when shorter than the tensor's rank."""
    dims = list(dims)
    return self.repeat([1] * (self.dim() - len(dims)) + dims)
