"""The expression table of the pointwise ops on `cuda`: each op is one Triton expression
over its tensor inputs x, y, z (converted to the compute dtype) and named scalars, which
triton_kernels/_template.py puts into a kernel of the right arity and rank. The
launchers that check, allocate and launch are in triton_kernels/pointwise.py.

Two tables:

    EXPRESSIONS  the arithmetic operators, comparisons, `where` and the common unary
                 functions (add, mul, eq, exp, relu...): pointwise.py writes their
                 launchers by hand, because they are the hot path of every model
    OPS          everything else (math, rounding, division, logic, bitwise, blends such
                 as clamp/lerp/addcmul, activations and random fills): an entry names
                 the op it serves and its expression; pointwise.py makes the launcher
                 from the op itself

For OPS, the kernel's parameters are the schema's (the dispatcher checks them), its
result's shape and dtype come from the op's shape rule (ops.yaml `meta:`, the same
rule the Meta backend runs), and the in-place forms (`exp_`, `clamp_`...) write
through self's strides. An expression that depends on a non-tensor argument (gelu's
`approximate`, clamp's optional bounds) is a function of the call's arguments that
returns the expression text and its scalar arguments.

    >>> import triton_kernels; print(triton_kernels.source("silu"))
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Union

import ml_dtypes

from tensorplay import _dtype as dt
from tensorplay._promotion import result_type
from tensorplay._random import philox_inputs
from tensorplay.errors import ArgumentError, DTypeError
from tensorplay.kernel_support.checks import broadcast
from tensorplay.kernel_support.ops import call_below_autograd
from tensorplay.kernel_support.random_bounds import random_bounds

# op -> (arity, expression over x, y, z[, scalar names]). The expression sees its
# inputs converted to the compute dtype; helpers of triton_kernels/_math.py are `_math.*`.
EXPRESSIONS = {
    # binary arithmetic
    "add": (2, "x + y * alpha", ("alpha",)),
    "sub": (2, "x - y * alpha", ("alpha",)),
    "mul": (2, "x * y"),
    "div": (2, "x / y"),
    "pow": (2, "_math.pow(x, y)"),
    "maximum": (2, "_math.maximum(x, y)"),
    "minimum": (2, "_math.minimum(x, y)"),
    "xlogy": (2, "_math.xlogy(x, y)"),
    # comparisons (computed in the inputs' promoted dtype, stored as bool)
    "eq": (2, "x == y"),
    "ne": (2, "x != y"),
    "lt": (2, "x < y"),
    "le": (2, "x <= y"),
    "gt": (2, "x > y"),
    "ge": (2, "x >= y"),
    # ternary
    "where": (3, "tl.where(x != 0, y, z)"),
    # unary
    "neg": (1, "-x"),
    "abs": (1, "tl.abs(x)"),
    "sign": (1, "_math.sign(x)"),
    "exp": (1, "tl.exp(x)"),
    "log": (1, "tl.log(x)"),
    "sqrt": (1, "tl.sqrt(x)"),
    "sin": (1, "tl.sin(x)"),
    "cos": (1, "tl.cos(x)"),
    "tanh": (1, "_math.tanh(x)"),
    "sigmoid": (1, "tl.sigmoid(x)"),
    "relu": (1, "tl.where(x < 0, 0, x)"),   # keeps NaN, like torch.relu
    # conversion (copy_, clone, _to_copy): the store converts to the result's dtype
    "copy": (1, "x"),
}


# The complex forms (Triton has no complex type, triton_kernels/_template.py): op ->
# (arity, result, expression over the parts xr, xi, yr, yi[, scalar names]). A complex
# result's expression is its pair (real, imag), a real result's one value; a real input
# of a complex call has xi = 0. A scalar `alpha` arrives as its parts alpha_re, alpha_im.
# An op listed here takes complex tensors on `cuda` (pointwise.py marks its launchers);
# any other runs its CPU kernel on host copies (dispatch/kernel_selection.py).
COMPLEX_EXPRESSIONS = {
    # (xr + i xi) + alpha (yr + i yi)
    "add": (2, "complex", "(xr + (yr * alpha_re - yi * alpha_im), "
                          "xi + (yr * alpha_im + yi * alpha_re))", ("alpha",)),
    "sub": (2, "complex", "(xr - (yr * alpha_re - yi * alpha_im), "
                          "xi - (yr * alpha_im + yi * alpha_re))", ("alpha",)),
    # (a + bi)(c + di) = (ac - bd) + (ad + bc)i
    "mul": (2, "complex", "(xr * yr - xi * yi, xr * yi + xi * yr)"),
    "div": (2, "complex", "_math.complex_div(xr, xi, yr, yi)"),
    "neg": (1, "complex", "(-xr, -xi)"),
    "abs": (1, "real", "_math.hypot(xr, xi)"),
    "exp": (1, "complex", "_math.complex_exp(xr, xi)"),
    "log": (1, "complex", "_math.complex_log(xr, xi)"),
    "sqrt": (1, "complex", "_math.complex_sqrt(xr, xi)"),
    "reciprocal": (1, "complex", "_math.complex_div(tl.zeros_like(xr) + 1.0, tl.zeros_like(xr), "
                                 "xr, xi)"),
    "sin": (1, "complex", "_math.complex_sin(xr, xi)"),
    "cos": (1, "complex", "_math.complex_cos(xr, xi)"),
    "tanh": (1, "complex", "_math.complex_tanh(xr, xi)"),
    "sigmoid": (1, "complex", "_math.complex_sigmoid(xr, xi)"),
    "angle": (1, "real", "_math.complex_arg(xr, xi)"),
    # where(condition, self, other): the condition is the real input x
    "where": (3, "complex", "(tl.where(xr != 0, yr, zr), tl.where(xr != 0, yi, zi))"),
}


Expression = Union[str, Callable]


@dataclass(frozen=True)
class Pointwise:
    """One op: `expr` over x, y, z (its tensor arguments in schema order, converted to
    the compute dtype) and scalar arguments by name.

    compute:  "result"  the result's dtype (half types widened to float32)
              "inputs"  the inputs' promoted dtype (tests such as isnan, logical ops)
              "float"   the inputs' dtype if floating, else float64 (isclose of integers)
    expr:     a string, or fn(args) -> (string, {scalar name: value}) where `args` maps
              the schema's argument names to the call's values
    check:    fn(op, args, compute dtype) run before the launch (integer division by 0)
    """
    op: str
    expr: Expression
    compute: str = "result"
    check: Callable = None


# ---- expressions that depend on the call ---------------------------------------------
def _scalars(expr, *names):
    """An expression whose named scalars are the schema arguments of the same name."""
    return lambda a: (expr, {n: a[n] for n in names})


def _logit(a):
    if a["eps"] is None:
        return "tl.log(x / (1.0 - x))", {}
    return "_math.logit(x, eps)", {"eps": a["eps"]}


def _round_decimals(a):
    d = a["decimals"]
    if d >= 0:
        return "_math.round_half_even(x * scale) / scale", {"scale": 10.0 ** d}
    return "_math.round_half_even(x / scale) * scale", {"scale": 10.0 ** -d}


def _div_mode(a):
    mode = a["rounding_mode"]
    if mode is None:
        return "x / y", {}
    if mode == "trunc":
        return "_math.trunc_divide(x, y)", {}
    return "_math.floor_divide(x, y)", {}


def _as_compute(name):
    """A scalar argument converted to the compute dtype, as the CPU kernels convert it
    (a bound 2.5 clamps an int tensor at 2)."""
    return f"tl.full([BLOCK], {name}, COMPUTE)"


def _clamp_scalar(a):
    expr, scalars = "x", {}
    if a["min"] is not None:
        expr, scalars["lo"] = f"_math.maximum({expr}, {_as_compute('lo')})", a["min"]
    if a["max"] is not None:
        expr, scalars["hi"] = f"_math.minimum({expr}, {_as_compute('hi')})", a["max"]
    return expr, scalars


def _clamp_tensor(a):
    # The bounds are the inputs after x, in order, the absent one skipped.
    if a["min"] is not None and a["max"] is not None:
        return "_math.minimum(_math.maximum(x, y), z)", {}
    if a["min"] is not None:
        return "_math.maximum(x, y)", {}
    return "_math.minimum(x, y)", {}


def _nan_to_num(a):
    dtype = a["self"].dtype
    if not dtype.is_floating_point:
        return "x", {}                      # integers and bool have no nan or inf
    info = ml_dtypes.finfo(dtype.np)
    nan = 0.0 if a["nan"] is None else float(a["nan"])
    big = float(info.max) if a["posinf"] is None else float(a["posinf"])
    small = float(info.min) if a["neginf"] is None else float(a["neginf"])
    # Literal constants: a Python float argument would reach the kernel as float32,
    # and float64's largest value is not one.
    return (f"tl.where(x != x, {nan!r}, tl.where(x == float('inf'), {big!r}, "
            f"tl.where(x == -float('inf'), {small!r}, x)))"), {}


def _isclose(a):
    expr = ("(x == y) | (_math.isfinite(x) & _math.isfinite(y) & "
            "(tl.abs(x - y) <= atol + rtol * tl.abs(y)))")
    if a["equal_nan"]:
        expr += " | ((x != x) & (y != y))"
    return expr, {"rtol": a["rtol"], "atol": a["atol"]}


def _bitwise_not(a):
    return ("x == 0" if a["self"].dtype is dt.bool else "~x"), {}


def _gelu(a):
    if a["approximate"] == "tanh":
        return ("0.5 * x * (1.0 + _math.tanh(0.7978845608028654 * "
                "(x + 0.044715 * x * x * x)))"), {}
    return "x * 0.5 * (1.0 + tl.erf(x * 0.7071067811865476))", {}


def _gelu_backward(a):
    # x: grad_output, y: self.  d/dy y Phi(y) = Phi(y) + y phi(y); with 'tanh', the
    # derivative of 0.5 y (1 + tanh(u)), u = sqrt(2 / pi) (y + 0.044715 y^3).
    if a["approximate"] == "tanh":
        t = "_math.tanh(0.7978845608028654 * (y + 0.044715 * y * y * y))"
        return (f"x * (0.5 * (1.0 + {t}) + 0.5 * y * (1.0 - {t} * {t}) * "
                f"0.7978845608028654 * (1.0 + 0.134145 * y * y))"), {}
    return ("x * (0.5 * (1.0 + tl.erf(y * 0.7071067811865476)) + "
            "y * 0.3989422804014327 * tl.exp(-0.5 * y * y))"), {}


def _random(expr, *names):
    """Philox random numbers (tl.rand/tl.randn) at (seed, offset + element index): the
    `cuda` generator's seed, and an offset that advances with every call, so a run is
    reproducible after tp.manual_seed and no two calls draw the same numbers."""
    def build(a):
        n = a["self"].numel()
        seed, offset = philox_inputs(a.get("generator"), n)
        scalars = {name: a[name] for name in names}
        scalars.update(seed=seed, offset=offset)
        return expr, scalars
    return build


_UNIFORM = "tl.rand(seed, index + offset)"


# ---- random_, cauchy_, log_normal_, geometric_ (Philox) ------------------------------------
_WORD = "tl.randint(seed, index + offset).to(tl.int64)"
# Two 32-bit words per element for a range of 2^32 or more (counters 2i and 2i + 1).
_WIDE_WORD = ("((tl.randint(seed, 2 * (index + offset)).to(tl.uint64) << 32) | "
              "tl.randint(seed, 2 * (index + offset) + 1).to(tl.uint64))")


def _random_integers(a):
    """random_'s three overloads: low + (a random word % span), one 32-bit word when the
    span fits in it, two otherwise; every int64 (from_ = int64 min, to = None): a whole
    64-bit word."""
    dtype = a["self"].dtype
    if "from_" in a:
        low, high = random_bounds("random_", dtype, a["from_"], a["to"])
    elif "to" in a:
        low, high = random_bounds("random_", dtype, 0, a["to"])
    else:                                           # random_(): [0, the largest integer]
        low, high = 0, _largest_random(dtype) + 1
    n = a["self"].numel()
    if high is None:
        seed, offset = philox_inputs(a.get("generator"), 2 * n)
        return f"{_WIDE_WORD}.to(tl.int64, bitcast=True)", {"seed": seed, "offset": offset}
    span = high - low
    if span < 2 ** 32:
        seed, offset = philox_inputs(a.get("generator"), n)
        return f"low + {_WORD} % span", {"low": low, "span": span, "seed": seed,
                                          "offset": offset}
    seed, offset = philox_inputs(a.get("generator"), 2 * n)
    return (f"low + ({_WIDE_WORD} % span.to(tl.uint64)).to(tl.int64)",
            {"low": low, "span": span, "seed": seed, "offset": offset})


def _largest_random(dtype):
    """random_() draws 0 .. this: 2^digits for a float (every integer up to it is exact),
    the largest value of an integer dtype, 1 for bool."""
    if dtype.is_floating_point:
        return 1 << {dt.float16: 11, dt.bfloat16: 8, dt.float32: 24, dt.float64: 53}[dtype]
    if dtype is dt.bool:
        return 1
    return 255 if dtype is dt.uint8 else (1 << (8 * dtype.itemsize - 1)) - 1


def _geometric(a):
    # 1 - U lies in (0, 1]: its log is finite; U = 0 would give 0 trials, hence the max.
    build = _random(f"_math.maximum(_math.ceil(tl.log(1.0 - {_UNIFORM}) / log1mp), 1.0)")
    expr, scalars = build(a)
    scalars["log1mp"] = math.log1p(-a["p"])
    return expr, scalars


# ---- integer division by zero: an error, as on the CPU ---------------------------------
def _nonzero_divisor(op, a, compute):
    if compute.is_floating_point or a.get("rounding_mode", "floor") is None:
        return
    other = a["other"]
    # an empty result divides nothing: PyTorch checks no divisor then
    quotients = math.prod(broadcast(op, [("self", a["self"].shape), ("other", other.shape)]))
    if quotients and call_below_autograd("eq.Scalar", other, 0).max().item():
        raise ArgumentError(f"{op}(): integer division by zero (argument 'other' has a zero "
                            f"element)", op=op, arg="other")


def _probabilities(arg):
    """bernoulli's probabilities must lie in [0, 1] (a reduction on the device; the
    offending value is looked up on the host only to write the error)."""
    def check(op, a, compute):
        p = a[arg]
        if isinstance(p, (int, float)):
            bad = not 0 <= p <= 1
            value = p
        else:
            at_least_0 = call_below_autograd("ge.Scalar", p, 0)
            at_most_1 = call_below_autograd("le.Scalar", p, 1)
            inside = call_below_autograd("logical_and", at_least_0, at_most_1)
            bad = p.numel() > 0 and not call_below_autograd("all", inside).item()
            value = None
            if bad:
                host = p.detach().cpu().numpy().astype("float64").reshape(-1)
                value = host[~((host >= 0) & (host <= 1))][0]
        if bad:
            raise ArgumentError(f"{op}(): argument '{arg}' must hold probabilities in [0, 1], "
                                f"but it contains {value}", op=op, arg=arg)
    return check


# ---- the inverse-hyperbolics / number-theory / bit-shift section ------------------------
_BITS = {dt.float16: ("tl.float16", "tl.int16"), dt.bfloat16: ("tl.bfloat16", "tl.int16"),
         dt.float32: ("tl.float32", "tl.int32"), dt.float64: ("tl.float64", "tl.int64")}


def _nextafter(a):
    """The step is a unit in the last place of the result's own dtype (a half type is
    computed in float32, so the expression names the dtype to step in)."""
    self, other = a["self"], a["other"]
    dtype = result_type(self, other) if hasattr(self, "_impl") else self.dtype  # (compile_check)
    floating, integer = _BITS[dtype]
    return f"_math.nextafter(x, y, {floating}, {integer})", {}


def _infinity_test(sign):
    """isposinf / isneginf: integers and bool are never infinite."""
    def build(a):
        if a["self"].dtype.is_floating_point:
            return f"x == {sign}float('inf')", {}
        return "x != x", {}
    return build


def _no_negative_integer_power(op, a, compute):
    """pow_ with a Python number: an integer self refuses a negative exponent (pow's
    own check, in pointwise.py's launcher)."""
    exponent = a["exponent"]
    if not compute.is_floating_point and exponent._impl.wrapped_number and exponent.item() < 0:
        raise DTypeError(f"pow_(): Integers to negative integer powers are not allowed "
                         f"(argument 'exponent' is {exponent.item()} and 'self' is "
                         f"{a['self'].dtype.name})", op="pow_", arg="exponent")


# The unary functions of EXPRESSIONS whose in-place forms (exp_, neg_...) are OPS entries.
_UNARY_INPLACE = {name: EXPRESSIONS[name][1] for name in
                  ("exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "neg", "abs",
                   "sign")}

# kernel name (what ops.yaml's `CUDA:` names) -> the op and its expression
OPS = {
    # float functions: integers and bool compute in the default float dtype
    "reciprocal": Pointwise("reciprocal", "1.0 / x"),
    "rsqrt": Pointwise("rsqrt", "1.0 / tl.sqrt(x)"),
    "exp2": Pointwise("exp2", "tl.exp2(x)"),
    "expm1": Pointwise("expm1", "_math.expm1(x)"),
    "log2": Pointwise("log2", "tl.log2(x)"),
    "log10": Pointwise("log10", "tl.log(x) * 0.4342944819032518"),
    "log1p": Pointwise("log1p", "_math.log1p(x)"),
    "tan": Pointwise("tan", "tl.sin(x) / tl.cos(x)"),
    "asin": Pointwise("asin", "_math.asin(x)"),
    "acos": Pointwise("acos", "_math.acos(x)"),
    "atan": Pointwise("atan", "_math.atan(x)"),
    "sinh": Pointwise("sinh", "_math.sinh(x)"),
    "cosh": Pointwise("cosh", "_math.cosh(x)"),
    "erf": Pointwise("erf", "tl.erf(x)"),
    "erfc": Pointwise("erfc", "_math.erfc(x)"),
    "logit": Pointwise("logit", _logit),
    # rounding (integers are whole: a copy)
    "floor": Pointwise("floor", "_math.floor(x)"),
    "ceil": Pointwise("ceil", "_math.ceil(x)"),
    "trunc": Pointwise("trunc", "_math.trunc(x)"),
    "round": Pointwise("round", "_math.round_half_even(x)"),
    "round_decimals": Pointwise("round.decimals", _round_decimals),
    "frac": Pointwise("frac", "x - _math.trunc(x)"),
    # the division family
    "div_mode": Pointwise("div.Tensor_mode", _div_mode, check=_nonzero_divisor),
    "floor_divide": Pointwise("floor_divide", "_math.floor_divide(x, y)",
                              check=_nonzero_divisor),
    "remainder": Pointwise("remainder.Tensor", "_math.remainder(x, y)",
                           check=_nonzero_divisor),
    "fmod": Pointwise("fmod.Tensor", "x % y", check=_nonzero_divisor),
    "atan2": Pointwise("atan2", "_math.atan2(x, y)"),
    "hypot": Pointwise("hypot", "_math.hypot(x, y)"),
    # blends
    "clamp": Pointwise("clamp", _clamp_scalar),
    "clamp_tensor": Pointwise("clamp.Tensor", _clamp_tensor),
    "clamp_max_tensor": Pointwise("clamp_max.Tensor", "_math.minimum(x, y)"),
    "lerp_scalar": Pointwise("lerp.Scalar", _scalars(f"_math.lerp(x, y, {_as_compute('weight')})",
                                                     "weight")),
    "lerp_tensor": Pointwise("lerp.Tensor", "_math.lerp(x, y, z)"),
    "addcmul": Pointwise("addcmul", _scalars(f"x + {_as_compute('value')} * (y * z)", "value")),
    "addcdiv": Pointwise("addcdiv", _scalars(f"x + {_as_compute('value')} * (y / z)", "value")),
    "nan_to_num": Pointwise("nan_to_num", _nan_to_num),
    # tests and logic (computed in the inputs' dtype, a bool result)
    "isnan": Pointwise("isnan", "x != x", compute="inputs"),
    "isinf": Pointwise("isinf", "_math.isinf(x)", compute="inputs"),
    "isfinite": Pointwise("isfinite", "_math.isfinite(x)", compute="inputs"),
    "isclose": Pointwise("isclose", _isclose, compute="float"),
    "logical_not": Pointwise("logical_not", "x == 0", compute="inputs"),
    "logical_and": Pointwise("logical_and", "(x != 0) & (y != 0)", compute="inputs"),
    "logical_or": Pointwise("logical_or", "(x != 0) | (y != 0)", compute="inputs"),
    "logical_xor": Pointwise("logical_xor", "(x != 0) != (y != 0)", compute="inputs"),
    "bitwise_not": Pointwise("bitwise_not", _bitwise_not),
    "bitwise_and": Pointwise("bitwise_and.Tensor", "x & y"),
    "bitwise_or": Pointwise("bitwise_or.Tensor", "x | y"),
    "bitwise_xor": Pointwise("bitwise_xor.Tensor", "x ^ y"),
    # activations
    "leaky_relu": Pointwise("leaky_relu", _scalars("tl.where(x > 0, x, x * negative_slope)",
                                                   "negative_slope")),
    "elu": Pointwise("elu", _scalars("scale * tl.where(x > 0, x, alpha * _math.expm1("
                                     "_math.minimum(x, 0.0) * input_scale))",
                                     "alpha", "scale", "input_scale")),
    "gelu": Pointwise("gelu", _gelu),
    "silu": Pointwise("silu", "x * _math.stable_sigmoid(x)"),
    "gelu_backward": Pointwise("gelu_backward", _gelu_backward),
    "silu_backward": Pointwise("silu_backward", "x * _math.stable_sigmoid(y) * "
                               "(1.0 + y * (1.0 - _math.stable_sigmoid(y)))"),
    "mish": Pointwise("mish", "x * _math.tanh(_math.softplus(x))"),
    "softplus": Pointwise("softplus", _scalars("tl.where(x * beta > threshold, x, "
                                               "_math.softplus(x * beta) / beta)",
                                               "beta", "threshold")),
    "hardtanh": Pointwise("hardtanh", _scalars(f"_math.minimum(_math.maximum(x, "
                                               f"{_as_compute('min_val')}), "
                                               f"{_as_compute('max_val')})",
                                               "min_val", "max_val")),
    "hardsigmoid": Pointwise("hardsigmoid",
                             "_math.minimum(_math.maximum(x + 3.0, 0.0), 6.0) / 6.0"),
    "hardswish": Pointwise("hardswish",
                           "x * _math.minimum(_math.maximum(x + 3.0, 0.0), 6.0) / 6.0"),
    "threshold": Pointwise("threshold", _scalars(f"tl.where(x <= threshold, "
                                                 f"{_as_compute('value')}, x)",
                                                 "threshold", "value")),
    # inverse hyperbolics, angle, copysign, nextafter, number theory, bit shifts
    "acosh": Pointwise("acosh", "_math.acosh(x)"),
    "asinh": Pointwise("asinh", "_math.asinh(x)"),
    "atanh": Pointwise("atanh", "_math.atanh(x)"),
    # (pi added to a zero of x's dtype: a bare literal is a float32 constant, float32's pi)
    "angle": Pointwise("angle", "tl.where(x != x, x, tl.where(x < 0, tl.zeros_like(x) + "
                                "3.141592653589793, 0.0))"),
    "copysign": Pointwise("copysign.Tensor", "_math.copysign(x, y)"),
    "nextafter": Pointwise("nextafter", _nextafter),
    "gcd": Pointwise("gcd", "_math.gcd(x, y)"),
    "lcm": Pointwise("lcm", "_math.lcm(x, y)"),
    "signbit": Pointwise("signbit", "_math.signbit(x)", compute="inputs"),
    "isposinf": Pointwise("isposinf", _infinity_test(""), compute="inputs"),
    "isneginf": Pointwise("isneginf", _infinity_test("-"), compute="inputs"),
    "bitwise_left_shift": Pointwise("bitwise_left_shift.Tensor", "_math.left_shift(x, y)"),
    "bitwise_right_shift": Pointwise("bitwise_right_shift.Tensor", "_math.right_shift(x, y)"),
    # in-place forms of EXPRESSIONS ops: comparisons write 0/1 in self's dtype
    "eq_": Pointwise("eq_.Tensor", "x == y", compute="inputs"),
    "ne_": Pointwise("ne_.Tensor", "x != y", compute="inputs"),
    "lt_": Pointwise("lt_.Tensor", "x < y", compute="inputs"),
    "le_": Pointwise("le_.Tensor", "x <= y", compute="inputs"),
    "gt_": Pointwise("gt_.Tensor", "x > y", compute="inputs"),
    "ge_": Pointwise("ge_.Tensor", "x >= y", compute="inputs"),
    "pow_": Pointwise("pow_.Tensor", "_math.pow(x, y)", check=_no_negative_integer_power),
    "xlogy_": Pointwise("xlogy_.Tensor", "_math.xlogy(x, y)"),
    # random fills (Philox)
    "normal_": Pointwise("normal_", _random("mean + std * tl.randn(seed, index + offset)",
                                            "mean", "std")),
    "uniform_": Pointwise("uniform_", _random(f"from_ + (to - from_) * {_UNIFORM}",
                                              "from_", "to")),
    "exponential_": Pointwise("exponential_", _random(f"-_math.log1p(-{_UNIFORM}) / lambd",
                                                      "lambd")),
    "bernoulli": Pointwise("bernoulli", _random(f"tl.where({_UNIFORM} < x, 1.0, 0.0)"),
                           check=_probabilities("self")),
    "bernoulli_p": Pointwise("bernoulli.p", _random(f"tl.where({_UNIFORM} < p, 1.0, 0.0)",
                                                    "p"), check=_probabilities("p")),
    "bernoulli__float": Pointwise("bernoulli_.float",
                                  _random(f"tl.where({_UNIFORM} < p, 1.0, 0.0)", "p"),
                                  check=_probabilities("p")),
    "bernoulli__tensor": Pointwise("bernoulli_.Tensor",
                                   _random(f"tl.where({_UNIFORM} < y, 1.0, 0.0)"),
                                   check=_probabilities("p")),
    "random_": Pointwise("random_", _random_integers),
    "random__to": Pointwise("random_.to", _random_integers),
    "random__from": Pointwise("random_.from", _random_integers),
    "cauchy_": Pointwise("cauchy_", _random(f"median + sigma * _math.tan_half_turn({_UNIFORM})",
                                            "median", "sigma")),
    "log_normal_": Pointwise("log_normal_", _random("tl.exp(mean + std * tl.randn(seed, "
                                                    "index + offset))", "mean", "std")),
    "geometric_": Pointwise("geometric_", _geometric),
}

# In-place forms: the same expression, written into self.
_INPLACE = {
    "reciprocal", "rsqrt", "exp2", "expm1", "log2", "log10", "log1p", "tan", "asin", "acos",
    "atan", "sinh", "cosh", "erf", "erfc", "logit", "floor", "ceil", "trunc", "round",
    "round_decimals", "frac", "div_mode", "floor_divide", "remainder", "fmod", "atan2",
    "hypot", "clamp", "clamp_tensor", "clamp_max_tensor", "lerp_scalar", "lerp_tensor",
    "addcmul", "addcdiv", "nan_to_num", "logical_not", "logical_and", "logical_or",
    "logical_xor", "bitwise_not", "bitwise_and", "bitwise_or", "bitwise_xor", "leaky_relu",
    "elu", "gelu", "silu", "mish", "hardtanh", "hardsigmoid", "hardswish", "threshold",
    "acosh", "asinh", "atanh", "copysign", "nextafter", "gcd", "lcm", "bitwise_left_shift",
    "bitwise_right_shift",
}


def _inplace_op(op):
    if op == "floor_divide":
        return "floor_divide_.Tensor"
    name, dot, overload = op.partition(".")
    return f"{name}_{dot}{overload}"


for _kernel in sorted(_INPLACE):
    _entry = OPS[_kernel]
    OPS[f"{_kernel}_"] = Pointwise(_inplace_op(_entry.op), _entry.expr, _entry.compute,
                                   _entry.check)
for _name, _expr in _UNARY_INPLACE.items():
    OPS[f"{_name}_"] = Pointwise(f"{_name}_", _expr)
del _kernel, _entry, _name, _expr
