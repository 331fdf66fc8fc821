"""Hand a TensorPlay tensor's memory to torch.distributed, without copying it.

The collectives run on PyTorch's process groups, which take torch tensors. A torch
tensor that *shares* the TensorPlay tensor's memory is all they need:

    CPU        the storage is a NumPy buffer: torch.from_numpy(impl.array()) shares it
    cuda       the storage already is a torch byte tensor: tensorplay.cuda.as_torch views
               it with the tensor's dtype, sizes and strides (in Triton's interpreter
               mode that memory is on the host, which gloo serves too)

The process groups want contiguous memory. A non-contiguous tensor (a transpose, a
slice with a step) is copied into a contiguous buffer, the collective fills the buffer,
and `finish()` copies the result back into the tensor's own elements.
"""
from __future__ import annotations

import numpy as np
import torch

from tensorplay import _dtype as dt
from tensorplay.errors import DeviceError

__all__ = ["torch_view", "Shared"]

# NumPy knows bfloat16 only through ml_dtypes, which torch.from_numpy refuses: such
# memory crosses as 16-bit integers and is reinterpreted on the torch side.
_BITS_OF = {dt.bfloat16: (np.uint16, torch.bfloat16)}


def torch_view(tensor, op, arg):
    """A torch tensor sharing `tensor`'s memory, with its sizes and strides."""
    impl = tensor._impl
    device = impl.device.type
    if device == "cuda":
        from tensorplay.cuda import as_torch
        return as_torch(tensor)
    if device != "cpu" or impl.storage.data is None:
        raise DeviceError(f"{op}(): argument '{arg}' is on device '{impl.device}', whose "
                          f"memory cannot be handed to a process group (expected a 'cpu' "
                          f"or 'cuda' tensor)", op=op, arg=arg)
    array = impl.array()
    bits = _BITS_OF.get(impl.dtype)
    if bits is None:
        return torch.from_numpy(array)
    return torch.from_numpy(array.view(bits[0])).view(bits[1])


class Shared:
    """One tensor handed to a collective: `.torch` is what the process group reads and
    writes; `finish()` makes the result visible in the TensorPlay tensor."""

    def __init__(self, tensor, op, arg, written=True):
        self.tensor = tensor
        self.written = written
        self.view = torch_view(tensor, op, arg)
        self.torch = self.view if self.view.is_contiguous() else self.view.contiguous()

    def finish(self):
        if not self.written:
            return
        if self.torch is not self.view:
            self.view.copy_(self.torch)
        # Written behind the dispatcher's back: bump the version as an in-place op does,
        # so a saved tensor that was overwritten is caught when backward unpacks it.
        self.tensor._impl.version.value += 1
