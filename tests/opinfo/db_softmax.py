"""Database entries: softmax, log_softmax, softmin and their backward ops."""
from __future__ import annotations

from functools import partial

import torch

import tensorplay as tp
from tensorplay.errors import ArgumentError, DimError, DTypeError
from opinfo.core import FLOATING, ErrorInput, OpInfo, SampleInput, make_tensor, rng_for

E = ErrorInput
S = SampleInput
INF = float("inf")

# (shape, layout, dim)
SOFTMAX_CASES = (
    ((), "contiguous", 0), ((5,), "contiguous", -1), ((3, 4), "contiguous", 1),
    ((3, 4), "transposed", 0), ((2, 3, 4), "strided", 1), ((3, 4), "expanded", -1),
    ((0, 3), "contiguous", 1), ((0, 3), "contiguous", 0),
)
# Rows that overflow a naive exp, -inf entries, and an all -inf row (nan, as in torch).
EXTREMES = [[1e4, 0.0, -1e4], [-INF, 0.0, 1.0], [80.0, 90.0, 100.0], [-INF, -INF, -INF]]


def _softmax_samples(op, device, dtype, requires_grad, with_dtype=True):
    rng = rng_for(op.full_name, dtype)
    grad = requires_grad and dtype.is_floating_point
    for shape, layout, dim in SOFTMAX_CASES:
        yield S(make_tensor(shape, dtype, device, rng=rng, layout=layout, requires_grad=grad),
                (dim,), name=f"{list(shape)} {layout} dim={dim}")
    extremes = EXTREMES if dtype is not tp.float16 else [r for r in EXTREMES if r[0] != 1e4]
    yield S(tp.tensor(extremes, dtype=dtype, device=device).requires_grad_(grad), (1,),
            name="extreme values", grad=False)
    if with_dtype:
        yield S(make_tensor((3, 4), dtype, device, rng=rng, requires_grad=grad), (1,),
                {"dtype": tp.float64}, name="dtype=float64")


def _softmax_int_samples(op, device, dtype, requires_grad):
    if dtype.is_floating_point:
        yield from _softmax_samples(op, device, dtype, requires_grad)
    else:
        rng = rng_for(op.full_name, dtype)
        yield S(make_tensor((3, 4), dtype, device, rng=rng), (1,), {"dtype": tp.float32},
                name="integer input, dtype=float32")


def _private_samples(op, device, dtype, requires_grad):
    for s in _softmax_samples(op, device, dtype, requires_grad, with_dtype=False):
        yield S(s.input, s.args + (False,), name=s.name, grad=s.grad)


def _backward_samples(op, device, dtype, requires_grad, log):
    rng = rng_for(op.full_name, dtype)
    fwd = torch.log_softmax if log else torch.softmax
    for shape, layout, dim in SOFTMAX_CASES:
        x = make_tensor(shape, dtype, device, rng=rng, layout=layout)
        output = tp.tensor(fwd(torch.tensor(x.cpu().numpy()) if dtype is not tp.bfloat16 else
                               torch.tensor(x.float().cpu().numpy()), dim).numpy(),
                           dtype=dtype, device=device)
        g = make_tensor(shape, dtype, device, rng=rng, requires_grad=requires_grad)
        yield S(g, (output.requires_grad_(requires_grad), dim, dtype),
                name=f"{list(shape)} {layout} dim={dim}")


def errors_softmax(op, device):
    x = make_tensor((3, 4), tp.float32, device, rng=rng_for("err"))
    yield E(S(x, (2,)), DimError, rf"{op.name}\(\): Dimension out of range", arg="dim")
    yield E(S(make_tensor((3,), tp.int64, device, rng=rng_for("err")), (0,)), DTypeError,
            rf"{op.name}\(\): argument 'self' must be a floating point tensor, but got int64",
            arg="self")


SOFTMAX_TOL = {tp.float16: (2e-3, 2e-3), tp.bfloat16: (1.6e-2, 1e-2),
               tp.float32: (1e-5, 1e-6)}


def _errors_private(op, device):
    for e in errors_softmax(op, device):
        yield E(S(e.sample.input, e.sample.args + (False,)), e.error_type, e.error_regex,
                e.arg)
    # PyTorch converts half to float inside softmax on CUDA only.
    if device == "cpu":
        yield E(S(make_tensor((3,), tp.float16, device, rng=rng_for("err")), (0, True)),
                ArgumentError, rf"{op.name}\(\): argument 'half_to_float' .* is not "
                r"supported on the CPU", arg="half_to_float")


op_db = [
    OpInfo("softmax", overloads=("softmax.int",), dtypes=FLOATING + (tp.int64,),
           sample_inputs_func=_softmax_int_samples, error_inputs_func=errors_softmax,
           tolerances=SOFTMAX_TOL),
    OpInfo("log_softmax", overloads=("log_softmax.int",), dtypes=FLOATING + (tp.int64,),
           sample_inputs_func=_softmax_int_samples, error_inputs_func=errors_softmax,
           tolerances=SOFTMAX_TOL),
    OpInfo("softmin", op=lambda x, dim, **kw: tp.nn.functional.softmin(x, dim, **kw),
           ref=torch.nn.functional.softmin, dtypes=FLOATING, overloads=("softmax.int",),
           sample_inputs_func=_softmax_samples, tolerances=SOFTMAX_TOL),
    OpInfo("_softmax", overloads=("_softmax",), dtypes=FLOATING,
           sample_inputs_func=_private_samples, error_inputs_func=_errors_private,
           tolerances=SOFTMAX_TOL),
    OpInfo("_log_softmax", overloads=("_log_softmax",), dtypes=FLOATING,
           sample_inputs_func=_private_samples, error_inputs_func=_errors_private,
           tolerances=SOFTMAX_TOL),
    OpInfo("_softmax_backward_data", overloads=("_softmax_backward_data",), dtypes=FLOATING,
           sample_inputs_func=partial(_backward_samples, log=False), tolerances=SOFTMAX_TOL),
    OpInfo("_log_softmax_backward_data", overloads=("_log_softmax_backward_data",),
           dtypes=FLOATING, sample_inputs_func=partial(_backward_samples, log=True),
           tolerances=SOFTMAX_TOL),
]
