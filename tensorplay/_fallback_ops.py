"""The few conversions the dispatcher's fallbacks and the kernels need, in one place."""
from __future__ import annotations

from tensorplay import _tensor_factory as factory


def cast(t, dtype):
    return t.to(dtype)


def contiguous(t):
    return t.contiguous()


def copy_into(dst, src):
    dst.copy_(src)


def to_device(t, device):
    return t.to(device)


def host_to_device(array, dtype, device):
    """A NumPy array copied onto `device` (meta: sizes only; cuda: the Triton backend)."""
    from tensorplay._device import as_device
    device = as_device(device)
    if device.type == "meta":
        return factory.empty(array.shape, dtype=dtype, device=device)
    from tensorplay import cuda
    return cuda.from_host(array, dtype, device)
