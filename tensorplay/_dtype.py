"""Data types and PyTorch's type-promotion rules.

A `dtype` is a small immutable object that knows its NumPy twin (the CPU
backend stores data in NumPy arrays) and its *category*: bool < integer <
floating. Promotion follows PyTorch, not NumPy:

- two dtypes promote through a fixed lattice (`promote_types`);
- in `result_type`, Python scalars and 0-dim tensors take part only when they
  are of a *higher category* than the dimensioned tensors: `int32_tensor + 2.5`
  is float32 (the default dtype), but `float16_tensor + 2.5` stays float16.
"""
from __future__ import annotations

import builtins as _builtins

import ml_dtypes
import numpy as np

__all__ = [
    "dtype", "bool", "uint8", "int8", "int16", "int32", "int64",
    "float16", "bfloat16", "float32", "float64",
    "promote_types", "get_default_dtype", "set_default_dtype",
]

_BOOL, _INT, _FLOAT = 0, 1, 2


class dtype:
    """A TensorPlay scalar type, e.g. `tp.float32`."""

    __slots__ = ("name", "itemsize", "category", "is_signed", "np", "_rank",
                 "is_floating_point")

    def __init__(self, name, np_dtype, category, rank, is_signed):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.itemsize = self.np.itemsize
        self.category = category
        self.is_signed = is_signed
        self._rank = rank
        # a plain attribute, not a property: kernels and autograd read it on every call
        self.is_floating_point = category == _FLOAT

    @property
    def is_complex(self):
        return False

    def to_real(self):
        return self

    def __repr__(self):
        return f"tensorplay.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))


bool = dtype("bool", np.bool_, _BOOL, 0, False)  # noqa: A001 - mirrors torch.bool
uint8 = dtype("uint8", np.uint8, _INT, 1, False)
int8 = dtype("int8", np.int8, _INT, 2, True)
int16 = dtype("int16", np.int16, _INT, 3, True)
int32 = dtype("int32", np.int32, _INT, 4, True)
int64 = dtype("int64", np.int64, _INT, 5, True)
float16 = dtype("float16", np.float16, _FLOAT, 6, True)
bfloat16 = dtype("bfloat16", ml_dtypes.bfloat16, _FLOAT, 7, True)
float32 = dtype("float32", np.float32, _FLOAT, 8, True)
float64 = dtype("float64", np.float64, _FLOAT, 9, True)

ALL_DTYPES = (bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64)

_BY_NAME = {d.name: d for d in ALL_DTYPES}
_BY_NAME.update({"float": float32, "double": float64, "half": float16, "long": int64,
                 "int": int32, "short": int16})
_FROM_NP = {d.np: d for d in ALL_DTYPES}


def _by_name(name):
    return _BY_NAME[name]


def from_numpy_dtype(np_dtype):
    """The TensorPlay dtype of a NumPy dtype; TypeError for ones we do not support."""
    try:
        return _FROM_NP[np.dtype(np_dtype)]
    except (KeyError, TypeError):
        raise TypeError(f"NumPy dtype {np_dtype!r} has no TensorPlay equivalent; supported: "
                        + ", ".join(d.name for d in ALL_DTYPES)) from None


def _promote_pair(a, b):
    """The PyTorch promotion lattice for two dtypes (called once per pair, then cached)."""
    if a is b:
        return a
    if a.category != b.category:
        return a if a.category > b.category else b
    if a.category == _FLOAT:
        if {a, b} == {float16, bfloat16}:
            return float32  # neither can hold the other's range/precision
        return a if a.itemsize > b.itemsize else b
    if a.category == _INT:
        if a.is_signed == b.is_signed:
            return a if a.itemsize > b.itemsize else b
        unsigned, signed = (a, b) if not a.is_signed else (b, a)
        if signed.itemsize > unsigned.itemsize:
            return signed
        # uint8 with int8 needs a wider signed type to hold both ranges.
        return {1: int16, 2: int32, 4: int64, 8: int64}[unsigned.itemsize]
    return a


# The whole table is computed once: promotion is on every binary op's hot path.
_PROMOTE = {(a, b): _promote_pair(a, b) for a in ALL_DTYPES for b in ALL_DTYPES}


def promote_types(type1, type2):
    """The smallest dtype both `type1` and `type2` can be converted to (like torch.promote_types)."""
    return _PROMOTE[(type1, type2)]


_default_dtype = [float32]


def get_default_dtype():
    """The dtype of Python floats and of `tp.tensor([1.5])`: float32 unless changed."""
    return _default_dtype[0]


def set_default_dtype(d):
    if not isinstance(d, dtype) or not d.is_floating_point:
        raise TypeError(f"set_default_dtype(): expected a floating dtype, got {d!r}")
    _default_dtype[0] = d


def scalar_dtype(value):
    """The dtype a Python scalar takes when it becomes a tensor (`tp.tensor(3)` is int64)."""
    if isinstance(value, (_builtins.bool, np.bool_)):
        return bool
    if isinstance(value, (int, np.integer)):
        return int64
    if isinstance(value, (float, np.floating)):
        return _default_dtype[0]
    raise TypeError(f"expected a Python number, got {type(value).__name__}")


def combine_categories(higher, lower):
    """PyTorch's rule for mixing priority classes (tensors > 0-dim tensors > Python scalars).

    The lower class only matters when it is of a higher *category*: a float scalar
    makes an int tensor float, but never widens a float16 tensor.
    """
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.category == _FLOAT:
        return higher
    if higher is bool or lower.category == _FLOAT:
        return _PROMOTE[(higher, lower)]
    return higher


def can_cast(from_, to):
    """PyTorch's rule for writing a result of dtype `from_` into a tensor of dtype `to`
    (in-place ops, out=): no float -> integer, no number -> bool."""
    if from_.category == _FLOAT and to.category != _FLOAT:
        return False
    if from_.category != _BOOL and to.category == _BOOL:
        return False
    return True
