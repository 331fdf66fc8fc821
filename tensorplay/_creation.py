"""Creating tensors: from data (`tensor`, `from_numpy`), filled (`zeros`, `full`),
ranges (`arange`, `linspace`, `eye`) and random (`rand`, `randn`, ...).

These are not dispatched ops: creating a tensor is allocating storage on a
device (`_allocate`), then at most one `fill_`/`copy_`, which are.
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from tensorplay import _dtype as dt
from tensorplay._device import CPU, as_device
from tensorplay._impl import Storage, TensorImpl, contiguous_strides, impl_from_array, numel_of
from tensorplay._random import rng
from tensorplay._tensor import Tensor, wrap
from tensorplay.autograd.grad_mode import grad_state


def _size_arg(size):
    if len(size) == 1 and not isinstance(size[0], (int, np.integer)):
        size = size[0]
    if isinstance(size, (int, np.integer)):
        size = (size,)
    out = tuple(int(s) for s in size)
    if any(s < 0 for s in out):
        raise RuntimeError(f"Trying to create tensor with negative dimension: {list(out)}")
    return out


def _finish(t, requires_grad):
    if requires_grad:
        t.requires_grad_(True)
    return t


def _from_array(arr, dtype, device):
    """A new tensor holding a copy (or the array itself, when fresh) on `device`."""
    device = as_device(device)
    if device is CPU:
        return wrap(impl_from_array(arr, dtype, CPU, grad_state.inference))
    from tensorplay._fallback_ops import host_to_device
    return host_to_device(arr, dtype, device)


def _allocate(sizes, dtype, device, strides=None):
    """Uninitialised storage for `sizes` on `device`, as a tensor."""
    device = as_device(device)
    if strides is None:
        strides = contiguous_strides(sizes)
        n = numel_of(sizes)
    else:
        n = 0 if numel_of(sizes) == 0 else 1 + builtins.sum((s - 1) * st
                                                           for s, st in zip(sizes, strides))
    nbytes = n * dtype.itemsize
    if device is CPU:
        storage = Storage(np.empty(n, dtype.np), nbytes, CPU)
    elif device.type == "meta":
        storage = Storage(None, nbytes, device)
    else:
        from tensorplay import cuda
        storage = cuda.allocate(nbytes, device)
    return wrap(TensorImpl(storage, tuple(sizes), tuple(strides), 0, dtype, device,
                           inference=grad_state.inference))


# ---- from data ------------------------------------------------------------------------
def _infer(data):
    """NumPy array and TensorPlay dtype for Python data (floats -> the default dtype)."""
    if isinstance(data, Tensor):
        return data.detach().cpu()._impl.array(), data.dtype
    if isinstance(data, np.ndarray):
        return data, dt.from_numpy_dtype(data.dtype)
    if isinstance(data, (list, tuple)) and any(isinstance(x, Tensor) for x in _flat(data)):
        arr = np.array([np.asarray(x) if isinstance(x, Tensor) else x for x in data])
    else:
        arr = np.array(data)
    if arr.dtype == object:
        raise TypeError(f"tensor(): could not infer dtype of {type(data).__name__} "
                        f"(ragged nested sequence or unsupported element type)")
    if arr.dtype.kind == "f" and not isinstance(data, np.generic):
        return arr, dt.get_default_dtype()
    if arr.dtype.kind in "iu" and arr.dtype != np.uint8:
        return arr, dt.int64
    return arr, dt.from_numpy_dtype(arr.dtype)


def _flat(data):
    for x in data:
        if isinstance(x, (list, tuple)):
            yield from _flat(x)
        else:
            yield x


def tensor(data, *, dtype=None, device=None, requires_grad=False):
    """A new tensor that owns a copy of `data` (nested lists, numbers, arrays, tensors)."""
    arr, inferred = _infer(data)
    dtype = dtype or inferred
    arr = np.array(arr, dtype=dtype.np, copy=True, order="C")
    return _finish(_from_array(arr, dtype, device), requires_grad)


def as_tensor(data, dtype=None, device=None):
    """Like `tensor`, but shares memory with a NumPy array or tensor when it can."""
    if isinstance(data, Tensor):
        out = data
        if dtype is not None or device is not None:
            out = data.to(device=device or data.device, dtype=dtype)
        return out
    if isinstance(data, np.ndarray) and (dtype is None or dtype.np == data.dtype) \
            and as_device(device) is CPU:
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array):
    """A CPU tensor sharing `array`'s memory (writes through either are seen by both)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy(): expected np.ndarray, got {type(array).__name__}")
    dtype = dt.from_numpy_dtype(array.dtype)
    item = array.itemsize
    if any(s < 0 for s in array.strides):
        raise ValueError("from_numpy(): at least one stride in the given numpy array is "
                         "negative; make a copy with array.copy() first")
    if array.flags.c_contiguous:
        return wrap(TensorImpl(Storage(array, array.nbytes, CPU), array.shape,
                               contiguous_strides(array.shape), 0, dtype, CPU, array=array))
    base = array
    while isinstance(base.base, np.ndarray):
        base = base.base
    if not base.flags.c_contiguous or any(s % item for s in array.strides):
        array = np.ascontiguousarray(array)
        return from_numpy(array)
    flat = base.reshape(-1).view(np.uint8)
    offset_bytes = array.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    impl = TensorImpl(Storage(flat, flat.nbytes, CPU), array.shape,
                      tuple(s // item for s in array.strides), offset_bytes // item, dtype, CPU,
                      array=array)
    return wrap(impl)


def from_dlpack(obj):
    """Import a DLPack capsule or an object with `__dlpack__` (NumPy, PyTorch) without copying."""
    if hasattr(obj, "__dlpack_device__") and obj.__dlpack_device__()[0] != 1:
        from tensorplay import cuda
        return cuda.from_dlpack(obj)
    return from_numpy(np.from_dlpack(obj))


def scalar_tensor(value, dtype=None, device=None):
    dtype = dtype or dt.scalar_dtype(value)
    return _from_array(np.array(value).astype(dtype.np), dtype, device)


# ---- filled ---------------------------------------------------------------------------
def empty(*size, dtype=None, device=None, requires_grad=False):
    return _finish(_allocate(_size_arg(size), dtype or dt.get_default_dtype(), device),
                   requires_grad)


def empty_strided(size, stride, *, dtype=None, device=None, requires_grad=False):
    t = _allocate(tuple(size), dtype or dt.get_default_dtype(), device, tuple(stride))
    return _finish(t, requires_grad)


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False):
    sizes = _size_arg((size,))
    dtype = dtype or dt.scalar_dtype(fill_value)
    device = as_device(device)
    if device is CPU:
        t = _from_array(np.full(sizes, np.array(fill_value).astype(dtype.np)), dtype, CPU)
    else:
        t = _allocate(sizes, dtype, device)
        if device.type != "meta":
            t.fill_(fill_value)
    return _finish(t, requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False):
    return full(_size_arg(size), 0, dtype=dtype or dt.get_default_dtype(), device=device,
                requires_grad=requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False):
    return full(_size_arg(size), 1, dtype=dtype or dt.get_default_dtype(), device=device,
                requires_grad=requires_grad)


def _like(t, dtype, device):
    return dtype or t.dtype, device if device is not None else t.device


def empty_like(t, *, dtype=None, device=None, requires_grad=False):
    dtype, device = _like(t, dtype, device)
    return empty(t.shape, dtype=dtype, device=device, requires_grad=requires_grad)


def zeros_like(t, *, dtype=None, device=None, requires_grad=False):
    dtype, device = _like(t, dtype, device)
    return zeros(t.shape, dtype=dtype, device=device, requires_grad=requires_grad)


def ones_like(t, *, dtype=None, device=None, requires_grad=False):
    dtype, device = _like(t, dtype, device)
    return ones(t.shape, dtype=dtype, device=device, requires_grad=requires_grad)


def full_like(t, fill_value, *, dtype=None, device=None, requires_grad=False):
    dtype, device = _like(t, dtype, device)
    return full(t.shape, fill_value, dtype=dtype, device=device, requires_grad=requires_grad)


# ---- ranges ---------------------------------------------------------------------------
def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("arange(): step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError(f"arange(): upper bound and larger bound inconsistent with step "
                           f"sign (start={start}, end={end}, step={step})")
    is_float = any(isinstance(v, float) for v in (start, end, step))
    dtype = dtype or (dt.get_default_dtype() if is_float else dt.int64)
    n = max(0, math.ceil((end - start) / step))
    arr = (start + step * np.arange(n, dtype=np.float64 if is_float else np.int64))
    return _finish(_from_array(arr.astype(dtype.np), dtype, device), requires_grad)


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False):
    dtype = dtype or dt.get_default_dtype()
    arr = np.linspace(start, end, int(steps), dtype=np.float64).astype(dtype.np)
    return _finish(_from_array(arr, dtype, device), requires_grad)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False):
    dtype = dtype or dt.get_default_dtype()
    arr = np.eye(n, n if m is None else m, dtype=dtype.np)
    return _finish(_from_array(arr, dtype, device), requires_grad)


# ---- random ---------------------------------------------------------------------------
def rand(*size, generator=None, dtype=None, device=None, requires_grad=False):
    dtype = dtype or dt.get_default_dtype()
    arr = rng(generator).random(_size_arg(size), dtype=np.float64).astype(dtype.np)
    return _finish(_from_array(arr, dtype, device), requires_grad)


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False):
    dtype = dtype or dt.get_default_dtype()
    arr = rng(generator).standard_normal(_size_arg(size)).astype(dtype.np)
    return _finish(_from_array(arr, dtype, device), requires_grad)


def randint(low, high=None, size=None, *, generator=None, dtype=None, device=None,
            requires_grad=False):
    if size is None:   # randint(high, size)
        low, high, size = 0, low, high
    dtype = dtype or dt.int64
    arr = rng(generator).integers(low, high, _size_arg((size,))).astype(dtype.np)
    return _finish(_from_array(arr, dtype, device), requires_grad)


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False):
    dtype = dtype or dt.int64
    arr = rng(generator).permutation(int(n)).astype(dtype.np)
    return _finish(_from_array(arr, dtype, device), requires_grad)


def rand_like(t, *, dtype=None, device=None, requires_grad=False):
    dtype, device = _like(t, dtype, device)
    return rand(t.shape, dtype=dtype, device=device, requires_grad=requires_grad)


def randn_like(t, *, dtype=None, device=None, requires_grad=False):
    dtype, device = _like(t, dtype, device)
    return randn(t.shape, dtype=dtype, device=device, requires_grad=requires_grad)
