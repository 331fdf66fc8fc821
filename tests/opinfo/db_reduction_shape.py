"""Database entries: shape ops (cat, stack, split, flip, roll, repeat, movedim, ...)."""
from __future__ import annotations

import tensorplay as tp
from tensorplay.errors import DimError
from opinfo.core import ErrorInput as E, OpInfo, SampleInput as S
from opinfo.reduction_common import samples_dim, t_


def _flip_samples(op, device, dtype, requires_grad):
    cases = [((3, 4), "contiguous", ([0],)), ((3, 4), "transposed", ([0, 1],)),
             ((2, 3, 4), "strided", ([-1, 0],)), ((), "contiguous", ([],)),
             ((0, 3), "contiguous", ([1],)), ((3, 4), "expanded", ([0],))]
    yield from samples_dim(op, device, dtype, requires_grad, cases)


def _errors_flip(op, device):
    yield E(S(t_((3, 4), device=device), ([0, 0],)), DimError,
            r"flip\(\): dim \(0, 0\) appears multiple times", arg="dims")
    yield E(S(t_((3, 4), device=device), ([2],)), DimError, r"flip\(\): Dimension out of range",
            arg="dims")


SHAPE = [
    OpInfo("flip", overloads=("flip",), sample_inputs_func=_flip_samples,
           error_inputs_func=_errors_flip),
]

op_db = SHAPE
