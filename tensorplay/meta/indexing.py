"""Shape/dtype rules of the indexing ops: gather/scatter, index_*, masked_*, take.

Besides the Meta kernels, these are the checks that keep the NumPy kernels inside
their arrays: index dtype, ranks and sizes here, and `check_in_range`
(tensorplay/kernel_support/checks.py), which the kernels call with the index values
(only they have the data) before any read or write. nonzero and masked_select return
DataDependent (their result's size is decided by the values); the last section is
advanced indexing (`index.Tensor`, `index_put_`).
"""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay.errors import ArgumentError, DimError, DTypeError, ShapeError, fmt_shape
from tensorplay.kernel_support.checks import (
    MASK_DTYPES, SELF, DataDependent, OutSpec, broadcast, check_devices, is_mask, wrap_dim,
)
from tensorplay.kernel_support.overlap import (assert_no_internal_overlap, assert_no_overlap,
                                               assert_no_partial_overlap)
from tensorplay.kernel_support.complex_refusals import reject_complex
from tensorplay.meta.rules import check_value_fits

SCATTER_REDUCES = ("add", "multiply")
SCATTER_REDUCE_REDUCES = ("sum", "prod", "mean", "amax", "amin")


def _sizes(t):
    return t._impl.sizes


def _check_writes(op, self, *inputs, internal=True):
    """An in-place op's memory checks (kernel_support/overlap.py), as PyTorch's meta
    function of the op makes them: `self` has no internal overlap (unless `internal` is
    False) and shares no memory with the inputs, given as (name, tensor) pairs. Out of
    place: none."""
    if not op.endswith("_"):
        return
    if internal:
        assert_no_internal_overlap(op, self)
    for name, t in inputs:
        assert_no_overlap(op, self, name, t)


def _out(op, self, sizes=None):
    """In-place ops (name ends in `_`) return `self`; the others a new tensor."""
    return SELF if op.endswith("_") else OutSpec(sizes if sizes is not None else _sizes(self),
                                                 self._impl.dtype)


# The ops whose index may also be int32, as PyTorch's (its gather/scatter and index_select
# families take int32 or int64; take, put, index_copy, index_fill and take_along_dim
# insist on int64).
INT32_INDEX_OPS = {"gather", "scatter", "scatter_add", "scatter_reduce", "index_select",
                   "index_add", "index_reduce"}


def check_index_dtype(op, index, arg="index"):
    d = index._impl.dtype
    if op.split(".")[0].rstrip("_") in INT32_INDEX_OPS:
        if d not in (dt.int64, dt.int32):
            raise DTypeError(f"{op}(): argument '{arg}' must be an int64 or int32 tensor of "
                             f"indices, but got {d.name}", op=op, arg=arg)
    elif d is not dt.int64:
        raise DTypeError(f"{op}(): argument '{arg}' must be an int64 tensor of indices, but "
                         f"got {d.name}", op=op, arg=arg)


def check_same_dtype(op, self, other, arg):
    a, b = self._impl.dtype, other._impl.dtype
    if a is not b:
        raise DTypeError(f"{op}(): argument '{arg}' ({b.name}) must have the same dtype as "
                         f"'self' ({a.name})", op=op, arg=arg)


def _check_scalar_value(op, value):
    if getattr(value, "_impl", None) is not None and value._impl.sizes:
        raise ShapeError(f"{op}(): argument 'value' must be a 0-dim tensor, but got a tensor "
                         f"with {len(value._impl.sizes)} dimension(s)", op=op, arg="value")


# ---- gather / scatter ----------------------------------------------------------------
def _gather_like(op, self, dim, index, src=None):
    """The shared checks of gather and scatter: same rank, index no larger than src, and
    no larger than self outside `dim`. 0-dim tensors count as 1-D."""
    check_index_dtype(op, index)
    named = [("self", self), ("index", index)] + ([("src", src)] if src is not None else [])
    check_devices(op, named)
    ndim = max(len(_sizes(self)), 1)
    d = wrap_dim(op, dim, len(_sizes(self)))
    isizes = _sizes(index) or (1,)
    for name, t in named[1:]:
        if max(len(_sizes(t)), 1) != ndim:
            raise ShapeError(f"{op}(): argument '{name}' must have the same number of "
                             f"dimensions as 'self' ({len(_sizes(self))}), but has "
                             f"{len(_sizes(t))}", op=op, arg=name)
    if src is not None:
        ssizes = _sizes(src) or (1,)
        for i, (n, s) in enumerate(zip(isizes, ssizes)):
            if n > s:
                raise ShapeError(f"{op}(): argument 'index' (shape {fmt_shape(_sizes(index))}) "
                                 f"is larger than 'src' (shape {fmt_shape(_sizes(src))}) at "
                                 f"dimension {i}", op=op, arg="index")
    selfsizes = _sizes(self) or (1,)
    for i, (n, s) in enumerate(zip(isizes, selfsizes)):
        if i != d and n > s and numel(isizes):   # an empty index addresses nothing
            raise ShapeError(f"{op}(): argument 'index' (shape {fmt_shape(_sizes(index))}) is "
                             f"larger than 'self' (shape {fmt_shape(_sizes(self))}) at dimension "
                             f"{i}, which is not 'dim'", op=op, arg="index")
    return d


def numel(sizes):
    n = 1
    for s in sizes:
        n *= s
    return n


def gather(op, args):
    self, dim, index, sparse_grad = args
    _gather_like(op, self, dim, index)
    return OutSpec(_sizes(index), self._impl.dtype)


def _check_reduce(op, reduce, choices):
    if reduce not in choices:
        raise ArgumentError(f"{op}(): argument 'reduce' must be one of "
                            f"{', '.join(repr(c) for c in choices)}, but got {reduce!r}",
                            op=op, arg="reduce")


def scatter(op, args):
    """scatter.src / scatter.value / scatter.reduce / scatter.value_reduce, and scatter_add."""
    self, dim, index, src = args[:4]
    if getattr(src, "_impl", None) is not None:
        _gather_like(op, self, dim, index, src)
        check_same_dtype(op, self, src, "src")
        _check_writes(op, self, ("index", index), ("src", src))
    else:
        _gather_like(op, self, dim, index)
        _check_writes(op, self, ("index", index))
        if 0 not in _sizes(index):      # (an empty index writes nothing: PyTorch returns
            check_value_fits(op, src, self._impl.dtype)  # before its checked_convert)
    if len(args) > 4:
        _check_reduce(op, args[4], SCATTER_REDUCES)
    return _out(op, self)


def scatter_reduce(op, args):
    self, dim, index, src, reduce, include_self = args
    _gather_like(op, self, dim, index, src)
    check_same_dtype(op, self, src, "src")
    _check_writes(op, self, ("index", index), ("src", src))
    _check_reduce(op, reduce, SCATTER_REDUCE_REDUCES)
    if reduce in ("amax", "amin"):
        reject_complex(op, self, kind=f"scatter_reduce.{reduce}")   # no order in complex
    return _out(op, self)


def take(op, args):
    self, index = args
    check_index_dtype(op, index)
    check_devices(op, [("self", self), ("index", index)])
    if numel(_sizes(self)) == 0 and numel(_sizes(index)) != 0:
        raise DimError(f"{op}(): cannot take indices from an empty tensor (argument 'index' "
                       f"has {numel(_sizes(index))} elements, 'self' has none)", op=op,
                       arg="index")
    return OutSpec(_sizes(index), self._impl.dtype)


# ---- index_select / index_add / index_copy / index_fill --------------------------------
def _index_vector(op, self, dim, index):
    check_index_dtype(op, index)
    if len(_sizes(index)) > 1:
        raise ShapeError(f"{op}(): argument 'index' must be a vector (0-D or 1-D), but got "
                         f"shape {fmt_shape(_sizes(index))}", op=op, arg="index")
    return wrap_dim(op, dim, len(_sizes(self)))


def index_select(op, args):
    self, dim, index = args
    check_devices(op, [("self", self), ("index", index)])
    d = _index_vector(op, self, dim, index)
    sizes = list(_sizes(self))
    if sizes:
        sizes[d] = numel(_sizes(index))
    elif numel(_sizes(index)) != 1:
        raise ShapeError(f"{op}(): argument 'index' must have one element to select from a "
                         f"0-dim 'self', but has {numel(_sizes(index))}", op=op, arg="index")
    return OutSpec(tuple(sizes), self._impl.dtype)


def _index_source(op, self, dim, index, source):
    """index_add / index_copy: `source` is `self` with `dim` resized to len(index)."""
    check_devices(op, [("self", self), ("index", index), ("source", source)])
    d = _index_vector(op, self, dim, index)
    check_same_dtype(op, self, source, "source")
    want = list(_sizes(self))
    if want:
        want[d] = numel(_sizes(index))
    got = _sizes(source)
    scalar_ok = not want and numel(got) == 1 and len(got) <= 1   # 0-dim self
    if tuple(want) != got and not scalar_ok:
        raise ShapeError(f"{op}(): argument 'source' must have shape {fmt_shape(want)} ('self' "
                         f"with dimension {d} of size len(index) = {numel(_sizes(index))}), "
                         f"but got {fmt_shape(got)}", op=op, arg="source")
    return d


def index_add(op, args):
    self, dim, index, source, alpha = args
    _index_source(op, self, dim, index, source)
    _check_writes(op, self, ("index", index), ("source", source))
    if isinstance(alpha, float) and not self._impl.dtype.is_differentiable:
        raise DTypeError(f"{op}(): for integral input tensors, argument 'alpha' must not be a "
                         f"floating point number", op=op, arg="alpha")
    return _out(op, self)


def index_copy(op, args):
    self, dim, index, source = args
    _index_source(op, self, dim, index, source)
    _check_writes(op, self, ("index", index), ("source", source))
    return _out(op, self)


def index_fill(op, args):
    self, dim, index, value = args
    named = [("self", self), ("index", index)]
    if getattr(value, "_impl", None) is not None:
        named.append(("value", value))
    check_devices(op, named)
    _index_vector(op, self, dim, index)
    _check_scalar_value(op, value)
    _check_not_complex_into_real(op, self, value)
    check_value_fits(op, value, self._impl.dtype)
    # one value written: an expanded self is fine, an index read from self's memory not
    _check_writes(op, self, ("index", index), internal=False)
    return _out(op, self)


def _check_not_complex_into_real(op, self, value):
    """index_fill converts its value to self's dtype refusing any complex one (even 1+0j)
    for a real self, as PyTorch's index_fill does."""
    impl = getattr(value, "_impl", None)
    complex_value = impl.dtype.is_complex if impl is not None else isinstance(value, complex)
    if complex_value and not self._impl.dtype.is_complex:
        raise DTypeError(f"{op}(): argument 'value' is complex, which a {self._impl.dtype.name} "
                         f"'self' cannot take", op=op, arg="value")


# ---- masked_* ------------------------------------------------------------------------
def check_mask(op, mask):
    if mask._impl.dtype is not dt.bool:
        raise DTypeError(f"{op}(): argument 'mask' must be a bool tensor, but got "
                         f"{mask._impl.dtype.name}", op=op, arg="mask")


def _masked_sizes(op, self, mask):
    """Out-of-place: self and mask broadcast; in-place: mask broadcasts to self."""
    check_mask(op, mask)
    sizes = broadcast(op, [("self", _sizes(self)), ("mask", _sizes(mask))])
    if op.endswith("_") and sizes != _sizes(self):
        raise ShapeError(f"{op}(): argument 'mask' (shape {fmt_shape(_sizes(mask))}) must "
                         f"broadcast to the shape of 'self' {fmt_shape(_sizes(self))}", op=op,
                         arg="mask")
    return sizes


def masked_fill(op, args):
    self, mask, value = args
    named = [("self", self), ("mask", mask)]
    if getattr(value, "_impl", None) is not None:
        named.append(("value", value))
    check_devices(op, named)
    sizes = _masked_sizes(op, self, mask)
    _check_scalar_value(op, value)
    check_value_fits(op, value, self._impl.dtype)
    if op.endswith("_"):     # one value written: an expanded self is fine
        assert_no_partial_overlap(op, self, "mask", mask)
    return _out(op, self, sizes)


def masked_select_sizes(op, args):
    """Checks only: the output's length is the number of True values (data-dependent)."""
    self, mask = args
    check_devices(op, [("self", self), ("mask", mask)])
    return _masked_sizes(op, self, mask)


def masked_scatter(op, args):
    self, mask, source = args
    check_devices(op, [("self", self), ("mask", mask), ("source", source)])
    sizes = _masked_sizes(op, self, mask)
    check_same_dtype(op, self, source, "source")
    _check_writes(op, self)
    return _out(op, self, sizes)


def nonzero(op, args):
    return DataDependent("self", "the number of rows (one per non-zero element)")


def masked_select(op, args):
    masked_select_sizes(op, args)
    return DataDependent("mask", "the output's length (the number of True elements)")


# ---- the gather/scatter pair the selection backwards use -----------------------------
def _check_index(op, self, dim, index):
    if index._impl.dtype is not dt.int64:
        raise DTypeError(f"{op}(): argument 'index' must be an int64 tensor, but got "
                         f"{index._impl.dtype.name}", op=op, arg="index")
    if len(_sizes(index)) != len(_sizes(self)):
        raise ShapeError(f"{op}(): argument 'index' (shape {fmt_shape(_sizes(index))}) must "
                         f"have as many dims as 'self' (shape {fmt_shape(_sizes(self))})",
                         op=op, arg="index")
    return wrap_dim(op, dim, len(_sizes(self)))


def gather_along(op, args):
    self, dim, index = args
    _check_index(op, self, dim, index)
    return OutSpec(_sizes(index), self._impl.dtype)


def scatter_add_along(op, args):
    self, dim, index, sizes = args
    if len(sizes) != len(_sizes(self)) or _sizes(index) != _sizes(self):
        raise ShapeError(f"{op}(): 'self' (shape {fmt_shape(_sizes(self))}), 'index' (shape "
                         f"{fmt_shape(_sizes(index))}) and 'sizes' {list(sizes)} must have "
                         f"the same rank, and 'self' the shape of 'index'", op=op, arg="index")
    _check_index(op, self, dim, index)
    return OutSpec(tuple(sizes), self._impl.dtype)


INDEX_DTYPES = (dt.int64, dt.int32)
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
    mask = _fill_mask(self, indices, values, accumulate)
    if mask is not None:
        _check_fill(op, self, mask, values)
    else:
        check_same_dtype(op, self, values, "values")
        vsizes = values._impl.sizes
        fits = len(vsizes) <= len(target) and all(
            v in (1, t) for v, t in zip(reversed(vsizes), reversed(target)))
        if not fits:
            raise ShapeError(f"{op}(): argument 'values' (shape {fmt_shape(vsizes)}) cannot "
                             f"be broadcast to the indexed shape {fmt_shape(target)}", op=op,
                             arg="values")
    if not op.endswith("_"):
        return OutSpec(self._impl.sizes, self._impl.dtype)
    # Memory checks (kernel_support/overlap.py), as PyTorch's index_put_ makes them. An expanded
    # self is allowed (PyTorch warns that it is deprecated).
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


def _check_fill(op, self, mask, values):
    """PyTorch's masked_fill_(mask, values.item()) path takes a value of any dtype and of
    any shape of one element, cast to self's dtype as a number is (check_value_fits),
    and refuses a uint8 mask as masked_fill_ does. TensorPlay's CUDA kernel writes
    values of self's dtype only: off the CPU the dtypes must match (open)."""
    if mask._impl.dtype is not dt.bool:
        raise DTypeError(f"{op}(): a mask with a one-element 'values' is written as "
                         f"masked_fill_, which only supports bool masks, but got a mask of "
                         f"dtype {mask._impl.dtype.name} (argument 'indices')", op=op,
                         arg="indices")
    if self._impl.device.type != "cpu":
        check_same_dtype(op, self, values, "values")
    check_value_fits(op, values, self._impl.dtype, arg="values")
