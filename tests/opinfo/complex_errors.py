"""Error inputs for the ops PyTorch refuses for complex tensors (comparisons, max, clamp,
rounding, sign, fmod, erf...): the op on a complex64 tensor raises a DTypeError that
names the op and the argument and quotes PyTorch's own message (the table of
tensorplay/kernel_support/complex_refusals.py; tests/test_complex_pointwise.py reads each
message from torch itself).

    error_inputs_func=with_errors(errors_binary, refused_for_complex('"lt_cpu" not ...'))
"""
from __future__ import annotations

import re

import tensorplay as tp
from tensorplay.errors import DTypeError
from opinfo.core import ErrorInput as E, make_tensor, rng_for, SampleInput as S
from opinfo.samples import complex_numbers_on


def _z(shape, device):
    return make_tensor(shape, tp.complex64, device, rng=rng_for("complex errors", shape))


def refused_for_complex(message, *, args=(), kwargs=None, other=None, inplace=True,
                        outplace=True):
    """An error_inputs_func: `op(z, *args, **kwargs)` with z complex64 raises PyTorch's
    `message` (its text for complex64: 'ComplexFloat'). `other`: the op takes a second
    tensor, given as a complex tensor too (the error blames 'self', the first). `inplace`:
    the in-place form (when the entry has one) refuses alike; `outplace=False`: only the
    in-place form refuses (abs_)."""
    def gen(op, device):
        if not complex_numbers_on(device):
            return      # (cuda: the Triton side of issue 27; see opinfo/samples.py)
        names = ([op.name] if outplace else []) + \
            ([op.inplace] if inplace and op.inplace else [])
        for name in names:
            rest = ((_z((3,), device),) if other else ()) + tuple(args)
            yield E(S(_z((3,), device), rest, dict(kwargs or {})), DTypeError,
                    re.escape(f"{name}(): {message}"), arg="self",
                    inplace=name != op.name)
    return gen


def with_errors(*funcs):
    """The error inputs of several error_inputs_funcs, one after the other (None skipped)."""
    def gen(op, device):
        for f in funcs:
            if f is not None:
                yield from f(op, device)
    return gen
