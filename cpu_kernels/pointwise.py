"""The arithmetic operators (+ - * / **, maximum, minimum, xlogy), comparisons, `where`
and the common unary functions (neg, abs, sign, exp, log, sqrt, sin, cos, tanh, sigmoid,
relu), with their in-place forms: one NumPy ufunc each, after PyTorch's type promotion.

The rest of the pointwise family is named by topic: pointwise_math.py (float functions,
rounding, the division family), pointwise_logic.py, pointwise_activations.py,
pointwise_blend.py (clamp, lerp, addcmul...), pointwise_random.py; _pointwise_common.py
holds their dtype handling and the in-place recipe.

NumPy broadcasts exactly like PyTorch, so broadcasting needs no code here; a
shape that does not broadcast makes NumPy raise and the op's shape rule turns
that into a ShapeError naming the arguments.
"""
from __future__ import annotations

import numpy as np

from tensorplay import _dtype as dt
from tensorplay._promotion import result_type2
from tensorplay.errors import DTypeError
from tensorplay.meta import pointwise as pointwise_rules
from tensorplay.meta import rules
from tensorplay.meta.overlap import check_inplace_overlap
from cpu_kernels._common import array_as, float_dtype, out, out_like, out_like1, out_like2
from cpu_kernels._float_errors import Ignored, call_ignoring
from cpu_kernels._pointwise_common import inplace_of

# The NumPy warnings PyTorch does not give: x / 0 is inf, 0 / 0 and log(-1) are nan,
# exp(1000) and 10.0 ** 1000 are inf.
_DIVIDE_ERRORS = Ignored(divide="ignore", invalid="ignore")
_UNARY_FLOAT_ERRORS = Ignored(divide="ignore", invalid="ignore", over="ignore")
_SIGMOID_ERRORS = Ignored(over="ignore", invalid="ignore")


def _binary(self, other):
    """The two operands' arrays in the dtype the op computes in, and that dtype."""
    ia, ib = self._impl, other._impl
    dtype = ia.dtype
    if dtype is ib.dtype:
        # One dtype (the common case): result_type2 would return it and array_as the
        # cached views as they are; only a view whose array is not made yet goes on.
        a, b = ia._array, ib._array
        if a is not None and b is not None:
            return a, b, dtype
    dtype = result_type2(self, other)
    return array_as(self, dtype), array_as(other, dtype), dtype


def _with_number(ufunc, self, other):
    """`ufunc` of a float32 or float64 tensor and a wrapped number (`x * 2`, `2 - x`,
    `grad * other` in MulBackward0), in either order, as a new tensor; None for anything
    else, which the caller's general path computes.

    Exact: result_type2 gives the tensor's dtype for these (a number's class is lower and
    its category never above float), `array_as` would return the tensor's array as it is
    and the number's 0-d array converted to that dtype, and out_like2's layout depends
    only on the tensor (the number is 0-d, hence row-major). The half types, whose 0-d
    operand has a rule of its own in mul and div (`_arithmetic`), are not taken, nor is
    a bool number (sub refuses it)."""
    ia, ib = self._impl, other._impl
    if ib.wrapped_number:
        if ia.wrapped_number:
            return None
        tensor, number = ia, ib
    elif ia.wrapped_number:
        tensor, number = ib, ia
    else:
        return None
    dtype = tensor.dtype
    if dtype not in _FULL_FLOATS or number.dtype is dt.bool:
        return None
    t, n = tensor._array, number._array
    if n is None:
        return None
    if t is None:
        t = tensor.array()
    if number.dtype is not dtype:
        n = n.astype(dtype.np)
    result = ufunc(t, n) if tensor is ia else ufunc(n, t)
    if tensor.is_contiguous or len(tensor.sizes) < 2:
        # The result has the tensor's shape; a 0-d or 1-d one is row-major whatever the
        # tensor's strides (out_like), e.g. MulBackward0's `grad * other` on sum's
        # stride-0 gradient.
        return out(result, dtype)
    return out_like(result, dtype, self, other)


# The float dtypes a wrapped number never changes the computation of (see _with_number).
_FULL_FLOATS = frozenset({dt.float32, dt.float64})


def _arithmetic(self, other, dtype):
    """The operands of mul and div for a result of `dtype`.

    NOTE: a 0-dim second operand of a half-type result (float16, bfloat16) enters in
    float32 straight from its own dtype, and the op runs in float32, rounded once at the
    end: `half * 0.1` multiplies by 0.1, not by 0.1 first rounded to half. PyTorch's CPU
    mul and div kernels do this (they read such a scalar with
    `original_scalar_value<opmath_t>`); its add and sub round the scalar to half first."""
    impl = other._impl
    if dtype.is_floating_point and dtype.itemsize == 2 and not impl.sizes:
        return array_as(self, dtype), impl.array().astype(np.float32)
    return array_as(self, dtype), array_as(other, dtype)


def _scaled(op, self, other, alpha, dtype, b):
    """`b * alpha` for add/sub, called unless alpha is the int 1. NumPy would compute
    int + 0.5 * int in float and truncate: PyTorch refuses any float alpha there, and so
    does the op's shape rule."""
    if type(alpha) is float and not dtype.is_floating_point:
        rules.binary(op, (self, other, alpha))
    return b if alpha == 1 else b * alpha


# add, sub, mul and div start with their common case written out: two row-major operands
# of one dtype whose arrays are made, and nothing the general path below would change
# (an alpha to scale by; bool for sub, a half type for mul and div, integers for div).
# Then `_binary` returns those arrays and that dtype, and `out_like2` calls `out`: the
# fused test saves four calls, an eighth of a small add.
def add(self, other, alpha):
    ia, ib = self._impl, other._impl
    dtype = ia.dtype
    if dtype is ib.dtype and ia.is_contiguous and ib.is_contiguous and ia._array is not None \
            and ib._array is not None and not (alpha != 1 or type(alpha) is float):
        return out(np.add(ia._array, ib._array), dtype)
    if alpha == 1 and type(alpha) is not float:
        result = _with_number(np.add, self, other)
        if result is not None:
            return result
    a, b, dtype = _binary(self, other)
    if alpha != 1 or type(alpha) is float:
        b = _scaled("add", self, other, alpha, dtype, b)
    return out_like2(np.add(a, b), dtype, self, other)


def _check_no_bool(op, self, other):
    # NumPy rejects bool - bool, but not uint8 - True: the shape rule says why, always.
    if self._impl.dtype is dt.bool or other._impl.dtype is dt.bool:
        rules.binary_sub(op, (self, other))


def sub(self, other, alpha):
    ia, ib = self._impl, other._impl
    dtype = ia.dtype
    if dtype is ib.dtype and dtype is not dt.bool and ia.is_contiguous and ib.is_contiguous \
            and ia._array is not None and ib._array is not None \
            and not (alpha != 1 or type(alpha) is float):
        return out(np.subtract(ia._array, ib._array), dtype)
    if alpha == 1 and type(alpha) is not float:
        result = _with_number(np.subtract, self, other)
        if result is not None:
            return result
    _check_no_bool("sub", self, other)
    a, b, dtype = _binary(self, other)
    if alpha != 1 or type(alpha) is float:
        b = _scaled("sub", self, other, alpha, dtype, b)
    return out_like2(np.subtract(a, b), dtype, self, other)


def mul(self, other):
    ia, ib = self._impl, other._impl
    dtype = ia.dtype
    if dtype is ib.dtype and (dtype.itemsize != 2 or not dtype.is_floating_point) \
            and ia.is_contiguous and ib.is_contiguous and ia._array is not None \
            and ib._array is not None:
        return out(np.multiply(ia._array, ib._array), dtype)
    result = _with_number(np.multiply, self, other)
    if result is not None:
        return result
    a, b, dtype = _binary(self, other)
    if dtype.itemsize == 2 and dtype.is_floating_point:
        a, b = _arithmetic(self, other, dtype)     # a half type: its 0-d operand's rule
    # (for any other dtype _arithmetic's operands are _binary's)
    return out_like2(np.multiply(a, b), dtype, self, other)


def div(self, other):
    ia, ib = self._impl, other._impl
    dtype = ia.dtype
    if dtype is ib.dtype and dtype.is_floating_point and dtype.itemsize != 2 \
            and ia.is_contiguous and ib.is_contiguous and ia._array is not None \
            and ib._array is not None:
        return out(call_ignoring(_DIVIDE_ERRORS, np.true_divide, ia._array, ib._array), dtype)
    result = _with_number(_true_divide, self, other)
    if result is not None:
        return result
    a, b, dtype = _binary(self, other)
    if not dtype.is_floating_point or dtype.itemsize == 2:
        # Integers and bool divide in the default float; a half type takes _arithmetic's
        # rule for a 0-d operand. A float dtype of 4 or 8 bytes is float_dtype's own, and
        # _arithmetic's operands for it are _binary's.
        dtype = float_dtype(dtype)
        a, b = _arithmetic(self, other, dtype)
    # Wrapping the result needs no errstate: it can only cast a float result to a float
    # dtype (half types), which can overflow but never divides or makes a nan.
    return out_like2(call_ignoring(_DIVIDE_ERRORS, np.true_divide, a, b), dtype, self, other)


def _true_divide(a, b):
    return call_ignoring(_DIVIDE_ERRORS, np.true_divide, a, b)


def pow(self, exponent):  # noqa: A001 - the op's name
    a, b, dtype = _binary(self, exponent)
    if dtype is dt.bool:
        rules.binary_pow("pow", (self, exponent))     # PyTorch has no bool ** bool
    if not dtype.is_floating_point and np.any(b < 0):
        r = _int_pow_negative(a, b, dtype, exponent._impl.wrapped_number)
        return out_like(r, dtype, self, exponent)
    special = _scalar_power(b, dtype) if exponent._impl.wrapped_number else None
    if special is None:
        r = call_ignoring(_UNARY_FLOAT_ERRORS, np.power, a, b)
    else:
        r = call_ignoring(_UNARY_FLOAT_ERRORS, special, a)
    # Both keep the operands' dtype (a Python 1 in `1 / a` takes a's), so wrapping the
    # result casts nothing and needs no errstate.
    return out_like2(r, dtype, self, exponent)


# PyTorch's CPU pow with a Python-number exponent computes these exponents by other
# kernels (PowKernel.cpp): sqrt, rsqrt and reciprocal for float32, float64 and
# bfloat16; x*x, x*x*x and 1/(x*x) for float32 and float64. They differ from C's pow
# at the edges (rsqrt(-inf) and sqrt(-inf) are NaN where pow gives 0 and inf; rsqrt(-0)
# is -inf) and x*x*x rounds twice.
_ROOT_POWERS = {0.5: np.sqrt, -0.5: lambda a: 1 / np.sqrt(a), -1.0: lambda a: 1 / a}
_PRODUCT_POWERS = {2.0: lambda a: a * a, 3.0: lambda a: a * a * a,
                   -2.0: lambda a: 1 / (a * a)}


def _scalar_power(b, dtype):
    """The kernel PyTorch uses for `x ** b` with a Python number b, or None for C's pow."""
    if dtype not in (dt.float32, dt.float64, dt.bfloat16) or b.dtype.kind == "b":
        return None
    e = float(b)
    if e in _ROOT_POWERS:
        return _ROOT_POWERS[e]
    return _PRODUCT_POWERS.get(e) if dtype is not dt.bfloat16 else None


def _int_pow_negative(a, b, dtype, scalar_exponent):
    """Integer powers with negative exponents, as PyTorch does them: a Python-number
    exponent is an error; a tensor exponent gives 1 / a**|b| truncated toward zero, which
    is 0 except for a base of 1 (1) or -1 (+1 or -1 by parity). NumPy raises instead."""
    if scalar_exponent:
        raise DTypeError(f"pow(): Integers to negative integer powers are not allowed "
                         f"(argument 'exponent' is {b.item()} and 'self' is {dtype.name})",
                         op="pow", arg="exponent")
    negative = b < 0
    with np.errstate(over="ignore"):
        r = np.power(a, np.where(negative, 0, b))
    odd = np.where(b % 2 == 0, 1, -1)
    inverse = np.where(a == 1, 1, np.where(a == -1, odd, 0))
    return np.where(negative, inverse, r)


def maximum(self, other):
    a, b, dtype = _binary(self, other)
    return out_like2(np.maximum(a, b), dtype, self, other)


def minimum(self, other):
    a, b, dtype = _binary(self, other)
    return out_like2(np.minimum(a, b), dtype, self, other)


def xlogy(self, other):
    dtype = float_dtype(result_type2(self, other))
    a, b = array_as(self, dtype), array_as(other, dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(a == 0, np.zeros((), dtype.np), a * np.log(b))
    return out_like(np.where(np.isnan(b), b, r), dtype, self, other)


def where(condition, self, other):
    # PyTorch still takes a uint8 condition (deprecated, nonzero means True); no other.
    if condition._impl.dtype not in (dt.bool, dt.uint8):
        raise DTypeError(f"where(): argument 'condition' must be a bool tensor, but got "
                         f"{condition._impl.dtype.name}", op="where", arg="condition")
    if condition._impl.dtype is dt.uint8:
        # PyTorch converts it to bool first: the converted copy's layout (dense, clone's)
        # is what the result follows, not an expanded uint8 condition's.
        condition = condition.to(dt.bool)
    a, b, dtype = _binary(self, other)
    return out_like(np.where(condition._impl.array(), a, b), dtype, condition, self, other)


def _compare(ufunc):
    def kernel(self, other):
        a, b, _ = _binary(self, other)
        return out_like2(ufunc(a, b), dt.bool, self, other)
    return kernel


eq = _compare(np.equal)
ne = _compare(np.not_equal)
lt = _compare(np.less)
le = _compare(np.less_equal)
gt = _compare(np.greater)
ge = _compare(np.greater_equal)
for _name, _fn in (("eq", eq), ("ne", ne), ("lt", lt), ("le", le), ("gt", gt), ("ge", ge)):
    _fn.__name__ = _fn.__qualname__ = _name


def neg(self):
    return out_like1(np.negative(self._impl.array()), self._impl.dtype, self)


def abs(self):  # noqa: A001
    if self._impl.dtype is dt.bool:
        rules.unary_abs("abs", (self,))   # NumPy would accept it; PyTorch does not
    return out_like1(np.abs(self._impl.array()), self._impl.dtype, self)


def _unary_float(ufunc):
    def kernel(self):
        dtype = float_dtype(self._impl.dtype)
        # The ufunc keeps its float input's dtype (tests/test_fastpath_fast14a.py checks it
        # for each float dtype), so `out_like` casts nothing and needs no errstate.
        r = call_ignoring(_UNARY_FLOAT_ERRORS, ufunc, array_as(self, dtype))
        return out_like1(r, dtype, self)
    return kernel


exp = _unary_float(np.exp)
log = _unary_float(np.log)
sqrt = _unary_float(np.sqrt)
sin = _unary_float(np.sin)
cos = _unary_float(np.cos)
tanh = _unary_float(np.tanh)
for _name, _fn in (("exp", exp), ("log", log), ("sqrt", sqrt), ("sin", sin), ("cos", cos),
                   ("tanh", tanh)):
    _fn.__name__ = _fn.__qualname__ = _name


def sigmoid(self):
    dtype = float_dtype(self._impl.dtype)
    x = array_as(self, dtype)
    if x.dtype.itemsize == 2:   # half types compute in float32, rounded once (PyTorch)
        x = x.astype(np.float32)
    # Rounding the result, in [0, 1] or nan, to a half type cannot overflow: no errstate.
    return out_like1(call_ignoring(_SIGMOID_ERRORS, _sigmoid_of, x), dtype, self)


def _sigmoid_of(x):
    # PyTorch's formula, 1 / (1 + exp(-x)), rounded as it rounds: exp(-x) overflows to
    # inf for very negative x (the result is then 0, not a subnormal), harmlessly.
    return 1 / (1 + np.exp(-x))


def relu(self):
    if self._impl.dtype is dt.bool:
        rules.unary_relu("relu", (self,))   # NumPy would accept it; PyTorch does not
    a = self._impl.array()
    r = np.maximum(a, np.zeros((), a.dtype))      # keeps NaN, like torch
    return out_like1(r, self._impl.dtype, self)


# ---- in-place: compute into the tensor's own memory ----------------------------------
# Two tests, written out in each kernel below (a call costs as much as either test), say
# when the general checks have nothing to refuse:
#
# * "fits self": `other` has self's sizes, or is 0-dim on self's device (a wrapped number,
#   `x.add_(1.0)`): its broadcast is self's sizes and check_devices lets it through, so
#   rules.binary_inplace could only find the result type's cast to check.
# * "may overlap": check_inplace_overlap refuses only an internal overlap, which needs a
#   stride of 0 in self, or a partial overlap with `other`, which needs a shared storage.
def _inplace(op, ufunc, self, other, alpha=1):
    impl, other_impl = self._impl, other._impl
    dtype = impl.dtype
    b = other_impl._array
    if dtype is not other_impl.dtype or b is None:
        # (one dtype whose array is made, the common case: result_type2 would return it
        # and array_as the array as it is)
        dtype = result_type2(self, other)
        b = array_as(other, dtype)
    if alpha != 1 or type(alpha) is float:
        b = _scaled(op, self, other, alpha, dtype, b)
    other_sizes = other_impl.sizes
    if other_sizes == impl.sizes or (not other_sizes and other_impl._device is impl._device):
        if dtype is not impl.dtype:     # (a dtype can always be cast to itself)
            rules.check_inplace_cast(op, dtype, self)
    else:
        rules.binary_inplace(op, (self, other))     # the broadcast result must fit in self
    if 0 in impl.strides or other_impl.storage is impl.storage:
        check_inplace_overlap(op, self, ("other", other))
    target = impl._array      # the cached view, as impl.array() would return it
    if target is None:
        target = impl.array()
    if dtype is not impl.dtype:
        np.copyto(target, ufunc(array_as(self, dtype), b), casting="unsafe")
    elif target.size != 1:
        # Computed in self's own dtype: the ufunc writes straight into self's memory
        # (NumPy buffers an operand that is self itself, `x += x`), no temporary to copy.
        ufunc(target, b, out=target)
    else:
        # NOTE: one element: NumPy (2.x) takes a slower path when out= is also an input of
        # one element (0.55 us against 0.25 us for two elements); a new one-element result
        # written back costs 0.4 us. The same ufunc on the same operands: the same value
        # and warnings. `b` is in self's dtype (alpha scales it within its dtype: a float
        # alpha with an integer dtype is refused above), so the result is too.
        target[...] = ufunc(target, b)
    return self


def add_(self, other, alpha):
    return _inplace("add_", np.add, self, other, alpha)


def sub_(self, other, alpha):
    _check_no_bool("sub_", self, other)
    return _inplace("sub_", np.subtract, self, other, alpha)


def mul_(self, other):
    impl, other_impl = self._impl, other._impl
    dtype = result_type2(self, other)
    other_sizes = other_impl.sizes
    if not (dtype is impl.dtype and (other_sizes == impl.sizes or (
            not other_sizes and other_impl._device is impl._device))):
        rules.binary_inplace("mul_", (self, other))     # fits into self: shape and dtype
    if 0 in impl.strides or other_impl.storage is impl.storage:
        check_inplace_overlap("mul_", self, ("other", other))
    np.copyto(impl.array(), np.multiply(*_arithmetic(self, other, dtype)),
              casting="unsafe")
    return self


def div_(self, other):
    impl, other_impl = self._impl, other._impl
    dtype = float_dtype(result_type2(self, other))
    other_sizes = other_impl.sizes
    # (self's float dtype takes any result type's cast, so both cast checks pass)
    if not (dtype is impl.dtype and (other_sizes == impl.sizes or (
            not other_sizes and other_impl._device is impl._device))):
        rules.binary_inplace("div_", (self, other))
        rules.check_inplace_cast("div_", dtype, self)
    if 0 in impl.strides or other_impl.storage is impl.storage:
        check_inplace_overlap("div_", self, ("other", other))
    r = call_ignoring(_DIVIDE_ERRORS, np.true_divide, *_arithmetic(self, other, dtype))
    # Written back outside the error state: into self's float dtype, a rounding at most
    # (which can overflow, never divide or make a nan), as `div` wraps its result.
    np.copyto(impl.array(), r, casting="unsafe")
    return self


def relu_(self):
    if self._impl.dtype is dt.bool:
        rules.unary_relu("relu_", (self,))
    check_inplace_overlap("relu_", self)
    a = self._impl.array()
    np.copyto(a, np.maximum(a, np.zeros((), a.dtype)))
    return self


def sign(self):
    a = self._impl.array()
    if a.dtype == np.bool_:
        return out_like1(a.copy(), dt.bool, self)  # NumPy has no bool sign loop; sign(b) is b
    r = np.sign(a)
    if self._impl.dtype.is_floating_point:
        r = np.where(np.isnan(a), np.zeros((), a.dtype), r)   # PyTorch: sign(nan) is 0
    return out_like1(r, self._impl.dtype, self)


# ---- in place, the unary functions: computed as above, written back into self ---------
exp_ = inplace_of(exp, pointwise_rules.unary_float, "exp_")
log_ = inplace_of(log, pointwise_rules.unary_float, "log_")
sqrt_ = inplace_of(sqrt, pointwise_rules.unary_float, "sqrt_")
sin_ = inplace_of(sin, pointwise_rules.unary_float, "sin_")
cos_ = inplace_of(cos, pointwise_rules.unary_float, "cos_")
tanh_ = inplace_of(tanh, pointwise_rules.unary_float, "tanh_")
sigmoid_ = inplace_of(sigmoid, pointwise_rules.unary_float, "sigmoid_")
neg_ = inplace_of(neg, pointwise_rules.unary_neg, "neg_")
abs_ = inplace_of(abs, pointwise_rules.unary_no_bool, "abs_")
