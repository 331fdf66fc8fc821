"""The `cuda` device's state, below the dispatcher and the Tensor layer: interpreter
detection, availability, allocation, the random seed, and the view PyTorch gets of a
`cuda` tensor's memory (`as_torch`).

The low half of `tp.cuda` (`tensorplay/cuda.py`, the public namespace, re-exports
these). Tensor creation (`tp.empty(..., device="cuda")`), the repr, the dispatcher's
tuning and the backend loader need only this half: it imports nothing of TensorPlay but
Storage and the errors, so any layer may import it.

Interpreter mode: with no GPU and `TENSORPLAY_TRITON_INTERPRET=1` (or
`TRITON_INTERPRET=1`), the `cuda` device holds *host* memory and the real Triton
kernels run in Triton's interpreter (NumPy underneath). The mode is decided when this
module is imported, before any `@triton.jit` function is defined.
"""
from __future__ import annotations

import os
import threading
import weakref

from tensorplay._storage import Storage
from tensorplay.errors import AllocationError, DeviceError


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
    function is defined, which is why this runs when tensorplay._cuda_state is imported."""
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


def plans_as_gpu():
    """True when interpreted launches are planned as a GPU's would be
    (`TENSORPLAY_PLAN_AS_GPU=1` with the interpreter): the launchers choose the block
    sizes, autotune configs and index widths of a real GPU, and the interpreter runs them
    on host memory. Slower than the interpreter's own plans, and only for recording what a
    GPU would compile (triton_kernels/compile_check.py); never set for ordinary runs."""
    return is_interpreted() and _env("TENSORPLAY_PLAN_AS_GPU")


def is_usable():
    """Whether `cuda` tensors can be made at all: a GPU, or the interpreter's host memory.
    (AMP's GradScaler and autocast turn themselves off for a device that is not.)"""
    return triton_available() and (is_interpreted() or _gpu_present())


# tp.backends.cuda.matmul.allow_tf32 (PyTorch's default False): whether float32 matmuls
# on the GPU may round their inputs to TF32 (10-bit mantissa) in the tensor cores.
matmul_allow_tf32 = False


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
    """Bytes held by live `cuda` storages now, and the most held at once."""
    allocated = 0
    peak = 0


stats = _Stats()


def _release(nbytes):
    stats.allocated -= nbytes


def allocate(nbytes, device):
    """Uninitialised storage of `nbytes` bytes on `device` (a Storage whose data is a
    torch uint8 tensor)."""
    import torch
    try:
        data = torch.empty(nbytes, dtype=torch.uint8, device=_memory_device(device))
    except torch.OutOfMemoryError as e:
        # Under the allocation limit but over what the device has free: still the typed
        # error of a tensor too large, not PyTorch's.
        first_line = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise AllocationError(f"allocate(): {nbytes} bytes on {device}: expected at most the "
                              f"device's free memory ({first_line})", op="allocate",
                              arg="nbytes") from None
    return storage_of(data, device)


def storage_of(data, device):
    """A Storage around the torch uint8 tensor `data`, counted in the memory stats."""
    storage = Storage(data, data.numel(), device)
    stats.allocated += storage.nbytes
    stats.peak = max(stats.peak, stats.allocated)
    weakref.finalize(storage, _release, storage.nbytes)
    return storage


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
_offset_lock = threading.Lock()


def manual_seed(seed):
    """Seed the `cuda` generator (`tp.manual_seed` calls it too): the random fills of
    triton_kernels/pointwise_expressions.py (normal_, uniform_, bernoulli...) draw
    Philox numbers at (seed, offset). (`tp.randn(..., device="cuda")` draws on the host and copies.)"""
    _seed.value = int(seed) % (2 ** 31)
    _seed.offset = 0


manual_seed_all = manual_seed


def initial_seed():
    return _seed.value


def philox_state():
    """(seed, offset) where the next kernel will draw (nothing is drawn)."""
    with _offset_lock:
        return _seed.value, _seed.offset


def set_philox_state(seed, offset):
    with _offset_lock:
        _seed.value, _seed.offset = seed, offset


def philox_seed_offset(count):
    """(seed, offset) for a kernel drawing `count` numbers; the offset then moves past
    them, so the next kernel draws fresh ones (PyTorch's philox_engine_inputs)."""
    with _offset_lock:   # two threads must not draw at one offset (the same numbers)
        offset = _seed.offset
        _seed.offset = (offset + count) % (2 ** 31)
        return _seed.value, offset


# ---- the memory as PyTorch sees it --------------------------------------------------------
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
