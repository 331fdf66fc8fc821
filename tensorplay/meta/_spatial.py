"""What the rules of the spatial families share (conv, padding, pooling, resample,
fold): an input is `(N, C, *spatial)`; a list argument (`stride`, `padding`, ...) has one
entry per spatial dim; sizes that come out of a window are
`floor((size + 2 * pad - dilation * (k - 1) - 1) / stride) + 1`. The list check and the
window arithmetic, which the kernels read too, are in tensorplay/kernel_support/arguments.py."""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay.errors import DTypeError


def _sizes(t):
    return t._impl.sizes


def check_floating(op, name, t):
    if not t._impl.dtype.is_floating_point:
        raise DTypeError(f"{op}(): argument '{name}' must have a floating point dtype, but "
                         f"got {t._impl.dtype.name}", op=op, arg=name)


def check_not_bool(op, name, t):
    if t._impl.dtype is dt.bool:
        raise DTypeError(f"{op}(): not implemented for bool tensors (argument '{name}' is "
                         f"bool)", op=op, arg=name)

