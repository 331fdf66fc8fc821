"""Shared pieces of the NumPy kernels: views in, tensors out."""
from __future__ import annotations

import warnings

import numpy as np

from tensorplay._device import CPU
from tensorplay._dtype import get_default_dtype
from tensorplay.kernel_support.layout import clone_strides, pointwise_strides, storage_span
from tensorplay.kernel_support.results import (
    PLAIN_KEYS, Storage, TensorImpl, VersionCounter, check_alloc, contiguous_strides, factory,
    grad_state, is_contiguous_layout,
)

_new = object.__new__
_ndarray = np.ndarray


def out(result, dtype):
    """Wrap a NumPy result as a new CPU tensor of `dtype` (ufuncs on 0-d arrays
    return NumPy scalars, hence the asarray). Nearly every CPU kernel's result is made
    here: `tensor_from_array(result, dtype, CPU)` (kernel_support/results.py) in one frame,
    the Tensor class read from the seam the Tensor layer fills."""
    if type(result) is not _ndarray:
        result = np.asarray(result)
    np_dtype = dtype.np
    if result.dtype is not np_dtype and result.dtype != np_dtype:   # `is`: the common case
        result = result.astype(np_dtype)
    flags = result.flags
    if not flags.c_contiguous:
        result = np.ascontiguousarray(result)
    elif not flags.writeable:
        # a read-only view that NumPy calls contiguous (an empty or one-element window of
        # sliding_window_view or broadcast_to): the tensor must own memory it can write
        result = result.copy()
    sizes = result.shape
    inference = grad_state.inference
    t = _new(factory.Tensor)
    t._impl = TensorImpl(Storage(result, result.nbytes, CPU), sizes,
                         _ROW_MAJOR_SHORT[len(sizes)] if len(sizes) < 2
                         else contiguous_strides(sizes), 0, dtype, CPU, VersionCounter(),
                         inference, result, True, _CPU_KEYS[inference])
    return t


_ROW_MAJOR_SHORT = ((), (1,))     # contiguous_strides of a 0-d and a 1-d tensor
_CPU_KEYS = (PLAIN_KEYS[False][CPU.key], PLAIN_KEYS[True][CPU.key])


def tensor_key(t):
    """What a Meta rule reads of a tensor, as part of a signature that a kernel keeps the
    rule's result under (conv's and cross-entropy's `_checked`): its sizes, dtype and
    device (devices are interned, tensorplay/_device.py, so their id names them without a
    Python __hash__); None for None."""
    if t is None:
        return None
    impl = t._impl
    return tuple(impl.sizes), impl.dtype, id(impl._device)


def out_strided(result, dtype, strides):
    """`out`, laid out with `strides`: a dense layout (a permutation of row-major), or a
    window of a larger buffer (lstsq's solution: the top rows of LAPACK's padded matrix,
    the rest of the buffer zeros)."""
    sizes = tuple(result.shape)
    if tuple(strides) == contiguous_strides(sizes):
        return out(result, dtype)
    itemsize = np.dtype(dtype.np).itemsize
    byte_strides = tuple(s * itemsize for s in strides)
    fresh = result.flags.owndata or (result.base is not None and result.base.flags.owndata
                                     and result.base.nbytes == result.nbytes)
    if fresh and result.dtype == dtype.np and result.strides == byte_strides and result.size:
        # NumPy's ufuncs already lay a fresh result out like their inputs (or a kernel
        # computed it transposed: a transposed view of a new array): keep it.
        view, flat = result, result.ravel(order="K")
    else:
        span = storage_span(sizes, strides)
        flat = (np.zeros if span > result.size else np.empty)(max(span, result.size, 1),
                                                               dtype.np)
        view = np.ndarray(sizes, dtype.np, buffer=flat, strides=byte_strides)
        np.copyto(view, result, casting="unsafe")
    impl = TensorImpl(Storage(flat, flat.nbytes, CPU), sizes, tuple(strides), 0, dtype, CPU,
                      inference=grad_state.inference, array=view,
                      contiguous=is_contiguous_layout(sizes, strides))
    return factory.wrap(impl)


def out_channels_last(nhwc, dtype):
    """A C-contiguous (N, H, W, C) result wrapped, without a copy, as the NCHW tensor it
    stores in channels_last layout: what an NHWC kernel returns."""
    nhwc = np.ascontiguousarray(nhwc, dtype=dtype.np)
    n, h, w, c = nhwc.shape
    sizes, strides = (n, c, h, w), (h * w * c, 1, w * c, c)
    flat = nhwc.reshape(-1)
    impl = TensorImpl(Storage(flat, flat.nbytes, CPU), sizes, strides, 0, dtype, CPU,
                      inference=grad_state.inference, array=nhwc.transpose(0, 3, 1, 2),
                      contiguous=is_contiguous_layout(sizes, strides))
    return factory.wrap(impl)


def nhwc_rows(a):
    """The (N * H * W, C) rows of an NCHW-indexed array stored channels_last (a view)."""
    return a.transpose(0, 2, 3, 1).reshape(-1, a.shape[1])


def out_like(result, dtype, *inputs):
    """`out` for a pointwise op: the result takes the layout of its tensor inputs, as in
    PyTorch (kernel_support/layout.py), so `x.t().exp()` is transposed. Row-major inputs,
    the common case, cost one check."""
    for t in inputs:       # a plain loop: a generator in all() costs more than the add
        impl = getattr(t, "_impl", None)        # None for a Python number
        if impl is not None and not impl.is_contiguous:
            break
    else:
        return out(result, dtype)
    result = np.asarray(result)
    if result.ndim < 2:
        # A 0-d or 1-d result has one dense layout, row-major, whatever its inputs'
        # strides (pointwise_strides answers contiguous_strides without reading them):
        # MulBackward0's `grad * other` with sum's stride-0 gradient comes here.
        return out(result, dtype)
    impls = [t._impl for t in inputs if hasattr(t, "_impl")]
    if result.size and _all_strides_zero(impls):
        # Inputs that repeat one element along every dim (`grad * 2` where grad is sum's
        # expand of a 0-d tensor to a matrix) give pointwise_strides no order to follow:
        # it keeps the row-major order, whose strides are contiguous_strides' when no
        # size is 0 (tests/test_fastpath_fast15a.py compares the two on many layouts). A
        # size-1 dim's own stride is not enough: pointwise_strides orders by it too.
        return out(result, dtype)
    strides = pointwise_strides(tuple(result.shape), [(i.sizes, i.strides) for i in impls])
    return out_strided(result, dtype, strides)


def _all_strides_zero(impls):
    for impl in impls:
        for stride in impl.strides:
            if stride:
                return False
    return True


def out_like1(result, dtype, t):
    """`out_like(result, dtype, t)` for one tensor, the unary ops' call."""
    if t._impl.is_contiguous:
        return out(result, dtype)
    return out_like(result, dtype, t)


def out_like2(result, dtype, a, b):
    """`out_like(result, dtype, a, b)` for two tensors, the binary ops' call: two
    row-major inputs give a row-major result without out_like's loop over its inputs."""
    if a._impl.is_contiguous and b._impl.is_contiguous:
        return out(result, dtype)
    return out_like(result, dtype, a, b)


def check_result(op, arg, sizes, dtype):
    """Refuse a result of `sizes` too large to allocate before NumPy is asked for it (ops
    whose result can be far larger than their input: repeat, pad, upsample, a copy of an
    expanded view)."""
    check_alloc(op, arg, sizes, dtype.itemsize)


def write_target(op, self):
    """The array an indexed write goes into: `self`'s own memory for an in-place op (its
    name ends in `_`), otherwise a fresh copy, which becomes the result (`written`)."""
    a = self._impl.array()
    return a if op.endswith("_") else np.array(a, copy=True, order="K")


def written(op, self, target, keep_layout=False):
    """What an op that wrote into `target` (from write_target) returns: `self` when in
    place, otherwise `target` as a new tensor: row-major, or with `keep_layout` laid out
    as self's clone (PyTorch's index_fill and index_put are self.clone().op_(), so
    `index_fill(x.t(), ...)` is transposed; its scatter and index_copy are row-major)."""
    if op.endswith("_"):
        return self
    impl = self._impl
    if not keep_layout:
        return out(target, impl.dtype)
    return out_strided(target, impl.dtype, clone_strides(impl.sizes, impl.strides))


def array_as(t, dtype):
    """The tensor's data as `dtype` (a view when it already is, a converted copy otherwise)."""
    impl = t._impl
    a = impl._array     # the cached view, as impl.array() would return it
    if a is None:
        a = impl.array()
    return a if impl.dtype is dtype else a.astype(dtype.np)


def real_part_for(a, dtype):
    """The array `a` about to be converted to `dtype`: a complex array going to a real
    dtype keeps only its real part, with PyTorch's warning (a UserWarning; NumPy's own
    ComplexWarning says the same but is another class). A conversion to bool keeps the
    whole number: z is True when z != 0, either part nonzero."""
    if a.dtype.kind != "c" or dtype.is_complex or dtype.np.kind == "b":
        return a
    warnings.warn("Casting complex values to real discards the imaginary part", UserWarning,
                  stacklevel=2)
    return a.real


def scalar_as(value, dtype):
    """A number argument (addcmul's value, addmm's beta and alpha) as PyTorch applies it to
    a tensor of `dtype`: converted to that type first, so integer dtypes truncate it
    toward zero (addcmul(int, int, int, value=1.5) uses 1, value=-1.5 uses -1)."""
    if dtype.np.kind in "iu" and not isinstance(value, (bool, int)):
        return int(value)
    return value


def float_dtype(dtype):
    """The dtype unary float ops compute in: integers and bool become the default float;
    floating and complex dtypes are kept (exp, log, sqrt... of a complex number are
    complex; the ops PyTorch refuses for complex refuse it before they ask)."""
    return dtype if dtype.is_differentiable else get_default_dtype()


def accumulate_dtype(dtype):
    """Half types are summed in float32, as PyTorch does, then rounded once."""
    return np.float32 if dtype.itemsize == 2 and dtype.is_floating_point else dtype.np


_UFUNC_BUFSIZE = np.getbufsize()     # NumPy's default, 8192 elements


class broadcast_rows:
    """`with broadcast_rows(row):` NumPy ufuncs between (..., row) arrays and a broadcast
    (row,) operand (a per-channel coefficient repeated over a channel's positions) read
    that operand in place. With its default 8192-element buffer a ufunc whose operand is
    contiguous over fewer elements than that copies it into the buffer on every call:
    ~25% of each pass at the digits CNN's 2048-element rows (32 channels x 8 x 8). A
    buffer no longer than the row leaves nothing to copy. Rows under 1024 elements are left
    alone: there the copy pays for itself (the loop over many short rows costs more)."""

    __slots__ = ("row", "old")

    def __init__(self, row):
        self.row = row
        self.old = None

    def __enter__(self):
        if 1024 <= self.row < _UFUNC_BUFSIZE:
            self.old = np.setbufsize(self.row)

    def __exit__(self, *exc):
        if self.old is not None:
            np.setbufsize(self.old)      # (NumPy < 2 does not scope it to errstate)
