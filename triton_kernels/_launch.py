"""What every launcher in triton_kernels/ shares: one check that all tensors are on
the same device, the pointer objects Triton takes, result allocation, dimension
coalescing, and the launch itself (with a `triton` hop in `tp.dispatch.explain()`).

A launcher follows the Triton tutorials' order: check -> allocate -> grid -> launch.

    device, (a, b) = operands("add", self=self, other=other)   # check
    out = new_tensor(sizes, dtype, device)                      # allocate
    grid = (triton.cdiv(n, BLOCK),)                             # grid
    launch("add", kernel, grid, pointer(out), pointer(a), ...)  # launch
"""
from __future__ import annotations

import threading

import numpy as np
import triton.language as tl

from tensorplay import _cuda_state
from tensorplay import _dtype as dt
from tensorplay.dispatch import trace
from tensorplay.errors import DeviceError
from tensorplay.kernel_support.checks import check_devices
from tensorplay.kernel_support.layout import pointwise_strides
from tensorplay.kernel_support.results import factory
from triton_kernels import _launch_record

# Whether the launchers plan for the interpreter (big blocks: it pays per program, small
# configs, int64 index math) or for a GPU. Planning follows the interpreter, except while
# the compile check records the launches a GPU would make (_cuda_state.plans_as_gpu);
# running follows the interpreter always (RUNS_INTERPRETED).
RUNS_INTERPRETED = _cuda_state.is_interpreted()
INTERPRETED = RUNS_INTERPRETED and not _cuda_state.plans_as_gpu()
MODE = "interpreter" if RUNS_INTERPRETED else "GPU"

# Element types the kernels compute in, by TensorPlay dtype.
TL_DTYPES = {
    dt.bool: tl.int1, dt.uint8: tl.uint8, dt.int8: tl.int8, dt.int16: tl.int16,
    dt.int32: tl.int32, dt.int64: tl.int64, dt.float16: tl.float16,
    dt.bfloat16: tl.bfloat16, dt.float32: tl.float32, dt.float64: tl.float64,
}


def compute_dtype(dtype):
    """The dtype a kernel does its arithmetic in: half types in float32 (fp16/bf16
    arithmetic loses precision, and the interpreter gets bf16 arithmetic wrong), bool as
    int8 (so that `True + True` and `max(bool)` are plain integer arithmetic)."""
    if dtype is dt.float16 or dtype is dt.bfloat16:
        return tl.float32
    if dtype is dt.bool:
        return tl.int8
    if dtype.is_complex:      # the complex forms compute on the parts
        dtype = dtype.to_real()
    return TL_DTYPES[dtype]


def operands(op, **tensors):
    """Check that the tensor arguments of `op` live on one `cuda` device and return
    (device, tensors in the order given), 0-dim CPU tensors copied to that device.

    Dispatch sends any call that mixes devices here (CUDA outranks CPU in the key set),
    and every launcher calls this before it turns a tensor into a pointer: a host
    pointer handed to a GPU kernel is a crash, not an error message. The rule itself,
    and its message, is kernel_support's `check_devices` (a 0-dim CPU tensor is a
    number and may join any device, as in PyTorch).
    """
    check_devices(op, [(name, t) for name, t in tensors.items() if t is not None])
    device = next((t._impl.device for t in tensors.values()
                   if t is not None and t._impl.device.type == "cuda"), None)
    out = []
    for name, t in tensors.items():
        if t is not None and t._impl.device is not device:
            if device is None or t._impl.sizes:      # only numbers may cross over
                raise DeviceError(f"{op}(): argument '{name}' is on {t._impl.device}, but "
                                  f"this kernel runs on the cuda device", op=op, arg=name)
            t = t.to(device)
        out.append(t)
    return device, out


def pointer(t):
    """The pointer object a Triton launch takes for tensor `t`: a typed torch view that
    starts at t's first element. Only its address and element type are used; the kernel
    indexes with TensorPlay's own strides. Triton has no complex type: a complex tensor's
    pointer is to its (re, im) float pairs, element k's parts at 2k and 2k + 1."""
    import torch    # imported on first use: `import tensorplay` stays fast
    impl = t._impl
    data = impl.storage.data
    dtype, offset = impl.dtype, impl.offset
    if dtype.is_complex:
        dtype, offset = dtype.to_real(), 2 * offset
    span = max(data.numel() // dtype.itemsize - offset, 0)
    view = torch.empty(0, dtype=getattr(torch, dtype.name), device=data.device)
    return view.set_(data.untyped_storage(), offset, (span,), (1,))


def new_tensor(sizes, dtype, device):
    return factory.empty(tuple(sizes), dtype=dtype, device=device)


def new_tensor_like(sizes, dtype, device, inputs):
    """A pointwise op's result: laid out like its tensor inputs, as in PyTorch
    (kernel_support/layout.py); row-major when they all are."""
    impls = [t._impl for t in inputs]
    if all(i.is_contiguous for i in impls):
        return new_tensor(sizes, dtype, device)
    strides = pointwise_strides(tuple(sizes), [(i.sizes, i.strides) for i in impls])
    return factory.empty_strided(tuple(sizes), strides, dtype=dtype, device=device)


def broadcast_strides(t, sizes):
    """t's strides for a result of `sizes`: 0 where t is broadcast (missing or size 1)."""
    impl = t._impl
    lead = len(sizes) - len(impl.sizes)
    strides = [0] * lead
    for size, stride, target in zip(impl.sizes, impl.strides, sizes[lead:]):
        strides.append(stride if size == target and size != 1 else 0)
    return strides


def coalesce(sizes, all_strides):
    """Merge dimensions that every operand walks through contiguously, so that most
    calls run the rank-1 kernel (one flat index, no divisions).

        sizes [4, 5, 6], strides out [30, 6, 1], x [30, 6, 1], y [0, 0, 1]
        -> dims 0 and 1 merge for out and x but not y: [20, 6], [6, 1], [6, 1], [0, 1]

    Returns (sizes, [strides per operand]), with at least one dimension."""
    shape = []
    strides = [[] for _ in all_strides]
    for d in range(len(sizes) - 1, -1, -1):
        size = sizes[d]
        if size == 1:
            continue
        if shape and all(st[d] == merged[0] * shape[0] for st, merged in zip(all_strides,
                                                                            strides)):
            shape[0] *= size    # the merged dimension keeps its inner stride
            continue
        shape.insert(0, size)
        for st, merged in zip(all_strides, strides):
            merged.insert(0, st[d])
    if not shape:
        return [1], [[0] for _ in all_strides]
    return shape, strides


def needs_wide_index(n, *tensors):
    """Offsets past 2**31 - 1 elements need int64 arithmetic in the kernel. The
    interpreter always takes it: it checks every 32-bit integer operation for overflow
    (extra NumPy work per operation) and no 64-bit one. A complex tensor is indexed in
    its float parts (twice its elements)."""
    if INTERPRETED:
        return True
    limit = 2 ** 31 - 1
    if n > limit:
        return True
    return any(t._impl.storage.nbytes // t._impl.dtype.itemsize * (1 + t._impl.dtype.is_complex)
               > limit for t in tensors)


_interpreter_lock = threading.Lock()   # see launch()


def launch(name, kernel, grid, *args, **meta):
    """Run `kernel` over `grid`; under tp.dispatch.explain() say what was launched.
    While the compile check records launches (_launch_record.py), each is noted first."""
    if _launch_record.recorder is not None and _launch_record.recorder.note(kernel, args, meta):
        return          # a config noted but not run (every autotune config is noted)
    if RUNS_INTERPRETED:
        # NumPy runs the interpreted kernel; like a GPU, it should not warn about NaN/inf.
        # The interpreter swaps module-wide state of triton.language in and out around a
        # launch, so two threads launching at once break each other's kernels: one
        # interpreted launch at a time (a GPU queues them anyway).
        with _interpreter_lock, np.errstate(all="ignore"):
            kernel[grid](*args, **meta)
    else:
        kernel[grid](*args, **meta)
    if trace.state.active:
        shown = [f"{k}={v}" for k, v in meta.items() if k.isupper()]
        trace.hop("triton", f"{name} grid={tuple(grid)} {', '.join(shown)} [{MODE}]")
