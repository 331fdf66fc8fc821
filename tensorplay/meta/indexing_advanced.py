"""Shape rules of advanced indexing: `index.Tensor` (x[idx]) and `index_put_` (x[idx] = v).

`indices` has one entry per leading dimension of `self`: None (the whole dimension,
what a `:` became), an integer tensor (one coordinate per element), or a bool mask
(covering as many dimensions as it has, like its `nonzero()` columns). The integer
tensors broadcast together to one shape B, and the result is, as in NumPy:

    indices               self [5, 6, 7]          result
    [i, None, None]       i: [2, 3]               [2, 3, 6, 7]      B where the dims were
    [None, i, j]          i, j: [4]               [5, 4]            (adjacent: stays in place)
    [i, None, j]          i, j: [4]               [4, 6]            (split by a `:`: B first)
"""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay.errors import ArgumentError, DimError, DTypeError, ShapeError, fmt_shape
from tensorplay.meta.indexing import check_same_dtype, numel
from tensorplay.meta.overlap import assert_no_overlap, assert_no_partial_overlap
from tensorplay.meta.rules import SELF, OutSpec, broadcast, check_devices

INDEX_DTYPES = (dt.int64, dt.int32)
MASK_DTYPES = (dt.bool, dt.uint8)


def is_mask(t):
    return t._impl.dtype in MASK_DTYPES


def mask_count(op, mask):
    """How many elements a mask selects: the data decides, so a meta tensor cannot say."""
    if mask._impl.device.type == "meta":
        raise ArgumentError(f"{op}(): a bool mask in argument 'indices' gives a data-dependent "
                            f"shape, which a meta tensor cannot compute", op=op, arg="indices")
    if mask._impl.device.type != "cpu":
        return int(mask.ne(0).sum().item())     # a device reduction, one host sync
    return int(mask._impl.array().astype(bool).sum())


def expand_indices(op, self, indices):
    """One (dimension, index shape) per dimension the indices address, masks expanded
    to their nonzero() columns; checks dtypes, devices, the count and mask shapes."""
    sizes = self._impl.sizes
    entries = []
    dim = 0
    for t in indices:
        if t is None:
            entries.append((dim, None))
            dim += 1
            continue
        if t._impl.dtype not in INDEX_DTYPES + MASK_DTYPES:
            raise DTypeError(f"{op}(): tensors in argument 'indices' must be int64, int32, "
                             f"bool or uint8 tensors, but got {t._impl.dtype.name}", op=op,
                             arg="indices")
        check_devices(op, [("self", self), ("indices", t)])
        k = len(t._impl.sizes) if is_mask(t) else 1
        if dim + k > len(sizes):
            raise DimError(f"{op}(): too many indices in argument 'indices' for a tensor of "
                           f"dimension {len(sizes)}", op=op, arg="indices")
        if is_mask(t):
            covered = sizes[dim:dim + k]
            if t._impl.sizes != covered:
                raise DimError(f"{op}(): the shape of the mask {fmt_shape(t._impl.sizes)} in "
                               f"argument 'indices' does not match the shape "
                               f"{fmt_shape(covered)} of the indexed tensor at dimension {dim}",
                               op=op, arg="indices")
            count = mask_count(op, t)
            entries += [(dim + i, (count,)) for i in range(k)]
        else:
            entries.append((dim, t._impl.sizes))
        dim += k
    if dim > len(sizes):
        raise DimError(f"{op}(): too many indices in argument 'indices' for a tensor of "
                       f"dimension {len(sizes)}", op=op, arg="indices")
    return entries


def indexed_sizes(op, self, indices):
    """The shape of self[indices] (see the module docstring)."""
    sizes = self._impl.sizes
    entries = expand_indices(op, self, indices)
    advanced = [(d, s) for d, s in entries if s is not None]
    if not advanced:
        return tuple(sizes)
    shape = broadcast(op, [("indices", s) for _, s in advanced])
    dims = [d for d, _ in advanced]
    rest = [sizes[d] for d in range(len(sizes)) if d not in dims]
    if dims == list(range(dims[0], dims[-1] + 1)):
        before = [sizes[d] for d in range(dims[0])]
        return tuple(before) + shape + tuple(rest[len(before):])
    return shape + tuple(rest)


def index(op, args):
    self, indices = args
    return OutSpec(indexed_sizes(op, self, indices), self._impl.dtype)


def index_put(op, args):
    self, indices, values, accumulate = args
    target = indexed_sizes(op, self, indices)
    check_devices(op, [("self", self), ("values", values)])
    check_same_dtype(op, self, values, "values")
    vsizes = values._impl.sizes
    fits = len(vsizes) <= len(target) and all(
        v in (1, t) for v, t in zip(reversed(vsizes), reversed(target)))
    if not fits:
        raise ShapeError(f"{op}(): argument 'values' (shape {fmt_shape(vsizes)}) cannot be "
                         f"broadcast to the indexed shape {fmt_shape(target)}", op=op,
                         arg="values")
    if not op.endswith("_"):
        return OutSpec(self._impl.sizes, self._impl.dtype)
    # Memory checks (meta/overlap.py), as PyTorch's index_put_ makes them. An expanded
    # self is allowed (PyTorch warns that it is deprecated).
    mask = _fill_mask(self, indices, values, accumulate)
    if mask is not None:
        assert_no_partial_overlap(op, self, "indices", mask)
    else:
        assert_no_overlap(op, self, "values", values)
        for t in indices:
            if t is not None:
                assert_no_overlap(op, self, "indices", t)
    return SELF


def _fill_mask(self, indices, values, accumulate):
    """The mask, when PyTorch writes `x[mask] = v` as masked_fill_(mask, v.item()): one
    bool mask on self's device, a one-element cpu value, no accumulation
    (canDispatchToMaskedFill). The value is then read first, so it may be self's own."""
    given = [t for t in indices if t is not None]
    if accumulate or numel(values._impl.sizes) != 1 or values._impl.device.type != "cpu":
        return None
    if len(given) != 1 or not is_mask(given[0]) or given[0]._impl.device != self._impl.device:
        return None
    return given[0]
