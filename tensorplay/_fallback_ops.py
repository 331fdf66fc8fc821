"""Host memory onto a device, for the creation functions and the CPU kernel of `_to_copy`:
the one conversion that needs to know which backend owns the device."""
from __future__ import annotations

from tensorplay import _tensor_factory as factory


def host_to_device(array, dtype, device):
    """A NumPy array copied onto `device` (meta: sizes only; cuda: the Triton backend)."""
    from tensorplay._device import as_device
    device = as_device(device)
    if device.type == "meta":
        return factory.empty(array.shape, dtype=dtype, device=device)
    from tensorplay import cuda
    return cuda.from_host(array, dtype, device)
