"""The pieces every database entry is built from.

    SampleInput   one call: `op(input, *args, **kwargs)`, with a name for failure messages
    ErrorInput    a call that must fail: the typed error, a regex on its message, the argument
    OpInfo        everything the generic tests need to know about one op
    make_tensor   deterministic test data of any dtype, shape and memory layout, on any device
    to_torch      the same tensor in PyTorch (same values, same strides), the oracle's input
    assert_close  a TensorPlay result against PyTorch's: shape, dtype and values

Sample generators take `(op, device, dtype, requires_grad)` and yield SampleInputs. They
build their tensors with `make_tensor(..., device=device)` and nothing device-specific,
so a new backend (the Triton `cuda` device, vmap, autocast) reuses them unchanged. Keep
shapes small: every generic test runs every sample of every op for every dtype.
"""
from __future__ import annotations

import functools
import os
import math
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import ml_dtypes
import numpy as np
import torch

import tensorplay as tp

# ---- dtypes -----------------------------------------------------------------------------
ALL_DTYPES = (tp.bool, tp.uint8, tp.int8, tp.int16, tp.int32, tp.int64,
              tp.float16, tp.bfloat16, tp.float32, tp.float64)
FLOATING = (tp.float16, tp.bfloat16, tp.float32, tp.float64)
INTEGRAL = (tp.uint8, tp.int8, tp.int16, tp.int32, tp.int64)
ALL_BUT_BOOL = INTEGRAL + FLOATING
# Not in ALL_DTYPES: an entry takes complex samples when its dtypes name them.
COMPLEX = (tp.complex64, tp.complex128)
# The dtypes an entry with complex samples checks gradients in (gradcheck in the float64
# and complex128 ones).
GRAD_COMPLEX = (tp.float32, tp.float64) + COMPLEX

TORCH_DTYPE = {
    tp.bool: torch.bool, tp.uint8: torch.uint8, tp.int8: torch.int8, tp.int16: torch.int16,
    tp.int32: torch.int32, tp.int64: torch.int64, tp.float16: torch.float16,
    tp.bfloat16: torch.bfloat16, tp.float32: torch.float32, tp.float64: torch.float64,
    tp.complex64: torch.complex64, tp.complex128: torch.complex128,
}
TP_DTYPE = {v: k for k, v in TORCH_DTYPE.items()}

# (rtol, atol) by dtype. The half types are loose: NumPy and PyTorch may round
# intermediate results differently (PyTorch computes many half ops in float32).
DEFAULT_TOLERANCES = {
    tp.float16: (2e-3, 2e-3),
    tp.bfloat16: (1.6e-2, 1e-2),
    tp.float32: (1.3e-6, 1e-5),
    tp.float64: (1e-7, 1e-7),
    tp.complex64: (1.3e-6, 1e-5),
    tp.complex128: (1e-7, 1e-7),
}


# ---- ops.yaml, the list of ops the database must cover ----------------------------------
REPO = Path(__file__).resolve().parents[2]


@functools.lru_cache(maxsize=None)
def yaml_ops():
    """Every ops.yaml entry, keyed by its full name (`add.Tensor`)."""
    from tensorplay.codegen.yaml_loader import load_ops
    return {str(e.schema.name): e for e in load_ops(REPO / "ops.yaml")}


@functools.lru_cache(maxsize=None)
def yaml_variants(name):
    """The union of `variants` over the overloads of base name `name` (e.g. `add`)."""
    out = set()
    for full, entry in yaml_ops().items():
        if full.split(".")[0] == name:
            out |= set(entry.variants)
    return frozenset(out)


# ---- inputs -----------------------------------------------------------------------------
@dataclass
class SampleInput:
    """`op(input, *args, **kwargs)`; `name` says what the sample exercises.

    meta: the sample also runs in the Meta test (not when a value must be read, e.g. a
          Scalar argument given as a tensor).
    grad: the sample lies where the op is smooth, so finite differences (gradcheck) apply
          (not for edge values like 0, inf and nan; those are still compared with PyTorch).
    """
    input: Any
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    name: str = ""
    meta: bool = True
    grad: bool = True

    def map_tensors(self, fn):
        """A copy with `fn` applied to every TensorPlay tensor (nested in lists too)."""
        return SampleInput(_map(fn, self.input), _map(fn, self.args),
                           {k: _map(fn, v) for k, v in self.kwargs.items()}, self.name,
                           self.meta, self.grad)

    def tensors(self):
        found = []
        _map(lambda t: found.append(t) or t, (self.input, self.args, self.kwargs))
        return found

    def __repr__(self):
        parts = [describe(self.input)] + [describe(a) for a in self.args]
        parts += [f"{k}={describe(v)}" for k, v in self.kwargs.items()]
        text = f"({', '.join(parts)})"
        return f"{self.name}: {text}" if self.name else text


@dataclass
class ErrorInput:
    """A call that must raise `error_type` with a message matching `error_regex`.

    `arg`: the argument the error must blame (`err.arg` and the message name it).
    `inplace`: call the op's in-place variant instead of the op.
    `torch_raises`: PyTorch rejects the same call (checked, so the database cannot drift
    into errors PyTorch does not have).
    `meta`: the Meta kernel must raise the same error (its shape rule is the check).
    """
    sample: SampleInput
    error_type: type
    error_regex: str
    arg: str | None = None
    inplace: bool = False
    torch_raises: bool = True
    meta: bool = True


def _map(fn, value):
    if isinstance(value, tp.Tensor):
        return fn(value)
    if isinstance(value, tuple):
        return tuple(_map(fn, v) for v in value)
    if isinstance(value, list):
        return [_map(fn, v) for v in value]
    if isinstance(value, dict):
        return {k: _map(fn, v) for k, v in value.items()}
    return value


def describe(value):
    if isinstance(value, tp.Tensor):
        text = f"{value.dtype.name}{list(value.shape)}"
        if not value.is_contiguous():
            text += f" strides={value.stride()}"
        return text
    if isinstance(value, (list, tuple)):
        inner = ", ".join(describe(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    return repr(value)


# ---- test data --------------------------------------------------------------------------
LAYOUTS = ("contiguous", "transposed", "strided", "expanded")


def rng_for(*key):
    """A NumPy generator seeded from `key` (op name, dtype...): same data on every run."""
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _values(shape, dtype, rng, low, high, exclude_zero):
    if dtype is tp.bool:
        return rng.random(shape) < 0.5
    if dtype.is_complex:     # both parts drawn like a float's
        part = dtype.to_real()
        return _values(shape, part, rng, low, high, exclude_zero) \
            + 1j * _values(shape, part, rng, low, high, exclude_zero)
    if dtype.is_floating_point:
        low = -3.0 if low is None else low
        high = 3.0 if high is None else high
        arr = rng.uniform(low, high, shape)
        if exclude_zero:
            # Keep values away from zero even after rounding to a half type.
            arr = np.where(np.abs(arr) < 0.125, np.copysign(0.5, arr), arr)
        return arr
    low = (0 if dtype is tp.uint8 else -9) if low is None else math.ceil(low)
    high = 10 if high is None else math.ceil(high)
    arr = rng.integers(low, high, shape)
    if exclude_zero:
        arr = np.where(arr == 0, 1, arr)
    return arr


def make_tensor(shape, dtype, device="cpu", *, rng, low=None, high=None, layout="contiguous",
                exclude_zero=False, requires_grad=False):
    """A tensor of `shape` and `dtype` on `device` with values in [low, high).

    layout:
      contiguous  row-major
      transposed  the last two dims swapped in memory (strides like `t()`)
      strided     every other element of a larger buffer along the last dim (`[..., ::2]`)
      expanded    stride 0 along the first dim (`expand`); read-only in spirit
    A layout that does not apply to the shape (0-dim, empty) falls back to contiguous.
    """
    shape = tuple(shape)
    numel = int(np.prod(shape)) if shape else 1
    if numel == 0 or not shape:
        layout = "contiguous"
    if layout == "transposed" and len(shape) < 2:
        layout = "strided"
    if layout == "expanded" and shape[0] == 1:
        layout = "strided"

    if layout == "transposed":
        alloc = shape[:-2] + (shape[-1], shape[-2])
    elif layout == "strided":
        alloc = shape[:-1] + (2 * shape[-1],)
    elif layout == "expanded":
        alloc = (1,) + shape[1:]
    else:
        alloc = shape
    data = _values(alloc, dtype, rng, low, high, exclude_zero)
    t = tp.tensor(np.asarray(data), dtype=dtype, device=device)
    if layout == "transposed":
        t = t.transpose(-1, -2)
    elif layout == "strided":
        t = t[..., ::2]
    elif layout == "expanded":
        t = t.expand(shape)
    # a tensor of its own, not a view of the buffer: PyTorch's twin (`to_torch`) is a fresh
    # tensor with these strides, and views behave differently (detach_() refuses them)
    t = t.detach()
    if requires_grad:
        t.requires_grad_(True)
    return t


# ---- the PyTorch bridge -----------------------------------------------------------------
def _cuda_memory(t):
    """A `cuda` tensor's elements read straight from its memory as a host torch tensor.
    The oracle side of a comparison must not run the kernels under test (`.cpu()` of a
    non-contiguous tensor launches the copy kernel), and under the interpreter each
    launch costs milliseconds. (`to.device` has its own database entry.)"""
    return tp.cuda.as_torch(t.detach()).cpu()


def tp_to_numpy(t):
    """Values of a TensorPlay tensor as a NumPy array (bfloat16 widened to float32)."""
    if t.device.type == "cuda":
        return torch_to_numpy(_cuda_memory(t).clone())
    arr = np.asarray(t.detach().cpu().numpy())
    if arr.dtype == ml_dtypes.bfloat16:
        arr = arr.astype(np.float32)
    return arr


def torch_to_numpy(t):
    if t._is_zerotensor():      # (a forward-mode tangent PyTorch knows to be zero)
        t = torch.zeros(t.shape, dtype=t.dtype)
    t = t.detach().cpu().resolve_conj().resolve_neg()   # (PyTorch's lazy conj of a gradient)
    if t.dtype is torch.bfloat16:
        t = t.float()
    return t.numpy()


def _numpy_to_torch(arr, dtype):
    arr = np.array(arr, copy=True, order="C")   # (not ascontiguousarray: it makes 0-d 1-d)
    if dtype is tp.bfloat16:
        return torch.from_numpy(arr.view(np.uint16)).view(torch.bfloat16)
    return torch.from_numpy(arr)


def to_torch(value, requires_grad=None):
    """The same value in PyTorch: tensors keep their strides (so view rules and
    non-contiguous kernels are compared like for like), dtypes and devices map across.
    The result never shares memory with the TensorPlay tensor."""
    if isinstance(value, tp.Tensor) and value.device.type == "meta":
        return torch.empty_strided(tuple(value.shape), value.stride(),
                                   dtype=TORCH_DTYPE[value.dtype], device="meta")
    if isinstance(value, tp.Tensor):
        sizes, strides = tuple(value.shape), value.stride()
        cuda = value.device.type == "cuda"
        arr = _cuda_memory(value) if cuda else np.asarray(value.detach().cpu().numpy())
        # Stride-0 dims are stored once: build that and expand, like `make_tensor` does.
        small = tuple(1 if st == 0 and s > 0 else s for s, st in zip(sizes, strides))
        arr = arr[tuple(slice(0, 1) if st == 0 and s > 0 else slice(None)
                        for s, st in zip(sizes, strides))]
        out = torch.empty_strided(small, strides, dtype=TORCH_DTYPE[value.dtype])
        out.copy_(arr if cuda else _numpy_to_torch(arr, value.dtype))
        if small != sizes:
            out = out.expand(sizes)
        grad = value.requires_grad if requires_grad is None else requires_grad
        if grad:
            out = out.detach().requires_grad_(True)
        return out
    if isinstance(value, tp.dtype):
        return TORCH_DTYPE[value]
    if isinstance(value, tp.device):
        return torch.device("cpu") if value.type != "meta" else torch.device("meta")
    if isinstance(value, tp.memory_format):
        return getattr(torch, value.name)
    if isinstance(value, str) and value.partition(":")[0] == "cuda":
        return "cpu"      # a device argument spelled as a string: PyTorch runs on the CPU
    if isinstance(value, tuple):
        return tuple(to_torch(v, requires_grad) for v in value)
    if isinstance(value, list):
        return [to_torch(v, requires_grad) for v in value]
    if isinstance(value, dict):
        return {k: to_torch(v, requires_grad) for k, v in value.items()}
    return value


def assert_close(actual, expected, tol=None, *, check_dtype=True, check_device=None,
                 where="result"):
    """`actual` (TensorPlay) against `expected` (PyTorch), recursively through tuples.

    `tol` is (rtol, atol); None means DEFAULT_TOLERANCES for the result's dtype (so an
    integer input with a float32 result, `sin(int_tensor)`, is compared as float32).
    Integer and bool results are compared exactly."""
    if isinstance(expected, (tuple, list)):
        assert isinstance(actual, (tuple, list)), f"{where}: expected a sequence, got {actual!r}"
        assert len(actual) == len(expected), \
            f"{where}: {len(actual)} outputs, PyTorch gives {len(expected)}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_close(a, e, tol, check_dtype=check_dtype, check_device=check_device,
                         where=f"{where}[{i}]")
        return
    if isinstance(expected, torch.Tensor):
        assert isinstance(actual, tp.Tensor), f"{where}: expected a Tensor, got {actual!r}"
        assert tuple(actual.shape) == tuple(expected.shape), \
            f"{where}: shape {list(actual.shape)}, PyTorch gives {list(expected.shape)}"
        if check_dtype:
            assert TORCH_DTYPE[actual.dtype] == expected.dtype, \
                f"{where}: dtype {actual.dtype.name}, PyTorch gives {expected.dtype}"
        if check_device is not None:
            assert actual.device.type == check_device, \
                f"{where}: on {actual.device}, expected {check_device}"
        a, e = tp_to_numpy(actual), torch_to_numpy(expected)
        if a.dtype.kind == "c" or e.dtype.kind == "c":
            rtol, atol = tol or DEFAULT_TOLERANCES.get(actual.dtype, (0.0, 0.0))
            np.testing.assert_allclose(a.astype(np.complex128), e.astype(np.complex128),
                                       rtol=rtol, atol=atol, equal_nan=True, err_msg=where)
        elif a.dtype.kind == "f" or e.dtype.kind == "f":
            rtol, atol = tol or DEFAULT_TOLERANCES.get(actual.dtype, (0.0, 0.0))
            np.testing.assert_allclose(a.astype(np.float64), e.astype(np.float64), rtol=rtol,
                                       atol=atol, equal_nan=True, err_msg=where)
        else:
            np.testing.assert_array_equal(a, e, err_msg=where)
        return
    assert actual == expected, f"{where}: {actual!r} vs PyTorch {expected!r}"


# ---- the OpInfo -------------------------------------------------------------------------
def _method_caller(name):
    def call(self, *args, **kwargs):
        return getattr(self, name)(*args, **kwargs)
    call.__name__ = f"Tensor.{name}"
    return call


def _resolve(namespace, dotted):
    obj = namespace
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


# A plain `pytest` (which deselects the `slow` mark) runs the database on `cuda`, where the
# Triton interpreter costs about 0.5 ms a program, with at most this many samples an op,
# spread over its list (the first, the last and between: the plain cases, the edge cases
# at the end); `pytest -m slow` (or `-m ""`) runs them all. tests/conftest.py sets it.
CUDA_SAMPLES = {"limit": None}


def reduced_on_cuda(samples):
    limit = CUDA_SAMPLES["limit"]
    if limit is None or len(samples) <= limit:
        return samples
    step = (len(samples) - 1) / (limit - 1)
    return [samples[round(i * step)] for i in range(limit)]


@dataclass
class OpInfo:
    """Everything the generic tests need to know about one op.

    name            the op's base name in ops.yaml (`add`); `variant` tells several entries
                    of one op apart (`scalar`, `dim`), like PyTorch's variant_test_name
    overloads       the ops.yaml overloads the samples exercise (`add.Tensor`, `add_.Tensor`)
    op              the TensorPlay call; default: `tp.<name>` when ops.yaml has a function
                    variant, else the method `Tensor.<name>`
    ref             the PyTorch call (a callable or a dotted name in `torch`); default: `name`
    dtypes          dtypes the op supports (the samples are generated for each)
    sample_inputs_func  `(op, device, dtype, requires_grad) -> Iterable[SampleInput]`
    error_inputs_func   `(op, device) -> Iterable[ErrorInput]`
    inplace         the in-place method (`add_`): tested for equality with the op, for
                    returning self and for bumping the version counter
    mutates_input   the op itself is in-place (`copy_`, `fill_`): returns and bumps `input`
    supports_out    skip the generic `out=` test (written or rejected, never ignored)
    supports_autograd / supports_gradgrad / gradcheck: which gradient tests apply
    supports_meta   the op runs on `device="meta"` (its own shape rule or a decomposition)
    is_view         the output aliases the input (storage and version counter) for every
                    sample (with mutates_input: an in-place view op, which changes the
                    input's strides); `view_like`: the output aliases the input exactly when PyTorch's
                    does (`reshape`, `contiguous`, `to`)
    tolerances      overrides of DEFAULT_TOLERANCES, by dtype
    xfails          {test name: reason}: a known bug outside the tests; the test is marked
                    xfail(strict=True), so it reports the day the bug is fixed
    """
    name: str
    variant: str = ""
    overloads: tuple[str, ...] = ()
    op: Callable | None = None
    ref: Callable | str | None = None
    method: Callable | None | bool = True
    dtypes: tuple = ALL_DTYPES
    sample_inputs_func: Callable[..., Iterable[SampleInput]] | None = None
    error_inputs_func: Callable[..., Iterable[ErrorInput]] | None = None
    inplace: str | None = None
    mutates_input: bool = False
    supports_out: bool = False
    supports_autograd: bool = True
    supports_gradgrad: bool = True
    gradcheck: bool = True
    grad_dtypes: tuple = (tp.float32, tp.float64)
    supports_meta: bool = True
    is_view: bool = False
    view_like: bool = False
    tolerances: dict = field(default_factory=dict)
    xfails: dict = field(default_factory=dict)

    def __post_init__(self):
        variants = yaml_variants(self.name)
        if self.op is None:
            self.op = getattr(tp, self.name) if "function" in variants \
                else _method_caller(self.name)
        if self.method is True:
            # The method variant, checked against the function when both exist.
            self.method = _method_caller(self.name) \
                if "method" in variants and "function" in variants else None
        elif self.method is False:
            self.method = None
        ref = self.ref if self.ref is not None else self.name
        if isinstance(ref, str):
            try:
                ref = _resolve(torch, ref)
            except AttributeError:
                ref = _method_caller(ref)
        self.ref = ref

    @property
    def full_name(self):
        return f"{self.name}.{self.variant}" if self.variant else self.name

    def __repr__(self):
        return f"OpInfo({self.full_name})"

    def __call__(self, *args, **kwargs):
        return self.op(*args, **kwargs)

    def sample_inputs(self, device, dtype, requires_grad=False):
        samples = list(self.sample_inputs_func(self, device, dtype, requires_grad))
        return reduced_on_cuda(samples) if device == "cuda" else samples

    def error_inputs(self, device):
        if self.error_inputs_func is None:
            return []
        return list(self.error_inputs_func(self, device))

    def tolerance(self, dtype):
        """(rtol, atol) for inputs of `dtype`; None: the defaults for the result's dtype."""
        return self.tolerances.get(dtype)

    def call(self, sample):
        return self.op(sample.input, *sample.args, **sample.kwargs)

    def call_inplace(self, sample):
        return getattr(sample.input, self.inplace)(*sample.args, **sample.kwargs)

    def reference(self, sample):
        """PyTorch on copies of the sample's tensors."""
        s = to_torch(sample.input), to_torch(sample.args), to_torch(sample.kwargs)
        return self.ref(s[0], *s[1], **s[2])

    def reference_with_input(self, sample):
        """(PyTorch's result, PyTorch's copy of `sample.input`), for aliasing checks."""
        s = to_torch(sample.input), to_torch(sample.args), to_torch(sample.kwargs)
        return self.ref(s[0], *s[1], **s[2]), s[0]


# ---- what this build can test -----------------------------------------------------------
def available_devices():
    """`cpu`, plus `cuda` when the Triton backend serves it (a GPU, or the interpreter
    with TRITON_INTERPRET=1) and can allocate a tensor."""
    devices = ["cpu"]
    # TP_TEST_CUDA_DB=0 leaves `cuda` out (a quick cpu-only run). Under the interpreter
    # test_ops.py runs a reduced form of the database there (see SLOW_ON_CUDA).
    if os.environ.get("TP_TEST_CUDA_DB") == "0":
        return devices
    if tp.cuda.is_available() or tp.cuda.is_interpreted():
        try:
            tp.zeros(1, device="cuda")
            devices.append("cuda")
        except tp.errors.DeviceError:
            pass
    return devices


def autograd_status():
    """(ready, reason): whether `backward()` works well enough for the gradient tests."""
    try:
        x = tp.tensor([1.0, 2.0], requires_grad=True)
        (x * x).sum().backward()
        grad = None if x.grad is None else x.grad.tolist()
    except Exception as e:  # noqa: BLE001 - any failure means "not ready"
        return False, f"tensorplay.autograd is incomplete ({type(e).__name__}: {e})"
    if grad != [2.0, 4.0]:
        return False, f"tensorplay.autograd gives d(sum(x*x))/dx = {grad}, expected [2.0, 4.0]"
    return True, ""


class record_calls:
    """`with record_calls() as names:` collects the full name of every op that enters the
    dispatcher by `OperatorHandle.call` (the profiler hook), nested calls of composite
    kernels included."""

    def __enter__(self):
        from tensorplay.dispatch.trace import observers
        self._observers = observers
        self._saved = observers.active
        self.names = set()
        observers.listeners.append(self)
        observers.active = True
        return self.names

    # what `trace.observed` calls around each op (tensorplay/dispatch/trace.py)
    def begin(self, name, kind, shapes=None):
        self.names.add(name)

    def end(self):
        pass

    def __exit__(self, *exc):
        self._observers.listeners.remove(self)
        self._observers.active = self._saved or bool(self._observers.listeners)
        return False
