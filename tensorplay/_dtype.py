"""Data types and PyTorch's type-promotion rules.

A `dtype` is a small immutable object that knows its NumPy twin (the CPU
backend stores data in NumPy arrays) and its *category*: bool < integer <
floating < complex. Promotion follows PyTorch, not NumPy:

- two dtypes promote through a fixed lattice (`promote_types`); complex is the fourth
  category, above floating: complex64 holds two float32s, complex128 two float64s, and
  `complex64 + float64` is complex128 (neither can hold the other);
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
    "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
    "promote_types", "get_default_dtype", "set_default_dtype",
]

_BOOL, _INT, _FLOAT, _COMPLEX = 0, 1, 2, 3


class dtype:
    """A TensorPlay scalar type, e.g. `tp.float32`."""

    __slots__ = ("name", "itemsize", "category", "is_signed", "np", "_rank",
                 "is_floating_point", "is_complex", "is_differentiable")

    def __init__(self, name, np_dtype, category, rank, is_signed):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.itemsize = self.np.itemsize
        self.category = category
        self.is_signed = is_signed
        self._rank = rank
        # a plain attribute, not a property: kernels and autograd read it on every call
        self.is_floating_point = category == _FLOAT
        self.is_complex = category == _COMPLEX
        # what a gradient can flow through: floating and complex tensors (autograd's test)
        self.is_differentiable = category >= _FLOAT

    def to_real(self):
        """The dtype of a complex dtype's real and imaginary parts (complex64 -> float32);
        any other dtype is its own."""
        return _TO_REAL.get(self, self)

    def to_complex(self):
        """The complex dtype whose parts are this floating dtype (float64 -> complex128;
        the half types -> complex64: NumPy has no complex32)."""
        if self.category == _COMPLEX:
            return self
        if self.category != _FLOAT:
            raise TypeError(f"to_complex(): expected a floating dtype, got {self!r}")
        return complex128 if self is float64 else complex64

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
complex64 = dtype("complex64", np.complex64, _COMPLEX, 10, True)
complex128 = dtype("complex128", np.complex128, _COMPLEX, 11, True)
_TO_REAL = {complex64: float32, complex128: float64}

ALL_DTYPES = (bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64,
              complex64, complex128)

_BY_NAME = {d.name: d for d in ALL_DTYPES}
_BY_NAME.update({"float": float32, "double": float64, "half": float16, "long": int64,
                 "int": int32, "short": int16, "cfloat": complex64, "cdouble": complex128})
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
        high, low = (a, b) if a.category > b.category else (b, a)
        if high.category == _COMPLEX and low is float64:
            return complex128   # complex64's float32 parts cannot hold a float64
        return high
    if a.category == _COMPLEX:
        return a if a.itemsize > b.itemsize else b
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
    if isinstance(value, (complex, np.complexfloating)):
        return _default_dtype[0].to_complex()     # tp.tensor(1j) is complex64
    raise TypeError(f"expected a Python number, got {type(value).__name__}")


def combine_categories(higher, lower):
    """PyTorch's rule for mixing priority classes (tensors > 0-dim tensors > Python scalars).

    The lower class only matters when it is of a higher *category*: a float scalar
    makes an int tensor float, but never widens a float16 tensor. (Within bool, the
    lower class's dtype is bool too: the higher one is returned in either case.)
    """
    if higher is None:
        return lower
    if lower is None:
        return higher
    if lower.category <= higher.category:
        return higher
    if lower.category == _COMPLEX and higher.category == _FLOAT:
        # float64_tensor * 1j is complex128, float32_tensor * 1j complex64: the number's
        # category, the tensor's precision (PyTorch makes float16's complex32, which
        # NumPy lacks: complex64 here)
        return higher.to_complex()
    return lower


def can_cast(from_, to):
    """PyTorch's rule for writing a result of dtype `from_` into a tensor of dtype `to`
    (in-place ops, out=): no complex -> real, no float -> integer, no number -> bool."""
    if from_.category >= _FLOAT and to.category < from_.category:
        return False
    if from_.category != _BOOL and to.category == _BOOL:
        return False
    return True
