"""Helpers shared by the pointwise kernels (pointwise_*.py): dtype handling and the one
recipe every in-place kernel follows."""
from __future__ import annotations

import functools
import inspect

import numpy as np

from tensorplay._promotion import result_type
from tensorplay.meta.overlap import check_inplace_overlap
from cpu_kernels._common import array_as, float_dtype, out_like


def compute_np(dtype):
    """The NumPy dtype to compute `dtype` in: the half types in float32, rounded once at the
    end (PyTorch's CPU kernels do the same, so results agree to the last bit more often)."""
    if dtype.is_floating_point and dtype.itemsize == 2:
        return np.float32
    return dtype.np


def arrays(dtype, *tensors):
    """The tensors' data converted to the compute dtype of `dtype` (views when possible)."""
    target = compute_np(dtype)
    return [array_as(t, dtype).astype(target, copy=False) for t in tensors]


def promoted(*tensors):
    """(result dtype, arrays in its compute dtype) after PyTorch's type promotion."""
    dtype = result_type(*tensors)
    return dtype, arrays(dtype, *tensors)


def unary_float_kernel(name, fn):
    """A kernel `name(self)` computing `fn` on the input converted to a float dtype."""
    def kernel(self):
        dtype = float_dtype(self._impl.dtype)
        (x,) = arrays(dtype, self)
        with np.errstate(all="ignore"):
            return out_like(fn(x), dtype, self)
    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = f"{name}(self) elementwise, in floating point."
    return kernel


def inplace_of(kernel, rule, name):
    """The in-place form of an out-of-place kernel: check with the op's rule that the
    result fits into `self` (shape and dtype), compute, copy into self's own memory.

        for each i:  self[i] = kernel(self, *args)[i]
    """
    names = list(inspect.signature(kernel).parameters)[1:]

    @functools.wraps(kernel)   # keeps the parameter names the dispatcher checks
    def inplace(self, *args):
        rule(name, (self, *args))
        check_inplace_overlap(name, self, *zip(names, args))
        result = kernel(self, *args)
        np.copyto(self._impl.array(), result._impl.array(), casting="unsafe")
        return self
    inplace.__name__ = inplace.__qualname__ = name
    return inplace
