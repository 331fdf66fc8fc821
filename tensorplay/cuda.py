"""`tp.cuda`: the device the Triton backend (triton_kernels/) serves.

A `cuda` tensor's storage is a flat torch uint8 tensor: device memory from
PyTorch's caching allocator on a real GPU. PyTorch does nothing else here:
it hands out memory, copies bytes between host and device, and provides the
pointer objects that Triton launches take. Sizes, strides and dtypes stay
TensorPlay's own.

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

import os
import weakref

from tensorplay.errors import DeviceError

def _env(name):
    return os.environ.get(name) == "1"


def _gpu_present():
    """A usable NVIDIA GPU, asked of PyTorch (imported only when this is needed)."""
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def _decide_mode():
    """'gpu', 'interpreter' or None. `TENSORPLAY_TRITON_INTERPRET=1` turns Triton's own
    interpreter on, but only without a GPU; it must be decided before any `@triton.jit`
    function is defined, which is why this runs when tensorplay.cuda is imported."""
    if _env("TENSORPLAY_TRITON_INTERPRET") and not _env("TRITON_INTERPRET") \
            and not _gpu_present():
        os.environ["TRITON_INTERPRET"] = "1"
    if _env("TRITON_INTERPRET"):
        return "interpreter"
    return None   # 'gpu' or nothing: found out lazily by _memory_device()


_mode = _decide_mode()


def triton_available():
    """Whether the `triton` package imports (the CUDA backend is loaded only then)."""
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    return True


def is_available():
    """True only when a real NVIDIA GPU is usable (never for the interpreter's host memory)."""
    return triton_available() and _gpu_present()


def is_interpreted():
    """True when the `cuda` device runs its Triton kernels in the interpreter."""
    return _mode == "interpreter"


def device_count():
    if is_available():
        import torch
        return torch.cuda.device_count()
    return 1 if is_interpreted() else 0


_memory_device_cache = []


def _memory_device(device):
    """The torch device a TensorPlay `cuda` device allocates on: the GPU when there is
    one, host memory in interpreter mode; otherwise a DeviceError that says what to do."""
    if not _memory_device_cache:
        if not triton_available():
            raise DeviceError("the 'cuda' device needs the Triton backend: `pip install "
                              "triton torch` (see pyproject's [triton] extra)", op="cuda")
        _memory_device_cache.append("cuda" if _gpu_present() else
                                    "cpu" if is_interpreted() else None)
    kind = _memory_device_cache[0]
    if kind is None:
        raise DeviceError("no NVIDIA GPU is available for the 'cuda' device; set "
                          "TENSORPLAY_TRITON_INTERPRET=1 to run its Triton kernels in the "
                          "interpreter on host memory", op="cuda")
    if kind == "cpu":
        return "cpu"
    return f"cuda:{device.index or 0}"


# ---- memory ---------------------------------------------------------------------------
class _Stats:
    allocated = 0
    peak = 0


_stats = _Stats()


def _release(nbytes):
    _stats.allocated -= nbytes


def allocate(nbytes, device):
    """Uninitialised storage of `nbytes` bytes on `device` (a Storage whose data is a
    torch uint8 tensor)."""
    import torch
    data = torch.empty(nbytes, dtype=torch.uint8, device=_memory_device(device))
    return _storage(data, device)


def _storage(data, device):
    from tensorplay._impl import Storage
    storage = Storage(data, data.numel(), device)
    _stats.allocated += storage.nbytes
    _stats.peak = max(_stats.peak, _stats.allocated)
    weakref.finalize(storage, _release, storage.nbytes)
    return storage


def memory_allocated(device=None):
    """Bytes held by live TensorPlay `cuda` storages (what the tensors own, not what
    PyTorch's caching allocator keeps in reserve)."""
    return _stats.allocated


def max_memory_allocated(device=None):
    return _stats.peak


def reset_peak_memory_stats(device=None):
    _stats.peak = _stats.allocated


def from_host(array, dtype, device):
    """A new contiguous `cuda` tensor holding a copy of the NumPy `array` (host -> device)."""
    import numpy as np
    import torch
    from tensorplay._impl import TensorImpl, contiguous_strides
    from tensorplay._tensor import wrap
    from tensorplay.autograd.grad_mode import grad_state
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
    return wrap(TensorImpl(storage, sizes, contiguous_strides(sizes), 0, dtype, device,
                           inference=grad_state.inference, contiguous=True))


def to_host(t):
    """The elements of a *contiguous* `cuda` tensor, copied into a new NumPy array."""
    import numpy as np
    impl = t._impl
    if not impl.is_contiguous:
        raise ValueError("to_host(): expected a contiguous tensor (call .contiguous() first)")
    item = impl.dtype.itemsize
    n = impl.numel()
    start = impl.offset * item
    raw = impl.storage.data[start:start + n * item]
    host = raw.cpu().numpy() if raw.is_cuda else raw.numpy().copy()
    return host.view(impl.dtype.np).reshape(impl.sizes)


def synchronize(device=None):
    """Wait for every kernel launched so far (interpreter launches are synchronous)."""
    if _memory_device_cache and _memory_device_cache[0] == "cuda":
        import torch
        torch.cuda.synchronize()


# ---- randomness -----------------------------------------------------------------------
class _Seed:
    value = 0
    offset = 0


_seed = _Seed()


def manual_seed(seed):
    """Seed the `cuda` generator (`tp.manual_seed` calls it too): the random fills of
    triton_kernels/elementwise.py (normal_, uniform_, bernoulli...) draw Philox numbers
    at (seed, offset). (`tp.randn(..., device="cuda")` draws on the host and copies.)"""
    _seed.value = int(seed) % (2 ** 31)
    _seed.offset = 0


manual_seed_all = manual_seed


def initial_seed():
    return _seed.value


def philox_seed_offset(count):
    """(seed, offset) for a kernel drawing `count` numbers; the offset then moves past
    them, so the next kernel draws fresh ones (PyTorch's philox_engine_inputs)."""
    offset = _seed.offset
    _seed.offset = (offset + count) % (2 ** 31)
    return _seed.value, offset


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
    from tensorplay import _dtype as dt
    from tensorplay._device import device as make_device
    from tensorplay._impl import TensorImpl
    from tensorplay._tensor import wrap
    t = torch.from_dlpack(obj)
    if t.device.type != "cuda":
        raise DeviceError(f"from_dlpack(): expected GPU memory, got a tensor on {t.device}",
                          op="from_dlpack", arg="obj")
    dtype = dt._by_name(str(t.dtype).replace("torch.", ""))
    device = make_device(f"cuda:{t.device.index or 0}")
    data = torch.empty(0, dtype=torch.uint8, device=t.device).set_(t.untyped_storage())
    storage = _storage(data, device)
    return wrap(TensorImpl(storage, tuple(t.shape), tuple(t.stride()), t.storage_offset(),
                           dtype, device))


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
