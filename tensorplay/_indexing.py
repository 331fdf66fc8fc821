"""`x[...]` and `x[...] = v`: PyTorch's (and NumPy's) indexing rules, on dispatched ops.

An index is a tuple of items, walked left to right over the dimensions of `x`:

    int / 0-dim int tensor   select(dim, i)        the dimension disappears (a view)
    slice                    slice(dim, a, b, s)   a view
    None                     unsqueeze(dim)        a new dimension of size 1
    ...                      skip the dimensions the other items do not name
    int tensor / int list    an advanced index for this dimension
    bool tensor / bool list  a mask over as many dimensions as it has (it selects the
                             elements where it is True, like its nonzero() coordinates)

Basic items (the first four) make a chain of views, so `x[1:, None]` shares memory
with `x` and autograd records view ops. If any advanced index remains, one
`index.Tensor(view, [None, idx, ...])` gathers the elements (a copy), and assignment
calls `index_put_`; both have derivatives, so `x[mask]`, `x[idx] = v` and
`x[idx] += 1` are differentiable. Where the advanced indices are separated by a
slice, their broadcast dimensions move to the front, as in NumPy:

    x: [5, 6, 7]    x[:, [0, 1]] -> [5, 2, 7]      x[[0, 1], :, [2, 3]] -> [2, 6]
"""
from __future__ import annotations

import builtins

import numpy as np

from tensorplay import _dtype as dt
from tensorplay import _tensor_factory as factory
from tensorplay._generated import functional as F
from tensorplay.errors import ArgumentError, DimError, DTypeError
from tensorplay.kernel_support.overlap import assert_no_internal_overlap

_MASK_DTYPES = (dt.bool, dt.uint8)


def _normalize(op, index):
    if not isinstance(index, tuple):
        index = (index,)
    return tuple(_as_index_tensor(op, i, index) for i in index)


def _as_index_tensor(op, i, whole):
    """Python lists (and bools) are tensor indices: [0, 2] -> int64, [True, False] -> bool."""
    if type(i) is builtins.bool:
        return factory.tensor(i)
    if isinstance(i, (list, np.ndarray)):
        if isinstance(i, list) and np.size(i) == 0:
            return factory.tensor(i, dtype=dt.int64)    # x[[]]: no element, an int64 index
        try:
            return factory.tensor(i)
        except Exception:  # noqa: BLE001 - reported below with the index that caused it
            raise ArgumentError(f"{op}(): argument 'index' {whole!r} holds a list that is not "
                                f"a (nested) list of ints or bools", op=op,
                                arg="index") from None
    return i


def _is_tensor(i):
    return getattr(i, "_impl", None) is not None


def _is_int(i):
    return type(i) is int or isinstance(i, np.integer) or (
        _is_tensor(i) and not i._impl.sizes and not i._impl.dtype.is_floating_point
        and i._impl.dtype not in _MASK_DTYPES)


def _dims_used(i):
    """How many dimensions of the tensor an item consumes."""
    if i is None or i is Ellipsis:
        return 0
    if _is_tensor(i) and i._impl.dtype in _MASK_DTYPES:
        return len(i._impl.sizes)
    return 1


def _check(op, index, ndim):
    for i in index:
        ok = i is None or i is Ellipsis or isinstance(i, builtins.slice) or _is_int(i)
        if _is_tensor(i) and not ok and i._impl.dtype.is_floating_point:
            raise DTypeError(f"{op}(): tensors used as indices (argument 'index') must be "
                             f"long, int, byte or bool tensors, but got {i._impl.dtype.name}",
                             op=op, arg="index")
        if not ok and not _is_tensor(i):
            raise ArgumentError(f"{op}(): argument 'index' of type {type(i).__name__} is not "
                                f"a valid index (ints, slices, None, ..., lists and tensors "
                                f"of ints or bools)", op=op, arg="index")
    if builtins.sum(1 for i in index if i is Ellipsis) > 1:
        raise DimError(f"{op}(): an index can only have a single ellipsis ('...'), argument "
                       f"'index' has more", op=op, arg="index")
    consumed = builtins.sum(_dims_used(i) for i in index)
    if consumed > ndim:
        raise DimError(f"{op}(): too many indices in argument 'index' for tensor of "
                       f"dimension {ndim}", op=op, arg="index")
    return consumed


def _slice(out, dim, s):
    step = 1 if s.step is None else int(s.step)
    if step <= 0:
        raise ValueError("step must be greater than zero")
    start = None if s.start is None else int(s.start)
    stop = None if s.stop is None else int(s.stop)
    return out.slice(dim, start, stop, step)


def apply_index(self, index, op="__getitem__"):
    """The view of `self` the basic items make, and the advanced indices left for it:
    (view, [None | index tensor per leading dim of view]) - no indices when all basic."""
    index = _normalize(op, index)
    ndim = self.dim()
    consumed = _check(op, index, ndim)
    out = self
    dim = 0
    advanced = {}   # dim of `out` where an index tensor (or a mask) starts -> the tensor
    for i in index:
        if i is None:
            out = out.unsqueeze(dim)
            dim += 1
        elif i is Ellipsis:
            dim += ndim - consumed
        elif isinstance(i, builtins.slice):
            out = _slice(out, dim, i)
            dim += 1
        elif _is_int(i):
            out = out.select(dim, int(i))
        else:
            if i._impl.device != self._impl.device:
                i = i.to(self._impl.device)   # a list became a CPU tensor; PyTorch moves it too
            if i._impl.dtype in _MASK_DTYPES:
                out, dim = _apply_mask(op, out, dim, i, advanced)
            else:
                advanced[dim] = i
                dim += 1
    return out, _index_list(advanced)


def _index_list(advanced):
    """index.Tensor's `indices`: None for each dim left whole, one entry per index
    tensor (a mask's entry covers as many dims as the mask has)."""
    indices = []
    dim = 0
    last = max(advanced, default=-1)
    while dim <= last:
        t = advanced.get(dim)
        indices.append(t)
        dim += 1 if t is None or t._impl.dtype not in _MASK_DTYPES else t.dim()
    return indices


def _apply_mask(op, out, dim, mask, advanced):
    """A bool mask over dims dim..dim+k-1 (index.Tensor selects where it is True); a
    0-dim mask (x[True]) adds a dimension of size 1 and keeps (True) or drops (False) it."""
    mask = mask.to(dt.bool)
    if not mask._impl.sizes:
        out = out.unsqueeze(dim)
        mask = mask.reshape(1)
    covered = tuple(out.shape[dim:dim + mask.dim()])
    if tuple(mask.shape) != covered:
        raise DimError(f"{op}(): the shape of the mask {list(mask.shape)} in argument "
                       f"'index' does not match the shape {list(covered)} of the indexed "
                       f"tensor at dimension {dim}", op=op, arg="index")
    advanced[dim] = mask
    return out, dim + mask.dim()


def _without_leading_ones(value):
    """`value` without its leading size-1 dims (a view): PyTorch's setitem drops them
    (slicePrefix1sSize), so `x[0] = ones(1, 3)` and `x[idx] = ones(1, 2, 3)` fit."""
    ones = 0
    while ones < value.dim() and value._impl.sizes[ones] == 1:
        ones += 1
    return value[(0,) * ones] if ones else value


def _copy_to(target, value):
    """`target = value` for the view a basic index made, as PyTorch writes it (copy_to in
    ATen/TensorIndexing.h): a value of target's shape is copied; a 0-dim one fills
    (fill_.Tensor); any other loses its leading size-1 dims (`x[0] = ones(1, 3)`) and is
    expanded to target's shape, then copied. (An expanded value is never dense, so
    `x[0:2] = x[1:2]` is no partial overlap.) A number is a 0-dim tensor of target's
    dtype, made on the CPU, so it fills: a fill that, unlike fill_ with a number, refuses
    an expanded cpu target (one whose elements share memory), since it copies a tensor."""
    if not _is_tensor(value):
        if target._impl.device.type != "cuda":   # a cuda target fills with value.item()
            assert_no_internal_overlap("fill_", target)
        target.fill_(value)
    elif tuple(value._impl.sizes) == tuple(target._impl.sizes):
        target.copy_(value)
    elif not value._impl.sizes and value._impl.device.type == "cpu":
        target.fill_(value)
    else:
        value = _without_leading_ones(value)
        if tuple(value._impl.sizes) != tuple(target._impl.sizes):
            value = value.expand(tuple(target._impl.sizes))
        target.copy_(value)


def getitem(self, index):
    out, indices = apply_index(self, index)
    if indices:
        return F.index(out, indices)
    if out is self:   # x[...] or x[()]: still a new view, as in PyTorch
        out = self.view(tuple(self.shape))
    return out


def _drop_leading_ones(value, keep):
    """As PyTorch's setitem: the value's leading size-1 dims are dropped first (x[0] =
    row[None] works, and the gradient flows back through that view to the value's own
    shape). Only those beyond `keep` dims: `x[...] = x` stays a copy of x onto itself."""
    sizes = tuple(value.shape)
    lead = 0
    while lead < len(sizes) - keep and sizes[lead] == 1:
        lead += 1
    return value.view(sizes[lead:]) if lead else value


def _fills_a_mask(indices, value):
    """One mask is the only index tensor and the value has one element: PyTorch's
    setitem fills the masked elements with the value's number (masked_fill_)."""
    tensors = [i for i in indices if i is not None]
    return len(tensors) == 1 and tensors[0]._impl.dtype in _MASK_DTYPES \
        and value.numel() == 1


def setitem(self, index, value):
    target, indices = apply_index(self, index, op="__setitem__")
    if _is_tensor(value):
        value = _drop_leading_ones(value, target.dim() if not indices else 0)
    if not indices:
        _copy_to(target, value)
        return
    if _is_tensor(value):
        # index_put_ wants values of self's dtype (its rule raises otherwise), as
        # PyTorch's; only its one-element value into one mask converts, because PyTorch
        # writes that as masked_fill_ (x[x > 0] = tensor(1.0, dtype=float64) is fine,
        # x[idx] = tensor(1.0, dtype=float64) is not).
        dtype = target.dtype if _fills_a_mask(indices, value) else value.dtype
        if value.dtype is not dtype or value.device != target.device:
            value = value.to(target.device, dtype)
        value = _without_leading_ones(value)
    else:
        value = factory.scalar_tensor(value, dtype=target.dtype, device=target.device)
    target.index_put_(indices, value)
