"""Database entries for the pointwise math: float functions, rounding, the division
family, clamp/clip, lerp, addcmul/addcdiv, nan_to_num, and the in-place forms of the
unary functions of db_pointwise.py (exp_, log_, ..., abs_)."""
from __future__ import annotations

from functools import partial

import torch

import tensorplay as tp
from tensorplay.errors import ArgumentError, DTypeError, ShapeError
from opinfo.complex_errors import refused_for_complex, with_errors
from opinfo.core import (
    ALL_BUT_BOOL, ALL_DTYPES, COMPLEX, GRAD_COMPLEX, FLOATING, ErrorInput, OpInfo,
    SampleInput, make_tensor, rng_for,
)
from opinfo.samples import sample_inputs_binary, sample_inputs_scalar, sample_inputs_unary

E = ErrorInput
S = SampleInput
EDGES = (0.0, -0.0, 1.0, -1.0, float("inf"), float("-inf"), float("nan"), 30.0, -30.0)


def _t(shape, dtype=tp.float32, device="cpu"):
    return make_tensor(shape, dtype, device, rng=rng_for("errors", shape, dtype))


def with_kwargs(gen, **kwargs):
    """A sample generator whose samples all get `kwargs` added."""
    def samples(op, device, dtype, requires_grad):
        for s in gen(op, device, dtype, requires_grad):
            yield S(s.input, s.args, {**s.kwargs, **kwargs}, s.name + f" {kwargs}", s.meta,
                    s.grad)
    return samples


def errors_inplace_int(op, device):
    """A float result can't be written into an integer tensor."""
    yield E(S(_t((3,), tp.int64, device)), DTypeError,
            rf"{op.inplace}\(\): result type float32 can't be cast to the desired output type "
            r"int64", arg="self", inplace=True)


def errors_bool(op, device, arg="self"):
    yield E(S(_t((3,), tp.bool, device)), DTypeError,
            rf"{op.name}\(\): not implemented for bool tensors", arg=arg)


def errors_integral(op, device, kwargs=None):
    yield E(S(_t((3,), tp.int64, device), kwargs=kwargs or {}), DTypeError,
            rf"{op.name}\(\): not implemented for int64 tensors", arg="self")


def errors_binary_shape(op, device, other="other", extra=()):
    yield E(S(_t((3, 4), device=device), (_t((5,), device=device), *extra)), ShapeError,
            rf"{op.name}\(\): argument '{other}' \(shape \[5\]\) is not broadcastable",
            arg=other)
    if op.inplace:
        yield E(S(_t((3, 1), device=device), (_t((3, 4), device=device), *extra)), ShapeError,
                rf"{op.inplace}\(\): output with shape \[3, 1\] doesn't match the broadcast "
                r"shape", arg="self", inplace=True)


# ---- float functions ----------------------------------------------------------------
# Complex dtypes: values and gradients against PyTorch's, complex128 gradcheck.
WITH_COMPLEX = ALL_DTYPES + COMPLEX


def _no_kernel(kernel):
    """PyTorch's refusal of a complex64 tensor by an op without a complex kernel."""
    return refused_for_complex(f'"{kernel}" not implemented for \'ComplexFloat\'')


# (name, low, high, extra sample options): the sampled domain keeps gradients finite. A
# complex sample takes both parts in [low, high): off the branch cuts (log's negative
# reals, asin's |x| > 1 on the real axis).
FLOAT_FUNCTIONS = (
    ("reciprocal", None, None, {"exclude_zero": True}),
    ("rsqrt", 0.1, 5, {}),
    ("exp2", None, None, {}),
    ("expm1", None, None, {}),
    ("log2", 0.1, 5, {}),
    ("log10", 0.1, 5, {}),
    ("log1p", -0.9, 5, {}),
    ("tan", -1.2, 1.2, {}),
    ("asin", -0.95, 0.95, {}),
    ("acos", -0.95, 0.95, {}),
    ("atan", None, None, {}),
    ("sinh", None, None, {}),
    ("cosh", None, None, {}),
    ("erf", None, None, {}),
    ("erfc", None, None, {}),
)

# PyTorch has no complex erf and erfc
_NO_COMPLEX = {"erf": "erf_vml_cpu", "erfc": "erfc_vml_cpu"}

UNARY = [
    OpInfo(name, overloads=(name, f"{name}_"), inplace=f"{name}_",
           dtypes=ALL_DTYPES if name in _NO_COMPLEX else WITH_COMPLEX,
           grad_dtypes=(tp.float32, tp.float64) if name in _NO_COMPLEX else GRAD_COMPLEX,
           sample_inputs_func=partial(sample_inputs_unary, low=low, high=high,
                                      extra_values=EDGES, **opts),
           error_inputs_func=with_errors(errors_inplace_int, name in _NO_COMPLEX and
                                         _no_kernel(_NO_COMPLEX.get(name)) or None))
    for name, low, high, opts in FLOAT_FUNCTIONS
]


def _logit_samples(op, device, dtype, requires_grad):
    floating = dtype.is_floating_point
    yield from sample_inputs_unary(op, device, dtype, requires_grad, low=0.05 if floating else 0,
                                   high=0.95 if floating else 2,
                                   extra_values=(0.0, 1.0, 0.5, -0.5, 1.5, float("nan")))
    rng = rng_for(op.full_name, dtype, "eps")
    for eps in (0.2, 1e-6):
        yield S(make_tensor((3, 4), dtype, device, rng=rng, low=0.05 if floating else 0,
                            high=0.95 if floating else 2,
                            requires_grad=requires_grad and dtype.is_floating_point),
                (eps,), name=f"eps={eps}")


UNARY += [
    OpInfo("logit", overloads=("logit", "logit_"), inplace="logit_",
           sample_inputs_func=_logit_samples,
           error_inputs_func=with_errors(errors_inplace_int, _no_kernel("logit_cpu"))),
]

# The unary functions of db_pointwise.py, in place.
_UNARY_INPLACE = (
    ("exp", ALL_DTYPES, {}), ("log", ALL_DTYPES, {"low": 0.1, "high": 5}),
    ("sqrt", ALL_DTYPES, {"low": 0.1, "high": 5}), ("sin", ALL_DTYPES, {}),
    ("cos", ALL_DTYPES, {}), ("tanh", ALL_DTYPES, {}), ("sigmoid", ALL_DTYPES, {}),
    ("neg", ALL_BUT_BOOL, {}), ("abs", ALL_BUT_BOOL, {"exclude_zero": True}),
)
# abs of a complex number is real: it cannot be written back into its complex tensor
_abs_inplace_complex = refused_for_complex("In-place abs is not supported for complex tensors.",
                                           outplace=False)

UNARY += [
    OpInfo(name, "inplace", overloads=(f"{name}_",), inplace=f"{name}_",
           dtypes=dtypes + (COMPLEX if name != "abs" else ()),
           supports_autograd=False, sample_inputs_func=partial(sample_inputs_unary, **opts),
           error_inputs_func=errors_inplace_int if dtypes is ALL_DTYPES else
           _abs_inplace_complex if name == "abs" else None)
    for name, dtypes, opts in _UNARY_INPLACE
]


# ---- rounding -----------------------------------------------------------------------
# PyTorch's refusals of complex rounding
_ROUNDING_MESSAGES = {
    "floor": "floor is not supported for complex inputs",
    "ceil": "ceil is not supported for complex inputs",
    "trunc": "trunc is not supported for complex inputs",
    "round": f'"round_vml_cpu" not implemented for \'ComplexFloat\'',
}
ROUNDING = [
    OpInfo(name, overloads=(name, f"{name}_"), inplace=f"{name}_", dtypes=ALL_BUT_BOOL,
           sample_inputs_func=partial(sample_inputs_unary, extra_values=EDGES + (2.5, -0.5)),
           error_inputs_func=with_errors(errors_bool,
                                         refused_for_complex(_ROUNDING_MESSAGES[name])))
    for name in ("floor", "ceil", "trunc", "round")
] + [
    OpInfo("round", "decimals", overloads=("round.decimals", "round_.decimals"),
           inplace="round_", dtypes=FLOATING,
           sample_inputs_func=with_kwargs(partial(sample_inputs_unary, low=-50, high=50),
                                          decimals=1),
           error_inputs_func=with_errors(
               partial(errors_integral, kwargs={"decimals": 1}),
               refused_for_complex(f'"round_cpu" not implemented for \'ComplexFloat\'',
                                   kwargs={"decimals": 1})), method=False),
    OpInfo("round", "negative_decimals", overloads=("round.decimals",), dtypes=FLOATING,
           sample_inputs_func=with_kwargs(partial(sample_inputs_unary, low=-500, high=500),
                                          decimals=-2), method=False),
    OpInfo("frac", overloads=("frac", "frac_"), inplace="frac_", dtypes=FLOATING,
           sample_inputs_func=partial(sample_inputs_unary, extra_values=EDGES),
           error_inputs_func=with_errors(errors_integral, _no_kernel("frac_cpu"))),
]


# ---- division family ----------------------------------------------------------------
_DIVISION_KERNELS = {"floor_divide": "div_floor_cpu", "remainder": "remainder_cpu",
                     "fmod": "fmod_cpu"}


def errors_division(op, device):
    yield from errors_binary_shape(op, device)
    yield from refused_for_complex(
        f'"{_DIVISION_KERNELS[op.name]}" not implemented for \'ComplexFloat\'', other=True)(op, device)
    yield E(S(_t((3,), tp.bool, device), (_t((3,), tp.bool, device),)), DTypeError,
            rf"{op.name}\(\): not implemented for bool tensors", arg="self")
    yield E(S(tp.tensor([1, 2], device=device), (tp.tensor([1, 0], device=device),)),
            ArgumentError, rf"{op.name}\(\): integer division by zero", arg="other",
            meta=False)


def errors_div_mode(op, device):
    yield E(S(_t((3,), device=device), (_t((3,), device=device),), {"rounding_mode": "up"}),
            ArgumentError, r"div\(\): argument 'rounding_mode' must be None, 'trunc' or "
            r"'floor', but got 'up'", arg="rounding_mode")
    # rounded quotients are real: no complex kernel in PyTorch
    yield from refused_for_complex(
        f'"div_{op.variant}_cpu" not implemented for \'ComplexFloat\'', other=True,
        kwargs={"rounding_mode": op.variant})(op, device)


_division = partial(sample_inputs_binary, rhs_exclude_zero=True)

DIVISION = [
    OpInfo("true_divide", overloads=("true_divide.Tensor", "true_divide_.Tensor"),
           dtypes=WITH_COMPLEX, grad_dtypes=GRAD_COMPLEX,
           inplace="true_divide_", ref="true_divide", sample_inputs_func=_division),
    OpInfo("true_divide", "scalar", overloads=("true_divide.Scalar", "true_divide_.Scalar"),
           inplace="true_divide_",
           sample_inputs_func=partial(sample_inputs_scalar, exclude_zero=True)),
    # torch: floor_divide has no derivative ("not implemented"); neither do we.
    OpInfo("floor_divide", overloads=("floor_divide", "floor_divide_.Tensor"),
           inplace="floor_divide_", dtypes=ALL_BUT_BOOL, supports_autograd=False,
           sample_inputs_func=_division, error_inputs_func=errors_division),
    OpInfo("floor_divide", "scalar", overloads=("floor_divide.Scalar", "floor_divide_.Scalar"),
           inplace="floor_divide_", dtypes=ALL_BUT_BOOL, supports_autograd=False,
           sample_inputs_func=partial(sample_inputs_scalar, exclude_zero=True)),
]
for _name in ("remainder", "fmod"):
    DIVISION += [
        OpInfo(_name, overloads=(f"{_name}.Tensor", f"{_name}_.Tensor"), inplace=f"{_name}_",
               dtypes=ALL_BUT_BOOL, sample_inputs_func=_division,
               error_inputs_func=errors_division),
        OpInfo(_name, "scalar", overloads=(f"{_name}.Scalar", f"{_name}_.Scalar"),
               inplace=f"{_name}_", dtypes=ALL_BUT_BOOL,
               sample_inputs_func=partial(sample_inputs_scalar, exclude_zero=True)),
    ]
def _number_by_tensor_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for number in (7, -2.5, True):
        for shape, layout in (((3, 4), "transposed"), ((), "contiguous"), ((0, 2), "contiguous")):
            yield S(make_tensor(shape, dtype, device, rng=rng, layout=layout, exclude_zero=True),
                    (number,), name=f"{number!r} % {list(shape)} {layout}")


DIVISION += [
    # torch has no derivative for remainder(number, tensor); ours comes from remainder.Tensor.
    OpInfo("remainder", "scalar_tensor", overloads=("remainder.Scalar_Tensor",),
           dtypes=ALL_BUT_BOOL, method=False, supports_meta=False,
           op=lambda x, number: tp.remainder(number, x),
           ref=lambda x, number: torch.remainder(number, x), supports_autograd=False,
           sample_inputs_func=_number_by_tensor_samples),
]
for _mode in ("trunc", "floor"):
    DIVISION += [
        OpInfo("div", _mode, overloads=("div.Tensor_mode", "div_.Tensor_mode"), inplace="div_",
               dtypes=ALL_BUT_BOOL, ref=partial(torch.div, rounding_mode=_mode),
               sample_inputs_func=with_kwargs(_division, rounding_mode=_mode),
               error_inputs_func=errors_div_mode),
        OpInfo("div", f"{_mode}_scalar", overloads=("div.Scalar_mode", "div_.Scalar_mode"),
               inplace="div_", dtypes=ALL_BUT_BOOL, ref=partial(torch.div, rounding_mode=_mode),
               sample_inputs_func=with_kwargs(partial(sample_inputs_scalar, exclude_zero=True),
                                              rounding_mode=_mode)),
    ]
DIVISION += [
    OpInfo("div", "mode_none", overloads=("div.Tensor_mode", "div_.Tensor_mode"),
           dtypes=WITH_COMPLEX, grad_dtypes=GRAD_COMPLEX,
           inplace="div_", ref=partial(torch.div, rounding_mode=None),
           sample_inputs_func=with_kwargs(_division, rounding_mode=None)),
    OpInfo("atan2", overloads=("atan2", "atan2_"), inplace="atan2_",
           sample_inputs_func=sample_inputs_binary,
           error_inputs_func=with_errors(errors_binary_shape, refused_for_complex(
               f'"atan2_cpu" not implemented for \'ComplexFloat\'', other=True))),
    OpInfo("hypot", overloads=("hypot", "hypot_"), inplace="hypot_", dtypes=FLOATING,
           sample_inputs_func=partial(sample_inputs_binary, mixed=False),
           error_inputs_func=lambda op, device: [*errors_binary_shape(op, device), E(
               S(_t((3,), tp.int64, device), (_t((3,), tp.int64, device),)), DTypeError,
               r"hypot\(\): not implemented for int64 tensors", arg="self"),
               *refused_for_complex(f'"hypot_cpu" not implemented for \'ComplexFloat\'',
                                    other=True)(op, device)]),
]


# ---- clamp, lerp, addcmul/addcdiv, nan_to_num ---------------------------------------
def _clamp_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = requires_grad and dtype.is_floating_point
    bounds = [(-1, 1), (0, None), (None, 2), (2, -2), (-1.5, 0.5)]
    for (lo, hi), (shape, layout) in zip(bounds, [((3, 4), "contiguous"), ((3, 4), "transposed"),
                                                  ((), "contiguous"), ((2, 3), "strided"),
                                                  ((0, 3), "contiguous")]):
        yield S(make_tensor(shape, dtype, device, rng=rng, layout=layout, requires_grad=grad),
                (lo, hi), name=f"{layout} [{lo}, {hi}]")
    if dtype.is_floating_point:
        yield S(tp.tensor(list(EDGES), dtype=dtype, device=device), (-2, 2), name="edges",
                grad=False)


def _clamp_tensor_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = requires_grad and dtype.is_floating_point
    for shape, lo, hi, what in (((3, 4), (3, 4), (4,), "broadcast bounds"),
                                ((3, 4), (1, 4), None, "min only"),
                                ((), (), (), "0-dim"), ((2, 3), (3,), (2, 1), "mixed shapes"),
                                ((4,), (3, 4), None, "bounds broadcast self")):
        def bound(s, low, high):
            return None if s is None else make_tensor(s, dtype, device, rng=rng, low=low,
                                                      high=high, requires_grad=grad)
        yield S(make_tensor(shape, dtype, device, rng=rng, layout="transposed",
                            requires_grad=grad),
                (bound(lo, -3, 0), bound(hi, 0, 3)), name=what)


def errors_clamp(op, device):
    yield E(S(_t((3,), device=device), (None, None)), ArgumentError,
            rf"{op.name}\(\): at least one of 'min' or 'max' must not be None", arg="min")
    yield from _clamp_complex(op, device)


# complex numbers are not ordered: PyTorch's clamp refuses them, whatever the bounds
_clamp_complex = refused_for_complex("clamp is not supported for complex types", args=(0, 1))


def _clamp_max_samples(op, device, dtype, requires_grad):
    for s in _clamp_tensor_samples(op, device, dtype, requires_grad):
        bound = s.args[1] if s.args[1] is not None else s.args[0]
        yield S(s.input, (bound,), name=s.name)


def _clamp_min_samples(op, device, dtype, requires_grad):
    for s in _clamp_tensor_samples(op, device, dtype, requires_grad):
        yield S(s.input, (s.args[0],), name=s.name)


def _one_bound_scalar_samples(op, device, dtype, requires_grad):
    for s in _clamp_samples(op, device, dtype, requires_grad):
        bound = s.args[0] if s.args[0] is not None else s.args[1]
        yield S(s.input, (bound,), name=s.name, grad=s.grad)


def errors_clamp_tensor(op, device):
    yield E(S(_t((3, 4), device=device), (_t((5,), device=device), None)), ShapeError,
            rf"{op.name}\(\): argument 'min' \(shape \[5\]\) is not broadcastable", arg="min")
    yield from refused_for_complex("clamp is not supported for complex types",
                                   other=True)(op, device)


def _lerp_samples(op, device, dtype, requires_grad, tensor_weight):
    rng = rng_for(op.full_name, dtype)
    grad = requires_grad

    def t(shape, layout="contiguous", low=None, high=None):
        return make_tensor(shape, dtype, device, rng=rng, layout=layout, low=low, high=high,
                           requires_grad=grad)
    for a, b, w, what in (((3, 4), (3, 4), (3, 4), "same shape"),
                          ((3, 4), (4,), (3, 1), "broadcast"),
                          ((), (), (), "0-dim"), ((0, 4), (4,), (1,), "empty")):
        weight = t(w, low=-0.5, high=1.5) if tensor_weight else 0.75
        yield S(t(a, "transposed"), (t(b), weight), name=what)
    if not tensor_weight:
        yield S(t((3, 4)), (t((3, 4)), 0.25), name="weight 0.25")
        if dtype.is_complex:     # a complex weight: |w| picks PyTorch's formula
            yield S(t((3, 4)), (t((3, 4)), 0.25 + 0.5j), name="weight 0.25+0.5j")
            yield S(t((3, 4)), (t((3, 4)), 0.5 - 0.75j), name="weight 0.5-0.75j")


def errors_lerp(op, device):
    yield E(S(_t((3,), device=device), (_t((3,), tp.float64, device), 0.5)), DTypeError,
            r"lerp\(\): expected dtype float32 for argument 'end' but got dtype float64",
            arg="end")
    yield E(S(_t((3, 4), device=device), (_t((5,), device=device), 0.5)), ShapeError,
            r"lerp\(\): argument 'end' \(shape \[5\]\) is not broadcastable", arg="end")


def _addc_samples(op, device, dtype, requires_grad, divide=False):
    rng = rng_for(op.full_name, dtype)
    grad = requires_grad and dtype.is_differentiable

    def t(shape, layout="contiguous", exclude_zero=False):
        return make_tensor(shape, dtype, device, rng=rng, layout=layout,
                           exclude_zero=exclude_zero, requires_grad=grad)
    value = 0.5 - 1j if dtype.is_complex else 0.5 if dtype.is_floating_point else 2
    for a, b, c, what in (((3, 4), (3, 4), (3, 4), "same shape"),
                          ((3, 4), (4,), (3, 1), "broadcast"),
                          ((4,), (3, 4), (1, 4), "broadcast self"),
                          ((), (), (), "0-dim"), ((0, 4), (4,), (1,), "empty")):
        for kwargs in ({}, {"value": value}):
            yield S(t(a, "transposed"), (t(b), t(c, exclude_zero=divide)), kwargs, name=what)


def errors_addcmul(op, device):
    yield E(S(_t((3, 4), device=device), (_t((5,), device=device), _t((3, 4), device=device))),
            ShapeError, rf"{op.name}\(\): argument 'tensor1' \(shape \[5\]\) is not "
            r"broadcastable", arg="tensor1")


def errors_addcdiv(op, device):
    yield from errors_addcmul(op, device)
    yield E(S(_t((3,), device=device), (_t((3,), tp.int64, device), _t((3,), tp.int64, device))),
            DTypeError, r"addcdiv\(\): integer division with addcdiv is not supported",
            arg="tensor2")


def _nan_to_num_samples(op, device, dtype, requires_grad):
    yield from sample_inputs_unary(op, device, dtype, requires_grad, extra_values=EDGES)
    if dtype.is_complex:
        # nan, inf and -inf in either part, replaced part by part
        nan, inf = float("nan"), float("inf")
        parts = [complex(nan, 1.0), complex(1.0, inf), complex(-inf, nan), complex(inf, -inf),
                 complex(2.0, -3.0)]
        for kwargs in ({}, {"nan": 1.5, "posinf": 100.0, "neginf": -100.0}):
            yield S(tp.tensor(parts, dtype=dtype, device=device), kwargs=kwargs,
                    name=f"complex edges {kwargs}", grad=False)
    if dtype.is_floating_point:
        for kwargs in ({"nan": 1.5}, {"posinf": 100.0, "neginf": -100.0}):
            yield S(tp.tensor(list(EDGES), dtype=dtype, device=device), kwargs=kwargs,
                    name=f"edges {kwargs}", grad=False)


BLEND = [
    OpInfo("clamp", overloads=("clamp", "clamp_"), inplace="clamp_",
           sample_inputs_func=_clamp_samples, error_inputs_func=errors_clamp),
    OpInfo("clamp", "tensor", overloads=("clamp.Tensor", "clamp_.Tensor"), inplace="clamp_",
           dtypes=ALL_BUT_BOOL, sample_inputs_func=_clamp_tensor_samples,
           error_inputs_func=errors_clamp_tensor),
    OpInfo("clip", overloads=("clip", "clip_"), inplace="clip_", dtypes=ALL_BUT_BOOL,
           sample_inputs_func=_clamp_samples),
    OpInfo("clip", "tensor", overloads=("clip.Tensor", "clip_.Tensor"), inplace="clip_",
           dtypes=ALL_BUT_BOOL, sample_inputs_func=_clamp_tensor_samples),
    OpInfo("clamp_min", overloads=("clamp_min", "clamp_min_"), inplace="clamp_min_",
           dtypes=ALL_BUT_BOOL, sample_inputs_func=_one_bound_scalar_samples,
           error_inputs_func=refused_for_complex("clamp is not supported for complex types",
                                                 args=(0,))),
    OpInfo("clamp_min", "tensor", overloads=("clamp_min.Tensor", "clamp_min_.Tensor"),
           inplace="clamp_min_", dtypes=ALL_BUT_BOOL, sample_inputs_func=_clamp_min_samples),
    OpInfo("clamp_max", overloads=("clamp_max", "clamp_max_"), inplace="clamp_max_",
           dtypes=ALL_BUT_BOOL, sample_inputs_func=_one_bound_scalar_samples,
           error_inputs_func=refused_for_complex("clamp is not supported for complex types",
                                                 args=(1,))),
    OpInfo("clamp_max", "tensor", overloads=("clamp_max.Tensor", "clamp_max_.Tensor"),
           inplace="clamp_max_", dtypes=ALL_BUT_BOOL, sample_inputs_func=_clamp_max_samples,
           error_inputs_func=lambda op, device: [E(
               S(_t((3, 4), device=device), (_t((5,), device=device),)), ShapeError,
               r"clamp_max\(\): argument 'max' \(shape \[5\]\) is not broadcastable",
               arg="max")]),
    OpInfo("lerp", overloads=("lerp.Scalar", "lerp_.Scalar"), inplace="lerp_",
           dtypes=FLOATING + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=partial(_lerp_samples, tensor_weight=False),
           error_inputs_func=errors_lerp),
    OpInfo("lerp", "tensor", overloads=("lerp.Tensor", "lerp_.Tensor"), inplace="lerp_",
           dtypes=FLOATING + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=partial(_lerp_samples, tensor_weight=True)),
    OpInfo("addcmul", overloads=("addcmul", "addcmul_"), inplace="addcmul_",
           dtypes=ALL_BUT_BOOL + COMPLEX, grad_dtypes=GRAD_COMPLEX, sample_inputs_func=_addc_samples,
           error_inputs_func=errors_addcmul,
           tolerances={tp.float16: (4e-3, 4e-3), tp.bfloat16: (2e-2, 3e-2)}),
    OpInfo("addcdiv", overloads=("addcdiv", "addcdiv_"), inplace="addcdiv_",
           dtypes=FLOATING + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=partial(_addc_samples, divide=True),
           error_inputs_func=errors_addcdiv,
           tolerances={tp.float16: (4e-3, 4e-3), tp.bfloat16: (2e-2, 3e-2)}),
    # complex: each part on its own. No complex gradient test: PyTorch refuses to
    # differentiate nan_to_num of a complex tensor (the gradcheck still runs).
    OpInfo("nan_to_num", overloads=("nan_to_num", "nan_to_num_"), inplace="nan_to_num_",
           dtypes=WITH_COMPLEX, sample_inputs_func=_nan_to_num_samples),
]

op_db = UNARY + ROUNDING + DIVISION + BLEND


# ---- inverse hyperbolics, angle, sgn, copysign, frexp, ldexp, nextafter, gcd/lcm,
# ---- rsub, positive, and the in-place forms of ops of db_pointwise.py -----------------
from opinfo.db_pointwise import (  # noqa: E402 - the samples of the out-of-place entries
    _float_power_samples, _heaviside_samples, _pow_samples, _pow_scalar_samples,
)
from opinfo.core import INTEGRAL  # noqa: E402

SIGNED_ZEROS = (0.0, -0.0, 2.0, -3.0, float("inf"), float("-inf"), float("nan"),
                -float("nan"))


def errors_integral_only(op, device):
    yield E(S(_t((3, 4), tp.int64, device), (_t((5,), tp.int64, device),)), ShapeError,
            rf"{op.name}\(\): argument 'other' \(shape \[5\]\) is not broadcastable", arg="other")
    yield E(S(_t((3, 1), tp.int64, device), (_t((3, 4), tp.int64, device),)), ShapeError,
            rf"{op.inplace}\(\): output with shape \[3, 1\] doesn't match the broadcast shape",
            arg="self", inplace=True)
    yield E(S(_t((3,), device=device), (_t((3,), tp.int64, device),)), DTypeError,
            rf"{op.name}\(\): not implemented for float32 tensors \(argument 'self'",
            arg="self")
    yield E(S(_t((3,), tp.bool, device), (_t((3,), tp.bool, device),)), DTypeError,
            rf"{op.name}\(\): not implemented for bool tensors", arg="self")


def _copysign_samples(op, device, dtype, requires_grad):
    # Away from 0 in self: there the gradient is 0 in PyTorch, a kink for finite differences.
    yield from sample_inputs_binary(op, device, dtype, requires_grad, low=0.5, high=3)
    if dtype.is_floating_point:
        a = tp.tensor([1.5, -2.0, 0.0, -0.0, 3.0, float("nan"), -1.0, 4.0], dtype=dtype,
                      device=device)
        b = tp.tensor(list(SIGNED_ZEROS), dtype=dtype, device=device)
        yield S(a, (b,), name="signed zeros and nans", grad=False)


def errors_copysign(op, device):
    yield from errors_binary_shape(op, device)
    yield from errors_inplace_int(op, device)


def errors_inplace_int_binary(op, device):
    yield E(S(_t((3,), tp.int64, device), (_t((3,), tp.int64, device),)), DTypeError,
            rf"{op.inplace}\(\): result type float32 can't be cast to the desired output type "
            r"int64", arg="self", inplace=True)


def _frexp_samples(op, device, dtype, requires_grad):
    yield from sample_inputs_unary(op, device, dtype, requires_grad, low=-40, high=40,
                                   extra_values=EDGES + (0.5, 1024.0, -0.75, 3e-5))
    if dtype in (tp.float32, tp.float64):
        yield S(tp.tensor([1e-40, -3e-39, 1e-45], dtype=dtype, device=device),
                name="subnormal float32 values", grad=False)


def errors_frexp(op, device):
    yield E(S(_t((3,), tp.int64, device)), DTypeError,
            r"frexp\(\): only supports floating-point dtypes \(argument 'self' is int64\)",
            arg="self")


def _ldexp_samples(op, device, dtype, requires_grad):
    yield from sample_inputs_binary(op, device, dtype, requires_grad, rhs_low=-4, rhs_high=4,
                                    mixed=False)
    # NOTE: an integer exponent >= 0 only: PyTorch's LdexpBackward0 computes 2 ** other in
    # integers there, so its gradient for a negative one is 0; ours is 2 ** other.
    rng = rng_for(op.full_name, dtype, "int exponent")
    yield S(make_tensor((3, 4), dtype, device, rng=rng,
                        requires_grad=requires_grad and dtype.is_floating_point),
            (make_tensor((4,), tp.int64, device, rng=rng, low=0, high=5),), name="int exponent")


def _nextafter_samples(op, device, dtype, requires_grad):
    yield from sample_inputs_binary(op, device, dtype, False, mixed=False)
    inf, nan = float("inf"), float("nan")
    a = tp.tensor([1.0, 1.0, 0.0, -0.0, 0.0, -2.0, inf, nan, 2.0, 65504.0], dtype=dtype,
                  device=device)
    b = tp.tensor([2.0, 0.0, 1.0, -1.0, 0.0, -inf, 0.0, 1.0, nan, inf], dtype=dtype,
                  device=device)
    yield S(a, (b,), name="towards zero, away, through zero, infinities and nans")


def errors_nextafter(op, device):
    yield from errors_binary_shape(op, device)
    yield E(S(_t((3,), tp.int64, device), (_t((3,), tp.int64, device),)), DTypeError,
            r"nextafter\(\): not implemented for int64 tensors \(argument 'self'", arg="self")


def _integral_pair_samples(op, device, dtype, requires_grad):
    """gcd and lcm: zeros on either side (gcd(0, 0) = 0), negative values, broadcasting."""
    yield from sample_inputs_binary(op, device, dtype, False, mixed=False)
    if dtype is not tp.uint8:
        a = tp.tensor([12, -18, 0, 7, 0, -9, 6], dtype=dtype, device=device)
        b = tp.tensor([18, 12, 5, 0, 0, -6, -4], dtype=dtype, device=device)
        yield S(a, (b,), name="zeros and signs")
    rng = rng_for(op.full_name, dtype, "mixed")
    yield S(make_tensor((3, 4), dtype, device, rng=rng),
            (make_tensor((4,), tp.int64, device, rng=rng),), name="with int64 other")


def _alpha_kw_samples(op, device, dtype, requires_grad):
    yield from sample_inputs_binary(op, device, dtype, requires_grad)
    rng = rng_for(op.full_name, dtype, "alpha")
    alpha = 0.5 if dtype.is_floating_point else 3
    yield S(make_tensor((3, 4), dtype, device, rng=rng, requires_grad=requires_grad and
                        dtype.is_floating_point),
            (make_tensor((4,), dtype, device, rng=rng),), {"alpha": alpha}, name=f"alpha={alpha}")


def errors_rsub(op, device):
    yield E(S(_t((3, 4), device=device), (_t((5,), device=device),)), ShapeError,
            r"rsub\(\): argument 'other' \(shape \[5\]\) is not broadcastable", arg="other")


def _rsub_scalar_samples(op, device, dtype, requires_grad):
    yield from sample_inputs_scalar(op, device, dtype, requires_grad, bools=False)
    rng = rng_for(op.full_name, dtype, "alpha")
    yield S(make_tensor((3, 4), dtype, device, rng=rng, requires_grad=requires_grad and
                        dtype.is_floating_point), (2,), {"alpha": 3}, name="alpha=3")


def errors_positive(op, device):
    yield E(S(_t((3,), tp.bool, device)), DTypeError,
            r"positive\(\): the `\+` operator, on a bool tensor is not supported", arg="self",
            meta=False)


def _variant_named(gen, variant):
    """A sample generator that reads `op.variant` (float_power's), called as `variant`."""
    def samples(op, device, dtype, requires_grad):
        class As:
            full_name, name = op.full_name, op.name
        As.variant = variant
        yield from gen(As, device, dtype, requires_grad)
    return samples


def errors_float_power_(op, device):
    yield E(S(_t((3,), device=device), (2,)), DTypeError,
            r"float_power_\(\): the base given to float_power_ has dtype float32 but the "
            r"operation's result requires dtype float64", arg="self", inplace=True)


_COMPARE = ("eq", "ne", "lt", "le", "gt", "ge")

EXTRA = [
    # (complex samples: both parts in the real samples' range, off the branch cuts)
    OpInfo("acosh", overloads=("acosh", "acosh_"), inplace="acosh_",
           dtypes=WITH_COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=partial(sample_inputs_unary, low=1.1, high=5,
                                      extra_values=EDGES + (1.0, 0.5)),
           error_inputs_func=errors_inplace_int),
    OpInfo("asinh", overloads=("asinh", "asinh_"), inplace="asinh_",
           dtypes=WITH_COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=partial(sample_inputs_unary, extra_values=EDGES + (1e-5, 1e5)),
           error_inputs_func=errors_inplace_int),
    OpInfo("atanh", overloads=("atanh", "atanh_"), inplace="atanh_",
           dtypes=WITH_COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=partial(sample_inputs_unary, low=-0.9, high=0.9,
                                      extra_values=EDGES + (1e-5, 0.5, -0.99)),
           error_inputs_func=errors_inplace_int),
    # angle of a complex tensor is real (complex64 -> float32), its gradient i z / |z|^2
    OpInfo("angle", overloads=("angle",), dtypes=WITH_COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=partial(sample_inputs_unary, exclude_zero=True,
                                      extra_values=EDGES)),
    # torch.sgn's gradient of a real tensor is a ZeroTensor, which the gradient tests cannot
    # read; ours is sign's (zeros), tested there and in
    # tests/test_pointwise_shifts_and_inplace_grads.py. A complex one's is compared.
    OpInfo("sgn", overloads=("sgn", "sgn_"), inplace="sgn_", dtypes=WITH_COMPLEX,
           grad_dtypes=COMPLEX,
           sample_inputs_func=partial(sample_inputs_unary, extra_values=EDGES)),
    OpInfo("sign", "inplace", overloads=("sign_",), inplace="sign_", supports_autograd=False,
           sample_inputs_func=partial(sample_inputs_unary, extra_values=EDGES),
           error_inputs_func=refused_for_complex(
               "Unlike NumPy, torch.sign is not intended to support complex numbers. Please "
               "use torch.sgn instead.")),
    OpInfo("copysign", overloads=("copysign.Tensor", "copysign_.Tensor"), inplace="copysign_",
           sample_inputs_func=_copysign_samples,
           error_inputs_func=with_errors(errors_binary_shape, refused_for_complex(
               f'"copysign_cpu" not implemented for \'ComplexFloat\'', other=True))),
    OpInfo("copysign", "scalar", overloads=("copysign.Scalar", "copysign_.Scalar"),
           inplace="copysign_",
           sample_inputs_func=partial(sample_inputs_scalar, low=0.5, high=3),
           error_inputs_func=lambda op, device: [E(
               S(_t((3,), tp.int64, device), (-1.0,)), DTypeError,
               r"copysign_\(\): result type float32 can't be cast to the desired output type "
               r"int64", arg="self", inplace=True)]),
    OpInfo("frexp", overloads=("frexp.Tensor",), dtypes=FLOATING,
           sample_inputs_func=_frexp_samples, error_inputs_func=errors_frexp),
    OpInfo("ldexp", overloads=("ldexp.Tensor", "ldexp_"), inplace="ldexp_",
           dtypes=ALL_BUT_BOOL, sample_inputs_func=_ldexp_samples),
    # torch's derivative (2.13): grad passes where self != other, other gets zeros. (No
    # gradcheck: the samples step to a neighbour, so finite differences see a jump.)
    OpInfo("nextafter", overloads=("nextafter", "nextafter_"), inplace="nextafter_",
           dtypes=FLOATING, gradcheck=False, sample_inputs_func=_nextafter_samples,
           error_inputs_func=errors_nextafter),
    OpInfo("gcd", overloads=("gcd", "gcd_"), inplace="gcd_", dtypes=INTEGRAL,
           supports_autograd=False, sample_inputs_func=_integral_pair_samples,
           error_inputs_func=errors_integral_only),
    OpInfo("lcm", overloads=("lcm", "lcm_"), inplace="lcm_", dtypes=INTEGRAL,
           supports_autograd=False, sample_inputs_func=_integral_pair_samples,
           error_inputs_func=errors_integral_only),
    OpInfo("rsub", overloads=("rsub.Tensor",), dtypes=ALL_BUT_BOOL,
           sample_inputs_func=_alpha_kw_samples, error_inputs_func=errors_rsub),
    OpInfo("rsub", "scalar", overloads=("rsub.Scalar",), dtypes=ALL_BUT_BOOL,
           sample_inputs_func=_rsub_scalar_samples),
    OpInfo("positive", overloads=("positive",), dtypes=ALL_BUT_BOOL, is_view=True,
           sample_inputs_func=sample_inputs_unary, error_inputs_func=errors_positive),
]
# The in-place comparisons: the out-of-place comparison's samples, written into self.
for _name in _COMPARE:
    EXTRA += [
        OpInfo(_name, "inplace", overloads=(f"{_name}_.Tensor",), inplace=f"{_name}_",
               supports_autograd=False, sample_inputs_func=sample_inputs_binary,
               error_inputs_func=errors_binary_shape),
        OpInfo(_name, "inplace_scalar", overloads=(f"{_name}_.Scalar",), inplace=f"{_name}_",
               supports_autograd=False, sample_inputs_func=sample_inputs_scalar),
    ]
EXTRA += [
    OpInfo("pow", "inplace", overloads=("pow_.Tensor",), inplace="pow_",
           dtypes=ALL_BUT_BOOL + COMPLEX, supports_autograd=False, sample_inputs_func=_pow_samples,
           tolerances={tp.float16: (4e-3, 4e-3), tp.bfloat16: (3e-2, 3e-2)}),
    OpInfo("pow", "inplace_scalar", overloads=("pow_.Scalar",), inplace="pow_",
           dtypes=ALL_BUT_BOOL + COMPLEX, supports_autograd=False,
           sample_inputs_func=_pow_scalar_samples),
    OpInfo("xlogy", "inplace", overloads=("xlogy_.Tensor",), inplace="xlogy_",
           supports_autograd=False,
           sample_inputs_func=partial(sample_inputs_binary, low=-1, high=2, rhs_low=0.1,
                                      rhs_high=3.0),
           error_inputs_func=errors_inplace_int_binary),
    OpInfo("xlogy", "inplace_scalar", overloads=("xlogy_.Scalar_Other",), inplace="xlogy_",
           supports_autograd=False,
           sample_inputs_func=partial(sample_inputs_scalar, nonnegative=True, exclude_zero=True)),
    OpInfo("sinc", "inplace", overloads=("sinc_",), inplace="sinc_", dtypes=ALL_BUT_BOOL,
           supports_autograd=False, tolerances={tp.bfloat16: (2e-2, 2e-2)},
           sample_inputs_func=partial(sample_inputs_unary, low=-3, high=3,
                                      extra_values=(0.0, 1.0, -2.0, float("inf"))),
           error_inputs_func=errors_inplace_int),
    OpInfo("rad2deg", "inplace", overloads=("rad2deg_",), inplace="rad2deg_",
           dtypes=ALL_BUT_BOOL, supports_autograd=False, sample_inputs_func=sample_inputs_unary,
           tolerances={tp.bfloat16: (2e-2, 2e-2)}, error_inputs_func=errors_inplace_int),
    OpInfo("deg2rad", "inplace", overloads=("deg2rad_",), inplace="deg2rad_",
           dtypes=ALL_BUT_BOOL, supports_autograd=False, sample_inputs_func=sample_inputs_unary,
           tolerances={tp.bfloat16: (2e-2, 2e-2)},
           error_inputs_func=with_errors(errors_inplace_int, refused_for_complex(
               "deg2rad is not supported for complex tensors.", inplace=False))),
    OpInfo("heaviside", "inplace", overloads=("heaviside_",), inplace="heaviside_",
           dtypes=ALL_BUT_BOOL, supports_autograd=False, sample_inputs_func=_heaviside_samples),
    # (float_power_ computes in float64: only a float64 self can hold its result; the
    # refusal of the others is in errors_float_power_)
    OpInfo("float_power", "inplace", overloads=("float_power_.Tensor",),
           inplace="float_power_", dtypes=(tp.float64,),
           supports_autograd=False,
           sample_inputs_func=_variant_named(_float_power_samples, "tensor"),
           error_inputs_func=errors_float_power_),
    OpInfo("float_power", "inplace_scalar", overloads=("float_power_.Scalar",),
           inplace="float_power_", dtypes=(tp.float64,),
           supports_autograd=False,
           sample_inputs_func=_variant_named(_float_power_samples, "scalar")),
]

op_db = op_db + EXTRA
