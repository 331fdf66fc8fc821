"""The input checks kernels raise, and what a shape rule returns.

Each check raises the typed error PyTorch's would, naming the op and the argument
(`op` is the name messages use, `add_`); the shape rules of tensorplay/meta/ call the same
functions, so a kernel that checks first and a Meta kernel refuse bad input alike.

    the contract      OutSpec, SELF, DataDependent: what a rule returns
    dims              wrap_dim, reduce_dim_list
    operands          check_devices (one device; a 0-dim CPU tensor joins any),
                      broadcast (shapes, by argument name)
    pointwise         binary (broadcast, promote, no float alpha for integers);
                      binary_inplace (the broadcast result fits `self` and casts to it),
                      fits_inplace (an in-place result fits `self`), check_inplace_cast
    reductions        reject_bool, check_mean_dtype, check_nonempty_reduction,
                      check_nonempty_dim
    index values      check_in_range, check_masked_scatter_count, is_mask: only a
                      kernel has the values (a meta tensor has none)
"""
from __future__ import annotations

from collections import namedtuple

from tensorplay import _dtype as dt
from tensorplay._frontdoor import wrap_dim as _wrap_dim
from tensorplay._impl import numel_of
from tensorplay._promotion import result_type
from tensorplay.errors import DeviceError, DTypeError, DimError, ShapeError, fmt_shape

# A result's sizes and dtype; `strides` where the op fixes its layout (LAPACK's column-major
# matrices), else None: row-major, or what the op's layout rule in meta/backend.py says.
OutSpec = namedtuple("OutSpec", "sizes dtype strides", defaults=(None,))
SELF = "self"   # rules returning SELF mean "the op returns its first argument" (in-place)
# A rule returns DataDependent when the output's shape (or value) is decided by the values
# of argument `arg`: the inputs are valid, but a meta tensor has no values to decide with,
# so the Meta kernel raises DataDependentError (nonzero, masked_select, unique, equal).
DataDependent = namedtuple("DataDependent", "arg what")


def _sizes(t):
    return t._impl.sizes


# ---- dims ---------------------------------------------------------------------------
def wrap_dim(op, dim, ndim):
    return _wrap_dim(op, "dim", dim, ndim)


def reduce_dim_list(op, dims, ndim):
    out = tuple(wrap_dim(op, d, ndim) for d in dims)
    if len(set(out)) != len(out):
        raise DimError(f"{op}(): dim {list(dims)} appears multiple times in the list of dims "
                       f"(argument 'dim')", op=op, arg="dim")
    return out


# ---- operands -----------------------------------------------------------------------
def check_devices(op, named):
    """The tensors of one call live on one device; a 0-dim CPU tensor is a number and
    may join any device (PyTorch's rule). The Meta kernels check it for every backend."""
    first = None
    for name, t in named:
        impl = t._impl
        if impl.device.type == "cpu" and not impl.sizes:
            continue
        if first is None:
            first = (name, impl.device)
        elif impl.device != first[1]:
            raise DeviceError(f"{op}(): expected all tensors to be on the same device, but "
                              f"argument '{name}' is on {impl.device} and argument "
                              f"'{first[0]}' is on {first[1]}", op=op, arg=name)


def broadcast(op, named):
    """Broadcast the shapes of `named` = [(arg name, sizes), ...] or raise a ShapeError."""
    ndim = max(len(s) for _, s in named)
    result = [1] * ndim
    owner = [None] * ndim
    for name, sizes in named:
        for i, size in enumerate(sizes):
            j = ndim - len(sizes) + i
            if size == result[j] or size == 1:
                continue
            if result[j] == 1:
                result[j], owner[j] = size, (name, sizes)
                continue
            other_name, other_sizes = owner[j]
            raise ShapeError(
                f"{op}(): argument '{name}' (shape {fmt_shape(sizes)}) is not broadcastable "
                f"with argument '{other_name}' (shape {fmt_shape(other_sizes)}): size {size} "
                f"vs {result[j]} at dimension {j}", op=op, arg=name)
    return tuple(result)


# ---- pointwise ----------------------------------------------------------------------
def binary(op, args, names=("self", "other")):
    a, b = args[0], args[1]
    check_devices(op, [(names[0], a), (names[1], b)])
    sizes = broadcast(op, [(names[0], _sizes(a)), (names[1], _sizes(b))])
    dtype = result_type(a, b)
    if len(args) > 2:
        alpha = args[2]
        if isinstance(alpha, float) and not dtype.is_differentiable:
            raise DTypeError(f"{op}(): for integral input tensors, argument 'alpha' must not "
                             f"be a floating point number", op=op, arg="alpha")
        if isinstance(alpha, complex) and not dtype.is_complex:
            # PyTorch's words: "For non-complex input tensors, argument alpha must not be a
            # complex number."
            raise DTypeError(f"{op}(): For non-complex input tensors, argument alpha must not "
                             f"be a complex number (argument 'alpha' is {alpha!r}, the result "
                             f"type {dtype.name})", op=op, arg="alpha")
    return OutSpec(sizes, dtype)


def binary_inplace(op, args):
    return fits_inplace(op, binary(op, args), args[0])


def fits_inplace(op, spec, self):
    """An in-place op's result, `spec`, must fit into `self`: its shape, and a dtype that
    casts to self's. The spec of an in-place op is SELF."""
    if spec.sizes != _sizes(self):
        raise ShapeError(f"{op}(): output with shape {fmt_shape(_sizes(self))} doesn't match "
                         f"the broadcast shape {fmt_shape(spec.sizes)} (the output is argument "
                         f"'self')", op=op, arg="self")
    check_inplace_cast(op, spec.dtype, self)
    return SELF


def check_inplace_cast(op, dtype, self):
    if not dt.can_cast(dtype, self._impl.dtype):
        raise DTypeError(f"{op}(): result type {dtype.name} can't be cast to the desired "
                         f"output type {self._impl.dtype.name} (the output is argument 'self')",
                         op=op, arg="self")


# ---- reductions ---------------------------------------------------------------------
def reject_bool(op, t, name="self"):
    """Ops PyTorch has no bool kernel for (argmax, topk, median, pow of two bools...)."""
    if t._impl.dtype is dt.bool:
        raise DTypeError(f"{op}(): not implemented for bool tensors (argument '{name}' is "
                         f"bool; expected a number tensor)", op=op, arg=name)


def check_mean_dtype(op, self, dtype):
    d = dtype or self._impl.dtype
    if not d.is_differentiable:      # floating or complex, as PyTorch's mean
        raise DTypeError(f"{op}(): could not infer output dtype. Argument 'self' must have a "
                         f"floating point or complex dtype (or pass dtype=). Got: {d.name}", op=op,
                         arg="self")


def check_nonempty_reduction(op, self):
    if self._impl.numel() == 0:
        raise ShapeError(f"{op}(): expected a non-empty input when no dim is given, but "
                         f"argument 'self' has shape {fmt_shape(_sizes(self))}", op=op,
                         arg="self")


def check_nonempty_dim(op, self, dim):
    sizes = _sizes(self)
    if sizes and sizes[dim] == 0:
        raise ShapeError(f"{op}(): cannot reduce over dimension {dim} of size 0 (argument "
                         f"'dim'; input shape {fmt_shape(sizes)})", op=op, arg="dim")


# ---- index values: only a kernel has them ---------------------------------------------
MASK_DTYPES = (dt.bool, dt.uint8)


# ---- advanced indexing: `index.Tensor` (x[idx]) and `index_put_` (x[idx] = v) ----------
#
# `indices` has one entry per leading dimension of `self`: None (the whole dimension,
# what a `:` became), an integer tensor (one coordinate per element), or a bool mask
# (covering as many dimensions as it has, like its `nonzero()` columns). The integer
# tensors broadcast together to one shape B, and the result is, as in NumPy:
#
#     indices               self [5, 6, 7]          result
#     [i, None, None]       i: [2, 3]               [2, 3, 6, 7]      B where the dims were
#     [None, i, j]          i, j: [4]               [5, 4]            (adjacent: stays in place)
#     [i, None, j]          i, j: [4]               [4, 6]            (split by a `:`: B first)
def is_mask(t):
    return t._impl.dtype in MASK_DTYPES


def check_in_range(op, indices, size, dim, arg="index", allow_negative=False):
    """Every value of the NumPy array `indices` addresses an element of a dimension of
    `size`; the kernels call this before they touch memory."""
    if indices.size == 0:
        return
    low = -size if allow_negative else 0
    lo, hi = int(indices.min()), int(indices.max())
    if lo < low or hi >= size:
        bad = lo if lo < low else hi
        raise DimError(f"{op}(): index {bad} in argument '{arg}' is out of bounds for "
                       f"dimension {dim} with size {size}", op=op, arg=arg)


def check_masked_scatter_count(op, count, source):
    if numel_of(_sizes(source)) < count:
        raise ShapeError(f"{op}(): argument 'source' has {numel_of(_sizes(source))} elements but "
                         f"'mask' selects {count}", op=op, arg="source")
