"""Creating tensors: from data (`tensor`, `from_numpy`), filled (`zeros`, `full`),
ranges (`arange`, `linspace`, `eye`) and random (`rand`, `randn`, ...).

These are not dispatched ops: creating a tensor is allocating storage on a
device (`_allocate`), then at most one `fill_`/`copy_`, which are.
"""
from __future__ import annotations

import builtins
import math
import operator
from contextlib import contextmanager

import numpy as np

from tensorplay import _alloc_limit, _cuda_state
from tensorplay import _device_transfer
from tensorplay import _tensor_factory as factory
from tensorplay import _dtype as dt
from tensorplay._device import CPU, factory_device
from tensorplay._impl import (
    PLAIN_KEYS, Storage, TensorImpl, VersionCounter, contiguous_strides, impl_from_array,
    numel_of,
)
from tensorplay import _random, _random_draws as draws
from tensorplay._tensor import Tensor, _new, wrap
from tensorplay.autograd.function import Function
from tensorplay.autograd.grad_mode import grad_state
from tensorplay.errors import ArgumentError, DeviceError, DTypeError, ShapeError


def _is_sequence(value):
    if isinstance(value, (tuple, list)):
        return True
    return isinstance(value, (Tensor, np.ndarray)) and value.ndim == 1


def _int_arg(op, arg, value):
    """An int argument, or anything with __index__ (a NumPy integer, a 0-dim integer
    tensor); a float is refused, as PyTorch refuses it, instead of being truncated."""
    try:
        return operator.index(value)
    except TypeError:
        raise ArgumentError(f"{op}(): argument '{arg}' must be an int, but got "
                            f"{type(value).__name__} {value!r}", op=op, arg=arg) from None


def _size_arg(size, op):
    """The sizes a factory was given: ints (`zeros(2, 3)`) or one sequence of them
    (`zeros((2, 3))`, `zeros(t.shape)`, `zeros([2, 3])`, a 1-D integer tensor)."""
    if len(size) == 1 and _is_sequence(size[0]):
        size = size[0]
    out = tuple(_int_arg(op, "size", s) for s in size)
    if any(s < 0 for s in out):
        raise ShapeError(f"{op}(): Trying to create tensor with negative dimension: argument "
                         f"'size' is {list(out)}", op=op, arg="size")
    return out


def _check_alloc(op, arg, sizes, dtype, device):
    """Refuse a result too large to allocate before NumPy or the device is asked."""
    _alloc_limit.check_alloc(op, arg, sizes, dtype.itemsize, factory_device(device).type)


def _check_floating(op, dtype, complex_ok=False):
    if not (dtype.is_floating_point or complex_ok and dtype.is_complex):
        kind = "a floating point or complex" if complex_ok else "a floating point"
        raise DTypeError(f"{op}(): argument 'dtype' must be {kind} dtype, but got "
                         f"{dtype.name}", op=op, arg="dtype")


def _drawn(dtype, sizes, fill):
    """`fill(array)`'s random values in a new array of `sizes` and `dtype`. A complex
    dtype is drawn as PyTorch draws it: its real view, (re, im) pairs side by side, filled
    as one real array twice as long (so both parts come from one stream, in that order)."""
    if not dtype.is_complex:
        return fill(np.empty(sizes, dtype.np))
    parts = fill(np.empty(tuple(sizes) + (2,), dtype.to_real().np))
    return np.ascontiguousarray(parts).view(dtype.np).reshape(sizes)


# The standard deviation of each part of a standard complex normal (E|z|^2 = 1), as
# PyTorch computes it: std / sqrt(2) in double.
_COMPLEX_PART_STD = 1.0 / math.sqrt(2.0)


def _finish(t, requires_grad):
    if requires_grad:
        t.requires_grad_(True)
    return t


@contextmanager
def _device_errors(op):
    """A device that cannot serve the call is the user's `device=` argument of `op`: say so
    (the backend's own error names its internals, e.g. `allocate`)."""
    try:
        yield
    except DeviceError as e:
        if e.op == op:
            raise
        raise DeviceError(f"{op}(): argument 'device': {e}", op=op, arg="device") from None


def _from_array(arr, dtype, device, op):
    """A new tensor holding a copy (or the array itself, when fresh) on `device`."""
    device = factory_device(device)
    if device is CPU:
        return wrap(impl_from_array(arr, dtype, CPU, grad_state.inference))
    with _device_errors(op):
        return _device_transfer.host_to_device(arr, dtype, device)


def _computed(sizes, dtype, device, op, compute, arg="size"):
    """`compute()`'s array as a tensor on `device`, once its size (argument `arg`) has
    passed the allocation check. On meta nothing is computed: the result holds no values
    anyway (a meta eye(10**5) must not build 40 GB on the host), and, as in PyTorch,
    drawing random numbers on meta leaves the generator alone."""
    if factory_device(device).type == "meta":
        return _allocate(tuple(sizes), dtype, device, op=op)
    _check_alloc(op, arg, sizes, dtype, device)
    return _from_array(compute(), dtype, device, op=op)


def _allocate(sizes, dtype, device, strides=None, *, op):
    """Uninitialised storage for `sizes` on `device`, as a tensor."""
    device = factory_device(device)
    _alloc_limit.check_sizes(op, "size", sizes)
    if strides is None:
        strides = contiguous_strides(sizes)
        n = numel_of(sizes)
    else:
        if any(st < 0 for st in strides):
            raise ShapeError(f"{op}(): argument 'stride' must hold non-negative strides, but "
                             f"got {list(strides)}", op=op, arg="stride")
        n = 0 if numel_of(sizes) == 0 else 1 + builtins.sum((s - 1) * st
                                                           for s, st in zip(sizes, strides))
    _alloc_limit.check_bytes(op, "size", sizes, n, dtype.itemsize, device.type)
    nbytes = n * dtype.itemsize
    if device is CPU:
        storage = Storage(np.empty(n, dtype.np), nbytes, CPU)
    elif device.type == "meta":
        storage = Storage(None, nbytes, device)
    else:
        with _device_errors(op):
            storage = _cuda_state.allocate(nbytes, device)
    return wrap(TensorImpl(storage, tuple(sizes), tuple(strides), 0, dtype, device,
                           inference=grad_state.inference))


# ---- from data ------------------------------------------------------------------------
def _infer(data):
    """NumPy array and TensorPlay dtype for Python data (floats -> the default dtype,
    complex numbers -> its complex twin)."""
    if isinstance(data, Tensor):
        return data.detach().cpu()._impl.array(), data.dtype
    if isinstance(data, (np.ndarray, np.generic)):
        return np.asarray(data), dt.from_numpy_dtype(data.dtype)
    try:
        if isinstance(data, (list, tuple)) and any(isinstance(x, Tensor) for x in _flat(data)):
            arr = np.array([np.asarray(x) if isinstance(x, Tensor) else x for x in data])
        else:
            arr = np.array(data)
    except ValueError:   # NumPy's words for a ragged list: "inhomogeneous shape"
        raise ShapeError(f"tensor(): argument 'data' is a ragged nested sequence (the "
                         f"sequences at one depth differ in length)", op="tensor",
                         arg="data") from None
    if arr.dtype.kind not in "biufc":
        raise ArgumentError(f"tensor(): argument 'data' must be numbers or (nested) sequences "
                            f"of numbers, but got {type(data).__name__} of NumPy dtype "
                            f"{arr.dtype}", op="tensor", arg="data")
    if isinstance(data, (list, tuple)) and data and \
            all(isinstance(x, np.generic) for x in _flat(data)):
        return arr, dt.from_numpy_dtype(arr.dtype)   # NumPy scalars keep their dtype
    if arr.dtype.kind == "f":
        return arr, dt.get_default_dtype()
    if arr.dtype.kind == "c":   # Python complex numbers: the default dtype's complex twin
        return arr, dt.get_default_dtype().to_complex()
    if arr.dtype.kind in "iu" and arr.dtype != np.uint8:
        return arr, dt.int64
    return arr, dt.from_numpy_dtype(arr.dtype)


def _flat(data):
    for x in data:
        if isinstance(x, (list, tuple)):
            yield from _flat(x)
        else:
            yield x


def tensor(data, *, dtype=None, device=None, requires_grad=False):
    """A new tensor that owns a copy of `data` (nested lists, numbers, arrays, tensors)."""
    arr, inferred = _infer(data)
    dtype = dtype or inferred
    arr = np.array(arr, dtype=dtype.np, copy=True, order="C")
    return _finish(_from_array(arr, dtype, device, op="tensor"), requires_grad)


def _can_share(data, dtype, device):
    """as_tensor hands back `data`'s own memory: a tensor it need not convert, or a
    NumPy array of that dtype, on the cpu."""
    if isinstance(data, Tensor):
        return (dtype is None or dtype == data.dtype) and \
            (device is None or factory_device(device) == data.device)
    return isinstance(data, np.ndarray) and (dtype is None or dtype.np == data.dtype) \
        and factory_device(device) is CPU


def as_tensor(data, dtype=None, device=None):
    """Like `tensor`, but shares memory with a NumPy array or tensor when it can."""
    if isinstance(data, Tensor):
        out = data
        if dtype is not None or device is not None:
            out = data.to(device=device or data.device, dtype=dtype)
        return out
    if _can_share(data, dtype, device):
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """as_tensor with NumPy's `copy`: None shares memory where it can, True always copies,
    False refuses to copy."""
    if copy is False and not _can_share(obj, dtype, device):
        raise ValueError("asarray(): can't alias the given object without copying it "
                         "(argument 'copy' is False)")
    if copy and isinstance(obj, Tensor):
        out = obj.to(dtype=dtype or obj.dtype, device=device or obj.device, copy=True)
    elif copy:
        out = tensor(obj, dtype=dtype, device=device)
    else:
        out = as_tensor(obj, dtype, device)
    return out.requires_grad_() if requires_grad else out


def empty_permuted(size, physical_layout, *, dtype=None, device=None, requires_grad=False,
                   pin_memory=False):
    """An uninitialised tensor of logical shape `size` whose memory holds its dims in the
    order `physical_layout` (the last one varying fastest)."""
    size, order = tuple(size), tuple(physical_layout)
    if sorted(order) != list(builtins.range(len(size))):
        raise ValueError(f"empty_permuted(): argument 'physical_layout' must be a "
                         f"permutation of the dims 0..{len(size) - 1}, but got "
                         f"{list(order)}")
    strides, step = [0] * len(size), 1
    for dim in reversed(order):
        strides[dim] = step
        step *= size[dim]
    return empty_strided(size, strides, dtype=dtype, device=device,
                         requires_grad=requires_grad)


def from_numpy(array):
    """A CPU tensor sharing `array`'s memory (writes through either are seen by both)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy(): expected np.ndarray, got {type(array).__name__}")
    dtype = dt.from_numpy_dtype(array.dtype)
    item = array.itemsize
    if any(s < 0 for s in array.strides):
        raise ValueError("from_numpy(): at least one stride in the given numpy array is "
                         "negative; make a copy with array.copy() first")
    if array.size == 0 and not array.flags.c_contiguous:
        array = array.copy(order="C")   # no elements to share
    if array.flags.c_contiguous:
        return wrap(TensorImpl(Storage(array, array.nbytes, CPU), array.shape,
                               contiguous_strides(array.shape), 0, dtype, CPU, array=array))
    if any(s % item for s in array.strides):
        raise ValueError("from_numpy(): the given numpy array's strides are not a multiple of "
                         "its element size; make a copy with array.copy() first")
    # Strided memory (a transpose, a step slice, an array imported by DLPack): the storage
    # is the 1-D span from the first to the last element, a view of the same memory.
    span = 1 + builtins.sum((n - 1) * s for n, s in zip(array.shape, array.strides)) // item
    flat = np.lib.stride_tricks.as_strided(array, shape=(span,), strides=(item,))
    impl = TensorImpl(Storage(flat, flat.nbytes, CPU), array.shape,
                      tuple(s // item for s in array.strides), 0, dtype, CPU, array=array)
    return wrap(impl)


def from_dlpack(obj):
    """Import a DLPack capsule or an object with `__dlpack__` (NumPy, PyTorch) without copying."""
    if hasattr(obj, "__dlpack_device__") and obj.__dlpack_device__()[0] != 1:
        return _device_transfer.from_dlpack(obj)
    return from_numpy(np.from_dlpack(obj))


def scalar_tensor(value, dtype=None, device=None):
    dtype = dtype or dt.scalar_dtype(value)
    return _from_array(np.array(value).astype(dtype.np, copy=False), dtype, device,
                       op="scalar_tensor")


# The wrapped number's fast path (wrapped_scalar): a Python number's dtype and NumPy type.
# A float (complex) stays double precision (see wrap_number); int and bool are scalar_dtype's.
_WRAPPED_TYPES = {float: (dt.float64, np.float64), int: (dt.int64, np.int64),
                  builtins.bool: (dt.bool, np.bool_), complex: (dt.complex128, np.complex128)}


def wrapped_scalar(value, device=None):
    """`wrap_number`'s 0-dim tensor for a Python int, float or bool on `device`, flagged
    as a wrapped number. Every `x * 2` makes one, so the CPU case skips scalar_tensor's
    layers: `np.array(value, np_type)` is the array `np.array(value).astype(np_type)`
    gives for these types (an int inside int64's range: outside it NumPy makes a uint64
    or object array first, so those take the general path and its errors). Its impl is
    `impl_from_array(arr, dtype, CPU, inference)`'s with `wrapped_number` set, made
    directly: a fresh 0-d array is contiguous and has no strides to compute."""
    kind = _WRAPPED_TYPES.get(type(value))
    if (kind is None or (device is not None and device is not CPU)
            or (type(value) is int and not -2 ** 63 <= value < 2 ** 63)):
        t = scalar_tensor(value, dtype=_WRAPPED_TYPES[type(value)][0]
                          if type(value) in (float, complex) else None, device=device)
        t._impl.wrapped_number = True
        return t
    arr = np.array(value, kind[1])
    inference = grad_state.inference
    impl = TensorImpl(Storage(arr, arr.nbytes, CPU), (), (), 0, kind[0], CPU, VersionCounter(),
                      inference, arr, True, _CPU_KEYS[inference])
    impl.wrapped_number = True
    return wrap(impl)


_CPU_KEYS = (PLAIN_KEYS[False][CPU.key], PLAIN_KEYS[True][CPU.key])


# ---- filled ---------------------------------------------------------------------------
def empty(*size, dtype=None, device=None, requires_grad=False):
    t = _allocate(_size_arg(size, "empty"), dtype or dt.get_default_dtype(), device,
                  op="empty")
    return _finish(t, requires_grad)


def empty_strided(size, stride, *, dtype=None, device=None, requires_grad=False):
    t = _allocate(tuple(size), dtype or dt.get_default_dtype(), device, tuple(stride),
                  op="empty_strided")
    return _finish(t, requires_grad)


def _full(op, sizes, fill_value, dtype, device, requires_grad):
    device = factory_device(device)
    _check_alloc(op, "size", sizes, dtype, device)
    if device is CPU:
        t = _from_array(np.full(sizes, np.array(fill_value).astype(dtype.np)), dtype, CPU, op=op)
    else:
        t = _allocate(sizes, dtype, device, op=op)
        if device.type != "meta":
            t.fill_(fill_value)
    return _finish(t, requires_grad)


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False):
    if isinstance(fill_value, complex) and dtype is not None and not dtype.is_complex \
            and dtype is not dt.bool:
        # PyTorch fills a real tensor with a complex number only when it is real
        if fill_value.imag != 0:
            raise DTypeError(f"full(): argument 'fill_value' ({fill_value}) cannot be "
                             f"converted to {dtype.name} without overflow (value cannot be "
                             f"converted to type {dtype.name} without overflow: a complex "
                             f"number with a nonzero imaginary part into a real tensor)",
                             op="full", arg="fill_value")
        fill_value = fill_value.real
    return _full("full", _size_arg((size,), "full"), fill_value,
                 dtype or dt.scalar_dtype(fill_value), device, requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False):
    return _full("zeros", _size_arg(size, "zeros"), 0, dtype or dt.get_default_dtype(), device,
                 requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False):
    return _full("ones", _size_arg(size, "ones"), 1, dtype or dt.get_default_dtype(), device,
                 requires_grad)


def _like(t, dtype, device):
    return dtype or t.dtype, device if device is not None else t.device


def empty_like(t, *, dtype=None, device=None, requires_grad=False):
    dtype, device = _like(t, dtype, device)
    return empty(t.shape, dtype=dtype, device=device, requires_grad=requires_grad)


def zeros_like(t, *, dtype=None, device=None, requires_grad=False):
    dtype, device = _like(t, dtype, device)
    return zeros(t.shape, dtype=dtype, device=device, requires_grad=requires_grad)


def ones_like(t, *, dtype=None, device=None, requires_grad=False):
    dtype, device = _like(t, dtype, device)
    return ones(t.shape, dtype=dtype, device=device, requires_grad=requires_grad)


def full_like(t, fill_value, *, dtype=None, device=None, requires_grad=False):
    dtype, device = _like(t, dtype, device)
    return full(t.shape, fill_value, dtype=dtype, device=device, requires_grad=requires_grad)


# ---- ranges ---------------------------------------------------------------------------
def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    if end is None:
        start, end = 0, start
    if step == 0:
        raise ArgumentError("arange(): argument 'step' must be nonzero", op="arange", arg="step")
    if (end - start) * step < 0:
        raise ArgumentError(f"arange(): upper bound and larger bound inconsistent with step "
                            f"sign (start={start}, end={end}, argument 'step'={step})",
                            op="arange", arg="step")
    if not all(math.isfinite(v) for v in (start, end, step)):
        raise ArgumentError(f"arange(): unsupported range: {start} -> {end} (step {step}); "
                            f"expected finite numbers", op="arange", arg="end")
    is_float = any(isinstance(v, float) for v in (start, end, step))
    dtype = dtype or (dt.get_default_dtype() if is_float else dt.int64)
    n = max(0, math.ceil((end - start) / step))

    def values():
        arr = start + step * np.arange(n, dtype=np.float64 if is_float else np.int64)
        return arr.astype(dtype.np)
    return _finish(_computed((n,), dtype, device, "arange", values, arg="end"), requires_grad)


def _check_steps(op, steps, dtype, device):
    steps = _int_arg(op, "steps", steps)
    if steps < 0:
        raise ArgumentError(f"{op}(): number of steps must be non-negative, but argument "
                            f"'steps' is {steps}", op=op, arg="steps")
    # Computed in float64 before the cast: the float64 array is the larger one.
    _check_alloc(op, "steps", (steps,), dt.float64, device)
    return steps


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False):
    dtype = dtype or dt.get_default_dtype()
    steps = _check_steps("linspace", steps, dtype, device)
    out = _computed((steps,), dtype, device, "linspace", lambda: np.linspace(
        start, end, steps, dtype=np.float64).astype(dtype.np), arg="steps")
    return _finish(out, requires_grad)


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False):
    """base ** linspace(start, end, steps), computed in double precision."""
    dtype = dtype or dt.get_default_dtype()
    steps = _check_steps("logspace", steps, dtype, device)

    def values():
        arr = np.power(float(base), np.linspace(start, end, steps, dtype=np.float64))
        if not dtype.is_floating_point:
            arr = np.trunc(arr)
        return arr.astype(dtype.np)
    out = _computed((steps,), dtype, device, "logspace", values, arg="steps")
    return _finish(out, requires_grad)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False):
    dtype = dtype or dt.get_default_dtype()
    n = _int_arg("eye", "n", n)
    m = n if m is None else _int_arg("eye", "m", m)
    for name, value in (("n", n), ("m", m)):
        if value < 0:
            raise ArgumentError(f"eye(): argument '{name}' must be greater or equal to 0, "
                                f"got {value}", op="eye", arg=name)
    out = _computed((n, m), dtype, device, "eye", lambda: np.eye(n, m, dtype=dtype.np),
                    arg="n")
    return _finish(out, requires_grad)


def _triangle_indices(op, select, row, col, offset, dtype, device):
    """The (2, n) coordinates of the lower or upper triangle of a row x col matrix."""
    if row < 0 or col < 0:
        raise ArgumentError(f"{op}(): row and col must be non-negative, but got row={row}, "
                            f"col={col}", op=op, arg="row" if row < 0 else "col")
    _check_alloc(op, "row", (2, row * col), dtype, device)   # at most row * col indices
    rows, cols = select(row, offset, col)
    arr = np.stack([rows, cols]).astype(dtype.np).reshape(2, -1)
    return _from_array(arr, dtype, device, op=op)


def tril_indices(row, col, offset=0, *, dtype=None, device=None):
    """Row and column indices of the lower triangle (diagonal `offset` included)."""
    return _triangle_indices("tril_indices", np.tril_indices, row, col, offset,
                             dtype or dt.int64, device)


def triu_indices(row, col, offset=0, *, dtype=None, device=None):
    """Row and column indices of the upper triangle (diagonal `offset` included)."""
    return _triangle_indices("triu_indices", np.triu_indices, row, col, offset,
                             dtype or dt.int64, device)


# ---- random ---------------------------------------------------------------------------
# Drawn on the host from the CPU generator as PyTorch's CPU kernels draw (see
# _random_draws.py), then moved to `device`: a seeded program gets PyTorch's CPU numbers.
#
# Under vmap a random creation function obeys the `randomness` flag, though it takes no
# tensor (tensorplay/func/random_under_vmap.py): `_vmap_batch` is () outside vmap and
# under randomness="same", the batch sizes to draw in front under "different", and raises
# under "error"; `_vmap_wrap` hands such a draw back batched.
def _vmap_batch(op):
    return _random.vmap_batch_sizes(op) if _random.vmaps_running else ()


def _vmap_wrap(t, batch):
    return _random.vmap_wrap(t) if batch else t


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False):
    batch = _vmap_batch("rand")
    dtype = dtype or dt.get_default_dtype()
    _check_floating("rand", dtype, complex_ok=True)   # complex: both parts in [0, 1)
    sizes = batch + _size_arg(size, "rand")
    out = _computed(sizes, dtype, device, "rand", lambda: _drawn(
        dtype, sizes, lambda a: draws.fill_uniform(_random.get(generator), a, 0.0, 1.0)))
    return _vmap_wrap(_finish(out, requires_grad), batch)


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False):
    batch = _vmap_batch("randn")
    dtype = dtype or dt.get_default_dtype()
    _check_floating("randn", dtype, complex_ok=True)
    sizes = batch + _size_arg(size, "randn")
    std = _COMPLEX_PART_STD if dtype.is_complex else 1.0    # complex: each part N(0, 1/2)
    out = _computed(sizes, dtype, device, "randn", lambda: _drawn(
        dtype, sizes, lambda a: draws.fill_normal(_random.get(generator), a, 0.0, std)))
    return _vmap_wrap(_finish(out, requires_grad), batch)


def randint(low, high=None, size=None, *, generator=None, dtype=None, device=None,
            requires_grad=False):
    batch = _vmap_batch("randint")
    if size is None:   # randint(high, size)
        low, high, size = 0, low, high
    dtype = dtype or dt.int64
    if dtype.is_complex:
        # PyTorch's words: its bounds check knows integral, floating-point and bool types
        raise DTypeError(f"randint(): check_random_bounds handles only integral, "
                         f"floating-point and boolean types (argument 'dtype' is "
                         f"{dtype.name})", op="randint", arg="dtype")
    if low >= high:
        raise ArgumentError(f"randint(): expects 'low' to be less than 'high', but got "
                            f"low={low} >= high={high}", op="randint", arg="high")
    sizes = batch + _size_arg((size,), "randint")

    def values():
        arr = np.empty(sizes, dtype.np)
        draws.fill_random_from_to(_random.get(generator), arr, int(low), int(high))
        return arr
    out = _computed(sizes, dtype, device, "randint", values)
    return _vmap_wrap(_finish(out, requires_grad), batch)


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False):
    batch = _vmap_batch("randperm")
    dtype = dtype or dt.int64
    n = _int_arg("randperm", "n", n)
    if n < 0:
        raise ArgumentError(f"randperm(): argument 'n' must be non-negative, got {n}",
                            op="randperm", arg="n")
    count = math.prod(batch)
    # drawn as int64 whatever the dtype: the check is for the larger array
    _check_alloc("randperm", "n", batch + (n,), dt.int64, device)

    def values():
        # one permutation per example (under vmap, randomness="different"), in order
        gen = _random.get(generator)
        perms = [draws.randperm(gen, n) for _ in range(count)]
        return np.stack(perms).reshape(batch + (n,)).astype(dtype.np)
    out = _computed(batch + (n,), dtype, device, "randperm", values, arg="n")
    return _vmap_wrap(_finish(out, requires_grad), batch)


def _empty_like_layout(t, dtype):
    """An uninitialised array shaped as `t` with `t`'s memory layout: PyTorch's
    empty_like keeps the strides of a dense tensor, and the random fill then visits the
    elements in memory order."""
    a = t._impl.array() if t.device.type == "cpu" else t.detach().cpu().numpy()
    axes = draws.iteration_axes(a)
    shape = tuple(a.shape[i] for i in axes)
    return np.empty(shape, dtype.np).transpose(np.argsort(axes))


def randint_like(t, low=0, high=None, *, dtype=None, device=None, requires_grad=False):
    """Integers drawn uniformly from [low, high) in t's shape (`randint_like(t, high)` draws
    from [0, high)), with t's dtype and device unless given. `randint` draws them, in
    row-major order: a seeded program gets PyTorch's numbers when t is contiguous."""
    if high is None:
        low, high = 0, low
    dtype, device = _like(t, dtype, device)
    if _random.vmaps_running:
        _vmap_batch("randint_like")     # the error names this function
    out = randint(low, high, t.shape, dtype=dtype, device=device)
    return _finish(out, requires_grad)


def rand_like(t, *, dtype=None, device=None, requires_grad=False):
    dtype, device = _like(t, dtype, device)
    _check_floating("rand_like", dtype, complex_ok=True)
    if _random.vmaps_running or dtype.is_complex:
        # t may be batched (its memory is not one example's): rand obeys `randomness`.
        # (A complex draw is row-major: rand's.)
        return _vmap_rename("rand_like", rand, t, dtype, device, requires_grad)
    out = _computed(t.shape, dtype, device, "rand_like", lambda: draws.fill_uniform(
        _random.get(None), _empty_like_layout(t, dtype), 0.0, 1.0).copy(order="C"))
    return _finish(out, requires_grad)


def randn_like(t, *, dtype=None, device=None, requires_grad=False):
    dtype, device = _like(t, dtype, device)
    _check_floating("randn_like", dtype, complex_ok=True)
    if _random.vmaps_running or dtype.is_complex:
        return _vmap_rename("randn_like", randn, t, dtype, device, requires_grad)
    out = _computed(t.shape, dtype, device, "randn_like", lambda: draws.fill_normal(
        _random.get(None), _empty_like_layout(t, dtype), 0.0, 1.0).copy(order="C"))
    return _finish(out, requires_grad)


def _vmap_rename(op, draw, t, dtype, device, requires_grad):
    """`draw(t.shape)` under vmap, the "error" mode's error naming `op`. The values are
    drawn in row-major order, whatever t's memory layout."""
    _vmap_batch(op)
    return draw(t.shape, dtype=dtype, device=device, requires_grad=requires_grad)


def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, device=None,
           requires_grad=False):
    """Samples of N(mean, std^2), as `torch.normal`:

        normal(mean: float, std: float, size)    a new tensor of `size`
        normal(mean: Tensor, std: float = 1.0)   mean's shape and dtype
        normal(mean: float, std: Tensor)         std's shape and dtype
        normal(mean: Tensor, std: Tensor)        their broadcast shape, mean's dtype

    The numbers are PyTorch's: the number form is `empty(size).normal_(mean, std)`; a
    tensor mean with a number std is `normal_(0, std) + mean`; a tensor std is
    `normal_(0, 1) * std + mean`. As in PyTorch, the gradients of a tensor mean and std
    are zeros (the draw is not reparametrised: write `mean + std * tp.randn(...)` for
    that)."""
    mean_is_tensor, std_is_tensor = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not mean_is_tensor and not std_is_tensor:
        if size is None:
            raise ArgumentError("normal(): with a number mean and std, argument 'size' is "
                                "required (the shape of the result), but got None",
                                op="normal", arg="size")
        _check_std(std)
        dtype = dtype or dt.get_default_dtype()
        _check_floating("normal", dtype)
        sizes = _size_arg((size,), "normal")
        return _finish(_normal_draw(sizes, float(mean), float(std), generator, dtype, device),
                       requires_grad)
    for arg, value in (("size", size), ("dtype", dtype), ("device", device)):
        if value is not None:
            raise ArgumentError(f"normal(): argument '{arg}' is only accepted with a number "
                                f"mean and std; with a tensor mean or std the result "
                                f"takes their shape, dtype and device", op="normal", arg=arg)
    for arg, value, is_tensor in (("mean", mean, mean_is_tensor), ("std", std, std_is_tensor)):
        if is_tensor and not value.dtype.is_floating_point:
            raise DTypeError(f"normal(): argument '{arg}' must have a floating point dtype, "
                             f"but got {value.dtype.name}", op="normal", arg=arg)
    like = mean if mean_is_tensor else std
    if not std_is_tensor:
        _check_std(std)
        noise = _normal_draw(tuple(mean.shape), 0.0, float(std), generator, mean.dtype,
                             mean.device)
        return _finish(_shifted(noise, 1.0, mean), requires_grad)
    if not _random.vmaps_running and std.numel() and bool((std < 0).any()):
        # (under vmap a batched std's values cannot be read: no check there)
        raise ArgumentError("normal(): expects all elements of std >= 0.0", op="normal",
                            arg="std")
    shape = tuple(std.shape)
    if mean_is_tensor:
        try:
            shape = tuple(np.broadcast_shapes(tuple(mean.shape), shape))
        except ValueError:
            raise ShapeError(f"normal(): the shapes of 'mean' {list(mean.shape)} and 'std' "
                             f"{list(std.shape)} do not broadcast", op="normal",
                             arg="std") from None
    noise = _normal_draw(shape, 0.0, 1.0, generator, like.dtype, like.device)
    return _finish(_shifted(noise, std, mean), requires_grad)


def _shifted(noise, std, mean):
    """noise * std + mean (a std of 1.0 is no multiplication), with zero gradients for
    a tensor mean and std, as PyTorch's normal (through _ZeroGradNormal only when one of
    them requires grad)."""
    if grad_state.enabled and any(isinstance(a, Tensor) and a.requires_grad
                                  for a in (mean, std)):
        return _ZeroGradNormal.apply(noise, std, mean)
    return (noise if not isinstance(std, Tensor) and std == 1.0 else noise * std) + mean


class _ZeroGradNormal(Function):
    generate_vmap_rule = True      # (tp.vmap runs it on the batched tensors)

    @staticmethod
    def forward(noise, std, mean):
        return _shifted(noise, std, mean)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.shapes = [tuple(a.shape) if isinstance(a, Tensor) else None for a in inputs[1:]]

    @staticmethod
    def backward(ctx, grad):
        return (None,) + tuple(None if shape is None else zeros(shape, dtype=grad.dtype,
                                                                 device=grad.device)
                               for shape in ctx.shapes)


def _check_std(std):
    if not std >= 0.0:
        raise ArgumentError(f"normal(): expects std >= 0.0, but found std {std}",
                            op="normal", arg="std")


def _normal_draw(sizes, mean, std, generator, dtype, device):
    """normal_(mean, std) into a new tensor of `sizes`; under vmap it obeys `randomness`
    (the batch sizes of the "different" levels drawn in front)."""
    batch = _vmap_batch("normal")
    sizes = batch + tuple(sizes)
    out = _computed(sizes, dtype, device, "normal", lambda: draws.fill_normal(
        _random.get(generator), np.empty(sizes, dtype.np), mean, std))
    return _vmap_wrap(out, batch)


# The seam below the Tensor layer (tensorplay/_tensor_factory.py) gets its names here,
# once, as the Tensor layer loads: the modules under it build tensors through it.
factory.install(
    Tensor=Tensor, wrap=wrap,
    arange=arange, empty=empty, empty_strided=empty_strided, from_numpy=from_numpy, full=full,
    ones=ones, ones_like=ones_like, scalar_tensor=scalar_tensor, tensor=tensor,
    wrapped_scalar=wrapped_scalar, zeros=zeros, zeros_like=zeros_like,
)
