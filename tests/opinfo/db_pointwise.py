"""Database entries for arithmetic, `where`, comparisons, the common unary functions,
the basic reductions and matrix products (copies, conversions and views: db_views.py).

One `OpInfo` per op, or per overload family when the samples differ (`add` takes two
tensors, `add.scalar` a tensor and a number). To add an op: write its sample generator
(or bind a shared one from samples.py with `partial`), its error inputs, and an OpInfo
naming the ops.yaml overloads it exercises. The generic tests in tests/test_ops.py do the
rest, and `test_database_covers_ops_yaml` fails until every overload has an entry.
"""
from __future__ import annotations

from functools import partial

import torch

import tensorplay as tp
from tensorplay.errors import ArgumentError, DeviceError, DTypeError, ShapeError
from opinfo.complex_errors import refused_for_complex, with_errors
from opinfo.core import (
    ALL_BUT_BOOL, ALL_DTYPES, COMPLEX, GRAD_COMPLEX, ErrorInput, ErrorInput as E, FLOATING,
    make_tensor, OpInfo, rng_for, SampleInput, SampleInput as S,
)
from opinfo.samples import (
    _t, _x, NUMERIC, sample_inputs_binary, sample_inputs_scalar,
    sample_inputs_unary, TOL,
)
from opinfo.reduction_common import t_

E = ErrorInput
S = SampleInput


# ---- error inputs, shared by families -------------------------------------------------
def errors_binary(op, device, other="other"):
    name = op.name
    yield E(S(_t((3, 4), device=device), (_t((5,), device=device),)), ShapeError,
            rf"{name}\(\): argument '{other}' \(shape \[5\]\) is not broadcastable", arg=other)
    # Ops with one overload name the argument; the others list their overloads.
    yield E(S(_t((3, 4), device=device), ("a",)), ArgumentError,
            rf"{name}\(\)(: argument '{other}' must be Tensor| received an invalid combination)",
            meta=False)
    if device != "meta":
        yield E(S(_t((3, 4), device=device), (tp.empty(3, 4, device="meta"),)), DeviceError,
                rf"{name}\(\): expected all tensors to be on the same device, but argument "
                rf"'{other}' is on meta", arg=other, meta=False)


def errors_binary_inplace(op, device):
    yield from errors_binary(op, device)
    yield E(S(_t((3, 1), device=device), (_t((3, 4), device=device),)), ShapeError,
            rf"{op.inplace}\(\): output with shape \[3, 1\] doesn't match the broadcast shape",
            arg="self", inplace=True)
    yield E(S(_t((3,), tp.int64, device=device), (_t((3,), device=device),)), DTypeError,
            rf"{op.inplace}\(\): result type float32 can't be cast to the desired output type "
            r"int64", arg="self", inplace=True)
    # a complex result cannot be written into a real tensor (PyTorch's can_cast)
    yield E(S(_t((3,), tp.float32, device=device), (_t((3,), tp.complex64, device=device),)),
            DTypeError, rf"{op.inplace}\(\): result type complex64 can't be cast to the "
            r"desired output type float32", arg="self", inplace=True)


def errors_alpha(op, device):
    yield from errors_binary_inplace(op, device)
    yield E(S(_t((3,), tp.int64, device=device), (_t((3,), tp.int64, device=device),),
              {"alpha": 0.5}), DTypeError, rf"{op.name}\(\): for integral input tensors, "
            r"argument 'alpha' must not be a floating point number", arg="alpha")
    yield E(S(_t((3,), device=device), (_t((3,), device=device),), {"alpha": 2j}),
            DTypeError, rf"{op.name}\(\): For non-complex input tensors, argument alpha must "
            r"not be a complex number", arg="alpha")


def errors_sub(op, device):
    yield from errors_alpha(op, device)
    yield E(S(_t((3,), tp.bool, device=device), (_t((3,), tp.bool, device=device),)),
            DTypeError, r"sub\(\): subtraction with bool tensors is not supported", arg="self")


def errors_sub_scalar(op, device):
    yield from errors_scalar(op, device)
    yield E(S(_t((3,), tp.int64, device=device), (True,)), DTypeError,
            r"sub\(\): subtraction with bool tensors is not supported", arg="other")


def errors_scalar(op, device):
    yield E(S(_t((3, 4), device=device), ("a",)), ArgumentError,
            rf"{op.name}\(\) received an invalid combination of arguments", meta=False)


def errors_scalar_inplace(op, device):
    yield from errors_scalar(op, device)
    yield E(S(_t((3,), tp.int64, device=device), (2.5,)), DTypeError,
            rf"{op.inplace}\(\): result type float32 can't be cast to the desired output type "
            r"int64", arg="self", inplace=True)
    # `x += 1j` for a float x: the result is complex (PyTorch's can_cast)
    yield E(S(_t((3,), tp.float64, device=device), (1j,)), DTypeError,
            rf"{op.inplace}\(\): result type complex128 can't be cast to the desired output "
            r"type float64", arg="self", inplace=True, meta=False)


def errors_bool_input(message, inplace=False, meta=True):
    def gen(op, device):
        yield E(S(_t((3,), tp.bool, device=device)), DTypeError,
                rf"{op.inplace if inplace else op.name}\(\): {message}", arg="self",
                inplace=inplace, meta=meta)
    return gen


def errors_relu(op, device):
    yield from errors_bool_input("not implemented for bool tensors")(op, device)
    yield from errors_bool_input("not implemented for bool tensors", inplace=True)(op, device)


def errors_pow_scalar(op, device):
    yield from errors_scalar(op, device)
    yield E(S(_t((3,), tp.int64, device=device), (-2,)), DTypeError,
            r"pow\(\): Integers to negative integer powers are not allowed", arg="exponent",
            meta=False)


# ---- arithmetic -----------------------------------------------------------------------
def _alpha(dtype):
    """An alpha the dtype takes: complex for a complex tensor, float for a float one."""
    return 0.5 - 1.5j if dtype.is_complex else 0.5 if dtype.is_floating_point else 2


def _alpha_samples(op, device, dtype, requires_grad):
    yield from sample_inputs_binary(op, device, dtype, requires_grad)
    if dtype is not tp.bool:
        alpha = _alpha(dtype)
        yield from sample_inputs_binary(op, device, dtype, requires_grad, mixed=False,
                                        kwargs={"alpha": alpha})


def _alpha_scalar_samples(op, device, dtype, requires_grad):
    bools = op.name != "sub"   # `x - True` is an error (errors_sub_scalar)
    yield from sample_inputs_scalar(op, device, dtype, requires_grad, bools=bools,
                                    complex_numbers=True)
    if dtype is not tp.bool:
        alpha = _alpha(dtype) if dtype.is_differentiable else 3
        yield from sample_inputs_scalar(op, device, dtype, requires_grad, bools=bools,
                                        kwargs={"alpha": alpha})


def _pow_samples(op, device, dtype, requires_grad):
    # Floats: positive bases (a negative base to a fractional power is nan in both, and
    # the gradient is nan too). Integers: small exponents, negative ones included where the
    # dtype is signed (PyTorch truncates 1 / x**n; only a Python-number exponent is an error).
    # Complex: the same box for both parts (off log's branch cut, the negative reals).
    if dtype.is_differentiable:
        yield from sample_inputs_binary(op, device, dtype, requires_grad, low=0.5, high=2.0,
                                        rhs_low=-2.0, rhs_high=2.0, mixed=False)
    else:
        yield from sample_inputs_binary(op, device, dtype, requires_grad, low=-3, high=4,
                                        rhs_low=0 if dtype is tp.uint8 else -2, rhs_high=4,
                                        mixed=False)


def _pow_scalar_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    floating = dtype.is_differentiable
    exponents = [2, 3, 0, 0.5, -1.5, 2.0] if floating else [2, 3, 0, 0.5, -1.5]
    # a complex exponent makes any base complex (`x ** 1j`; not float16's: PyTorch's
    # complex32 has no pow); a float base stays positive
    if floating and dtype is not tp.float16:
        exponents += [1.5 - 0.5j]
    for e in exponents:
        x = make_tensor((3, 4), dtype, device, rng=rng, low=0.5 if floating else 0, high=3,
                        requires_grad=requires_grad and floating)
        yield S(x, (e,), name=f"x ** {e!r}")


def _number_base_samples(op, device, dtype, requires_grad):
    """pow(number, tensor): a Python number raised to each element (`2 ** t`)."""
    rng = rng_for(op.full_name, dtype)
    floating = dtype.is_differentiable
    for base in ([2.0, 0.5, 3] if floating else [2, 3]):
        e = make_tensor((3, 4), dtype, device, rng=rng, low=-2 if floating else 0, high=3,
                        requires_grad=requires_grad and floating)
        yield S(e, (base,), name=f"{base!r} ** e")


# Complex dtypes: values and gradients (grad_dtypes) against PyTorch's, complex128 gradcheck.
WITH_COMPLEX = ALL_DTYPES + COMPLEX
# PyTorch's messages for a complex64 input (kernel_support/complex_refusals.py)
_UNORDERED = {name: refused_for_complex(f"{name} not implemented for complex tensors.",
                                        other=True) for name in ("maximum", "minimum")}

ARITHMETIC = [
    OpInfo("add", overloads=("add.Tensor", "add_.Tensor"), inplace="add_",
           dtypes=WITH_COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_alpha_samples, error_inputs_func=errors_alpha),
    OpInfo("add", "scalar", overloads=("add.Scalar", "add_.Scalar"), inplace="add_",
           dtypes=WITH_COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_alpha_scalar_samples, error_inputs_func=errors_scalar_inplace),
    OpInfo("sub", overloads=("sub.Tensor", "sub_.Tensor"), inplace="sub_",
           dtypes=ALL_BUT_BOOL + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_alpha_samples, error_inputs_func=errors_sub),
    OpInfo("sub", "scalar", overloads=("sub.Scalar", "sub_.Scalar"), inplace="sub_",
           dtypes=ALL_BUT_BOOL + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_alpha_scalar_samples, error_inputs_func=errors_sub_scalar),
    OpInfo("mul", overloads=("mul.Tensor", "mul_.Tensor"), inplace="mul_",
           dtypes=WITH_COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=sample_inputs_binary, error_inputs_func=errors_binary_inplace),
    OpInfo("mul", "scalar", overloads=("mul.Scalar", "mul_.Scalar"), inplace="mul_",
           dtypes=WITH_COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=partial(sample_inputs_scalar, complex_numbers=True),
           error_inputs_func=errors_scalar_inplace),
    OpInfo("div", overloads=("div.Tensor", "div_.Tensor"), inplace="div_",
           dtypes=WITH_COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=partial(sample_inputs_binary, rhs_exclude_zero=True),
           error_inputs_func=errors_binary_inplace),
    OpInfo("div", "scalar", overloads=("div.Scalar", "div_.Scalar"), inplace="div_",
           dtypes=WITH_COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=partial(sample_inputs_scalar, exclude_zero=True,
                                      complex_numbers=True),
           error_inputs_func=errors_scalar),
    # torch has no bool pow kernel.
    OpInfo("pow", overloads=("pow.Tensor_Tensor",), dtypes=ALL_BUT_BOOL + COMPLEX,
           grad_dtypes=GRAD_COMPLEX, sample_inputs_func=_pow_samples,
           error_inputs_func=partial(errors_binary, other="exponent"),
           tolerances={tp.float16: (4e-3, 4e-3), tp.bfloat16: (3e-2, 3e-2)}),
    OpInfo("pow", "scalar", overloads=("pow.Tensor_Scalar",), dtypes=ALL_BUT_BOOL + COMPLEX,
           grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_pow_scalar_samples, error_inputs_func=errors_pow_scalar),
    OpInfo("pow", "number_base", overloads=("pow.Scalar",), method=False,
           op=lambda e, base: tp.pow(base, e), ref=lambda e, base: torch.pow(base, e),
           dtypes=ALL_BUT_BOOL, sample_inputs_func=_number_base_samples),
    OpInfo("maximum", overloads=("maximum",), sample_inputs_func=sample_inputs_binary,
           error_inputs_func=with_errors(errors_binary, _UNORDERED["maximum"])),
    OpInfo("minimum", overloads=("minimum",), sample_inputs_func=sample_inputs_binary,
           error_inputs_func=with_errors(errors_binary, _UNORDERED["minimum"])),
    OpInfo("max", "other", overloads=("max.other",), sample_inputs_func=sample_inputs_binary,
           error_inputs_func=with_errors(errors_binary, refused_for_complex(
               "maximum not implemented for complex tensors.", other=True))),
    OpInfo("min", "other", overloads=("min.other",), sample_inputs_func=sample_inputs_binary,
           error_inputs_func=with_errors(errors_binary, refused_for_complex(
               "minimum not implemented for complex tensors.", other=True))),
    # xlogy(0, y) is 0 even where log(y) is -inf or nan: the samples include zeros in self.
    OpInfo("xlogy", overloads=("xlogy.Tensor",),
           sample_inputs_func=partial(sample_inputs_binary, low=-1, high=2, rhs_low=0.1,
                                      rhs_high=3.0),
           error_inputs_func=with_errors(errors_binary, refused_for_complex(
               '"xlogy_cpu" not implemented for \'ComplexFloat\'', other=True))),
    OpInfo("xlogy", "scalar", overloads=("xlogy.Scalar_Other",),
           sample_inputs_func=partial(sample_inputs_scalar, nonnegative=True, exclude_zero=True),
           error_inputs_func=with_errors(errors_scalar, refused_for_complex(
               '"xlogy_cpu" not implemented for \'ComplexFloat\'', args=(2.0,)))),
    # torch.special.xlog1py has floating kernels only.
    OpInfo("xlog1py", overloads=("xlog1py.Tensor",), ref="special.xlog1py", dtypes=FLOATING,
           sample_inputs_func=partial(sample_inputs_binary, low=-1, high=2, rhs_low=-0.9,
                                      rhs_high=3.0),
           error_inputs_func=errors_binary),
]


# ---- where ----------------------------------------------------------------------------
def _where_numbers(dtype, device):
    """The numbers `where` takes for self or other: int, float, bool, and complex, which
    makes the result complex (not for float16: PyTorch's result would be complex32, a
    dtype TensorPlay does not have)."""
    with_complex = dtype is not tp.float16
    return (2, 1.5, True) + ((2 - 1j,) if with_complex else ())


def _where_samples(op, device, dtype, requires_grad, scalar=None):
    rng = rng_for(op.full_name, dtype)
    grad = requires_grad and dtype.is_differentiable
    cases = (((3, 4), (3, 4), (3, 4), "same shape"), ((3, 4), (4,), (3, 1), "broadcast"),
             ((), (3, 4), (), "0-dim condition"), ((0, 4), (4,), (0, 4), "empty"))
    for c, a, b, what in cases:
        # Fresh tensors for every sample: a leaf shared by two samples would accumulate
        # the gradients of both.
        def tensors():
            return (make_tensor(c, tp.bool, device, rng=rng),
                    make_tensor(a, dtype, device, rng=rng, layout="transposed",
                                requires_grad=grad),
                    make_tensor(b, dtype, device, rng=rng, requires_grad=grad))
        # (a complex number makes the result complex, whatever the tensor's dtype)
        if scalar == "other":
            for v in _where_numbers(dtype, device):
                cond, x, _ = tensors()
                yield S(cond, (x, v), name=f"{what}, other={v!r}")
        elif scalar == "self":
            for v in _where_numbers(dtype, device):
                cond, _, y = tensors()
                yield S(cond, (v, y), name=f"{what}, self={v!r}")
        else:
            cond, x, y = tensors()
            yield S(cond, (x, y), name=what)
    if scalar is None:
        # (complex: with complex128, as PyTorch's where cannot hand a float64 input the real
        # part of a complex gradient: its backward raises)
        other = tp.complex128 if dtype.is_complex else tp.float64
        yield S(make_tensor((3, 4), tp.bool, device, rng=rng),
                (make_tensor((3, 4), dtype, device, rng=rng, requires_grad=grad),
                 make_tensor((3, 4), other, device, rng=rng, requires_grad=requires_grad)),
                name="mixed dtypes")


def errors_where(op, device):
    cond = _t((3,), tp.float32, device=device)
    yield E(S(cond, (_t((3,), device=device), _t((3,), device=device))), DTypeError,
            r"where\(\): argument 'condition' must be a bool tensor, but got float32",
            arg="condition")
    yield E(S(_t((3,), tp.bool, device=device), (_t((4,), device=device),
                                                 _t((3,), device=device))),
            ShapeError, r"where\(\): argument 'self' \(shape \[4\]\) is not broadcastable",
            arg="self")
    yield E(S(_t((3,), tp.bool, device=device), (_t((3,), device=device),
                                                 tp.empty(3, device="meta"))),
            DeviceError, r"where\(\): expected all tensors to be on the same device", arg="other",
            meta=False)


WHERE = [
    OpInfo("where", overloads=("where.self",), sample_inputs_func=_where_samples,
           dtypes=WITH_COMPLEX, grad_dtypes=GRAD_COMPLEX,
           method=lambda cond, x, y: x.where(cond, y), error_inputs_func=errors_where),
    OpInfo("where", "scalar_other", overloads=("where.ScalarOther",),
           dtypes=WITH_COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=partial(_where_samples, scalar="other"),
           method=lambda cond, x, y: x.where(cond, y)),
    OpInfo("where", "scalar_self", overloads=("where.ScalarSelf",),
           dtypes=WITH_COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=partial(_where_samples, scalar="self"), method=False),
]


# ---- comparisons ----------------------------------------------------------------------
def _comparison_samples(op, device, dtype, requires_grad):
    yield from sample_inputs_binary(op, device, dtype, False, low=-2, high=2, rhs_low=-2,
                                    rhs_high=2)


COMPARISONS = []
for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    # eq and ne take complex numbers; complex numbers have no order: lt... refuse them
    _ordered = _name not in ("eq", "ne")
    _refused = refused_for_complex(f'"{_name}_cpu" not implemented for \'ComplexFloat\'',
                                   other=True) if _ordered else None
    COMPARISONS += [
        OpInfo(_name, overloads=(f"{_name}.Tensor",), supports_autograd=False,
               dtypes=ALL_DTYPES if _ordered else WITH_COMPLEX,
               sample_inputs_func=_comparison_samples,
               error_inputs_func=with_errors(errors_binary, _refused)),
        OpInfo(_name, "scalar", overloads=(f"{_name}.Scalar",), supports_autograd=False,
               dtypes=ALL_DTYPES if _ordered else WITH_COMPLEX,
               sample_inputs_func=partial(sample_inputs_scalar, low=-3, high=3,
                                          complex_numbers=not _ordered),
               error_inputs_func=with_errors(errors_scalar, _ordered and refused_for_complex(
                   f'"{_name}_cpu" not implemented for \'ComplexFloat\'', args=(1,)) or None)),
    ]


# ---- unary ----------------------------------------------------------------------------
EDGES = (0.0, -0.0, 1.0, -1.0, float("inf"), float("-inf"), float("nan"), 30.0, -30.0)

UNARY = [
    # torch has no bool kernels for neg, abs and relu.
    OpInfo("neg", overloads=("neg",), dtypes=ALL_BUT_BOOL + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=partial(sample_inputs_unary, extra_values=EDGES),
           error_inputs_func=errors_bool_input("negation, the `-` operator, on a bool tensor")),
    # abs of a complex tensor is real (complex64 -> float32)
    OpInfo("abs", overloads=("abs",), dtypes=ALL_BUT_BOOL + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=partial(sample_inputs_unary, exclude_zero=True,
                                      extra_values=EDGES[2:]),
           # The Meta kernel (rules.unary) does not check: see the report on ops.yaml.
           error_inputs_func=errors_bool_input("not implemented for bool tensors", meta=False)),
    OpInfo("sign", overloads=("sign",),
           sample_inputs_func=partial(sample_inputs_unary, extra_values=EDGES),
           error_inputs_func=refused_for_complex(
               "Unlike NumPy, torch.sign is not intended to support complex numbers. Please "
               "use torch.sgn instead.")),
    OpInfo("exp", overloads=("exp",), dtypes=WITH_COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=partial(sample_inputs_unary, extra_values=EDGES)),
    # Complex: both parts in [0.1, 5), off the branch cut (the negative real axis).
    OpInfo("log", overloads=("log",), dtypes=WITH_COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=partial(sample_inputs_unary, low=0.1, high=5,
                                      extra_values=EDGES)),
    OpInfo("sqrt", overloads=("sqrt",), dtypes=WITH_COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=partial(sample_inputs_unary, low=0.1, high=5,
                                      extra_values=EDGES)),
    OpInfo("sin", overloads=("sin",), dtypes=WITH_COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=partial(sample_inputs_unary, extra_values=EDGES)),
    OpInfo("cos", overloads=("cos",), dtypes=WITH_COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=partial(sample_inputs_unary, extra_values=EDGES)),
    OpInfo("tanh", overloads=("tanh",), dtypes=WITH_COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=partial(sample_inputs_unary, extra_values=EDGES)),
    OpInfo("sigmoid", overloads=("sigmoid",), dtypes=WITH_COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=partial(sample_inputs_unary, extra_values=EDGES + (100.0, -100.0))),
    OpInfo("relu", overloads=("relu", "relu_"), inplace="relu_", dtypes=ALL_BUT_BOOL,
           sample_inputs_func=partial(sample_inputs_unary, exclude_zero=True,
                                      extra_values=EDGES[2:]),
           error_inputs_func=with_errors(errors_relu, refused_for_complex(
               "clamp is not supported for complex types"))),
]


# ---- square, nansum, nanmean ------------------------------------------------------------
def _square_samples(op, device, dtype, requires_grad):
    yield from sample_inputs_unary(op, device, dtype, requires_grad, low=-4, high=4,
                                   extra_values=(0.0, float("inf"), float("nan")))


# ---- deg2rad, logaddexp, fmax, sinc, float_power, heaviside -----------------------------
def _edge_pair(op, device, dtype, requires_grad):
    """Two tensors with NaNs and infinities against numbers and each other."""
    yield from sample_inputs_binary(op, device, dtype, requires_grad, mixed=False)
    if dtype.is_floating_point:
        nan, inf = float("nan"), float("inf")
        a = tp.tensor([1.0, nan, -inf, inf, nan, 2.0, -inf], dtype=dtype, device=device)
        b = tp.tensor([nan, 3.0, -inf, inf, nan, 2.0, 0.5], dtype=dtype, device=device)
        yield S(a, (b,), name="nan and infinities", grad=False)


def _errors_float_pair(op, device):
    """Two integer operands (one is promoted by a float other: no error)."""
    yield E(S(t_((3,), tp.int64, device=device), (t_((3,), tp.int64, device=device),)),
            DTypeError, rf"{op.name}\(\): arguments 'self' and 'other' must have a floating "
            rf"point common dtype, but got int64 and int64", arg="self")


def _heaviside_samples(op, device, dtype, requires_grad):
    x = _x(op, device, dtype, False, (3, 4), low=-2, high=2)
    x[0] = 0
    yield S(x, (_x(op, device, dtype, False, (4,), key="values"),), name="broadcast values")
    yield S(x, (_x(op, device, dtype, False, (), key="values"),), name="0-dim values")


def _errors_heaviside(op, device):
    yield E(S(t_((3,), device=device), (t_((3,), tp.float64, device=device),)), DTypeError,
            r"heaviside\(\): is not yet implemented for tensors with different dtypes",
            arg="values")


def _float_power_samples(op, device, dtype, requires_grad):
    base = _x(op, device, dtype, requires_grad, (3, 4), low=0.5, high=3)
    if op.variant == "scalar":
        for exponent in (2, 0.5, -1.5):
            b = _x(op, device, dtype, requires_grad, (3, 4), low=0.5, high=3, key=exponent)
            yield S(b, (exponent,), name=f"exponent {exponent}")
        return
    yield S(base, (_x(op, device, dtype, requires_grad, (3, 4), low=-2, high=2, key="e"),),
            name="same shape")
    yield S(_x(op, device, dtype, requires_grad, (2, 3), low=0.5, high=3, key="b"),
            (_x(op, device, dtype, requires_grad, (3,), low=-2, high=2, key="e"),),
            name="broadcast")

HELPERS = [
    OpInfo("square", overloads=("square", "square_"), inplace="square_",
           dtypes=ALL_BUT_BOOL + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_square_samples, tolerances=TOL),
    OpInfo("deg2rad", overloads=("deg2rad",), dtypes=ALL_BUT_BOOL, tolerances=TOL,
           sample_inputs_func=sample_inputs_unary),
    OpInfo("rad2deg", overloads=("rad2deg",), dtypes=ALL_BUT_BOOL, tolerances=TOL,
           sample_inputs_func=sample_inputs_unary),
    OpInfo("logaddexp", overloads=("logaddexp",), dtypes=FLOATING, tolerances=TOL,
           sample_inputs_func=_edge_pair, error_inputs_func=_errors_float_pair),
    OpInfo("logaddexp2", overloads=("logaddexp2",), dtypes=FLOATING, tolerances=TOL,
           sample_inputs_func=_edge_pair, error_inputs_func=_errors_float_pair),
    OpInfo("fmax", overloads=("fmax",), dtypes=ALL_BUT_BOOL, tolerances=TOL,
           sample_inputs_func=_edge_pair),
    OpInfo("fmin", overloads=("fmin",), dtypes=ALL_BUT_BOOL, tolerances=TOL,
           sample_inputs_func=_edge_pair),
    OpInfo("sinc", overloads=("sinc",), dtypes=ALL_BUT_BOOL, tolerances=TOL,
           sample_inputs_func=partial(sample_inputs_unary, low=-3, high=3,
                                      extra_values=(0.0, 1.0, -2.0, float("inf")))),
    OpInfo("float_power", overloads=("float_power.Tensor_Tensor",), dtypes=NUMERIC,
           sample_inputs_func=_float_power_samples, tolerances=TOL),
    OpInfo("float_power", "scalar", overloads=("float_power.Tensor_Scalar",), dtypes=NUMERIC,
           sample_inputs_func=_float_power_samples, tolerances=TOL),
    OpInfo("heaviside", overloads=("heaviside",), dtypes=ALL_BUT_BOOL, supports_autograd=False,
           sample_inputs_func=_heaviside_samples, error_inputs_func=_errors_heaviside),
]

op_db = ARITHMETIC + WHERE + COMPARISONS + UNARY + HELPERS
