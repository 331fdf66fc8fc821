"""Shared pieces of the NumPy kernels: views in, tensors out."""
from __future__ import annotations

import numpy as np

from tensorplay._device import CPU
from tensorplay._dtype import get_default_dtype
from tensorplay._impl import impl_from_array
from tensorplay._tensor import wrap
from tensorplay.autograd.grad_mode import grad_state


def out(result, dtype):
    """Wrap a NumPy result as a new CPU tensor of `dtype` (ufuncs on 0-d arrays
    return NumPy scalars, hence the asarray)."""
    if type(result) is not np.ndarray:
        result = np.asarray(result)
    np_dtype = dtype.np
    if result.dtype is not np_dtype and result.dtype != np_dtype:   # `is`: the common case
        result = result.astype(np_dtype)
    return wrap(impl_from_array(result, dtype, CPU, grad_state.inference))


def write_target(op, self):
    """The array an indexed write goes into: `self`'s own memory for an in-place op (its
    name ends in `_`), otherwise a fresh copy, which becomes the result (`written`)."""
    a = self._impl.array()
    return a if op.endswith("_") else np.array(a, copy=True)


def written(op, self, target):
    """What an op that wrote into `target` (from write_target) returns: `self` when in
    place, otherwise `target` as a new tensor."""
    return self if op.endswith("_") else out(target, self._impl.dtype)


def array_as(t, dtype):
    """The tensor's data as `dtype` (a view when it already is, a converted copy otherwise)."""
    impl = t._impl
    a = impl._array     # the cached view, as impl.array() would return it
    if a is None:
        a = impl.array()
    return a if impl.dtype is dtype else a.astype(dtype.np)


def scalar_as(value, dtype):
    """A number argument (addcmul's value, addmm's beta and alpha) as PyTorch applies it to
    a tensor of `dtype`: converted to that type first, so integer dtypes truncate it
    toward zero (addcmul(int, int, int, value=1.5) uses 1, value=-1.5 uses -1)."""
    if dtype.np.kind in "iu" and not isinstance(value, (bool, int)):
        return int(value)
    return value


def float_dtype(dtype):
    """The dtype unary float ops compute in: integers and bool become the default float."""
    return dtype if dtype.is_floating_point else get_default_dtype()


def accumulate_dtype(dtype):
    """Half types are summed in float32, as PyTorch does, then rounded once."""
    return np.float32 if dtype.itemsize == 2 and dtype.is_floating_point else dtype.np
