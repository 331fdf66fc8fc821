"""`tp.cuda`: the device the Triton backend (triton_kernels/) serves.

A `cuda` tensor's storage is a flat torch uint8 tensor: device memory from
PyTorch's caching allocator on a real GPU. PyTorch does nothing else here:
it hands out memory, copies bytes between host and device, and provides the
pointer objects that Triton launches take. Sizes, strides and dtypes stay
TensorPlay's own.

`tp.cuda` has two halves. The device's state (interpreter detection, availability,
allocation, the seed) lives below the Tensor layer in `tensorplay/_cuda_state.py`,
and is re-exported here; this module is the high half, which moves tensors between
TensorPlay, the host and PyTorch (`from_host`, `to_host`, DLPack) and reports memory.

Interpreter mode: with no GPU and `TENSORPLAY_TRITON_INTERPRET=1` (or
`TRITON_INTERPRET=1`), the same `cuda` device holds *host* memory and the real
Triton kernels run in Triton's interpreter (NumPy underneath). That is how the
backend is tested on machines without a GPU. `is_available()` stays honest
(False), and the mode shows in a tensor's repr (`triton='interpreter'`) and in
`tp.dispatch.explain()` (the `triton` hop of each launch).

    x = tp.randn(3, device="cuda")
    x        # interpreter: tensor([...], device='cuda:0', triton='interpreter')
"""
from __future__ import annotations

import numpy as np

from tensorplay import _dtype as dt
from tensorplay import _tensor_factory as factory
from tensorplay.amp import cuda_amp as amp  # noqa: F401  (tp.cuda.amp.autocast)
from tensorplay._cuda_state import (  # noqa: F401  (the state half of tp.cuda)
    allocate, device_count, initial_seed, is_available, is_interpreted, manual_seed,
    manual_seed_all, philox_inputs, philox_seed_offset, stats, storage_of, synchronize,
    triton_available,
)
from tensorplay._device import device as make_device
from tensorplay._impl import TensorImpl, contiguous_strides
from tensorplay.autograd.grad_mode import grad_state
from tensorplay.errors import DeviceError


# ---- memory ---------------------------------------------------------------------------
def memory_allocated(device=None):
    """Bytes held by live TensorPlay `cuda` storages (what the tensors own, not what
    PyTorch's caching allocator keeps in reserve)."""
    return stats.allocated


def max_memory_allocated(device=None):
    return stats.peak


def reset_peak_memory_stats(device=None):
    stats.peak = stats.allocated


# ---- host <-> device ------------------------------------------------------------------
def from_host(array, dtype, device):
    """A new contiguous `cuda` tensor holding a copy of the NumPy `array` (host -> device)."""
    import torch
    array = np.asarray(array, dtype=dtype.np)
    if not array.flags.c_contiguous:   # (not ascontiguousarray: it turns 0-d into 1-d)
        array = array.copy(order="C")
    storage = allocate(array.nbytes, device)
    if array.nbytes:
        # non_blocking: CUDA stages pageable host memory before returning, without waiting
        # for the kernels queued before it (a `x * 2.0` must not stall the GPU's queue).
        storage.data.copy_(torch.from_numpy(array.reshape(-1).view(np.uint8)),
                           non_blocking=True)
    sizes = tuple(array.shape)
    return factory.wrap(TensorImpl(storage, sizes, contiguous_strides(sizes), 0, dtype,
                                   device, inference=grad_state.inference, contiguous=True))


def to_host(t):
    """The elements of a *contiguous* `cuda` tensor, copied into a new NumPy array."""
    impl = t._impl
    if not impl.is_contiguous:
        raise ValueError("to_host(): expected a contiguous tensor (call .contiguous() first)")
    item = impl.dtype.itemsize
    n = impl.numel()
    start = impl.offset * item
    raw = impl.storage.data[start:start + n * item]
    host = raw.cpu().numpy() if raw.is_cuda else raw.numpy().copy()
    return host.view(impl.dtype.np).reshape(impl.sizes)


# ---- interop --------------------------------------------------------------------------
def torch_dtype(dtype):
    import torch
    return getattr(torch, dtype.name)


def as_torch(tensor):
    """A torch tensor sharing this `cuda` tensor's memory, with its sizes and strides
    (what `__dlpack__` exports, and the pointer object a Triton launch takes)."""
    impl = tensor._impl
    if impl.device.type != "cuda":
        raise DeviceError(f"as_torch(): expected a 'cuda' tensor, got one on '{impl.device}'",
                          op="as_torch", arg="tensor")
    import torch
    data = impl.storage.data
    view = torch.empty(0, dtype=torch_dtype(impl.dtype), device=data.device)
    return view.set_(data.untyped_storage(), impl.offset, impl.sizes, impl.strides)


def from_dlpack(obj):
    """A `cuda` tensor sharing memory with a DLPack producer on the GPU (torch, CuPy...)."""
    import torch
    t = torch.from_dlpack(obj)
    if t.device.type != "cuda":
        raise DeviceError(f"from_dlpack(): expected GPU memory, got a tensor on {t.device}",
                          op="from_dlpack", arg="obj")
    dtype = dt._by_name(str(t.dtype).replace("torch.", ""))
    device = make_device(f"cuda:{t.device.index or 0}")
    data = torch.empty(0, dtype=torch.uint8, device=t.device).set_(t.untyped_storage())
    storage = storage_of(data, device)
    return factory.wrap(TensorImpl(storage, tuple(t.shape), tuple(t.stride()),
                                   t.storage_offset(), dtype, device))


def source(op, **params):
    """The generated Triton source of a pointwise kernel, e.g. `tp.cuda.source("add")`."""
    import triton_kernels
    return triton_kernels.source(op, **params)


# The typed classes of old PyTorch on this device (tensorplay/_legacy_types.py):
# tp.cuda.FloatTensor([1.0]), isinstance(x, tp.cuda.LongTensor).
from tensorplay import _dtype as _dt  # noqa: E402
from tensorplay._legacy_types import CUDA_TYPES as _CUDA_TYPES  # noqa: E402

FloatTensor = _CUDA_TYPES[_dt.float32]
DoubleTensor = _CUDA_TYPES[_dt.float64]
HalfTensor = _CUDA_TYPES[_dt.float16]
BFloat16Tensor = _CUDA_TYPES[_dt.bfloat16]
LongTensor = _CUDA_TYPES[_dt.int64]
IntTensor = _CUDA_TYPES[_dt.int32]
ShortTensor = _CUDA_TYPES[_dt.int16]
ByteTensor = _CUDA_TYPES[_dt.uint8]
CharTensor = _CUDA_TYPES[_dt.int8]
BoolTensor = _CUDA_TYPES[_dt.bool]
