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
from tensorplay._storage import Storage  # noqa: F401  (re-exported: a TensorImpl's memory)
from tensorplay.dispatch.keys import AUTOGRAD_OFFSET, NUM_BACKENDS, REQUIRES_GRAD, DispatchKey

# what a recomputed key set keeps: the requires-grad flag and a forward-mode tangent's key
CARRIED = REQUIRES_GRAD | (1 << DispatchKey.ForwardAD)

# The key set of a plain impl, by [inference][backend]: its backend bit, plus the
# backend's autograd bit unless it is an inference tensor (`TensorImpl.key_set`).
PLAIN_KEYS = (
    tuple((1 << b) | (1 << (b + AUTOGRAD_OFFSET)) for b in range(NUM_BACKENDS)),
    tuple(1 << b for b in range(NUM_BACKENDS)),
)


class VersionCounter:
    """Shared by a tensor and all its views; bumped by every in-place op.

    A counter starts at the class's `value` 0, and the first bump gives the instance a
    value of its own: every kernel result makes a counter, and a class with no
    `__init__` is made in half the time."""

    value = 0


# The row-major strides of the shapes of 3 or more dims seen so far, by shape: a program
# uses a few shapes over and over (a CNN's activations), and the loop below costs 0.7 us
# where a dict lookup costs 0.1 (about 40 calls a digits CNN training step).
_STRIDES_OF = {}
_STRIDES_KEPT = 4096


def contiguous_strides(sizes):
    n = len(sizes)
    if n < 2:   # the common 0-d and 1-d cases, on every kernel's result
        return (1,) * n
    if n == 2:  # a matrix: the loop below, written out
        return (sizes[1] or 1, 1)
    if type(sizes) is tuple:
        strides = _STRIDES_OF.get(sizes)
        if strides is None:
            strides = _row_major(sizes, n)
            if len(_STRIDES_OF) < _STRIDES_KEPT:
                _STRIDES_OF[sizes] = strides
        return strides
    return _row_major(sizes, n)


def _row_major(sizes, n):
    strides = [1] * n
    acc = 1
    for i in range(n - 1, -1, -1):
        strides[i] = acc
        acc *= sizes[i] or 1      # max(size, 1) for sizes >= 0, without a call per dim
    return tuple(strides)


def is_contiguous_layout(sizes, strides):
    """Row-major contiguity as PyTorch defines it: size-1 dims may have any stride."""
    n = len(sizes)
    if n < 2:   # 0-d, and 1-d (every view made by x.view(-1) or x[i] of a matrix)
        return n == 0 or sizes[0] < 2 or strides[0] == 1
    expected = 1
    for i in range(n - 1, -1, -1):
        size = sizes[i]
        if size == 0:
            return True
        if size != 1:
            if strides[i] != expected:
                return False
            expected *= size
    return True


def numel_of(sizes):
    n = 1
    for s in sizes:
        n *= s
    return n


# Slots no constructor sets: read with getattr(impl, name, None) (what `tangents` needs
# costs a store on every impl made, the hot path of every kernel result, otherwise).
LAZY_SLOTS = ("tangents",)


class TensorImpl:
    __slots__ = (
        "storage", "sizes", "strides", "offset", "dtype", "_device", "version",
        "is_contiguous", "_inference", "wrapped_number", "_array", "keys",
        # autograd meta
        "requires_grad", "grad", "grad_fn", "output_nr", "hooks", "retains_grad",
        "grad_accumulator", "base", "name", "post_accumulate_hooks", "__weakref__",
        # forward-mode AD: level -> tangent (autograd/forward_mode.py); unset until the
        # first tangent, so making an impl costs nothing for it (LAZY_SLOTS)
        "tangents",
    )

    layout = strided     # a class attribute: the sparse impl (tensorplay/sparse) overrides it

    def __init__(self, storage, sizes, strides, offset, dtype, device, version=None,
                 inference=False, array=None, contiguous=None, keys=None):
        # The one constructor (views and kernel results call it too). Hot callers pass
        # every argument by position (a class call with keywords builds a dict first) and
        # the values they know: `contiguous`, and `keys`, a plain impl's key set
        # (PLAIN_KEYS), which saves the method call.
        self.storage = storage
        self.sizes = sizes
        self.strides = strides
        self.offset = offset
        self.dtype = dtype
        self._device = device
        self.version = version if version is not None else VersionCounter()
        self.is_contiguous = is_contiguous_layout(sizes, strides) if contiguous is None \
            else contiguous
        self._inference = inference
        self.keys = self.key_set() if keys is None else keys
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
        self.post_accumulate_hooks = None

    # The key set follows from the device and the inference flag, and for the subclasses
    # (sparse, batched, Python-key impls) from their class, so `key_set()` is computed
    # once into `keys`, which the front doors read, with the REQUIRES_GRAD flag while
    # the tensor requires grad (dispatch/keys.py). The setters below keep it current: a
    # device change (`Tensor.data = ...` moving a parameter), an inference flip, and
    # `set_requires_grad`, the one way to change `requires_grad` after construction.
    @property
    def device(self):
        return self._device

    @device.setter
    def device(self, device):
        self._device = device
        self.keys = self.key_set() | (self.keys & CARRIED)

    @property
    def inference(self):
        return self._inference

    @inference.setter
    def inference(self, inference):
        self._inference = inference
        self.keys = self.key_set() | (self.keys & CARRIED)

    def set_requires_grad(self, flag):
        """`requires_grad`, and the REQUIRES_GRAD flag of `keys` with it."""
        self.requires_grad = flag
        self.keys = (self.keys | REQUIRES_GRAD) if flag else (self.keys & ~REQUIRES_GRAD)

    def key_set(self):
        """A backend bit, plus its autograd bit unless this is an inference tensor
        (subclasses add or replace keys; `keys` holds the result)."""
        return PLAIN_KEYS[self._inference][self._device.key]

    def numel(self):
        return numel_of(self.sizes)

    def array(self):
        """A NumPy view of this tensor's elements (CPU only), built from its strides once."""
        a = self._array
        if a is None:
            a = self._array = cpu_view(self)
        return a


def cpu_view(impl):
    dtype = impl.dtype
    data = impl.storage.data
    if data is None:
        raise RuntimeError(f"tensor on device '{impl.device}' has no host data")
    sizes = impl.sizes
    if 0 in sizes:      # no element (sizes are >= 0): nothing to address in the storage
        return np.empty(sizes, dtype.np)
    itemsize = dtype.itemsize
    strides = impl.strides
    # NumPy counts strides in bytes. The 0-d and 1-d cases (a view made by indexing, the
    # gradient of a sum) without a comprehension's frame.
    if len(strides) < 2:
        byte_strides = (strides[0] * itemsize,) if strides else ()
    else:
        byte_strides = []
        for s in strides:       # (a loop: a comprehension would make `itemsize` a cell
            byte_strides.append(s * itemsize)     # variable, allocated on every call)
        byte_strides = tuple(byte_strides)
    # np.ndarray(shape, dtype, buffer, offset, strides), positional: NumPy parses keyword
    # arguments to its constructor slowly (0.5 us of a 1.2 us view).
    return np.ndarray(sizes, dtype.np, data, impl.offset * itemsize, byte_strides)


_ROW_MAJOR_SHORT = ((), (1,))     # contiguous_strides of a 0-d and a 1-d tensor


def impl_from_array(arr, dtype, device, inference):
    """Wrap a fresh NumPy result as a contiguous tensor without copying it (nearly every
    CPU kernel's result is made here)."""
    if not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr)
    sizes = arr.shape
    strides = _ROW_MAJOR_SHORT[len(sizes)] if len(sizes) < 2 else contiguous_strides(sizes)
    return TensorImpl(Storage(arr, arr.nbytes, device), sizes, strides, 0, dtype, device,
                      VersionCounter(), inference, arr, True, PLAIN_KEYS[inference][device.key])
