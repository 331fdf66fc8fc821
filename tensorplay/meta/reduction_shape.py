"""Shape/dtype rules of the reduction family's shape ops that copy (cat, flip, roll,
repeat, repeat_interleave). The views among the shape ops are Composite and need none."""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay._frontdoor import wrap_dims
from tensorplay._promotion import result_type
from tensorplay.errors import ArgumentError, DimError, DTypeError, ShapeError, fmt_shape
from tensorplay.meta.rules import OutSpec, check_devices, wrap_dim


def _sizes(t):
    return t._impl.sizes


def flip(op, args):
    self, dims = args
    wrap_dims(op, "dims", dims, len(_sizes(self)))
    return OutSpec(_sizes(self), self._impl.dtype)
