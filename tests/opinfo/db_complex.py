"""Database entries for the complex accessors and constructors: the views of a complex
tensor's parts (view_as_real, view_as_complex, real, imag), conj, complex and polar."""
from __future__ import annotations

import torch

import tensorplay as tp
from tensorplay.errors import DTypeError, ShapeError
from opinfo.core import (
    COMPLEX, ErrorInput as E, make_tensor, OpInfo, rng_for, SampleInput as S,
)
from opinfo.samples import sample_inputs_unary

FLOAT_PAIRS = (tp.float32, tp.float64)


def _pairs_samples(op, device, dtype, requires_grad):
    """Float tensors with a last dim of 2 (stride 1): whole complex numbers."""
    rng = rng_for(op.full_name, dtype)
    grad = requires_grad
    for shape, layout in (((2,), "contiguous"), ((3, 2), "contiguous"), ((0, 2), "contiguous"),
                          ((2, 3, 2), "contiguous")):
        yield S(make_tensor(shape, dtype, device, rng=rng, layout=layout, requires_grad=grad),
                name=f"{list(shape)}")
    # a column of pairs: strides (4, 1), even
    wide = make_tensor((3, 4), dtype, device, rng=rng)
    yield S(wide[:, :2].detach().requires_grad_(grad), name="[3, 2] every other pair")


def _two_floats(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for a, b in (((4,), (4,)), ((2, 3), (3,)), ((), ()), ((0,), (0,))):
        low = 0.1 if op.name == "polar" else None
        yield S(make_tensor(a, dtype, device, rng=rng, low=low, requires_grad=requires_grad),
                (make_tensor(b, dtype, device, rng=rng, requires_grad=requires_grad),),
                name=f"{list(a)} and {list(b)}")


def _t(shape, dtype, device):
    return make_tensor(shape, dtype, device, rng=rng_for("errors", shape, dtype))


def errors_view_as_real(op, device):
    yield E(S(_t((3,), tp.float32, device)), DTypeError,
            r"view_as_real\(\): argument 'self' must be a complex tensor", arg="self")


def errors_view_as_complex(op, device):
    yield E(S(_t((3,), tp.float32, device)), ShapeError,
            r"view_as_complex\(\): argument 'self' must have a last dimension of size 2",
            arg="self")
    yield E(S(_t((2, 2), tp.float32, device).t()), ShapeError,
            r"view_as_complex\(\): argument 'self' must have a last dimension of stride 1",
            arg="self")
    yield E(S(_t((3, 2), tp.int64, device)), DTypeError,
            r"view_as_complex\(\): argument 'self' must be a float32 or float64 tensor",
            arg="self")


def errors_imag(op, device):
    yield E(S(_t((3,), tp.float32, device)), DTypeError,
            r"imag\(\): argument 'self' must be a complex tensor", arg="self")


def errors_complex(op, device):
    yield E(S(_t((3,), tp.float32, device), (_t((3,), tp.float64, device),)), DTypeError,
            r"complex\(\): expected argument 'real' and 'imag' to have the same dtype",
            arg="imag")
    yield E(S(_t((3,), tp.int64, device), (_t((3,), tp.int64, device),)), DTypeError,
            r"complex\(\): argument 'real' must be a float tensor", arg="real")


op_db = [
    OpInfo("view_as_real", overloads=("view_as_real",), dtypes=COMPLEX, grad_dtypes=COMPLEX, is_view=True,
           sample_inputs_func=sample_inputs_unary, error_inputs_func=errors_view_as_real),
    OpInfo("view_as_complex", overloads=("view_as_complex",), dtypes=FLOAT_PAIRS, grad_dtypes=FLOAT_PAIRS, is_view=True,
           sample_inputs_func=_pairs_samples, error_inputs_func=errors_view_as_complex),
    OpInfo("real", overloads=("real",), dtypes=COMPLEX + FLOAT_PAIRS, grad_dtypes=COMPLEX, view_like=True,
           sample_inputs_func=sample_inputs_unary),
    OpInfo("imag", overloads=("imag",), dtypes=COMPLEX, grad_dtypes=COMPLEX, is_view=True,
           sample_inputs_func=sample_inputs_unary, error_inputs_func=errors_imag),
    OpInfo("conj", overloads=("conj",), dtypes=COMPLEX + FLOAT_PAIRS, grad_dtypes=COMPLEX + FLOAT_PAIRS,
           ref=lambda x: torch.conj(x).resolve_conj() if x.is_complex() else torch.conj(x),
           view_like=True, sample_inputs_func=sample_inputs_unary),
    OpInfo("conj_physical", overloads=("conj_physical", "conj_physical_"),
           dtypes=COMPLEX + FLOAT_PAIRS, grad_dtypes=COMPLEX,
           inplace="conj_physical_", sample_inputs_func=sample_inputs_unary),
    OpInfo("_conj_physical", overloads=("_conj_physical",), dtypes=COMPLEX, grad_dtypes=COMPLEX,
           ref=lambda x: torch._conj_physical(x), method=False,
           sample_inputs_func=sample_inputs_unary),
    OpInfo("resolve_conj", overloads=("resolve_conj",), dtypes=COMPLEX + FLOAT_PAIRS, grad_dtypes=COMPLEX, is_view=True,
           sample_inputs_func=sample_inputs_unary),
    OpInfo("resolve_neg", overloads=("resolve_neg",), dtypes=COMPLEX + FLOAT_PAIRS, grad_dtypes=COMPLEX, is_view=True,
           sample_inputs_func=sample_inputs_unary),
    OpInfo("complex", overloads=("complex",), dtypes=FLOAT_PAIRS, grad_dtypes=FLOAT_PAIRS,
           sample_inputs_func=_two_floats, error_inputs_func=errors_complex),
    OpInfo("polar", overloads=("polar",), dtypes=FLOAT_PAIRS, grad_dtypes=FLOAT_PAIRS,
           sample_inputs_func=_two_floats),
]
