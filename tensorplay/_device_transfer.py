"""Memory from outside TensorPlay onto a device, for the creation functions, the CPU
kernel of `_to_copy` and the Triton backend: a host array copied onto a device
(`host_to_device`, `from_host`), GPU memory taken over from DLPack (`from_dlpack`), and
back: a `cuda` tensor's elements as a host array (`to_host`). The conversions that need
to know which backend owns the device; `tp.cuda` re-exports the `cuda` ones."""
from __future__ import annotations

import numpy as np

from tensorplay import _cuda_state
from tensorplay import _dtype as dt
from tensorplay import _tensor_factory as factory
from tensorplay._device import as_device, device as make_device
from tensorplay._impl import TensorImpl, contiguous_strides
from tensorplay.dispatch.tls import grad_state
from tensorplay.errors import DeviceError


def host_to_device(array, dtype, device):
    """A NumPy array copied onto `device` (meta: sizes only; cuda: the Triton backend)."""
    device = as_device(device)
    if device.type == "meta":
        return factory.empty(array.shape, dtype=dtype, device=device)
    return from_host(array, dtype, device)


def from_host(array, dtype, device):
    """A new contiguous `cuda` tensor holding a copy of the NumPy `array` (host -> device)."""
    import torch
    array = np.asarray(array, dtype=dtype.np)
    if not array.flags.c_contiguous:   # (not ascontiguousarray: it turns 0-d into 1-d)
        array = array.copy(order="C")
    storage = _cuda_state.allocate(array.nbytes, device)
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
    storage = _cuda_state.storage_of(data, device)
    return factory.wrap(TensorImpl(storage, tuple(t.shape), tuple(t.stride()),
                                   t.storage_offset(), dtype, device))
