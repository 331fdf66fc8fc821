"""Pointwise ops that PyTorch defines by other ops: xlog1py, max/min with a second
tensor, aliases (true_divide, clip), clamp_min/clamp_max, allclose, and the Scalar
overloads, which wrap the number in a 0-dim tensor and call the Tensor overload (a
wrapped number promotes like a Python scalar; see `_with_number` below)."""
from __future__ import annotations

import math

from tensorplay import _dtype as dt, _tensor_factory as factory
from tensorplay._frontdoor import SCALAR_TYPES, wrap_number
from tensorplay._generated import functional as F, ops
from tensorplay._promotion import result_type
from tensorplay._tensor_base import TensorBase
from tensorplay.errors import DTypeError, ShapeError
from tensorplay.kernel_support.checks import (
    OutSpec, broadcast, check_devices, check_inplace_cast, fits_inplace,
)
from tensorplay.kernel_support.complex_refusals import reject_complex, reject_complex_args


def _check_args(op, self, other):
    """Shape and device errors name the op the user called, not the op it is made of."""
    if self._impl.sizes != other._impl.sizes:
        broadcast(op, [("self", self._impl.sizes), ("other", other._impl.sizes)])
    if self._impl.device is not other._impl.device:
        check_devices(op, [("self", self), ("other", other)])


def xlog1py(self, other):
    """self * log1p(other), 0 where self == 0 (even if log1p(other) is inf or nan)."""
    # `other + 1` is rounded once, so compute it in the result's dtype, not in `other`'s:
    # float16 self with bfloat16 other gives float32, and bfloat16(other + 1) would lose
    # most of what log1p is for.
    _check_args("xlog1py", self, other)
    dtype = result_type(self, other)
    if not dtype.is_floating_point:
        dtype = dt.get_default_dtype()
    return F.xlogy(self, F.add(other.to(dtype), 1))


def max_other(self, other):
    _check_args("max", self, other)
    reject_complex_args("max", (("self", self), ("other", other)), kind="maximum")
    return F.maximum(self, other)


def min_other(self, other):
    _check_args("min", self, other)
    reject_complex_args("min", (("self", self), ("other", other)), kind="minimum")
    return F.minimum(self, other)


def true_divide(self, other):
    return F.div(self, other)


def true_divide_scalar(self, other):
    return F.div(self, wrap_number(other, self))


def true_divide_(self, other):
    return self.div_(other)


def true_divide__scalar(self, other):
    return self.div_(wrap_number(other, self))


def div_scalar_mode(self, other, rounding_mode):
    return F.div(self, wrap_number(other, self), rounding_mode=rounding_mode)


def div__scalar_mode(self, other, rounding_mode):
    return self.div_(wrap_number(other, self), rounding_mode=rounding_mode)


def floor_divide_scalar(self, other):
    return F.floor_divide(self, wrap_number(other, self))


def floor_divide__scalar(self, other):
    return self.floor_divide_(wrap_number(other, self))


def remainder_scalar(self, other):
    return F.remainder(self, wrap_number(other, self))


def remainder_scalar_tensor(self, other):
    """remainder(number, tensor): the number wrapped, as in `5 % t`."""
    return F.remainder(wrap_number(self, other), other)


def remainder__scalar(self, other):
    return self.remainder_(wrap_number(other, self))


def fmod_scalar(self, other):
    return F.fmod(self, wrap_number(other, self))


def fmod__scalar(self, other):
    return self.fmod_(wrap_number(other, self))


def clip(self, min, max):  # noqa: A002 - the schema's names
    return F.clamp(self, min, max)


def clip_tensor(self, min, max):  # noqa: A002
    return F.clamp(self, min, max)


def clip_(self, min, max):  # noqa: A002
    return F.clamp_(self, min, max)


def clip_tensor_(self, min, max):  # noqa: A002
    return F.clamp_(self, min, max)


def clamp_min(self, min):  # noqa: A002
    reject_complex("clamp_min", self)     # (errors name the op called)
    return F.clamp(self, min, None)


def clamp_min_(self, min):  # noqa: A002
    reject_complex("clamp_min_", self)
    return F.clamp_(self, min, None)


def clamp_max(self, max):  # noqa: A002
    reject_complex("clamp_max", self)
    return F.clamp(self, None, max)


def clamp_max_(self, max):  # noqa: A002
    reject_complex("clamp_max_", self)
    return F.clamp_(self, None, max)


# add, sub, mul and div and their in-place forms with a Python int, float or bool (`x * 2`,
# `y + 1`, `x.add_(1.0)`) enter the Tensor overload's handle themselves (`_with_number`):
# it is what the front door `F.mul(self, number)` does for a Tensor `self`, without its
# argument checks (`self` is tested here; anything else goes through the door, and its
# errors).


def _with_number(handle, self, number, *rest):
    """`handle` (a Tensor overload) on `self` and `number` wrapped as a 0-dim tensor."""
    wrapped = factory.wrapped_scalar(number, self._impl._device)
    return handle.call(self._impl.keys | wrapped._impl.keys, self, wrapped, *rest)


def add_scalar(self, other, alpha):
    if type(other) in SCALAR_TYPES and type(alpha) in SCALAR_TYPES \
            and isinstance(self, TensorBase):
        return _with_number(ops.add_Tensor, self, other, alpha)
    return F.add(self, wrap_number(other, self), alpha=alpha)


def add__scalar(self, other, alpha):
    if type(other) in SCALAR_TYPES and type(alpha) in SCALAR_TYPES \
            and isinstance(self, TensorBase):
        return _with_number(ops.add__Tensor, self, other, alpha)
    return F.add_(self, wrap_number(other, self), alpha=alpha)


def sub_scalar(self, other, alpha):
    if type(other) in SCALAR_TYPES and type(alpha) in SCALAR_TYPES \
            and isinstance(self, TensorBase):
        return _with_number(ops.sub_Tensor, self, other, alpha)
    return F.sub(self, wrap_number(other, self), alpha=alpha)


def sub__scalar(self, other, alpha):
    if type(other) in SCALAR_TYPES and type(alpha) in SCALAR_TYPES \
            and isinstance(self, TensorBase):
        return _with_number(ops.sub__Tensor, self, other, alpha)
    return F.sub_(self, wrap_number(other, self), alpha=alpha)


def mul_scalar(self, other):
    if type(other) in SCALAR_TYPES and isinstance(self, TensorBase):
        return _with_number(ops.mul_Tensor, self, other)
    return F.mul(self, wrap_number(other, self))


def mul__scalar(self, other):
    if type(other) in SCALAR_TYPES and isinstance(self, TensorBase):
        return _with_number(ops.mul__Tensor, self, other)
    return F.mul_(self, wrap_number(other, self))


def div_scalar(self, other):
    if type(other) in SCALAR_TYPES and isinstance(self, TensorBase):
        return _with_number(ops.div_Tensor, self, other)
    return F.div(self, wrap_number(other, self))


def div__scalar(self, other):
    if type(other) in SCALAR_TYPES and isinstance(self, TensorBase):
        return _with_number(ops.div__Tensor, self, other)
    return F.div_(self, wrap_number(other, self))


def pow_scalar_tensor(self, exponent):
    """pow(number, tensor): the number wrapped, as in `2 ** t`. The result is contiguous
    whatever the exponent's layout: PyTorch's pow.Scalar allocates its output with
    exponent's sizes and no strides before it redispatches to the Tensor overload, so
    it does not follow a permuted exponent's memory order as TensorIterator would."""
    return F.contiguous(F.pow(wrap_number(self, exponent), exponent))


def _bool_to_bool_power(self, exponent):
    """bool ** True and bool ** False. There is no bool pow kernel, but PyTorch's
    pow(Tensor, Scalar) answers an exponent of 0 (ones) or 1 (the base) before it looks
    for one, so a bool base with a bool exponent gives a bool result."""
    return self.dtype is dt.bool and isinstance(exponent, bool)


def pow_tensor_scalar(self, exponent):
    if _bool_to_bool_power(self, exponent):
        return F.clone(self) if exponent else F.clone(self).fill_(True)
    return F.pow(self, wrap_number(exponent, self))


def xlogy_scalar(self, other):
    return F.xlogy(self, wrap_number(other, self))


def where_scalar_other(condition, self, other):
    return F.where(condition, self, wrap_number(other, self))


def where_scalar_self(condition, self, other):
    return F.where(condition, wrap_number(self, other), other)


def eq_scalar(self, other):
    return F.eq(self, wrap_number(other, self))


def ne_scalar(self, other):
    return F.ne(self, wrap_number(other, self))


def lt_scalar(self, other):
    return F.lt(self, wrap_number(other, self))


def le_scalar(self, other):
    return F.le(self, wrap_number(other, self))


def gt_scalar(self, other):
    return F.gt(self, wrap_number(other, self))


def ge_scalar(self, other):
    return F.ge(self, wrap_number(other, self))


def square(self):
    """self * self; bool counts as int64, as pow(bool, 2) does in PyTorch."""
    if self.dtype is dt.bool:
        self = self.to(dt.int64)
    return self * self


def square_(self):
    """self *= a copy of self. Not mul_(self, self): that saves self as `other` and then
    overwrites it, so backward always raised. PyTorch's square_ is pow_(2), which saves a
    copy of the original self: a later write into the result goes unnoticed there too."""
    return self.mul_(self.clone())


# ---- pointwise ---------------------------------------------------------------------------
def _as_floating(self):
    """Integer and bool inputs compute in the default dtype, as PyTorch's float ops do
    (floating and complex ones in their own)."""
    return self if self._impl.dtype.is_differentiable else self.to(dt.get_default_dtype())


def deg2rad(self):
    reject_complex("deg2rad", self)
    return _as_floating(self) * (math.pi / 180.0)


def rad2deg(self):
    reject_complex("rad2deg", self)
    return _as_floating(self) * (180.0 / math.pi)


def _floating_pair(op, self, other):
    """self and other in their common dtype, which must be a floating one: an integer or
    bool operand is promoted (logaddexp(int32, float64) is float64, as in PyTorch), two of
    them are refused."""
    common = result_type(self, other)
    if not common.is_floating_point:
        raise DTypeError(f"{op}(): arguments 'self' and 'other' must have a floating point "
                         f"common dtype, but got {self.dtype.name} and {other.dtype.name}",
                         op=op, arg="self")
    return self.to(common), other.to(common)


def _in_float32(op, self, other, fn):
    """fn(self, other) in the pair's common floating dtype; float16 and bfloat16 compute
    in float32 and round once at the end, as PyTorch's kernels do (rounding each of the
    steps to a half type is off by a unit now and then: seed 256014's bfloat16 logaddexp,
    whose error polygamma then magnified near its pole)."""
    self, other = _floating_pair(op, self, other)
    dtype = self.dtype
    if dtype not in (dt.float16, dt.bfloat16):
        return fn(self, other)
    return fn(self.to(dt.float32), other.to(dt.float32)).to(dtype)


def logaddexp(self, other):
    """log(exp(self) + exp(other)) = max + log1p(exp(min - max)), which cannot overflow;
    two equal infinities give that infinity (not inf - inf)."""
    def formula(self, other):
        high, low = F.maximum(self, other), F.minimum(self, other)
        same_inf = F.logical_and(F.isinf(high), F.eq(high, low))
        gap = F.where(same_inf, 0, low - high)
        return F.where(same_inf, high, high + F.log1p(F.exp(gap)))
    return _in_float32("logaddexp", self, other, formula)


def logaddexp2(self, other):
    """log2(2 ** self + 2 ** other) = max + log1p(2 ** (min - max)) / ln 2, as logaddexp;
    the operands are promoted (by maximum) before any arithmetic, so a float16 operand of
    a float32 result is not rounded to float16 on the way."""
    reject_complex_args("logaddexp2", (("self", self), ("other", other)))

    def formula(self, other):
        high, low = F.maximum(self, other), F.minimum(self, other)
        same_inf = F.logical_and(F.isinf(high), F.eq(high, low))
        gap = F.where(same_inf, 0, low - high)
        return F.where(same_inf, high, high + F.log1p(F.exp2(gap)) / math.log(2.0))
    return _in_float32("logaddexp2", self, other, formula)


def fmax(self, other):
    reject_complex_args("fmax", (("self", self), ("other", other)))
    """maximum that ignores a NaN when the other value is not NaN (NumPy's fmax)."""
    return _nan_ignoring(F.ge, self, other)


def fmin(self, other):
    reject_complex_args("fmin", (("self", self), ("other", other)))
    return _nan_ignoring(F.le, self, other)


def _nan_ignoring(wins, self, other):
    """self where `wins(self, other)` or other is NaN, else other: a NaN is ignored when
    the other value is not NaN, and a tie goes to self with its whole gradient, as
    PyTorch's fmax/fmin backward gives it (maximum and minimum split a tie's gradient
    evenly, which fmax built on maximum inherited: fmax(-inf, -inf) gave each 0.5; the
    fuzzer found it). NOTE: `where`'s result is laid out like its first argument, the
    condition, a binary op of (self, other): the result keeps the layout PyTorch's fmax
    has."""
    return F.where(F.logical_or(wins(self, other), F.isnan(other)), self, other)


def sinc(self):
    """sin(pi x) / (pi x), 1 at 0. NOTE: the division runs on x with its zeros replaced
    by ones, so the branch `where` discards cannot send a NaN into the gradient."""
    x = _as_floating(self)
    zero = F.eq(x, 0)
    safe = F.where(zero, 1, x) * math.pi
    return F.where(zero, 1, F.sin(safe) / safe)


def _float_power_dtype(self, exponent):
    """float64, or complex128 when either operand is complex."""
    is_tensor = getattr(exponent, "_impl", None) is not None
    if self._impl.dtype.is_complex or (exponent.is_complex() if is_tensor
                                       else isinstance(exponent, complex)):
        return dt.complex128
    return dt.float64


def float_power(self, exponent):
    """self ** exponent in float64 (both operands converted first); in complex128 when
    either is complex."""
    dtype = _float_power_dtype(self, exponent)
    if getattr(exponent, "_impl", None) is not None:
        exponent = exponent.to(dtype)
    return self.to(dtype) ** exponent


def heaviside(self, values):
    """0 where self < 0, 1 where self > 0, `values` where self == 0."""
    reject_complex_args("heaviside", (("self", self), ("values", values)))
    if self.dtype is not values.dtype:
        raise DTypeError(f"heaviside(): is not yet implemented for tensors with different "
                         f"dtypes (argument 'values' is {values.dtype.name}, 'self' is "
                         f"{self.dtype.name})", op="heaviside", arg="values")
    return F.where(F.eq(self, 0), values, F.gt(self, 0).to(self.dtype))


# ---- the inverse-hyperbolics / number-theory / bit-shift section ------------------------
def _write_back(op, self, result):
    """An in-place form made of its out-of-place op: the result must fit into self (its
    shape, a dtype self can hold: PyTorch refuses to write a float into an int tensor),
    then it is copied in."""
    fits_inplace(op, OutSpec(tuple(result.shape), result.dtype), self)
    return self.copy_(result)


def sgn(self):
    """self / abs(self), 0 at 0: for a real number its sign, for a complex one the point of
    the unit circle in its direction."""
    if not self._impl.dtype.is_complex:
        return F.sign(self)
    magnitude = F.abs(self)
    return self / F.where(magnitude == 0, 1.0, magnitude)


def sgn_(self):
    if not self._impl.dtype.is_complex:
        return self.sign_()
    return _write_back("sgn_", self, sgn(self))


def copysign_scalar(self, other):
    return F.copysign(self, wrap_number(other, self))


def copysign__scalar(self, other):
    return self.copysign_(wrap_number(other, self))


def frexp(self):
    """(mantissa, exponent) from ops that run on any device: exponent = floor(log2|x|) + 1
    in float64 (every float32 value, subnormals too, is a normal float64), then corrected
    by one where log2 rounded across a power of two; 0, inf and nan are kept with
    exponent 0. The scaling by 2 ** -exponent is split in two factors, so that it cannot
    overflow for a subnormal float64 (exponent down to -1073)."""
    if not self.is_floating_point():
        raise DTypeError(f"frexp(): only supports floating-point dtypes (argument 'self' is "
                         f"{self.dtype.name})", op="frexp", arg="self")
    x = self.to(dt.float64)
    regular = F.logical_and(F.isfinite(x), F.ne(x, 0))
    magnitude = F.where(regular, F.abs(x), 1.0)
    e = F.floor(F.log2(magnitude)) + 1
    half = F.floor(e / 2)
    m = x * F.exp2(-half) * F.exp2(half - e)
    too_big = F.ge(F.abs(m), 1.0)            # log2 rounded up across a power of two
    m, e = F.where(too_big, m / 2, m), F.where(too_big, e + 1, e)
    too_small = F.logical_and(regular, F.lt(F.abs(m), 0.5))
    m, e = F.where(too_small, m * 2, m), F.where(too_small, e - 1, e)
    mantissa = F.where(regular, m, x).to(self.dtype)
    return mantissa, F.where(regular, e, 0.0).to(dt.int32)


def ldexp(self, other):
    """self * 2 ** other, in the promoted dtype of both (the default float for two integer
    tensors): float16 with an int64 exponent stays float16, as in PyTorch."""
    dtype = _ldexp_dtype(self, other)
    return F.mul(self.to(dtype), F.exp2(other.to(dtype)))


def ldexp_(self, other):
    dtype = _ldexp_dtype(self, other)
    fits_inplace("ldexp_", OutSpec(broadcast("ldexp_", [("self", tuple(self.shape)),
                                                        ("other", tuple(other.shape))]),
                                   dtype), self)
    return self.mul_(F.exp2(other.to(dtype)))


def _ldexp_dtype(self, other):
    _check_args("ldexp", self, other)
    dtype = result_type(self, other)
    return dtype if dtype.is_floating_point or dtype.is_complex else dt.get_default_dtype()


def rsub(self, other, alpha):
    """other - alpha * self."""
    _check_args("rsub", self, other)
    return F.sub(other, self, alpha=alpha)


def rsub_scalar(self, other, alpha):
    return F.sub(wrap_number(other, self), self, alpha=alpha)


def positive(self):
    """Unary plus: self itself, as in PyTorch (not a copy)."""
    if self.dtype is dt.bool:
        raise DTypeError("positive(): the `+` operator, on a bool tensor is not supported "
                         "(argument 'self' is bool)", op="positive", arg="self")
    return self


def eq__scalar(self, other):
    return self.eq_(wrap_number(other, self))


def ne__scalar(self, other):
    return self.ne_(wrap_number(other, self))


def lt__scalar(self, other):
    return self.lt_(wrap_number(other, self))


def le__scalar(self, other):
    return self.le_(wrap_number(other, self))


def gt__scalar(self, other):
    return self.gt_(wrap_number(other, self))


def ge__scalar(self, other):
    return self.ge_(wrap_number(other, self))


def pow__scalar(self, exponent):
    if _bool_to_bool_power(self, exponent):
        return self if exponent else self.fill_(True)
    return self.pow_(wrap_number(exponent, self))


def xlogy__scalar(self, other):
    return F.xlogy_(self, wrap_number(other, self))


def sinc_(self):
    """sinc written back (sinc's derivatives.yaml entry makes this run below autograd,
    with the node of sinc, as PyTorch's sinc_)."""
    return _write_back("sinc_", self, F.sinc(self))


def rad2deg_(self):
    check_inplace_cast("rad2deg_", _as_floating(self).dtype, self)
    return self.mul_(180.0 / math.pi)


def deg2rad_(self):
    check_inplace_cast("deg2rad_", _as_floating(self).dtype, self)
    return self.mul_(math.pi / 180.0)


def heaviside_(self, values):
    return _write_back("heaviside_", self, F.heaviside(self, values))


def float_power_(self, exponent):
    """self **= exponent in float64 (complex128 when either is complex): self must have
    the result's dtype already (a complex exponent is not cut to its real part)."""
    dtype = _float_power_dtype(self, exponent)
    if self.dtype is not dtype:
        raise DTypeError(f"float_power_(): the base given to float_power_ has dtype "
                         f"{self.dtype.name} but the operation's result requires dtype "
                         f"{dtype.name} (argument 'self')", op="float_power_", arg="self")
    if getattr(exponent, "_impl", None) is not None:
        exponent = exponent.to(dtype)
    return self.pow_(exponent)


def fill_diagonal_(self, fill_value, wrap):
    """fill_value on the main diagonal, through views of self: `diagonal`, taken until one
    dimension is left (a cube's [i, i, ..., i]). With wrap, a tall matrix's diagonal
    starts again every width + 1 rows (NumPy's fill_diagonal): the diagonal of each block
    of rows. (PyTorch writes through one as_strided view of the same elements; views of
    the logical tensor also work under vmap.)"""
    sizes = tuple(self.shape)
    if len(sizes) < 2:
        raise ShapeError(f"fill_diagonal_(): dimensions must larger than 1 (argument 'self' "
                         f"has {len(sizes)})", op="fill_diagonal_", arg="self")
    if len(sizes) > 2 and any(s != sizes[0] for s in sizes):
        raise ShapeError(f"fill_diagonal_(): all dimensions of input must be of equal length "
                         f"(argument 'self' has shape {list(sizes)})", op="fill_diagonal_",
                         arg="self")
    diagonal = self
    while diagonal.dim() > 1:
        diagonal = diagonal.diagonal(0, 0, 1)
    diagonal.fill_(fill_value)
    height, width = sizes[0], sizes[1]
    if wrap and len(sizes) == 2 and height > width + 1:
        for start in range(width + 1, height, width + 1):
            self[start:start + width].diagonal().fill_(fill_value)
    return self
