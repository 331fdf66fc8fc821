"""Helpers shared by the tests that set a TensorPlay result beside PyTorch's: the same
values made in both libraries, and the comparisons of the two results."""
import numpy as np
import pytest
import torch

import tensorplay as tp

# The dtypes a kernel's shortcut is checked on, and the floating ones among them.
DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
          "float32", "float64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]

# Values that meet a kernel's edge cases: a zero of each sign, and magnitudes where exp
# overflows and log of a negative is nan.
MIXED_VALUES = [[0.5, -2.0, 0.0, 1000.0], [-1000.0, 3.0, -0.0, 88.0]]

# NumPy's and PyTorch's float kernels may round differently in the last place (libm's
# sin, `2.5 / x` which PyTorch computes as x.reciprocal() * 2.5): floats are compared to a
# few units in the last place; integers, bools, nan and inf exactly.
RTOL = {"float16": 2e-3, "bfloat16": 1e-2, "float32": 1e-6, "float64": 1e-15}


def dtype_pair(values, dtype, requires_grad=False):
    """The same values as a TensorPlay and a PyTorch tensor of `dtype` (made in float64,
    then converted), leaves that require grad if asked."""
    base = np.asarray(values, np.float64)
    t = tp.from_numpy(base.copy()).to(getattr(tp, dtype))
    u = torch.from_numpy(base.copy()).to(getattr(torch, dtype))
    if requires_grad:
        t.requires_grad_(True)
        u.requires_grad_(True)
    return t, u


def strides_like_torch(t, u):
    assert t._impl.strides == u.stride(), (t._impl.strides, u.stride())


def like_torch(t, u, strides=True):
    """Same dtype, shape and values (floats to RTOL), and the same strides unless
    `strides=False`."""
    assert t.dtype.name == str(u.dtype).replace("torch.", ""), (t.dtype, u.dtype)
    assert tuple(t.shape) == tuple(u.shape)
    if strides:
        assert t._impl.strides == u.stride(), (t._impl.strides, u.stride())
    mine = np.asarray(t.detach().to(tp.float64).numpy(), np.float64)
    theirs = u.detach().to(torch.float64).numpy()
    if t.dtype.name in RTOL:
        np.testing.assert_allclose(mine, theirs, rtol=RTOL[t.dtype.name], atol=0)
    else:
        np.testing.assert_array_equal(mine, theirs)


def values_like_torch(t, u):
    """Same dtype, shape and values (floats to RTOL); the strides are not compared."""
    like_torch(t, u, strides=False)


def leaf_pair(array, requires_grad=True):
    """The same float32 leaf in TensorPlay and in PyTorch."""
    array = np.asarray(array, dtype=np.float32)
    return (tp.tensor(array, requires_grad=requires_grad),
            torch.tensor(array, requires_grad=requires_grad))


def close(a, b):
    """Both exist and hold the same values, to float32's rounding of a few ops."""
    assert a is not None and b is not None
    np.testing.assert_allclose(np.asarray(a.detach()), b.detach().numpy(), rtol=1e-5,
                               atol=1e-6)


def numpy_of(t):
    return t.detach().numpy()


def numel(sizes):
    return int(np.prod(sizes, dtype=np.int64))


def raises_like_torch(fn):
    """Run fn(torch) and fn(tp): both raise (tp a TensorPlay typed error), or both return
    and the pair (got, want) is returned for the caller to compare."""
    try:
        want = fn(torch)
    except Exception:          # noqa: BLE001 - torch's errors are untyped RuntimeErrors
        with pytest.raises(tp.errors.TensorPlayError):
            fn(tp)
        return None
    got = fn(tp)
    return got, want
