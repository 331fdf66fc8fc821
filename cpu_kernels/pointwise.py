"""The arithmetic operators (+ - * / **, maximum, minimum, xlogy), comparisons, `where`
and the common unary functions (neg, abs, sign, exp, log, sqrt, sin, cos, tanh, sigmoid,
relu), with their in-place forms: one NumPy ufunc each, after PyTorch's type promotion.

Then the float functions (exp2, log1p, asin, erf...), rounding, the division family
(floor_divide, remainder, fmod, div with rounding_mode, atan2, hypot) and the blends
(clamp, lerp, addcmul, addcdiv, nan_to_num). The neighbouring families are logic.py,
activations.py and random.py; _pointwise_common.py holds their dtype handling and the
in-place recipe.

NumPy broadcasts exactly like PyTorch, so broadcasting needs no code here; a
shape that does not broadcast makes NumPy raise and the op's shape rule turns
that into a ShapeError naming the arguments.
"""
from __future__ import annotations

import builtins

import ml_dtypes
import numpy as np

from tensorplay import _dtype as dt
from tensorplay._promotion import result_type2
from tensorplay.errors import DTypeError
from tensorplay.kernel_support.checks import binary, binary_inplace, check_inplace_cast
from tensorplay.kernel_support.complex_refusals import reject_complex, reject_complex_args
from tensorplay.kernel_support.ops import shape_rule
from tensorplay.kernel_support.overlap import check_inplace_overlap
from cpu_kernels import _erf
from cpu_kernels._common import (
    array_as, float_dtype, out, out_like, out_like1, out_like2, scalar_as,
)
from cpu_kernels._float_errors import Ignored, call_ignoring
from cpu_kernels._loops import loop
from cpu_kernels._pointwise_common import (
    UNARY_FLOAT_ERRORS, arrays, binary_arrays, check_int_divisor, clamp_arrays, compute_np,
    inplace_of, int_pow_negative, mul_div_arrays, promoted, rounding_kernel,
    scaled_by_alpha, trunc_divide, unary_float_kernel, unary_float_ufunc,
)

# The NumPy warnings PyTorch does not give: x / 0 is inf, 0 / 0 and log(-1) are nan,
# exp(1000) and 10.0 ** 1000 are inf.
_DIVIDE_ERRORS = Ignored(divide="ignore", invalid="ignore")
_SIGMOID_ERRORS = Ignored(over="ignore", invalid="ignore")


def _with_number(ufunc, self, other):
    """`ufunc` of a float32 or float64 tensor and a wrapped number (`x * 2`, `2 - x`,
    `grad * other` in MulBackward0), in either order, as a new tensor; None for anything
    else, which the caller's general path computes.

    Exact: result_type2 gives the tensor's dtype for these (a number's class is lower and
    its category never above float), `array_as` would return the tensor's array as it is
    and the number's 0-d array converted to that dtype, and out_like2's layout depends
    only on the tensor (the number is 0-d, hence row-major). The half types, whose 0-d
    operand has a rule of its own in mul and div (`mul_div_arrays`), are not taken, nor is
    a bool number (sub refuses it) or a complex one (`x * 1j` is complex)."""
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
    if dtype not in _FULL_FLOATS or number.dtype is dt.bool or number.dtype.is_complex:
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


def scales_b(alpha, dtype):
    """Whether add and sub multiply b by alpha (scaled_by_alpha): always for a complex
    dtype (PyTorch's a + alpha * b), otherwise unless alpha is the int 1."""
    return alpha != 1 or type(alpha) is float or dtype.is_complex


# add, sub, mul and div start with their common case written out: two row-major operands
# of one dtype whose arrays are made, and nothing the general path below would change
# (an alpha to scale by, a complex b; bool for sub, a half type for mul and div, integers
# for div).
# Then `binary_arrays` returns those arrays and that dtype, and `out_like2` calls `out`: the
# fused test saves four calls, an eighth of a small add.
def add(self, other, alpha):
    ia, ib = self._impl, other._impl
    dtype = ia.dtype
    if dtype is ib.dtype and ia.is_contiguous and ib.is_contiguous and ia._array is not None \
            and ib._array is not None and not scales_b(alpha, dtype):
        return out(np.add(ia._array, ib._array), dtype)
    if alpha == 1 and type(alpha) is not float:
        result = _with_number(np.add, self, other)
        if result is not None:
            return result
    a, b, dtype = binary_arrays(self, other)
    if scales_b(alpha, dtype):
        b = scaled_by_alpha("add", self, other, alpha, dtype, b)
    return out_like2(np.add(a, b), dtype, self, other)


def _check_no_bool(op, self, other):
    # NumPy rejects bool - bool, but not uint8 - True: the shape rule says why, always.
    if self._impl.dtype is dt.bool or other._impl.dtype is dt.bool:
        shape_rule("binary_sub")(op, (self, other))


def sub(self, other, alpha):
    ia, ib = self._impl, other._impl
    dtype = ia.dtype
    if dtype is ib.dtype and dtype is not dt.bool and ia.is_contiguous and ib.is_contiguous \
            and ia._array is not None and ib._array is not None \
            and not scales_b(alpha, dtype):
        return out(np.subtract(ia._array, ib._array), dtype)
    if alpha == 1 and type(alpha) is not float:
        result = _with_number(np.subtract, self, other)
        if result is not None:
            return result
    _check_no_bool("sub", self, other)
    a, b, dtype = binary_arrays(self, other)
    if scales_b(alpha, dtype):
        b = scaled_by_alpha("sub", self, other, alpha, dtype, b)
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
    a, b, dtype = binary_arrays(self, other)
    if dtype.itemsize == 2 and dtype.is_floating_point:
        a, b = mul_div_arrays(self, other, dtype)     # a half type: its 0-d operand's rule
    # (for any other dtype mul_div_arrays's operands are binary_arrays's)
    return out_like2(np.multiply(a, b), dtype, self, other)


def div(self, other):
    ia, ib = self._impl, other._impl
    dtype = ia.dtype
    if dtype is ib.dtype and dtype.is_differentiable and dtype.itemsize != 2 \
            and ia.is_contiguous and ib.is_contiguous and ia._array is not None \
            and ib._array is not None:
        return out(call_ignoring(_DIVIDE_ERRORS, np.true_divide, ia._array, ib._array), dtype)
    result = _with_number(_true_divide, self, other)
    if result is not None:
        return result
    a, b, dtype = binary_arrays(self, other)
    if not dtype.is_differentiable or dtype.itemsize == 2:
        # Integers and bool divide in the default float; a half type takes mul_div_arrays's
        # rule for a 0-d operand. A float dtype of 4 or 8 bytes (and a complex one) is
        # float_dtype's own, and mul_div_arrays's operands for it are binary_arrays's.
        dtype = float_dtype(dtype)
        a, b = mul_div_arrays(self, other, dtype)
    # Wrapping the result needs no errstate: it can only cast a float result to a float
    # dtype (half types), which can overflow but never divides or makes a nan.
    return out_like2(call_ignoring(_DIVIDE_ERRORS, np.true_divide, a, b), dtype, self, other)


def _true_divide(a, b):
    return call_ignoring(_DIVIDE_ERRORS, np.true_divide, a, b)


def pow(self, exponent):  # noqa: A001 - the op's name
    a, b, dtype = binary_arrays(self, exponent)
    if dtype is dt.bool:
        shape_rule("binary_pow")("pow", (self, exponent))     # PyTorch has no bool ** bool
    if not dtype.is_differentiable and np.any(b < 0):
        r = int_pow_negative(a, b, dtype, exponent._impl.wrapped_number)
        return out_like(r, dtype, self, exponent)
    special = _scalar_power(b, dtype) if exponent._impl.wrapped_number else None
    if special is None and dtype.is_complex:
        r = call_ignoring(UNARY_FLOAT_ERRORS, _complex_pow, a, b,
                          exponent._impl.wrapped_number)
    elif special is None:
        r = call_ignoring(UNARY_FLOAT_ERRORS, np.power, a, b)
    else:
        r = call_ignoring(UNARY_FLOAT_ERRORS, special, a)
    # Both keep the operands' dtype (a Python 1 in `1 / a` takes a's), so wrapping the
    # result casts nothing and needs no errstate.
    return out_like2(r, dtype, self, exponent)


def _complex_pow(a, b, scalar_exponent):
    """PyTorch's complex pow is C's cpow (glibc: cexp(b * clog(a))), not NumPy's power,
    which multiplies for integer exponents: 0 ** 0j is NaN there, 0 ** -1 is inf + NaN j,
    (-2) ** 2 is 4 + 7e-7j in complex64. A Python-number exponent of 0 or 1 is a fill with
    ones or a copy, as PyTorch's pow_out does before any kernel."""
    if scalar_exponent and b.size == 1 and b.reshape(()) in (0, 1):
        return np.ones_like(a) if b.reshape(()) == 0 else a.copy()
    return np.exp(b * np.log(a))


# PyTorch's CPU pow with a Python-number exponent computes these exponents by other
# kernels (PowKernel.cpp): sqrt, rsqrt and reciprocal for float32, float64 and
# bfloat16; x*x, x*x*x and 1/(x*x) for float32 and float64. They differ from C's pow
# at the edges (rsqrt(-inf) and sqrt(-inf) are NaN where pow gives 0 and inf; rsqrt(-0)
# is -inf) and x*x*x rounds twice.
_ROOT_POWERS = {0.5: np.sqrt, -0.5: lambda a: 1 / np.sqrt(a), -1.0: lambda a: 1 / a}
_PRODUCT_POWERS = {2.0: lambda a: a * a, 3.0: lambda a: a * a * a,
                   -2.0: lambda a: 1 / (a * a)}


def _scalar_power(b, dtype):
    """The kernel PyTorch uses for `x ** b` with a Python number b, or None for C's pow
    (complex dtypes take the same ones: x ** 3 of inf is NaN, not cpow's inf)."""
    if (dtype not in (dt.float32, dt.float64, dt.bfloat16) and not dtype.is_complex) \
            or b.dtype.kind == "b":
        return None
    if b.dtype.kind == "c":
        if b.reshape(()).imag != 0:
            return None
        b = b.real
    e = float(b)
    if e in _ROOT_POWERS:
        return _ROOT_POWERS[e]
    return _PRODUCT_POWERS.get(e) if dtype is not dt.bfloat16 else None


def maximum(self, other):
    if self._impl.dtype.is_complex or other._impl.dtype.is_complex:    # no order
        reject_complex_args("maximum", (("self", self), ("other", other)))
    a, b, dtype = binary_arrays(self, other)
    return out_like2(np.maximum(a, b), dtype, self, other)


def minimum(self, other):
    if self._impl.dtype.is_complex or other._impl.dtype.is_complex:
        reject_complex_args("minimum", (("self", self), ("other", other)))
    a, b, dtype = binary_arrays(self, other)
    return out_like2(np.minimum(a, b), dtype, self, other)


def xlogy(self, other):
    if self._impl.dtype.is_complex or other._impl.dtype.is_complex:
        reject_complex_args("xlogy", (("self", self), ("other", other)))
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
    a, b, dtype = binary_arrays(self, other)
    return out_like(np.where(condition._impl.array(), a, b), dtype, condition, self, other)


def _compare(name, ufunc, ordered):
    def kernel(self, other):
        if ordered and (self._impl.dtype.is_complex or other._impl.dtype.is_complex):
            # NumPy orders complex numbers by their real parts first; PyTorch refuses
            reject_complex_args(name, (("self", self), ("other", other)))
        a, b, _ = binary_arrays(self, other)
        return out_like2(ufunc(a, b), dt.bool, self, other)
    kernel.__name__ = kernel.__qualname__ = name
    return kernel


eq = _compare("eq", np.equal, ordered=False)
ne = _compare("ne", np.not_equal, ordered=False)
lt = _compare("lt", np.less, ordered=True)
le = _compare("le", np.less_equal, ordered=True)
gt = _compare("gt", np.greater, ordered=True)
ge = _compare("ge", np.greater_equal, ordered=True)


def neg(self):
    return out_like1(np.negative(self._impl.array()), self._impl.dtype, self)


def abs(self):  # noqa: A001
    dtype = self._impl.dtype
    if dtype is dt.bool:
        shape_rule("unary_abs")("abs", (self,))   # NumPy would accept it; PyTorch does not
    # |x + iy| = hypot(x, y) is real: complex64 -> float32, complex128 -> float64
    return out_like1(np.abs(self._impl.array()), dtype.to_real(), self)


exp = unary_float_ufunc(np.exp)
log = unary_float_ufunc(np.log)
sqrt = unary_float_ufunc(np.sqrt)
sin = unary_float_ufunc(np.sin)
cos = unary_float_ufunc(np.cos)
tanh = unary_float_ufunc(np.tanh)
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
    impl = self._impl
    if impl.is_contiguous and impl.dtype in _LOOP_FLOATS:
        # the network's case: one loop, 4x faster than np.maximum (measured here: 13 us
        # for 32K float32 elements, the loop 3, as a NumPy multiply)
        a = impl.array()
        result = np.empty(a.shape, a.dtype)
        _relu_loop(a.reshape(-1), result.reshape(-1), a.dtype.type(0))
        return out(result, impl.dtype)
    if impl.dtype.is_complex:      # complex numbers have no order: no max(x, 0)
        reject_complex("relu", self)
    if impl.dtype is dt.bool:
        shape_rule("unary_relu")("relu", (self,))   # NumPy would accept it; PyTorch does not
    a = impl.array()
    with np.errstate(invalid="ignore"):     # (ml_dtypes' NaN comparison flags it)
        r = np.where(a < 0, np.zeros((), a.dtype), a)    # the loop's rule, below
    return out_like1(r, impl.dtype, self)


_LOOP_FLOATS = (dt.float32, dt.float64)


@loop
def _relu_loop(x, result, zero):
    for i in range(x.size):
        v = x[i]
        result[i] = zero if v < 0 else v     # NaN and -0.0 pass through, as in PyTorch


# ---- in-place: compute into the tensor's own memory ----------------------------------
# Two tests, written out in each kernel below (a call costs as much as either test), say
# when the general checks have nothing to refuse:
#
# * "fits self": `other` has self's sizes, or is 0-dim on self's device (a wrapped number,
#   `x.add_(1.0)`): its broadcast is self's sizes and check_devices lets it through, so
#   binary_inplace could only find the result type's cast to check.
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
    if scales_b(alpha, dtype):
        b = scaled_by_alpha(op, self, other, alpha, dtype, b)
    other_sizes = other_impl.sizes
    if other_sizes == impl.sizes or (not other_sizes and other_impl._device is impl._device):
        if dtype is not impl.dtype:     # (a dtype can always be cast to itself)
            check_inplace_cast(op, dtype, self)
    else:
        binary_inplace(op, (self, other))     # the broadcast result must fit in self
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
        binary_inplace("mul_", (self, other))     # fits into self: shape and dtype
    if 0 in impl.strides or other_impl.storage is impl.storage:
        check_inplace_overlap("mul_", self, ("other", other))
    np.copyto(impl.array(), np.multiply(*mul_div_arrays(self, other, dtype)),
              casting="unsafe")
    return self


def div_(self, other):
    impl, other_impl = self._impl, other._impl
    dtype = float_dtype(result_type2(self, other))
    other_sizes = other_impl.sizes
    # (self's float dtype takes any result type's cast, so both cast checks pass)
    if not (dtype is impl.dtype and (other_sizes == impl.sizes or (
            not other_sizes and other_impl._device is impl._device))):
        binary_inplace("div_", (self, other))
        check_inplace_cast("div_", dtype, self)
    if 0 in impl.strides or other_impl.storage is impl.storage:
        check_inplace_overlap("div_", self, ("other", other))
    r = call_ignoring(_DIVIDE_ERRORS, np.true_divide, *mul_div_arrays(self, other, dtype))
    # Written back outside the error state: into self's float dtype, a rounding at most
    # (which can overflow, never divide or make a nan), as `div` wraps its result.
    np.copyto(impl.array(), r, casting="unsafe")
    return self


def relu_(self):
    if self._impl.dtype.is_complex:
        reject_complex("relu_", self)
    if self._impl.dtype is dt.bool:
        shape_rule("unary_relu")("relu_", (self,))
    check_inplace_overlap("relu_", self)
    a = self._impl.array()
    if self._impl.is_contiguous and self._impl.dtype in _LOOP_FLOATS:
        flat = a.reshape(-1)
        _relu_loop(flat, flat, a.dtype.type(0))
        return self
    with np.errstate(invalid="ignore"):
        np.copyto(a, np.zeros((), a.dtype), where=a < 0)     # relu's rule
    return self


def sign(self):
    if self._impl.dtype.is_complex:      # PyTorch's sign is real; sgn is the complex one
        reject_complex("sign", self)
    a = self._impl.array()
    if a.dtype == np.bool_:
        return out_like1(a.copy(), dt.bool, self)  # NumPy has no bool sign loop; sign(b) is b
    r = np.sign(a)
    if self._impl.dtype.is_floating_point:
        r = np.where(np.isnan(a), np.zeros((), a.dtype), r)   # PyTorch: sign(nan) is 0
    return out_like1(r, self._impl.dtype, self)


# ---- in place, the unary functions: computed as above, written back into self ---------
exp_ = inplace_of(exp, "pointwise.unary_float", "exp_")
log_ = inplace_of(log, "pointwise.unary_float", "log_")
sqrt_ = inplace_of(sqrt, "pointwise.unary_float", "sqrt_")
sin_ = inplace_of(sin, "pointwise.unary_float", "sin_")
cos_ = inplace_of(cos, "pointwise.unary_float", "cos_")
tanh_ = inplace_of(tanh, "pointwise.unary_float", "tanh_")
sigmoid_ = inplace_of(sigmoid, "pointwise.unary_float", "sigmoid_")
neg_ = inplace_of(neg, "pointwise.unary_neg", "neg_")
abs_ = inplace_of(abs, "pointwise.unary_no_bool", "abs_")


def _rsqrt(x):
    return 1 / np.sqrt(x)


# ---- float functions: integers and bool compute in the default float dtype -----------
reciprocal = unary_float_kernel("reciprocal", lambda x: 1 / x)
rsqrt = unary_float_kernel("rsqrt", _rsqrt)
exp2 = unary_float_kernel("exp2", np.exp2)
expm1 = unary_float_kernel("expm1", np.expm1)
log2 = unary_float_kernel("log2", np.log2)
log10 = unary_float_kernel("log10", np.log10)
log1p = unary_float_kernel("log1p", np.log1p)
tan = unary_float_kernel("tan", np.tan)
asin = unary_float_kernel("asin", np.arcsin)
acos = unary_float_kernel("acos", np.arccos)
atan = unary_float_kernel("atan", np.arctan)
sinh = unary_float_kernel("sinh", np.sinh)
cosh = unary_float_kernel("cosh", np.cosh)
erf = unary_float_kernel("erf", _erf.erf)     # NumPy has none: see _erf.py
erfc = unary_float_kernel("erfc", _erf.erfc)


def logit(self, eps):
    """log(p / (1 - p)), with p clamped to [eps, 1 - eps] when eps is given."""
    if self._impl.dtype.is_complex:
        reject_complex("logit", self)
    dtype = float_dtype(self._impl.dtype)
    (p,) = arrays(dtype, self)
    if eps is not None:
        # The bounds in the input's own dtype, as PyTorch's kernel takes them (scalar_t):
        # for bfloat16, 1 - 1e-6 is 1, so p = 1 stays 1 and its logit is inf
        store = (dtype.np if self._impl.dtype.is_floating_point else np.dtype(np.float32)).type
        lo = store(eps)
        hi = store(store(1) - lo)
        p = np.clip(p, float(lo), float(hi))
    with np.errstate(all="ignore"):
        return out_like(np.log(p / (1 - p)), dtype, self)


floor = rounding_kernel("floor", np.floor)
ceil = rounding_kernel("ceil", np.ceil)
trunc = rounding_kernel("trunc", np.trunc)
round = rounding_kernel("round", np.rint)   # noqa: A001 - half to even, like torch.round


def round_decimals(self, decimals):
    """round(x * 10**d) / 10**d (half to even), as PyTorch computes it; integers only
    with decimals == 0."""
    reject_complex("round", self, kind="round_decimals")
    shape_rule("pointwise.unary_floating")("round", (self,))
    (x,) = arrays(self._impl.dtype, self)
    with np.errstate(all="ignore"):
        if decimals >= 0:
            scale = 10.0 ** decimals
            r = np.rint(x * scale) / scale
        else:
            scale = 10.0 ** -decimals
            r = np.rint(x / scale) * scale
    return out_like(r, self._impl.dtype, self)


def frac(self):
    if self._impl.dtype.is_complex:
        reject_complex("frac", self)
    shape_rule("pointwise.unary_floating")("frac", (self,))
    (x,) = arrays(self._impl.dtype, self)
    with np.errstate(invalid="ignore"):   # frac(inf) is inf - inf = nan, as in torch
        return out_like(x - np.trunc(x), self._impl.dtype, self)


def floor_divide(self, other):
    """floor(self / other). Floats follow Python's divmod (exact, unlike floor(a / b))."""
    if self._impl.dtype.is_complex or other._impl.dtype.is_complex:
        reject_complex_args("floor_divide", (("self", self), ("other", other)))
    shape_rule("pointwise.binary_no_bool")("floor_divide", (self, other))
    dtype, (a, b) = promoted(self, other)
    check_int_divisor("floor_divide", dtype, a, b)
    with np.errstate(all="ignore"):
        return out_like(np.floor_divide(a, b), dtype, self, other)


def div_mode(self, other, rounding_mode):
    """div.Tensor_mode: true division, or rounded toward zero ('trunc') or down ('floor')."""
    if rounding_mode in ("trunc", "floor"):
        reject_complex_args("div", (("self", self), ("other", other)),
                            kind=f"div_{rounding_mode}")
    shape_rule("pointwise.div_mode")("div", (self, other, rounding_mode))
    if rounding_mode is None:
        dtype = float_dtype(binary("div", (self, other)).dtype)
        a, b = arrays(dtype, self, other)
        with np.errstate(all="ignore"):
            return out_like(a / b, dtype, self, other)
    dtype, (a, b) = promoted(self, other)
    check_int_divisor("div", dtype, a, b)
    with np.errstate(all="ignore"):
        if rounding_mode == "floor":
            return out_like(np.floor_divide(a, b), dtype, self, other)
        if dtype.is_floating_point:
            return out_like(np.trunc(a / b), dtype, self, other)
        return out_like(trunc_divide(a, b), dtype, self, other)


def remainder(self, other):
    """self - floor(self / other) * other: the sign of the divisor, like Python's %."""
    if self._impl.dtype.is_complex or other._impl.dtype.is_complex:
        reject_complex_args("remainder", (("self", self), ("other", other)))
    shape_rule("pointwise.binary_no_bool")("remainder", (self, other))
    dtype, (a, b) = promoted(self, other)
    check_int_divisor("remainder", dtype, a, b)
    with np.errstate(all="ignore"):
        return out_like(np.remainder(a, b), dtype, self, other)


def fmod(self, other):
    """self - trunc(self / other) * other: the sign of the dividend, like C's fmod."""
    if self._impl.dtype.is_complex or other._impl.dtype.is_complex:
        reject_complex_args("fmod", (("self", self), ("other", other)))
    shape_rule("pointwise.binary_no_bool")("fmod", (self, other))
    dtype, (a, b) = promoted(self, other)
    check_int_divisor("fmod", dtype, a, b)
    with np.errstate(all="ignore"):
        return out_like(np.fmod(a, b), dtype, self, other)


def atan2(self, other):
    if self._impl.dtype.is_complex or other._impl.dtype.is_complex:
        reject_complex_args("atan2", (("self", self), ("other", other)))
    dtype = float_dtype(binary("atan2", (self, other)).dtype)
    a, b = arrays(dtype, self, other)
    return out_like(np.arctan2(a, b), dtype, self, other)


def hypot(self, other):
    """sqrt(self**2 + other**2) without overflow in the squares (np.hypot scales)."""
    if self._impl.dtype.is_complex or other._impl.dtype.is_complex:
        reject_complex_args("hypot", (("self", self), ("other", other)))
    shape_rule("pointwise.binary_floating")("hypot", (self, other))
    dtype, (a, b) = promoted(self, other)
    return out_like(np.hypot(a, b), dtype, self, other)


# ---- in-place forms -----------------------------------------------------------------
reciprocal_ = inplace_of(reciprocal, "pointwise.unary_float", "reciprocal_")
rsqrt_ = inplace_of(rsqrt, "pointwise.unary_float", "rsqrt_")
exp2_ = inplace_of(exp2, "pointwise.unary_float", "exp2_")
expm1_ = inplace_of(expm1, "pointwise.unary_float", "expm1_")
log2_ = inplace_of(log2, "pointwise.unary_float", "log2_")
log10_ = inplace_of(log10, "pointwise.unary_float", "log10_")
log1p_ = inplace_of(log1p, "pointwise.unary_float", "log1p_")
tan_ = inplace_of(tan, "pointwise.unary_float", "tan_")
asin_ = inplace_of(asin, "pointwise.unary_float", "asin_")
acos_ = inplace_of(acos, "pointwise.unary_float", "acos_")
atan_ = inplace_of(atan, "pointwise.unary_float", "atan_")
sinh_ = inplace_of(sinh, "pointwise.unary_float", "sinh_")
cosh_ = inplace_of(cosh, "pointwise.unary_float", "cosh_")
erf_ = inplace_of(erf, "pointwise.unary_float", "erf_")
erfc_ = inplace_of(erfc, "pointwise.unary_float", "erfc_")
logit_ = inplace_of(logit, "pointwise.unary_float", "logit_")
floor_ = inplace_of(floor, "pointwise.unary_no_bool", "floor_")
ceil_ = inplace_of(ceil, "pointwise.unary_no_bool", "ceil_")
trunc_ = inplace_of(trunc, "pointwise.unary_no_bool", "trunc_")
round_ = inplace_of(round, "pointwise.unary_no_bool", "round_")
_round_decimals_ = inplace_of(round_decimals, "pointwise.unary_floating", "round_")
frac_ = inplace_of(frac, "pointwise.unary_floating", "frac_")
floor_divide_ = inplace_of(floor_divide, "pointwise.binary_no_bool", "floor_divide_")
_div_mode_ = inplace_of(div_mode, "pointwise.div_mode", "div_")


# (their complex refusals name the in-place op, with the out-of-place overload's message)
def round_decimals_(self, decimals):
    reject_complex("round_", self, kind="round_decimals")
    return _round_decimals_(self, decimals)


def div_mode_(self, other, rounding_mode):
    if rounding_mode in ("trunc", "floor"):
        reject_complex_args("div_", (("self", self), ("other", other)),
                            kind=f"div_{rounding_mode}")
    return _div_mode_(self, other, rounding_mode)
remainder_ = inplace_of(remainder, "pointwise.binary_no_bool", "remainder_")
fmod_ = inplace_of(fmod, "pointwise.binary_no_bool", "fmod_")
atan2_ = inplace_of(atan2, "pointwise.binary_float", "atan2_")
hypot_ = inplace_of(hypot, "pointwise.binary_floating", "hypot_")


def clamp(self, min, max):  # noqa: A002 - the schema's names
    """min(max(self, min), max) with number bounds; a nan input stays nan.

        for each i:  out[i] = self[i] < min ? min : (self[i] > max ? max : self[i])
    """
    if self._impl.dtype.is_complex:     # complex numbers have no order
        reject_complex("clamp", self)
    spec = shape_rule("pointwise.clamp_scalar")("clamp", (self, min, max))
    (x,) = arrays(spec.dtype, self)
    return out_like(clamp_arrays(x, min, max), spec.dtype, self)


def clamp_tensor(self, min, max):  # noqa: A002
    """clamp.Tensor: bounds are tensors that broadcast with self (either may be None)."""
    op = "clamp" if min is not None else "clamp_max"
    reject_complex_args(op, (("self", self), ("min", min), ("max", max)))
    shape_rule("pointwise.clamp")(op, (self, min, max))
    dtype, arrs = promoted(*[t for t in (self, min, max) if t is not None])
    it = iter(arrs[1:])
    lo = next(it) if min is not None else None
    hi = next(it) if max is not None else None
    return out_like(clamp_arrays(arrs[0], lo, hi), dtype, self)


def lerp_scalar(self, end, weight):
    """self + weight * (end - self), with a number weight."""
    spec = shape_rule("pointwise.lerp")("lerp", (self, end, weight))
    a, b = arrays(spec.dtype, self, end)
    w = np.asarray(weight, a.dtype)
    # One weight: choose PyTorch's formula once instead of computing both per element.
    diff = b - a
    if builtins.abs(weight) < 0.5:   # (`abs` here is the kernel; |w| for a complex w)
        return out_like(a + w * diff, spec.dtype, self, end)
    return out_like(b - diff * (1 - w), spec.dtype, self, end)


def lerp_tensor(self, end, weight):
    spec = shape_rule("pointwise.lerp")("lerp", (self, end, weight))
    a, b, w = arrays(spec.dtype, self, end, weight)
    return out_like(_lerp(a, b, w), spec.dtype, self, end, weight)


def _lerp(a, b, w):
    # PyTorch's form: exact at both ends (w = 0 gives a, w = 1 gives b) and monotone.
    # NOTE: PyTorch's vectorised kernel computes each branch as one fused multiply-add;
    # NumPy has none, and the exact emulation (tensorplay/_fma.py) made lerp_ 13x slower
    # and Adam's step 2x, so this rounds twice: one unit apart from PyTorch in about one
    # element in five, within every tolerance.
    return np.where(np.abs(w) < 0.5, a + w * (b - a), b - (b - a) * (1 - w))


def addcmul(self, tensor1, tensor2, value):
    """self + value * tensor1 * tensor2."""
    spec = shape_rule("pointwise.addcmul")("addcmul", (self, tensor1, tensor2, value))
    a, t1, t2 = arrays(spec.dtype, self, tensor1, tensor2)
    value = scalar_as(value, spec.dtype)
    r = a + value * (t1 * t2) if value != 1 else a + t1 * t2
    return out_like(r, spec.dtype, self, tensor1, tensor2)


def addcdiv(self, tensor1, tensor2, value):
    """self + value * tensor1 / tensor2."""
    spec = shape_rule("pointwise.addcdiv")("addcdiv", (self, tensor1, tensor2, value))
    a, t1, t2 = arrays(spec.dtype, self, tensor1, tensor2)
    with np.errstate(all="ignore"):
        return out_like(a + value * (t1 / t2), spec.dtype, self, tensor1, tensor2)


def nan_to_num(self, nan, posinf, neginf):
    """nan -> `nan` (0), +inf -> `posinf` (the dtype's largest), -inf -> `neginf`
    (the dtype's lowest). Integers and bool have none of these: a copy."""
    dtype = self._impl.dtype
    a = self._impl.array()
    if dtype.is_complex:
        # each part on its own, as PyTorch does: nan + inf j -> 0 + max j
        part = dtype.to_real()
        r = np.empty(a.shape, dtype.np)
        r.real = _nan_to_num_array(a.real, part, nan, posinf, neginf)
        r.imag = _nan_to_num_array(a.imag, part, nan, posinf, neginf)
        return out_like(r, dtype, self)
    if not dtype.is_floating_point:
        return out_like(a.copy(), dtype, self)
    return out_like(_nan_to_num_array(a, dtype, nan, posinf, neginf), dtype, self)


def _nan_to_num_array(a, dtype, nan, posinf, neginf):
    """nan_to_num of the array `a` of the floating `dtype`."""
    info = ml_dtypes.finfo(dtype.np)   # (np.finfo does not know bfloat16)
    big = info.max if posinf is None else posinf
    small = info.min if neginf is None else neginf
    x = a.astype(compute_np(dtype))
    r = np.where(np.isnan(x), 0.0 if nan is None else nan, x)
    r = np.where(np.isposinf(x), big, np.where(np.isneginf(x), small, r))
    return r.astype(x.dtype)


# ---- in-place forms -----------------------------------------------------------------
clamp_ = inplace_of(clamp, "pointwise.clamp_scalar", "clamp_")
clamp_tensor_ = inplace_of(clamp_tensor, "pointwise.clamp", "clamp_")
lerp_scalar_ = inplace_of(lerp_scalar, "pointwise.lerp", "lerp_")
lerp_tensor_ = inplace_of(lerp_tensor, "pointwise.lerp", "lerp_")
addcmul_ = inplace_of(addcmul, "pointwise.addcmul", "addcmul_")
addcdiv_ = inplace_of(addcdiv, "pointwise.addcdiv", "addcdiv_")
_nan_to_num_float_ = inplace_of(nan_to_num, "pointwise.unary_same", "nan_to_num_")


def nan_to_num_(self, nan, posinf, neginf):
    """In place. Integers and bool have no nan or inf: PyTorch copies self onto itself,
    which writes nothing (so an expanded integer tensor is no overlap to refuse)."""
    if self._impl.dtype.is_differentiable:
        return _nan_to_num_float_(self, nan, posinf, neginf)
    shape_rule("pointwise.unary_same")("nan_to_num_", (self, nan, posinf, neginf))
    return self


def clamp_max_tensor(self, max):  # noqa: A002
    """clamp_max.Tensor: min(self, max), broadcasting (clamp.Tensor needs a `min`)."""
    return clamp_tensor(self, None, max)


clamp_max_tensor_ = inplace_of(clamp_max_tensor, "pointwise.clamp_max", "clamp_max_")


# ---- inverse hyperbolics, angle, copysign, frexp, nextafter, gcd/lcm ------------------
acosh = unary_float_kernel("acosh", np.arccosh)
asinh = unary_float_kernel("asinh", np.arcsinh)
atanh = unary_float_kernel("atanh", np.arctanh)


def angle(self):
    """The argument of a complex number, atan2(imag, real), a real tensor; of a real
    number: pi below 0, 0 at or above it, nan kept."""
    if self._impl.dtype.is_complex:
        # Row-major whatever self's layout: PyTorch's complex angle is angle_out into a
        # fresh empty tensor, which TensorIterator resizes row-major (a real input's angle
        # is an ordinary pointwise op and keeps the input's layout).
        dtype = self._impl.dtype.to_real()
        return out(np.array(np.angle(self._impl.array()), dtype.np, order="C"), dtype)
    dtype = float_dtype(self._impl.dtype)
    (x,) = arrays(dtype, self)
    r = np.where(np.isnan(x), x, np.where(x < 0, np.asarray(np.pi, x.dtype),
                                          np.zeros((), x.dtype)))
    return out_like(r, dtype, self)


def copysign(self, other):
    """abs(self) with the sign bit of other (so -0.0 and -nan count as negative)."""
    if self._impl.dtype.is_complex or other._impl.dtype.is_complex:
        reject_complex_args("copysign", (("self", self), ("other", other)))
    dtype = float_dtype(result_type2(self, other))
    a, b = arrays(dtype, self, other)
    return out_like(np.copysign(a, b), dtype, self, other)


def frexp(self):
    """(mantissa, exponent) with self = mantissa * 2 ** exponent, 0.5 <= |mantissa| < 1;
    0, inf and nan give themselves and exponent 0. The half types go through float32,
    which holds their values exactly."""
    shape_rule("pointwise.frexp")("frexp", (self,))
    dtype = self._impl.dtype
    (x,) = arrays(dtype, self)
    mantissa, exponent = np.frexp(x)
    return out_like(mantissa, dtype, self), out_like(exponent.astype(np.int32), dt.int32, self)


def nextafter(self, other):
    """The next representable value after self towards other, in the result's own dtype
    (never through float32: the step is a unit in the last place of that dtype)."""
    if self._impl.dtype.is_complex or other._impl.dtype.is_complex:
        reject_complex_args("nextafter", (("self", self), ("other", other)))
    spec = shape_rule("pointwise.binary_floating")("nextafter", (self, other))
    a, b = array_as(self, spec.dtype), array_as(other, spec.dtype)
    with np.errstate(over="ignore"):      # the largest float steps to inf, no warning
        return out_like(np.nextafter(a, b), spec.dtype, self, other)


def gcd(self, other):
    """The greatest common divisor of |self| and |other| (Euclid; gcd(0, 0) = 0)."""
    if self._impl.dtype.is_complex or other._impl.dtype.is_complex:
        reject_complex_args("gcd", (("self", self), ("other", other)))
    spec = shape_rule("pointwise.binary_integral")("gcd", (self, other))
    a, b = array_as(self, spec.dtype), array_as(other, spec.dtype)
    return out_like(np.gcd(a, b), spec.dtype, self, other)


def lcm(self, other):
    """|self / gcd * other|, as PyTorch computes it (0 when the gcd is 0)."""
    if self._impl.dtype.is_complex or other._impl.dtype.is_complex:
        reject_complex_args("lcm", (("self", self), ("other", other)))
    spec = shape_rule("pointwise.binary_integral")("lcm", (self, other))
    a, b = array_as(self, spec.dtype), array_as(other, spec.dtype)
    g = np.gcd(a, b)
    with np.errstate(all="ignore"):
        r = np.abs(a // np.where(g == 0, 1, g) * b)
    return out_like(np.where(g == 0, np.zeros((), r.dtype), r), spec.dtype, self, other)


# ---- in-place forms -----------------------------------------------------------------
acosh_ = inplace_of(acosh, "pointwise.unary_float", "acosh_")
asinh_ = inplace_of(asinh, "pointwise.unary_float", "asinh_")
atanh_ = inplace_of(atanh, "pointwise.unary_float", "atanh_")
sign_ = inplace_of(sign, "pointwise.unary_same", "sign_")
copysign_ = inplace_of(copysign, "pointwise.binary_float", "copysign_")
nextafter_ = inplace_of(nextafter, "pointwise.binary_floating", "nextafter_")
gcd_ = inplace_of(gcd, "pointwise.binary_integral", "gcd_")
lcm_ = inplace_of(lcm, "pointwise.binary_integral", "lcm_")
pow_ = inplace_of(pow, "pointwise.binary_pow", "pow_")
xlogy_ = inplace_of(xlogy, "pointwise.binary_float", "xlogy_")
# The comparisons write their 0/1 result in self's dtype (every dtype holds it).
eq_ = inplace_of(eq, "logic.logical_inplace", "eq_")
ne_ = inplace_of(ne, "logic.logical_inplace", "ne_")
lt_ = inplace_of(lt, "logic.logical_inplace", "lt_")
le_ = inplace_of(le, "logic.logical_inplace", "le_")
gt_ = inplace_of(gt, "logic.logical_inplace", "gt_")
ge_ = inplace_of(ge, "logic.logical_inplace", "ge_")
