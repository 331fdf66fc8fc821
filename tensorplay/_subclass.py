"""Tensor subclasses: how an instance of `class MyTensor(tp.Tensor)` is made.

`tp.Tensor._make_subclass(cls, data)` and `tp.Tensor._make_wrapper_subclass(cls, size,
...)` are PyTorch's two ways (and here they have the same names):

- `_make_subclass`: an instance of `cls` that shares `data`'s memory and version
  counter, as `data.detach()` would, with its own autograd state;
- `_make_wrapper_subclass`: an instance of `cls` with sizes, strides, dtype and device but
  no memory at all. It stands for a tensor that lives elsewhere, usually an inner tensor
  the subclass keeps in an attribute (`LoggingTensor.elem`). Its ops must be handled by
  `cls.__tensorplay_dispatch__`, since no kernel can read it.

A class that defines `__tensorplay_dispatch__` gets a `PythonTensorImpl`, whose key set
adds the `Python` key: every op on such a tensor, below autograd, goes to the class
(`tensorplay/dispatch/python_key.py`). Autograd itself runs on the outer tensor, above:
the graph is recorded on `LoggingTensor`s, and the handler sees plain ops.
"""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay._device import device as as_device, get_default_device
from tensorplay._impl import Storage, TensorImpl, contiguous_strides
from tensorplay._tensor_base import TensorBase
from tensorplay.dispatch.python_key import PYTHON_BIT
from tensorplay.errors import ArgumentError, TensorPlayError


class PythonTensorImpl(TensorImpl):
    """The impl of a subclass that defines `__tensorplay_dispatch__`: its key set is a
    plain tensor's plus the Python key."""

    __slots__ = ()

    def key_set(self):
        return TensorImpl.key_set(self) | PYTHON_BIT

    def array(self):
        if self.storage.data is None and self.device.type != "meta":
            raise TensorPlayError(
                "this tensor is a wrapper subclass (made by _make_wrapper_subclass): it holds "
                "no memory of its own, so nothing can read its elements directly; read the "
                "tensor it wraps instead (LoggingTensor: `.elem`)")
        return TensorImpl.array(self)


def dispatches(cls):
    """Whether instances of `cls` carry the Python key."""
    return getattr(cls, "__tensorplay_dispatch__", None) is not None


def _check_class(op, cls):
    if not (isinstance(cls, type) and issubclass(cls, TensorBase)):
        raise ArgumentError(f"{op}(): argument 'cls' must be a subclass of tp.Tensor, but "
                            f"got {cls!r}", op=op, arg="cls")


def _new(cls, impl):
    t = object.__new__(cls)
    t._impl = impl
    return t


def rebuild(cls, attributes, impl):
    """An instance of the subclass `cls` around `impl`, with these instance attributes (a
    LoggingTensor's `elem`): how a saved output or a detached tensor keeps its class."""
    t = _new(cls, impl)
    if attributes:          # a class with __slots__ has none
        t.__dict__.update(attributes)
    return t


def make_subclass(cls, data, require_grad=False):
    """An instance of `cls` on `data`'s memory (sizes, strides, version counter shared)."""
    _check_class("_make_subclass", cls)
    if not isinstance(data, TensorBase):
        raise ArgumentError(f"_make_subclass(): argument 'data' must be Tensor, but got "
                            f"{type(data).__name__}", op="_make_subclass", arg="data")
    src = data._impl
    impl_cls = PythonTensorImpl if dispatches(cls) else TensorImpl
    impl = impl_cls(src.storage, src.sizes, src.strides, src.offset, src.dtype, src.device,
                    version=src.version, inference=src.inference, array=src._array)
    impl.set_requires_grad(bool(require_grad))
    return _new(cls, impl)


def make_wrapper_subclass(cls, size, strides=None, storage_offset=0, dtype=None,
                          device=None, requires_grad=False):
    """An instance of `cls` with this metadata and no memory (see the module docstring)."""
    _check_class("_make_wrapper_subclass", cls)
    if not dispatches(cls):
        raise ArgumentError(f"_make_wrapper_subclass(): {cls.__name__} must define "
                            f"__tensorplay_dispatch__ (a tensor without memory needs a handler "
                            f"for its ops)", op="_make_wrapper_subclass", arg="cls")
    sizes = tuple(int(s) for s in size)
    strides = contiguous_strides(sizes) if strides is None else tuple(int(s) for s in strides)
    if len(strides) != len(sizes):
        raise ArgumentError(f"_make_wrapper_subclass(): argument 'strides' must have one "
                            f"entry per dimension ({len(sizes)}), but got {len(strides)}",
                            op="_make_wrapper_subclass", arg="strides")
    dtype = dt.get_default_dtype() if dtype is None else dtype
    device = get_default_device() if device is None else as_device(device)
    impl = PythonTensorImpl(Storage(None, 0, device), sizes, strides, int(storage_offset),
                            dtype, device)
    impl.set_requires_grad(bool(requires_grad))
    return _new(cls, impl)
