"""Storage: the flat block of memory under a tensor, and nothing else.

A TensorImpl (`_impl.py`) is a view onto one: sizes, strides and an offset into its
bytes. Storage sits below the dispatcher and TensorImpl, so that the device state that
allocates it (`_cuda_state.py`) needs neither.
"""
from __future__ import annotations


class Storage:
    """A flat block of memory. CPU: a contiguous NumPy array; CUDA: a torch byte
    tensor (device memory from PyTorch's allocator); Meta: no data at all."""

    __slots__ = ("data", "nbytes", "device", "__weakref__")

    def __init__(self, data, nbytes, device):
        self.data = data
        self.nbytes = nbytes
        self.device = device
