"""Type promotion against PyTorch: `tp.promote_types`, `tp.result_type` and `tp.can_cast`
on every pair of dtypes, with dimensioned tensors, 0-dim tensors and Python numbers, and
the dtypes the arithmetic ops actually produce.

PyTorch's three priority classes (dimensioned tensors > 0-dim tensors > Python numbers)
decide: a lower class only counts when its category (bool < integer < float) is higher.
"""
from __future__ import annotations

import itertools

import pytest
import torch

import tensorplay as tp
from opinfo.core import ALL_DTYPES, TORCH_DTYPE, TP_DTYPE

PAIRS = list(itertools.product(ALL_DTYPES, ALL_DTYPES))
PAIR_IDS = [f"{a.name}-{b.name}" for a, b in PAIRS]
SCALARS = [True, False, 0, 3, -2, 2.5, -0.5, 1e10]


def _operand(kind, dtype):
    """The same operand in both frameworks: a dimensioned tensor or a 0-dim tensor."""
    shape = (2,) if kind == "tensor" else ()
    return tp.zeros(shape, dtype=dtype), torch.zeros(shape, dtype=TORCH_DTYPE[dtype])


@pytest.mark.parametrize("a, b", PAIRS, ids=PAIR_IDS)
def test_promote_types(a, b):
    expected = torch.promote_types(TORCH_DTYPE[a], TORCH_DTYPE[b])
    assert tp.promote_types(a, b) is TP_DTYPE[expected]


@pytest.mark.parametrize("a, b", PAIRS, ids=PAIR_IDS)
def test_can_cast(a, b):
    assert tp.can_cast(a, b) == torch.can_cast(TORCH_DTYPE[a], TORCH_DTYPE[b])


@pytest.mark.parametrize("kinds", [("tensor", "tensor"), ("tensor", "0-dim"), ("0-dim", "tensor"),
                                   ("0-dim", "0-dim")], ids="-".join)
def test_result_type_tensors(kinds):
    """All 100 dtype pairs for each mix of dimensioned and 0-dim tensors."""
    wrong = []
    for a, b in PAIRS:
        (ta, xa), (tb, xb) = _operand(kinds[0], a), _operand(kinds[1], b)
        got, want = tp.result_type(ta, tb), TP_DTYPE[torch.result_type(xa, xb)]
        if got is not want:
            wrong.append(f"{kinds[0]} {a.name} with {kinds[1]} {b.name}: {got.name}, "
                         f"PyTorch {want.name}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("kind", ["tensor", "0-dim"])
def test_result_type_with_python_numbers(kind):
    wrong = []
    for dtype in ALL_DTYPES:
        t, x = _operand(kind, dtype)
        for value in SCALARS:
            for args, targs in (((t, value), (x, value)), ((value, t), (value, x))):
                got, want = tp.result_type(*args), TP_DTYPE[torch.result_type(*targs)]
                if got is not want:
                    wrong.append(f"result_type{args!r}: {got.name}, PyTorch {want.name}")
    assert not wrong, "\n".join(wrong)


def test_result_type_of_two_numbers():
    for a, b in itertools.product(SCALARS, SCALARS):
        assert tp.result_type(a, b) is TP_DTYPE[torch.result_type(a, b)], (a, b)


@pytest.mark.parametrize("value, dtype, expected", [
    (2.5, tp.int32, tp.float32),          # a float scalar makes an int tensor float32
    (2.5, tp.float16, tp.float16),        # ... but never widens a float tensor
    (2.5, tp.bfloat16, tp.bfloat16),
    (3, tp.uint8, tp.uint8),              # an int scalar keeps the tensor's int dtype
    (3, tp.bool, tp.int64),               # bool tensor + int: the int default
    (True, tp.bool, tp.bool),
    (True, tp.int8, tp.int8),
    (2.5, tp.bool, tp.float32),
], ids=lambda v: getattr(v, "name", repr(v)))
def test_documented_examples(value, dtype, expected):
    t = tp.ones(3, dtype=dtype)
    assert tp.result_type(t, value) is expected
    assert (t + value).dtype is expected
    assert (value + t).dtype is expected


def test_zero_dim_tensor_promotes_like_pytorch():
    u8 = tp.ones(3, dtype=tp.uint8)
    assert (u8 + tp.tensor(1000)).dtype is tp.uint8          # 0-dim int64: same category
    assert (u8 + tp.tensor(2.5, dtype=tp.float64)).dtype is tp.float64  # higher category
    assert (tp.ones(3, dtype=tp.int32) + tp.tensor(1.5)).dtype is tp.float32
    assert (tp.ones((), dtype=tp.int8) + tp.ones((), dtype=tp.int16)).dtype is tp.int16


def test_default_dtype_decides_float_scalars():
    tp.set_default_dtype(tp.float64)
    try:
        assert tp.result_type(tp.ones(2, dtype=tp.int32), 2.5) is tp.float64
        assert (tp.ones(2, dtype=tp.int32) + 2.5).dtype is tp.float64
        assert tp.result_type(tp.ones(2, dtype=tp.float16), 2.5) is tp.float16
        assert tp.tensor([1.5]).dtype is tp.float64
    finally:
        tp.set_default_dtype(tp.float32)


@pytest.mark.parametrize("op", ["add", "mul", "sub", "div", "maximum", "eq", "where"])
def test_ops_compute_in_the_result_type(op):
    """Each binary op's output dtype, for every dtype pair and for Python numbers, is
    PyTorch's (the operator database tests values; this sweeps the whole table)."""
    wrong = []
    cond, t_cond = tp.ones(2, dtype=tp.bool), torch.ones(2, dtype=torch.bool)
    operands = [(a, b) for a, b in PAIRS] + [(a, s) for a in ALL_DTYPES for s in (3, 2.5, True)]
    for a, b in operands:
        if op == "sub" and (tp.bool in (a, b) or b is True):
            continue   # PyTorch refuses bool subtraction (tested in the database)
        if op == "maximum" and not isinstance(b, tp.dtype):
            continue   # maximum has no Scalar overload, in either framework
        ta, xa = _operand("tensor", a)
        tb, xb = _operand("tensor", b) if isinstance(b, tp.dtype) else (b, b)
        if op == "where":
            got, want = tp.where(cond, ta, tb).dtype, torch.where(t_cond, xa, xb).dtype
        else:
            got, want = getattr(tp, op)(ta, tb).dtype, getattr(torch, op)(xa, xb).dtype
        if got is not TP_DTYPE[want]:
            wrong.append(f"{op}({a.name}, {getattr(b, 'name', b)!r}): {got.name}, PyTorch {want}")
    assert not wrong, "\n".join(wrong)


def test_promote_types_rejects_non_dtypes():
    with pytest.raises((TypeError, KeyError)):
        tp.promote_types(tp.float32, "float32")
