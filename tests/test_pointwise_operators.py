"""Pointwise ops beyond what the operator database checks: Python operators (plain,
reflected, in-place), Python-bool answers, and numerically delicate inputs."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import tensorplay as tp


def _pair(values, dtype):
    return tp.tensor(values, dtype=dtype), torch.tensor(values, dtype=getattr(torch, dtype.name))


def _same(actual, expected):
    assert actual.dtype.name == str(expected.dtype).replace("torch.", "")
    np.testing.assert_allclose(np.asarray(actual.tolist(), dtype=np.float64),
                               np.asarray(expected.tolist(), dtype=np.float64), rtol=1e-6)


BINARY_OPERATORS = [
    ("//", lambda a, b: a // b), ("%", lambda a, b: a % b), ("&", lambda a, b: a & b),
    ("|", lambda a, b: a | b), ("^", lambda a, b: a ^ b),
]


@pytest.mark.parametrize("name, fn, dtype", [
    pytest.param(name, fn, dtype, id=f"{name}-{dtype.name}")
    for name, fn in BINARY_OPERATORS for dtype in (tp.int64, tp.int8, tp.float32)
    if dtype.is_floating_point is False or name in ("//", "%")])   # bitwise: integers only
def test_binary_operators(name, fn, dtype):
    a, ta = _pair([7, -7, 5, -3], dtype)
    b, tb = _pair([2, 3, -2, -4], dtype)
    _same(fn(a, b), fn(ta, tb))          # tensor op tensor
    _same(fn(a, 3), fn(ta, 3))           # tensor op number
    _same(fn(9, b), fn(9, tb))           # number op tensor: the reflected operator


@pytest.mark.parametrize("name", ["//=", "%=", "&=", "|=", "^="])
def test_inplace_operators(name):
    a, ta = _pair([7, -7, 5, -3], tp.int64)
    b, tb = _pair([2, 3, -2, -4], tp.int64)
    before = a
    version = a._version
    namespace = {"a": a, "b": b, "ta": ta, "tb": tb}
    exec(f"a {name} b\nta {name} tb", namespace)
    assert namespace["a"] is before and a._version > version
    _same(namespace["a"], namespace["ta"])


def test_invert_and_bool_operators():
    x, tx = _pair([True, False, True], tp.bool)
    y, ty = _pair([True, True, False], tp.bool)
    for fn in (lambda a, b: a & b, lambda a, b: a | b, lambda a, b: a ^ b):
        assert fn(x, y).tolist() == fn(tx, ty).tolist() and fn(x, y).dtype is tp.bool
    assert (~x).tolist() == (~tx).tolist()
    n, tn = _pair([0, 5, -3], tp.int32)
    assert (~n).tolist() == (~tn).tolist()
    with pytest.raises(tp.errors.DTypeError, match="bitwise_not"):
        ~tp.tensor([1.5])


def test_allclose_and_equal_answer_python_bools():
    a = tp.tensor([1.0, 2.0])
    assert tp.allclose(a, a + 1e-9) is True
    assert tp.allclose(a, a + 1) is False
    assert a.allclose(a) is True
    assert tp.equal(a, a.clone()) is True
    assert tp.equal(a, a.reshape(2, 1)) is False
    assert tp.equal(tp.tensor([float("nan")]), tp.tensor([float("nan")])) is False


# ---- numerically delicate inputs -----------------------------------------------------
def test_expm1_log1p_keep_tiny_values():
    x = tp.tensor([1e-10, -1e-12, 1e-20], dtype=tp.float64)
    np.testing.assert_allclose(tp.expm1(x).tolist(), [math.expm1(v) for v in x.tolist()],
                               rtol=1e-15)
    np.testing.assert_allclose(tp.log1p(x).tolist(), [math.log1p(v) for v in x.tolist()],
                               rtol=1e-15)


def test_erfc_keeps_the_tail():
    """1 - erf(x) would be exactly 0 for x = 10; erfc(10) is about 2.1e-45."""
    x = tp.tensor([10.0, 26.0], dtype=tp.float64)
    np.testing.assert_allclose(tp.erfc(x).tolist(), [math.erfc(10.0), math.erfc(26.0)],
                               rtol=1e-14)
    assert tp.erfc(x).tolist()[0] > 0


def test_hypot_does_not_overflow():
    x = tp.tensor([1e200, 3e-200], dtype=tp.float64)
    y = tp.tensor([1e200, 4e-200], dtype=tp.float64)
    np.testing.assert_allclose(tp.hypot(x, y).tolist(), [math.sqrt(2) * 1e200, 5e-200],
                               rtol=1e-15)


def test_logit_eps_keeps_gradients_finite_at_the_ends():
    p = tp.tensor([0.0, 1.0, 0.5], dtype=tp.float64, requires_grad=True)
    tp.logit(p, eps=1e-6).sum().backward()
    tp_grad = p.grad.tolist()
    tq = torch.tensor([0.0, 1.0, 0.5], dtype=torch.float64, requires_grad=True)
    torch.logit(tq, eps=1e-6).sum().backward()
    assert tp_grad == tq.grad.tolist()
    assert all(math.isfinite(g) for g in tp_grad)


def test_floor_divide_is_exact_for_floats():
    """floor(a / b) rounds the quotient first: 1 // 0.1 is 9 (0.1 is a bit above 1/10)."""
    assert tp.floor_divide(tp.tensor([1.0], dtype=tp.float64), 0.1).tolist() == \
        torch.floor_divide(torch.tensor([1.0], dtype=torch.float64), 0.1).tolist() == [9.0]


def test_integer_division_by_zero_is_an_error():
    with pytest.raises(tp.errors.ArgumentError, match=r"remainder\(\): integer division by zero"):
        tp.tensor([1, 2]) % 0


@pytest.mark.parametrize("dtype", [tp.float32, tp.float64])
def test_erf_erfc_accuracy_on_a_dense_grid(dtype):
    """float32 uses a vectorised fit (cpu_kernels/_erf.py): within ~2 float32 ulps of
    the correctly rounded value everywhere, tails and the origin included."""
    grid = np.concatenate([np.linspace(-9, 9, 20001), [1e-30, -1e-8, 0.4999, 0.5, 0.5001]])
    x = tp.tensor(grid.tolist(), dtype=dtype)
    xs = np.asarray(x.tolist())   # the values after rounding to dtype
    erf = np.asarray(tp.erf(x).tolist())
    erfc = np.asarray(tp.erfc(x).tolist())
    ref = np.array([math.erf(v) for v in xs])
    refc = np.array([math.erfc(v) for v in xs])
    rtol = 2.5e-7 if dtype is tp.float32 else 1e-15
    tiny = np.finfo(np.float32).tiny   # erfc(9) is 4e-37: still a normal float32
    np.testing.assert_allclose(erf, ref, rtol=rtol, atol=0)
    np.testing.assert_allclose(erfc, refc, rtol=rtol, atol=tiny)
