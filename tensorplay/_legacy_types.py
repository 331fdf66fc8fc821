"""The typed tensor classes of old PyTorch: `tp.FloatTensor`, `tp.LongTensor`, ...

Tutorials written before `dtype=` existed build tensors as `torch.FloatTensor([1, 2])` or
`torch.FloatTensor(2, 3)`, test them with `isinstance(x, torch.FloatTensor)` and convert
with `x.type(torch.LongTensor)` or `x.type('torch.cuda.FloatTensor')`. Here, as in
PyTorch, a tensor's class is always `Tensor`: a typed class is a name for a (dtype,
device type) pair, and `isinstance` compares that pair with the tensor's.

    tp.FloatTensor(2, 3)            # uninitialised 2x3 float32 on the CPU
    tp.LongTensor([1, 2])           # int64 data
    isinstance(x, tp.FloatTensor)   # x is a float32 CPU tensor
    tp.cuda.FloatTensor([1.0])      # the same on the cuda device
"""
from __future__ import annotations

import numpy as np

from tensorplay import _dtype as dt

# The class names PyTorch gives each dtype ("Float" + "Tensor").
TYPE_NAMES = {
    dt.float32: "Float", dt.float64: "Double", dt.float16: "Half", dt.bfloat16: "BFloat16",
    dt.int64: "Long", dt.int32: "Int", dt.int16: "Short", dt.uint8: "Byte", dt.int8: "Char",
    dt.bool: "Bool",
}
_BY_NAME = {name + "Tensor": dtype for dtype, name in TYPE_NAMES.items()}


def type_name(dtype, device_type):
    """`tensorplay.FloatTensor`, `tensorplay.cuda.LongTensor`: what `x.type()` returns."""
    prefix = "tensorplay." if device_type == "cpu" else f"tensorplay.{device_type}."
    return prefix + TYPE_NAMES[dtype] + "Tensor"


def is_size(args):
    """`Tensor(2, 3)` and `Tensor(tp.Size([2, 3]))` ask for a shape, not for data."""
    from tensorplay._tensor import Size
    if len(args) == 1 and isinstance(args[0], Size):
        return True
    return bool(args) and all(isinstance(a, (int, np.integer)) and not isinstance(a, bool)
                              for a in args)


def construct(args, dtype, device):
    """PyTorch's legacy constructor: no argument (an empty tensor), sizes (uninitialised
    memory), a tensor of the same dtype (an alias of it), or data (a copy)."""
    from tensorplay._creation import empty, tensor
    from tensorplay._tensor import Tensor
    if not args:
        return empty(0, dtype=dtype, device=device)
    if is_size(args):
        return empty(*args, dtype=dtype, device=device)
    if len(args) > 1:
        raise TypeError(f"new(): expected sizes (ints) or one data argument, but got "
                        f"{len(args)} arguments of types "
                        f"({', '.join(type(a).__name__ for a in args)})")
    data = args[0]
    if isinstance(data, Tensor):
        if data.dtype is not dtype:
            raise TypeError(f"new(): expected a tensor of dtype {dtype.name}, but got one of "
                            f"dtype {data.dtype.name}")
        return data.detach()
    return tensor(data, dtype=dtype, device=device)


class LegacyTensorType(type):
    """The metaclass of `FloatTensor` and friends: calling one builds a tensor, and
    `isinstance` checks dtype and device type."""

    def __call__(cls, *args, device=None):
        from tensorplay._device import as_device
        if device is not None and as_device(device).type != cls.device_type:
            raise RuntimeError(f"legacy constructor expects device type: {cls.device_type} "
                               f"but device type: {as_device(device).type} was passed")
        return construct(args, cls.dtype, cls.device_type if device is None else device)

    def __instancecheck__(cls, obj):
        from tensorplay._tensor import Tensor
        return (isinstance(obj, Tensor) and obj.dtype is cls.dtype
                and obj.device.type == cls.device_type)

    def __repr__(cls):
        return f"<class '{type_name(cls.dtype, cls.device_type)}'>"


def _make_types(device_type):
    return {dtype: LegacyTensorType(TYPE_NAMES[dtype] + "Tensor", (),
                                    {"dtype": dtype, "device_type": device_type,
                                     "is_cuda": device_type == "cuda"})
            for dtype in TYPE_NAMES}


CPU_TYPES = _make_types("cpu")
CUDA_TYPES = _make_types("cuda")


def parse_type(spec):
    """(dtype, device type) for `x.type(...)`'s argument: a typed class, or its name as
    'torch.FloatTensor' / 'tensorplay.cuda.LongTensor'."""
    if isinstance(spec, LegacyTensorType):
        return spec.dtype, spec.device_type
    parts = spec.split(".")
    if parts[0] in ("torch", "tensorplay") and len(parts) in (2, 3) and parts[-1] in _BY_NAME:
        if len(parts) == 2:
            return _BY_NAME[parts[1]], "cpu"
        if parts[1] == "cuda":
            return _BY_NAME[parts[2]], "cuda"
    raise ValueError(f"invalid type: '{spec}'")
