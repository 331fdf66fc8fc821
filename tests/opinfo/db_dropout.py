"""Database entries: dropout and native_dropout (their deterministic cases: eval, p=0;
the random ones are in tests/test_nn_layers_dropout.py)."""
from __future__ import annotations
import torch
import tensorplay as tp
from tensorplay.errors import ArgumentError
from opinfo.core import ErrorInput as E, FLOATING, make_tensor, OpInfo, rng_for, SampleInput as S
F = tp.nn.functional
TF = torch.nn.functional
from opinfo.samples import _grad, _t


# ---- dropout ----------------------------------------------------------------------------
def _dropout_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for shape, layout in (((3, 4), "contiguous"), ((2, 3, 4), "transposed"), ((), "contiguous"),
                          ((0, 2), "contiguous")):
        x = make_tensor(shape, dtype, device, rng=rng, layout=layout,
                        requires_grad=_grad(dtype, requires_grad))
        yield S(x, (), {"p": 0.5, "training": False}, name=f"{list(shape)} eval")
    yield S(make_tensor((3, 4), dtype, device, rng=rng, requires_grad=_grad(dtype, requires_grad)),
            (), {"p": 0.0, "training": True}, name="p=0 training")


def _native_dropout_samples(op, device, dtype, requires_grad):
    for s in _dropout_samples(op, device, dtype, requires_grad):
        if s.input.numel() == 0:
            continue   # PyTorch's mask for an empty input has the input's dtype, not bool
        yield S(s.input, (s.kwargs["p"], s.kwargs["training"]), name=s.name)


def errors_dropout(op, device):
    yield E(S(_t((3,), device=device), (), {"p": 1.5}), ArgumentError,
            r"dropout\(\): dropout probability has to be between 0 and 1, but got 1.5",
            arg="p")

op_db = [
    OpInfo("dropout", op=F.dropout, ref=TF.dropout, overloads=("dropout",),
           dtypes=FLOATING, sample_inputs_func=_dropout_samples,
           error_inputs_func=errors_dropout),
    OpInfo("native_dropout", overloads=("native_dropout",), dtypes=FLOATING,
           sample_inputs_func=_native_dropout_samples),
]
