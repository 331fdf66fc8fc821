"""C's math library, element by element, where PyTorch's scalar kernels call it and the
last bit matters (the orthogonal polynomials' cos(n acos x), whose argument multiplies
an error of acos by n).

    acos, cos, sin   of a float64 array: libm's acos, cos, sin (NumPy's float64 sin and
                     cos are libm's; its arccos is a unit off for 1 x in 10, so acos maps
                     math.acos)
                     of a float32 array: libm's acosf, cosf, sinf (glibc's are not
                     correctly rounded, so rounding the float64 value is a unit off now
                     and then; NumPy's float32 functions more often). Without a C
                     library to load (not glibc), the float64 value rounded once.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import math

import numpy as np


def _load_float_functions():
    name = ctypes.util.find_library("m")
    try:
        lib = ctypes.CDLL(name or "libm.so.6")
    except OSError:
        return {}
    found = {}
    for fn in ("acosf", "cosf", "sinf"):
        f = getattr(lib, fn, None)
        if f is not None:
            f.restype, f.argtypes = ctypes.c_float, [ctypes.c_float]
            found[fn] = f
    return found


_FLOAT = _load_float_functions()


def _each(fn, x, dtype):
    return np.fromiter(map(fn, x.ravel().tolist()), dtype, x.size).reshape(x.shape)


def _float32(name, f64, x):
    c = _FLOAT.get(name)
    if c is None:
        return f64(x.astype(np.float64)).astype(np.float32)
    return _each(c, x, np.float32)


def acos(x):
    """acos of x (float32 or float64): nan outside [-1, 1], as C's."""
    inside = np.abs(x) <= 1
    r = np.full(x.shape, np.nan, x.dtype)
    if x.dtype == np.float32:
        r[inside] = _float32("acosf", np.arccos, x[inside])
    else:
        r[inside] = _each(math.acos, x[inside], np.float64)
    return r


def cos(x):
    return np.cos(x) if x.dtype == np.float64 else _float32("cosf", np.cos, x)


def sin(x):
    return np.sin(x) if x.dtype == np.float64 else _float32("sinf", np.sin, x)
