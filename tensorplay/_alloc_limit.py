"""The one size check every allocation passes before it asks for memory.

A hostile or mistaken size (`tp.empty(2**40)`, `x.repeat(10**6, 10**6)`, a pad of 2**40)
must fail with a typed error that names the op and the argument, not with NumPy's
MemoryError, and above all not *after* the allocation: on Linux a huge `np.zeros` may
succeed lazily and the process is killed later, when the pages are touched.

The limit is the host's physical memory, the most a CPU tensor (or a tensor of the Triton
interpreter, which lives in host memory) can ever hold. Set `TP_MAX_ALLOC_BYTES` in the
environment, or call `set_max_bytes`, to lower it (a test, a shared machine) or raise it.
Meta tensors have no data: only the 64-bit overflow applies to them, as in PyTorch.
"""
from __future__ import annotations

import os

from tensorplay.errors import AllocationError, ShapeError, fmt_shape

# Sizes, strides and byte counts are int64 in every backend (PyTorch's and NumPy's intp).
MAX_INT64 = 2 ** 63 - 1

_max_bytes = None   # None: not asked yet; read from the environment on first use


def _physical_memory():
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):   # no sysconf (Windows): no cap but int64
        return MAX_INT64


def max_bytes():
    """The largest allocation allowed, in bytes."""
    global _max_bytes
    if _max_bytes is None:
        env = os.environ.get("TP_MAX_ALLOC_BYTES")
        _max_bytes = int(env) if env else _physical_memory()
    return _max_bytes


def set_max_bytes(nbytes):
    """Change the limit (None: back to the environment's or the physical memory)."""
    global _max_bytes
    if nbytes is not None and (isinstance(nbytes, bool) or not isinstance(nbytes, int)
                               or nbytes < 0):
        raise ValueError(f"set_max_bytes(): expected a non-negative int or None, got "
                         f"{nbytes!r}")
    _max_bytes = nbytes


def check_sizes(op, arg, sizes):
    """Sizes must be non-negative; PyTorch's words for a negative one."""
    for s in sizes:
        if s < 0:
            raise ShapeError(f"{op}(): Trying to create tensor with negative dimension {s}: "
                             f"argument '{arg}' is {fmt_shape(sizes)}", op=op, arg=arg)


def check_bytes(op, arg, sizes, nelements, itemsize, device_type="cpu"):
    """`nelements` elements of `itemsize` bytes may be allocated for a tensor of `sizes`."""
    nbytes = nelements * itemsize
    if nelements > MAX_INT64 or nbytes > MAX_INT64:
        raise AllocationError(f"{op}(): storage size calculation overflowed: a result of "
                              f"shape {fmt_shape(sizes)} (argument '{arg}') has {nelements} "
                              f"elements of {itemsize} bytes, expected at most {MAX_INT64} "
                              f"bytes", op=op, arg=arg)
    if device_type != "meta" and nbytes > max_bytes():
        raise AllocationError(f"{op}(): a result of shape {fmt_shape(sizes)} (argument "
                              f"'{arg}') needs {nbytes} bytes, expected at most {max_bytes()} "
                              f"bytes (the allocation limit: physical memory, or "
                              f"TP_MAX_ALLOC_BYTES)", op=op, arg=arg)


def check_alloc(op, arg, sizes, itemsize, device_type="cpu"):
    """A contiguous tensor of `sizes` may be allocated: no negative size, no overflow, not
    over the limit. Called before the memory is asked for."""
    check_sizes(op, arg, sizes)
    n = 1
    for s in sizes:
        n *= s
    check_bytes(op, arg, sizes, n, itemsize, device_type)
