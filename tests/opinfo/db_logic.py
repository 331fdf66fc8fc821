"""Database entries for the logic ops: isnan/isinf/isfinite, isclose/allclose/equal,
logical_* and bitwise_* (their Python operators: tests/test_pointwise_operators.py)."""
from __future__ import annotations

from functools import partial

import torch

import tensorplay as tp
from tensorplay.errors import ArgumentError, DTypeError, ShapeError
from opinfo.complex_errors import refused_for_complex
from opinfo.core import (
    ALL_DTYPES, COMPLEX, INTEGRAL, ErrorInput, OpInfo, SampleInput, make_tensor, rng_for,
)
from opinfo.samples import sample_inputs_binary, sample_inputs_unary

E = ErrorInput
S = SampleInput
EDGES = (0.0, -0.0, 1.0, float("inf"), float("-inf"), float("nan"), 1e4)
INTEGRAL_AND_BOOL = (tp.bool,) + INTEGRAL


def _t(shape, dtype=tp.float32, device="cpu"):
    return make_tensor(shape, dtype, device, rng=rng_for("errors", shape, dtype))


# complex numbers: a nan or an inf in either part (isnan, isinf, isfinite, isclose)
NAN, INF = float("nan"), float("inf")
COMPLEX_EDGES = [complex(NAN, 1), complex(1, NAN), complex(INF, 0), complex(0, -INF),
                 complex(INF, NAN), complex(1, 2), 0j]


def _edge_test_samples(op, device, dtype, requires_grad):
    yield from sample_inputs_unary(op, device, dtype, requires_grad, extra_values=EDGES)
    if dtype.is_complex:
        yield S(tp.tensor(COMPLEX_EDGES, dtype=dtype, device=device), name="complex edges",
                grad=False)


def _close_samples(op, device, dtype, requires_grad):
    """Pairs where some elements are equal, some within the tolerance, some not."""
    rng = rng_for(op.full_name, dtype)
    for shape, other_shape, layout in (((3, 4), (3, 4), "transposed"), ((3, 4), (4,), "strided"),
                                       ((), (), "contiguous"), ((0, 2), (2,), "contiguous")):
        a = make_tensor(shape, dtype, device, rng=rng, layout=layout)
        b = make_tensor(other_shape, dtype, device, rng=rng)
        yield S(a, (b,), name=f"{list(shape)} vs {list(other_shape)}")
    a = make_tensor((3, 4), dtype, device, rng=rng)
    yield S(a, (a.clone(),), name="equal")
    if dtype.is_floating_point:
        x = tp.tensor([1.0, 1.0, 100.0, float("nan"), float("inf"), 0.0], dtype=dtype,
                      device=device)
        y = tp.tensor([1.0 + 5e-6, 1.2, 100.5, float("nan"), float("inf"), 1e-9], dtype=dtype,
                      device=device)
        for kwargs in ({}, {"rtol": 0.1}, {"atol": 1.0, "rtol": 0.0}, {"equal_nan": True}):
            yield S(x, (y,), kwargs, name=f"near values {kwargs}")
    elif dtype.is_complex:
        # |a - b| and |b| are moduli: a step in either part counts
        x = tp.tensor([1 + 1j, 1 + 1j, 100j, complex(NAN, 0), complex(INF, 1), 0j],
                      dtype=dtype, device=device)
        y = tp.tensor([1 + 1.000001j, 1.2 + 1j, 100.5j, complex(NAN, 0), complex(INF, 1), 1e-9j],
                      dtype=dtype, device=device)
        for kwargs in ({}, {"rtol": 0.1}, {"atol": 1.0, "rtol": 0.0}, {"equal_nan": True}):
            yield S(x, (y,), kwargs, name=f"near complex values {kwargs}")
        e = tp.tensor(COMPLEX_EDGES, dtype=dtype, device=device)
        yield S(e, (e.clone(),), {"equal_nan": True}, name="complex edges, equal_nan")
    else:
        other = tp.logical_not(a) if dtype is tp.bool else a + 1
        yield S(a, (other,), {"atol": 1.0}, name="atol 1")


def errors_isclose(op, device):
    yield E(S(_t((3,), device=device), (_t((3,), tp.float64, device),)), DTypeError,
            rf"{op.name}\(\): 'self' and 'other' must have the same dtype", arg="other")
    yield E(S(_t((3,), device=device), (_t((3,), device=device),), {"rtol": -1.0}),
            ArgumentError, rf"{op.name}\(\): argument 'rtol' must be greater than or equal to "
            "zero", arg="rtol")
    yield E(S(_t((3, 4), device=device), (_t((5,), device=device),)), ShapeError,
            rf"{op.name}\(\): argument 'other' \(shape \[5\]\) is not broadcastable",
            arg="other")


def _equal_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    a = make_tensor((3, 4), dtype, device, rng=rng, layout="transposed")
    yield S(a, (a.contiguous(),), name="equal values, other strides")
    yield S(a, (make_tensor((3, 4), dtype, device, rng=rng),), name="different values")
    yield S(a, (a.reshape(4, 3),), name="different shapes")
    yield S(make_tensor((0,), dtype, device, rng=rng), (make_tensor((0,), dtype, device,
                                                                    rng=rng),), name="empty")


WITH_COMPLEX = ALL_DTYPES + COMPLEX

TESTS = [
    OpInfo(name, overloads=(name,), supports_autograd=False, dtypes=WITH_COMPLEX,
           sample_inputs_func=_edge_test_samples)
    for name in ("isnan", "isinf", "isfinite")
] + [
    OpInfo("isclose", overloads=("isclose",), supports_autograd=False, dtypes=WITH_COMPLEX,
           sample_inputs_func=_close_samples, error_inputs_func=errors_isclose),
    # allclose and equal answer with a Python bool: they read data, so on meta they raise
    # DataDependentError (tests/test_meta.py), as PyTorch refuses them there.
    OpInfo("allclose", overloads=("allclose",), supports_autograd=False, supports_meta=False,
           dtypes=WITH_COMPLEX, sample_inputs_func=_close_samples),
    OpInfo("equal", overloads=("equal",), supports_autograd=False, supports_meta=False,
           dtypes=WITH_COMPLEX, sample_inputs_func=_equal_samples),
]


# ---- logical and bitwise ------------------------------------------------------------
def _logic_samples(op, device, dtype, requires_grad):
    yield from sample_inputs_binary(op, device, dtype, False, low=-2, high=2, rhs_low=-2,
                                    rhs_high=2)


def _bitwise_samples(op, device, dtype, requires_grad):
    yield from sample_inputs_binary(op, device, dtype, False, mixed=False)
    rng = rng_for(op.full_name, dtype, "mixed")
    for other_dtype in (tp.bool, tp.int64, tp.uint8):
        yield S(make_tensor((3, 4), dtype, device, rng=rng),
                (make_tensor((4,), other_dtype, device, rng=rng),), name=f"with {other_dtype}")


def _bitwise_scalar_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    values = (True, False, 3) if dtype is tp.bool else (3, True, 6)
    for v in values:
        for shape, layout in (((3, 4), "transposed"), ((), "contiguous"), ((0, 2), "contiguous")):
            yield S(make_tensor(shape, dtype, device, rng=rng, layout=layout), (v,),
                    name=f"{list(shape)} {layout} with {v!r}")


def errors_bitwise(op, device):
    yield E(S(_t((3,), device=device), (_t((3,), tp.int64, device),)), DTypeError,
            rf"{op.name}\(\): not implemented for float32 tensors \(argument 'self'", arg="self")
    yield E(S(_t((3, 4), tp.int64, device), (_t((5,), tp.int64, device),)), ShapeError,
            rf"{op.name}\(\): argument 'other' \(shape \[5\]\) is not broadcastable",
            arg="other")
    yield E(S(_t((3,), tp.bool, device), (_t((3,), tp.int64, device),)), DTypeError,
            rf"{op.inplace}\(\): result type int64 can't be cast to the desired output type "
            "bool", arg="self", inplace=True)


def errors_bitwise_not(op, device):
    yield E(S(_t((3,), device=device)), DTypeError,
            r"bitwise_not\(\): not implemented for float32 tensors", arg="self")


LOGIC = [
    OpInfo("logical_not", overloads=("logical_not", "logical_not_"), inplace="logical_not_",
           supports_autograd=False,
           sample_inputs_func=partial(sample_inputs_unary, extra_values=EDGES)),
] + [
    OpInfo(f"logical_{n}", overloads=(f"logical_{n}", f"logical_{n}_"), inplace=f"logical_{n}_",
           supports_autograd=False, sample_inputs_func=_logic_samples)
    for n in ("and", "or", "xor")
] + [
    OpInfo("bitwise_not", overloads=("bitwise_not", "bitwise_not_"), inplace="bitwise_not_",
           dtypes=INTEGRAL_AND_BOOL, supports_autograd=False,
           sample_inputs_func=sample_inputs_unary, error_inputs_func=errors_bitwise_not),
]
for _n in ("and", "or", "xor"):
    LOGIC += [
        OpInfo(f"bitwise_{_n}", overloads=(f"bitwise_{_n}.Tensor", f"bitwise_{_n}_.Tensor"),
               inplace=f"bitwise_{_n}_", dtypes=INTEGRAL_AND_BOOL, supports_autograd=False,
               sample_inputs_func=_bitwise_samples, error_inputs_func=errors_bitwise),
        OpInfo(f"bitwise_{_n}", "scalar",
               overloads=(f"bitwise_{_n}.Scalar", f"bitwise_{_n}_.Scalar"),
               inplace=f"bitwise_{_n}_", dtypes=INTEGRAL_AND_BOOL, supports_autograd=False,
               sample_inputs_func=_bitwise_scalar_samples),
    ]



# ---- signbit, isneginf/isposinf, isreal, the bit shifts ------------------------------
SIGNED_EDGES = EDGES + (-0.0, float("-inf"), -float("nan"), -2.5)
INTEGRAL_ONLY = INTEGRAL


def _shift_samples(op, device, dtype, requires_grad):
    """Counts from -2 to the width of the dtype and past it (both are PyTorch's edge rules)."""
    yield from sample_inputs_binary(op, device, dtype, False, rhs_low=0, rhs_high=8,
                                    mixed=False)
    bits = 8 * {tp.uint8: 1, tp.int8: 1, tp.int16: 2, tp.int32: 4, tp.int64: 8}[dtype]
    counts = [-2, -1, 0, 1, bits - 2, bits - 1, bits, bits + 3]
    low = 0 if dtype is tp.uint8 else -7
    values = [low, 5, 1, -1 if low else 3, 100 if dtype is not tp.int8 else 99, low, 7, 9]
    counts = [c for c in counts if dtype is not tp.uint8 or c >= 0]
    yield S(tp.tensor(values[:len(counts)], dtype=dtype, device=device),
            (tp.tensor(counts, dtype=dtype, device=device),), name="counts at the edges")
    rng = rng_for(op.full_name, dtype, "mixed")
    yield S(make_tensor((3, 4), dtype, device, rng=rng),
            (make_tensor((4,), tp.int64, device, rng=rng, low=0, high=5),), name="int64 count")


def _shift_scalar_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for count in (0, 3, 70, True):
        for shape, layout in (((3, 4), "transposed"), ((), "contiguous"), ((0, 2), "contiguous")):
            yield S(make_tensor(shape, dtype, device, rng=rng, layout=layout), (count,),
                    name=f"{list(shape)} {layout} by {count!r}")


def _number_shifted_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for number in (3, -5):
        yield S(make_tensor((3, 4), dtype, device, rng=rng, low=0, high=6, layout="transposed"),
                (number,), name=f"{number} shifted by a tensor")


def errors_shift(op, device):
    yield E(S(_t((3,), device=device), (_t((3,), tp.int64, device),)), DTypeError,
            rf"{op.name}\(\): not implemented for float32 tensors \(argument 'self'", arg="self")
    yield E(S(_t((3,), tp.bool, device), (_t((3,), tp.bool, device),)), DTypeError,
            rf"{op.name}\(\): not implemented for bool tensors", arg="self")
    yield E(S(_t((3, 4), tp.int64, device), (_t((5,), tp.int64, device),)), ShapeError,
            rf"{op.name}\(\): argument 'other' \(shape \[5\]\) is not broadcastable",
            arg="other")


# PyTorch's refusals of a complex tensor (isreal takes one: its imaginary part is 0)
_SIGN_TESTS_COMPLEX = {
    "signbit": "signbit is not implemented for complex tensors.",
    "isneginf": "isneginf does not support complex inputs.",
    "isposinf": "isposinf does not support complex inputs.",
}
LOGIC += [
    OpInfo(name, overloads=(name,), supports_autograd=False,
           dtypes=WITH_COMPLEX if name == "isreal" else ALL_DTYPES,
           sample_inputs_func=partial(sample_inputs_unary, extra_values=SIGNED_EDGES),
           error_inputs_func=refused_for_complex(_SIGN_TESTS_COMPLEX[name])
           if name in _SIGN_TESTS_COMPLEX else None)
    for name in ("signbit", "isneginf", "isposinf", "isreal")
]
for _d in ("left", "right"):
    _op = f"bitwise_{_d}_shift"
    LOGIC += [
        OpInfo(_op, overloads=(f"{_op}.Tensor", f"{_op}_.Tensor"), inplace=f"{_op}_",
               dtypes=INTEGRAL_ONLY, supports_autograd=False, sample_inputs_func=_shift_samples,
               error_inputs_func=errors_shift),
        OpInfo(_op, "scalar", overloads=(f"{_op}.Tensor_Scalar", f"{_op}_.Tensor_Scalar"),
               inplace=f"{_op}_", dtypes=INTEGRAL_ONLY, supports_autograd=False,
               sample_inputs_func=_shift_scalar_samples),
        OpInfo(_op, "scalar_tensor", overloads=(f"{_op}.Scalar_Tensor",), dtypes=INTEGRAL_ONLY,
               supports_autograd=False, method=False, supports_meta=False,
               op=partial(lambda x, number, name: getattr(tp, name)(number, x), name=_op),
               ref=partial(lambda x, number, name: getattr(torch, name)(number, x), name=_op),
               sample_inputs_func=_number_shifted_samples),
    ]

op_db = TESTS + LOGIC
