"""Shape and dtype rules of the random ops: the in-place fills (normal_, uniform_,
exponential_, bernoulli_), bernoulli, multinomial."""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay.errors import ArgumentError, ShapeError, fmt_shape
from tensorplay.kernel_support.checks import OutSpec, SELF, broadcast
from tensorplay.kernel_support.overlap import assert_no_internal_overlap
from tensorplay.meta.pointwise import require_float, unary_floating


def _sizes(t):
    return t._impl.sizes


# ---- random -------------------------------------------------------------------------
def random_float_inplace(op, args):
    """normal_, uniform_, exponential_, bernoulli_(p): fill a floating tensor in place."""
    self = args[0]
    if op != "bernoulli_":   # bernoulli_ writes 0/1, which every dtype holds
        require_float(op, "self", self)
    if op == "normal_" and args[2] < 0:
        raise ArgumentError(f"{op}(): argument 'std' must be non-negative, but got {args[2]}",
                            op=op, arg="std")
    if op == "uniform_" and args[1] > args[2]:
        raise ArgumentError(f"{op}(): expects 'from_' <= 'to', but got from_={args[1]} and "
                            f"to={args[2]}", op=op, arg="from_")
    if op == "exponential_" and not args[1] > 0:
        raise ArgumentError(f"{op}(): argument 'lambd' must be positive, but got {args[1]}",
                            op=op, arg="lambd")
    assert_no_internal_overlap(op, self)     # one draw per memory location, as in PyTorch
    return SELF


def bernoulli_tensor_inplace(op, args):
    self, p = args[0], args[1]
    sizes = broadcast(op, [("self", _sizes(self)), ("p", _sizes(p))])
    if sizes != _sizes(self):
        raise ShapeError(f"{op}(): argument 'p' (shape {fmt_shape(_sizes(p))}) cannot be "
                         f"broadcast to 'self' (shape {fmt_shape(_sizes(self))})", op=op,
                         arg="p")
    assert_no_internal_overlap(op, self)
    return SELF


def bernoulli(op, args):
    return unary_floating(op, args[:1])


def multinomial(op, args):
    self, num_samples = args[0], args[1]
    sizes = _sizes(self)
    if len(sizes) not in (1, 2):
        raise ShapeError(f"{op}(): argument 'self' must be 1-D or 2-D, but got shape "
                         f"{fmt_shape(sizes)}", op=op, arg="self")
    require_float(op, "self", self)
    if num_samples <= 0:
        raise ArgumentError(f"{op}(): argument 'num_samples' must be positive, but got "
                            f"{num_samples}", op=op, arg="num_samples")
    if sizes[-1] == 0:
        raise ShapeError(f"{op}(): argument 'self' has no categories (its last dim is 0)",
                         op=op, arg="self")
    if not args[2] and num_samples > sizes[-1]:
        raise ShapeError(f"{op}(): cannot draw {num_samples} samples without replacement from "
                         f"{sizes[-1]} categories (argument 'num_samples')", op=op,
                         arg="num_samples")
    return OutSpec(sizes[:-1] + (num_samples,), dt.int64)
