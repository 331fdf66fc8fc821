"""TensorImpl: the memory and metadata behind a Tensor.

A tensor is a *view*: `(storage, sizes, strides, storage_offset)` plus a dtype
and a device. Views made by `view`, `transpose`, slicing, ... are new impls
that share the storage **and** the version counter of their base, so an
in-place change through any of them is visible to autograd's saved-tensor check.

Autograd's per-tensor state (requires_grad, grad, grad_fn, hooks) lives here
too, like PyTorch's AutogradMeta: the `Tensor` class above it stays thin.
"""
from __future__ import annotations

import numpy as np

from tensorplay._layout import strided
from tensorplay.dispatch.keys import AUTOGRAD_OFFSET


class Storage:
    """A flat block of memory. CPU: a contiguous NumPy array; CUDA: a torch byte
    tensor (device memory from PyTorch's allocator); Meta: no data at all."""

    __slots__ = ("data", "nbytes", "device", "__weakref__")

    def __init__(self, data, nbytes, device):
        self.data = data
        self.nbytes = nbytes
        self.device = device


class VersionCounter:
    """Shared by a tensor and all its views; bumped by every in-place op."""

    __slots__ = ("value",)

    def __init__(self):
        self.value = 0


def contiguous_strides(sizes):
    n = len(sizes)
    if n < 2:   # the common 0-d and 1-d cases, on every kernel's result
        return (1,) * n
    strides = [1] * n
    acc = 1
    for i in range(len(sizes) - 1, -1, -1):
        strides[i] = acc
        acc *= max(sizes[i], 1)
    return tuple(strides)


def is_contiguous_layout(sizes, strides):
    """Row-major contiguity as PyTorch defines it: size-1 dims may have any stride."""
    expected = 1
    for size, stride in zip(reversed(sizes), reversed(strides)):
        if size == 0:
            return True
        if size != 1:
            if stride != expected:
                return False
            expected *= size
    return True


def numel_of(sizes):
    n = 1
    for s in sizes:
        n *= s
    return n


class TensorImpl:
    __slots__ = (
        "storage", "sizes", "strides", "offset", "dtype", "device", "version",
        "is_contiguous", "inference", "wrapped_number", "_array",
        # autograd meta
        "requires_grad", "grad", "grad_fn", "output_nr", "hooks", "retains_grad",
        "grad_accumulator", "base", "name", "__weakref__",
    )

    layout = strided     # a class attribute: the sparse impl (tensorplay/sparse) overrides it

    def __init__(self, storage, sizes, strides, offset, dtype, device, version=None,
                 inference=False, array=None, contiguous=None):
        self.storage = storage
        self.sizes = sizes
        self.strides = strides
        self.offset = offset
        self.dtype = dtype
        self.device = device
        self.version = version if version is not None else VersionCounter()
        self.is_contiguous = is_contiguous_layout(sizes, strides) if contiguous is None \
            else contiguous
        self.inference = inference
        self.wrapped_number = False
        self._array = array
        self.requires_grad = False
        self.grad = None
        self.grad_fn = None
        self.output_nr = 0
        self.hooks = None
        self.retains_grad = False
        self.grad_accumulator = None
        self.base = None
        self.name = None

    def key_set(self):
        """Computed per call from the device and flags, never stored: a backend bit, plus
        its autograd bit unless this is an inference tensor."""
        backend = self.device.key
        if self.inference:
            return 1 << backend
        return (1 << backend) | (1 << (backend + AUTOGRAD_OFFSET))

    def numel(self):
        return numel_of(self.sizes)

    def array(self):
        """A NumPy view of this tensor's elements (CPU only), built from its strides once."""
        a = self._array
        if a is None:
            a = self._array = cpu_view(self)
        return a


def cpu_view(impl):
    itemsize = impl.dtype.itemsize
    data = impl.storage.data
    if data is None:
        raise RuntimeError(f"tensor on device '{impl.device}' has no host data")
    if numel_of(impl.sizes) == 0:
        return np.empty(impl.sizes, impl.dtype.np)
    return np.ndarray(impl.sizes, impl.dtype.np, buffer=data, offset=impl.offset * itemsize,
                      strides=tuple(s * itemsize for s in impl.strides))


def impl_from_array(arr, dtype, device, inference):
    """Wrap a fresh NumPy result as a contiguous tensor without copying it."""
    if not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr)
    sizes = arr.shape
    storage = Storage(arr, arr.nbytes, device)
    return TensorImpl(storage, sizes, contiguous_strides(sizes), 0, dtype, device,
                      inference=inference, array=arr, contiguous=True)
