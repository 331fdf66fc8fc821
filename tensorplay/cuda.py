"""`tp.cuda`: the device the Triton backend (triton_kernels/) serves.

A `cuda` tensor's storage is a flat torch uint8 tensor: device memory from
PyTorch's caching allocator on a real GPU. PyTorch does nothing else here:
it hands out memory, copies bytes between host and device, and provides the
pointer objects that Triton launches take. Sizes, strides and dtypes stay
TensorPlay's own.

`tp.cuda` is assembled from the modules below the Tensor layer that do the work: the
device's state (interpreter detection, availability, allocation, the seed, the PyTorch
view of a tensor's memory) lives in `tensorplay/_cuda_state.py`, host arrays and DLPack
memory become tensors (and a tensor's memory a host array) in
`tensorplay/_device_transfer.py`, and `philox_inputs` is in `tensorplay/_random.py` beside
the generators. This module re-exports them, and adds
the memory statistics, `source` and the typed classes.

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

from tensorplay.amp.device_amp import cuda_amp as amp  # noqa: F401  (tp.cuda.amp.autocast)
from tensorplay._cuda_state import (  # noqa: F401  (the state half of tp.cuda)
    allocate, as_torch, device_count, initial_seed, is_available, is_interpreted, manual_seed,
    manual_seed_all, philox_seed_offset, stats, storage_of, synchronize, torch_dtype,
    triton_available,
)
from tensorplay._device_transfer import from_dlpack, from_host, to_host  # noqa: F401
from tensorplay._random import philox_inputs  # noqa: F401
from tensorplay._random import get_cuda_rng_state as get_rng_state  # noqa: F401
from tensorplay._random import set_cuda_rng_state as set_rng_state  # noqa: F401


def get_rng_state_all():
    """One state per device: there is one `cuda` device here."""
    return [get_rng_state()]


def set_rng_state_all(new_states):
    for state in new_states:
        set_rng_state(state)


# ---- memory ---------------------------------------------------------------------------
def memory_allocated(device=None):
    """Bytes held by live TensorPlay `cuda` storages (what the tensors own, not what
    PyTorch's caching allocator keeps in reserve)."""
    return stats.allocated


def max_memory_allocated(device=None):
    return stats.peak


def reset_peak_memory_stats(device=None):
    stats.peak = stats.allocated


def source(op, **params):
    """The Triton source of an op's CUDA kernel, e.g. `tp.cuda.source("add")`,
    `tp.cuda.source("softmax")` (see triton_kernels/_kernel_source.py)."""
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


# Timing (tensorplay/_device_timing.py): events stamped in the stream, the stream itself.
from tensorplay._device_timing import (  # noqa: E402,F401
    Event, Stream, current_stream, default_stream,
)
