"""Round 4 of the dispatch fast path (issue 13): the result a CPU kernel makes and how it
reads its inputs, each shortcut against PyTorch and against the general path.

- `impl_from_array` writes the Storage's and the TensorImpl's fields itself instead of
  calling the classes: the same fields, the same values.
- `add`, `sub`, `mul`, `div` compute two row-major operands of one dtype directly;
  `_binary` skips `result_type2` and `array_as` for one dtype whose arrays are made;
  `out_like1`/`out_like2` skip `out_like`'s loop for row-major inputs. Transposed and
  expanded operands, views whose array is not made yet, mixed dtypes (wrapped numbers
  among them), an alpha and the half types' 0-d rule take the general path.
- `call_ignoring` sets NumPy's error state made once for its default settings, and falls
  back to `np.errstate` under any other state (sum, mean, div, pow, the float functions).
"""
import warnings

import numpy as np
import pytest
import torch

import tensorplay as tp

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
          "float32", "float64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]


def _pair(values, dtype):
    """The same values as a TensorPlay and a PyTorch tensor of `dtype`."""
    base = np.asarray(values, np.float64)
    t = tp.from_numpy(base.copy()).to(getattr(tp, dtype))
    u = torch.from_numpy(base.copy()).to(getattr(torch, dtype))
    return t, u


# NumPy's and PyTorch's float kernels may round differently in the last place (libm's
# sin, `2.5 / x` which PyTorch computes as x.reciprocal() * 2.5): floats are compared to a
# few units in the last place; integers, bools, nan and inf exactly.
RTOL = {"float16": 2e-3, "bfloat16": 1e-2, "float32": 1e-6, "float64": 1e-15}


def _same(t, u):
    """Same dtype, shape and values."""
    assert t.dtype.name == str(u.dtype).replace("torch.", ""), (t.dtype, u.dtype)
    assert tuple(t.shape) == tuple(u.shape)
    mine = np.asarray(t.to(tp.float64).numpy(), np.float64)
    theirs = u.to(torch.float64).numpy()
    if t.dtype.name in RTOL:
        np.testing.assert_allclose(mine, theirs, rtol=RTOL[t.dtype.name], atol=0)
    else:
        np.testing.assert_array_equal(mine, theirs)


# ---- unary ops and sum ----------------------------------------------------------------------
U_VALUES = [[0.5, -2.0, 0.0, 1000.0], [-1000.0, 3.0, -0.0, 88.0]]


@pytest.mark.parametrize("dtype", DTYPES)
def test_sum_matches_torch(dtype):
    a, at = _pair(U_VALUES, dtype)
    _same(a.sum(), at.sum())
    _same(a.sum(0), at.sum(0))
    _same(a[:0].sum(), at[:0].sum())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        inf, inft = _pair([float("inf"), float("-inf")], "float32")
        _same(inf.sum(), inft.sum())                          # nan, without a warning
        big, bigt = _pair([3e38, 3e38], "float32")
        _same(big.sum(), bigt.sum())                          # inf, without a warning


# ---- call_ignoring: np.errstate's semantics ------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
def test_mean_matches_torch(dtype):
    a, at = _pair(U_VALUES, dtype)
    _same(a.mean(), at.mean())
    _same(a.mean(1, keepdim=True), at.mean(1, keepdim=True))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _same(a[:0].mean(), at[:0].mean())                    # nan, without a warning
