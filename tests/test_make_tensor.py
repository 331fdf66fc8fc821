"""tp.testing.make_tensor: torch.testing.make_tensor's tensors, draw for draw from the
global generator (gradgradcheck's random grad_outputs are its floating branch)."""
import numpy as np
import pytest
import torch

import tensorplay as tp

DTYPES = ["float16", "bfloat16", "float32", "float64", "complex64", "complex128", "bool",
          "uint8", "int8", "int16", "int32", "int64"]


def _both(dtype, *shape, **kwargs):
    tp.manual_seed(4)
    torch.manual_seed(4)
    ours = tp.testing.make_tensor(*shape, dtype=getattr(tp, dtype), device="cpu", **kwargs)
    theirs = torch.testing.make_tensor(*shape, dtype=getattr(torch, dtype), device="cpu",
                                       **kwargs)
    return ours, theirs


def _array(t):
    t = t.detach()
    return np.asarray(t.float() if t.dtype in (tp.bfloat16, torch.bfloat16) else t) \
        if isinstance(t, tp.Tensor) else (t.float() if t.dtype is torch.bfloat16 else t).numpy()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kwargs", [{}, {"noncontiguous": True}, {"low": -2, "high": 3},
                                    {"exclude_zero": True, "low": -1, "high": 2}])
def test_values_and_layout_are_torchs(dtype, kwargs):
    ours, theirs = _both(dtype, (3, 5), **kwargs)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.is_contiguous() == theirs.is_contiguous()
    np.testing.assert_array_equal(_array(ours), _array(theirs))
    np.testing.assert_array_equal(np.asarray(tp.rand(3)), torch.rand(3).numpy())


def test_requires_grad_and_its_refusal_for_integers():
    assert tp.testing.make_tensor(2, dtype=tp.float64, device="cpu",
                                  requires_grad=True).requires_grad
    with pytest.raises(ValueError, match="requires_grad=True` is not supported"):
        tp.testing.make_tensor(2, dtype=tp.int64, device="cpu", requires_grad=True)


@pytest.mark.parametrize("low,high,match", [(3, 1, "must be less than"),
                                            (float("nan"), 1, "cannot be NaN"),
                                            (300, 400, "only supports")])
def test_bad_bounds_raise_torchs_errors(low, high, match):
    dtype = "uint8" if low == 300 else "float32"
    with pytest.raises(ValueError, match=match):
        tp.testing.make_tensor(2, dtype=getattr(tp, dtype), device="cpu", low=low, high=high)
    with pytest.raises(ValueError, match=match):
        torch.testing.make_tensor(2, dtype=getattr(torch, dtype), device="cpu", low=low,
                                  high=high)
