"""`tp.cuda`: the device the Triton backend serves.

Without the Triton backend loaded (it arrives with triton_kernels), there is no
`cuda` memory to allocate, and every entry point says so instead of pretending.
"""
from __future__ import annotations

import os

from tensorplay.errors import DeviceError


def _torch_cuda():
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def is_available():
    """True only when a real NVIDIA GPU is usable (never under the interpreter)."""
    return _torch_cuda()


def is_interpreted():
    """True when the `cuda` device runs Triton kernels in the interpreter on host memory."""
    return os.environ.get("TENSORPLAY_TRITON_INTERPRET") == "1" or \
        os.environ.get("TRITON_INTERPRET") == "1"


def _unavailable(what):
    raise DeviceError(f"{what}: the 'cuda' device needs the Triton backend (triton_kernels), "
                      f"which is not available in this build", op=what)


def allocate(nbytes, device):
    _unavailable("allocate")


def from_host(array, dtype, device):
    _unavailable("to('cuda')")


def from_dlpack(obj):
    _unavailable("from_dlpack")


def as_torch(tensor):
    _unavailable("__dlpack__")


def manual_seed(seed):
    return None


def synchronize():
    return None
