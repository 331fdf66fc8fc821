"""Shape and dtype rules of the random ops: the in-place fills (normal_, uniform_,
exponential_, bernoulli_, random_, cauchy_, log_normal_, geometric_), bernoulli,
multinomial, poisson, binomial."""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay.errors import ArgumentError, DTypeError, ShapeError, fmt_shape
from tensorplay.kernel_support.checks import OutSpec, SELF, broadcast, check_devices
from tensorplay.kernel_support.overlap import assert_no_internal_overlap
from tensorplay.kernel_support.random_bounds import random_bounds
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


# ---- random_, cauchy_, log_normal_, geometric_, poisson, binomial -------------------
def random_inplace(op, args):
    """random_ (its three overloads tell apart by their count of arguments), cauchy_,
    log_normal_, geometric_: the dtype and the parameters, then one draw per memory
    location."""
    self = args[0]
    dtype = self._impl.dtype
    if op == "random_" and len(args) == 3:            # random_.to(self, to, generator)
        random_bounds(op, dtype, 0, args[1])
    elif op == "random_" and len(args) == 4:          # random_.from(self, from_, to, gen)
        random_bounds(op, dtype, args[1], args[2])
    elif op == "cauchy_":
        _require_float_draw(op, self, "Cauchy")
        if not args[2] > 0:
            raise ArgumentError(f"{op}(): expects sigma > 0.0, but found sigma={args[2]} "
                                f"(argument 'sigma')", op=op, arg="sigma")
    elif op == "log_normal_":
        _require_float_draw(op, self, "log-normal")
        if not args[2] > 0:
            raise ArgumentError(f"{op}(): expects std > 0.0, but found std={args[2]} "
                                f"(argument 'std')", op=op, arg="std")
    elif op == "geometric_":
        if dtype is dt.bool:
            raise DTypeError(f"{op}(): not implemented for bool tensors (argument 'self' is "
                             f"bool; expected a number tensor)", op=op, arg="self")
        if not 0 < args[1] < 1:
            raise ArgumentError(f"{op}(): expects p to be in (0, 1), but got p={args[1]} "
                                f"(argument 'p')", op=op, arg="p")
    assert_no_internal_overlap(op, self)
    return SELF


def _require_float_draw(op, self, what):
    if not self._impl.dtype.is_floating_point:
        raise DTypeError(f"{op}(): the {what} distribution is a continuous probability "
                         f"distribution: argument 'self' must be a floating point tensor, but "
                         f"it is {self._impl.dtype.name}", op=op, arg="self")


def poisson(op, args):
    """A draw per rate, in the rates' floating dtype."""
    require_float(op, "self", args[0])
    return OutSpec(_sizes(args[0]), args[0]._impl.dtype)


def binomial(op, args):
    """count and prob: float32 or float64, one dtype; the result has their broadcast shape."""
    count, prob = args[0], args[1]
    check_devices(op, [("count", count), ("prob", prob)])
    if count._impl.dtype not in (dt.float32, dt.float64):
        raise DTypeError(f"{op}(): not implemented for {count._impl.dtype.name} tensors "
                         f"(argument 'count' is {count._impl.dtype.name}; expected float32 or "
                         f"float64)", op=op, arg="count")
    if prob._impl.dtype is not count._impl.dtype:
        raise DTypeError(f"{op}(): expected argument 'prob' to have dtype "
                         f"{count._impl.dtype.name}, like 'count', but got "
                         f"{prob._impl.dtype.name}", op=op, arg="prob")
    sizes = broadcast(op, [("count", _sizes(count)), ("prob", _sizes(prob))])
    return OutSpec(sizes, count._impl.dtype)
