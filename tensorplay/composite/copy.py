"""`to(...)` and the dtype shorthands (`x.float()`): no copy when nothing changes,
otherwise `_to_copy`, the one op (with one derivative) that converts."""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay._generated import functional as F
from tensorplay._memory_format import preserve_format
from tensorplay.errors import ShapeError, fmt_shape


def _to(self, dtype, device, non_blocking, copy):
    impl = self._impl
    same_dtype = dtype is None or dtype is impl.dtype
    same_device = device is None or device == impl.device
    if same_dtype and same_device and not copy:
        return self
    return F._to_copy(self, dtype=dtype, device=device, non_blocking=non_blocking)


def to_dtype(self, dtype, non_blocking, copy):
    return _to(self, dtype, None, non_blocking, copy)


def to_device(self, device, dtype, non_blocking, copy):
    return _to(self, dtype, device, non_blocking, copy)


def to_other(self, other, non_blocking, copy):
    return _to(self, other.dtype, other.device, non_blocking, copy)


def to_memory_format(self, memory_format, dtype, device, non_blocking, copy):
    """`x.to(memory_format=tp.channels_last)`: the dtype/device change first, then the
    layout (a copy only where one is needed, as `contiguous(memory_format=...)`)."""
    converted = _to(self, dtype, device, non_blocking, copy)
    if memory_format is preserve_format:
        return converted
    if converted is not self:      # already a fresh copy: lay it out directly
        return converted.contiguous(memory_format=memory_format)
    return self.contiguous(memory_format=memory_format)


def to_float(self):
    return _to(self, dt.float32, None, False, False)


def to_double(self):
    return _to(self, dt.float64, None, False, False)


def to_long(self):
    return _to(self, dt.int64, None, False, False)


def to_int(self):
    return _to(self, dt.int32, None, False, False)


def to_bool(self):
    return _to(self, dt.bool, None, False, False)


def to_cfloat(self):
    return _to(self, dt.complex64, None, False, False)


def to_cdouble(self):
    return _to(self, dt.complex128, None, False, False)


def to_half(self):
    return _to(self, dt.float16, None, False, False)


def to_bfloat16(self):
    return _to(self, dt.bfloat16, None, False, False)


def to_byte(self):
    return _to(self, dt.uint8, None, False, False)


def to_char(self):
    return _to(self, dt.int8, None, False, False)


def to_short(self):
    return _to(self, dt.int16, None, False, False)


def zero_(self):
    return F.fill_(self, 0)


def fill__tensor(self, value):
    """fill_ with a 0-dim tensor: a broadcasting copy_, which never reads the value (a meta
    `value` has none) and passes the gradient on to it, as PyTorch's fill_.Tensor does."""
    if value.dim() != 0:
        raise ShapeError(f"fill_(): argument 'value' must be a 0-dim tensor, but got a "
                         f"{value.dim()}-dim tensor of shape {fmt_shape(value.shape)}",
                         op="fill_", arg="value")
    # A value that is a view of self is read before self is written (so `x.fill_(x[1])`
    # is no overlapping copy), as PyTorch's fill_ clones it.
    storage = getattr(self._impl, "storage", None)
    if storage is not None and getattr(value._impl, "storage", None) is storage:
        value = value.clone()
    return self.copy_(value)
