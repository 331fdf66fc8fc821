"""`tp.accelerator`: the device-neutral way a PyTorch script picks its accelerator.

    device = tp.accelerator.current_accelerator() if tp.accelerator.is_available() else "cpu"

TensorPlay has one accelerator, the `cuda` device its Triton backend serves. It counts as
available only with a real NVIDIA GPU: under Triton's interpreter (`TRITON_INTERPRET=1`,
no GPU) the `cuda` device works but runs its kernels on the host, far slower than the
CPU backend, so a script that asks "is there an accelerator?" is told no and stays on
the CPU. (PyTorch has no interpreter mode, so it defines nothing for this case.) Use
`device="cuda"` explicitly to run on the interpreter.
"""
from __future__ import annotations

from tensorplay import cuda
from tensorplay._device import device as _device


def is_available():
    """True when a real GPU serves the `cuda` device (see the module docstring)."""
    return cuda.is_available()


def current_accelerator(check_available=False):
    """`device('cuda')` when an accelerator is available, else None (as PyTorch returns
    for a build without one)."""
    return _device("cuda") if is_available() else None


def device_count():
    """How many GPUs the accelerator has (0 without one, the interpreter included)."""
    return cuda.device_count() if is_available() else 0


def current_device_index():
    return 0 if is_available() else -1


def synchronize(device=None):
    if is_available():
        cuda.synchronize(device)
