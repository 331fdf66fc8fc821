"""Shape and dtype rules of cumsum and cumprod (and their in-place forms)."""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay.errors import DTypeError
from tensorplay.kernel_support.arguments import integral_to_long
from tensorplay.kernel_support.checks import OutSpec, SELF, wrap_dim
from tensorplay.kernel_support.overlap import assert_no_internal_overlap


def _sizes(t):
    return t._impl.sizes


# ---- scans -----------------------------------------------------------------------------
def cumsum(op, args):
    self, dim, dtype = args
    wrap_dim(op, dim, len(_sizes(self)))
    return OutSpec(_sizes(self), integral_to_long(self, dtype))


def cumsum_(op, args):
    self, dim, dtype = args
    wrap_dim(op, dim, len(_sizes(self)))
    # PyTorch has no in-place bool scan (it lets inputs with <= 1 element through untouched)
    if self._impl.dtype is dt.bool and self._impl.numel() > 1:
        raise DTypeError(f"{op}(): not implemented for bool tensors: the result (int64) can't "
                         f"be written into argument 'self'", op=op, arg="self")
    if dtype is not None and dtype is not self._impl.dtype:
        raise DTypeError(f"{op}(): argument 'dtype' ({dtype.name}) must match the dtype of "
                         f"'self' ({self._impl.dtype.name}) for an in-place scan", op=op,
                         arg="dtype")
    assert_no_internal_overlap(op, self)     # each element reads the one written before it
    return SELF


def logcumsumexp(op, args):
    self, dim = args
    if not self._impl.dtype.is_differentiable:
        raise DTypeError(f"{op}(): expected a floating point or complex input, but argument "
                         f"'self' has dtype {self._impl.dtype.name}", op=op, arg="self")
    wrap_dim(op, dim, len(_sizes(self)))
    return OutSpec(_sizes(self), self._impl.dtype)
