"""Database entries: the pointwise, statistics and shape helpers of ops.yaml's last section
(deg2rad, rad2deg, logaddexp, logaddexp2, fmax, fmin, sinc, float_power, heaviside, cov,
corrcoef, ravel, fliplr, flipud, rot90, block_diag, cartesian_prod, vander, unravel_index,
Tensor.unfold, isin, msort, dist, inner) and the conversions byte, char, short."""
from __future__ import annotations

from functools import partial

import torch

import tensorplay as tp
from tensorplay.errors import ArgumentError, DTypeError, ShapeError
from opinfo.core import (
    ALL_BUT_BOOL, FLOATING, ErrorInput as E, OpInfo, SampleInput as S, make_tensor,
    rng_for,
)
from opinfo.reduction_common import grad_for, t_
from opinfo.samples import sample_inputs_binary, sample_inputs_unary

TOL = {tp.float32: (1e-5, 1e-5), tp.float16: (2e-3, 2e-3), tp.bfloat16: (1.6e-2, 1e-2)}
NUMERIC = (tp.int32, tp.int64) + FLOATING
FLOAT_SHAPES = (((3, 4), "contiguous"), ((2, 3, 4), "transposed"), ((5,), "strided"),
                ((), "contiguous"), ((0, 2), "contiguous"))


def _x(op, device, dtype, requires_grad, shape, layout="contiguous", key="", **kw):
    rng = rng_for(op.full_name, dtype, shape, layout, key)
    return make_tensor(shape, dtype, device, rng=rng, layout=layout,
                       requires_grad=grad_for(dtype, requires_grad), **kw)


def _edge_pair(op, device, dtype, requires_grad):
    """Two tensors with NaNs and infinities against numbers and each other."""
    yield from sample_inputs_binary(op, device, dtype, requires_grad, mixed=False)
    if dtype.is_floating_point:
        nan, inf = float("nan"), float("inf")
        a = tp.tensor([1.0, nan, -inf, inf, nan, 2.0, -inf], dtype=dtype, device=device)
        b = tp.tensor([nan, 3.0, -inf, inf, nan, 2.0, 0.5], dtype=dtype, device=device)
        yield S(a, (b,), name="nan and infinities", grad=False)


def _errors_float_pair(op, device):
    yield E(S(t_((3,), tp.int64, device=device), (t_((3,), tp.int64, device=device),)),
            DTypeError, rf"{op.name}\(\): argument 'self' must be a floating point tensor",
            arg="self")


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


def _cov_samples(op, device, dtype, requires_grad):
    yield S(_x(op, device, dtype, requires_grad, (3, 5)), name="3 variables")
    yield S(_x(op, device, dtype, requires_grad, (6,)), name="one variable")
    yield S(_x(op, device, dtype, requires_grad, (2, 4), "transposed"), (),
            {"correction": 0}, name="correction=0")
    if op.name != "cov":
        return
    fw = tp.tensor([1, 2, 0, 3], device=device)
    aw = tp.tensor([0.5, 1.0, 2.0, 0.25], device=device)
    yield S(_x(op, device, dtype, requires_grad, (3, 4)), (), {"fweights": fw},
            name="fweights")
    yield S(_x(op, device, dtype, requires_grad, (3, 4)), (), {"aweights": aw},
            name="aweights")
    yield S(_x(op, device, dtype, requires_grad, (3, 4)), (),
            {"fweights": fw, "aweights": aw, "correction": 2}, name="both, correction=2")


def _corrcoef_samples(op, device, dtype, requires_grad):
    for s in _cov_samples(op, device, dtype, requires_grad):
        if not s.kwargs:
            yield s


def _errors_cov(op, device):
    yield E(S(t_((2, 3, 4), device=device)), ShapeError,
            r"cov\(\): expected input to have two or fewer dimensions", arg="self")
    yield E(S(t_((2, 3), device=device), (), {"fweights": tp.ones(3, device=device)}),
            DTypeError, r"cov\(\): expected fweights to have integral dtype", arg="fweights")
    yield E(S(t_((2, 3), device=device), (), {"aweights": tp.ones(4, device=device)}),
            ShapeError, r"cov\(\): expected aweights to have the same numel", arg="aweights")


def _shape_samples(op, device, dtype, requires_grad):
    cases = {"ravel": [((3, 4), "transposed", ()), ((2, 3, 4), "contiguous", ()),
                       ((), "contiguous", ()), ((3, 4), "expanded", ())],
             "fliplr": [((3, 4), "transposed", ()), ((2, 3, 4), "strided", ())],
             "flipud": [((3, 4), "contiguous", ()), ((5,), "strided", ())],
             "rot90": [((3, 4), "contiguous", ()), ((3, 4), "transposed", (2,)),
                       ((2, 3, 4), "contiguous", (3, [2, 0])), ((3, 4), "strided", (-1,)),
                       ((2, 3), "contiguous", (4, [1, 0]))],
             "msort": [((4, 3), "contiguous", ()), ((5,), "strided", ())]}
    for shape, layout, args in cases[op.name]:
        yield S(_x(op, device, dtype, requires_grad, shape, layout), args,
                name=f"{list(shape)} {layout} {args}")


def _errors_shape(op, device):
    if op.name == "fliplr":
        yield E(S(t_((3,), device=device)), ShapeError, r"fliplr\(\): Input must be >= 2-d",
                arg="self")
    if op.name == "rot90":
        yield E(S(t_((3, 4), device=device), (1, [0, 0])), ArgumentError,
                r"rot90\(\): expected rotation dims to be different", arg="dims")
        yield E(S(t_((3,), device=device), (1,)), ShapeError,
                r"rot90\(\): expected total dims >= 2", arg="self")


def _varargs_op(fn):
    """block_diag(a, b, c): PyTorch's takes the tensors one by one only."""
    return lambda first, rest, **kw: fn(first, *rest, **kw)


def _block_diag_samples(op, device, dtype, requires_grad):
    parts = [_x(op, device, dtype, requires_grad, s, key=i)
             for i, s in enumerate(((), (3,), (2, 4)))]
    yield S(parts[0], (parts[1:],), name="0-D, 1-D and 2-D")
    yield S(_x(op, device, dtype, requires_grad, (2, 2)),
            ([_x(op, device, dtype, requires_grad, (0, 2), key=1)],), name="an empty block")
    other = tp.float64 if dtype is not tp.float64 else tp.float32
    yield S(_x(op, device, dtype, requires_grad, (2, 2)),
            ([_x(op, device, other, requires_grad, (1, 3))],), name="promoted dtypes",
            grad=False)   # a float32 input rounds away gradcheck's nudges


def _cartesian_samples(op, device, dtype, requires_grad):
    yield S(_x(op, device, dtype, requires_grad, (3,)),
            ([_x(op, device, dtype, requires_grad, (2,), key=1)],), name="two")
    yield S(_x(op, device, dtype, requires_grad, (2,)),
            ([_x(op, device, dtype, requires_grad, (3,), key=1),
              _x(op, device, dtype, requires_grad, (2,), key=2)],), name="three")
    yield S(_x(op, device, dtype, requires_grad, (4,)), ([],), name="one")


def _vander_samples(op, device, dtype, requires_grad):
    x = partial(_x, op, device, dtype, requires_grad, low=-2, high=2)
    yield S(x((4,)), name="square")
    yield S(x((3,), key=1), (5,), name="N=5")
    yield S(x((3,), key=2), (2, True), name="N=2 increasing")
    yield S(x((3,), "strided", key=3), (1,), name="N=1")


def _unravel_samples(op, device, dtype, requires_grad):
    yield S(tp.tensor([4, 5, 0, 3], dtype=dtype, device=device), ((2, 3),), name="1-D")
    yield S(tp.tensor([[7, 1], [2, 6]], dtype=dtype, device=device), ((2, 2, 2),),
            name="2-D indices")
    yield S(tp.tensor(4, dtype=dtype, device=device), ((5,),), name="0-dim index")


def _unfold_samples(op, device, dtype, requires_grad):
    for shape, layout, args in (((10,), "contiguous", (0, 3, 2)), ((3, 7), "transposed", (1, 2, 1)),
                                ((4, 5), "strided", (0, 2, 2)), ((2, 3, 6), "contiguous", (-1, 6, 1)),
                                ((), "contiguous", (0, 1, 1))):
        yield S(_x(op, device, dtype, requires_grad, shape, layout), args,
                name=f"{list(shape)} {layout} {args}")


def _errors_unfold(op, device):
    yield E(S(t_((4,), device=device), (0, 5, 1)), ShapeError,
            r"unfold\(\): maximum size for tensor at dimension 0 is 4 but size is 5",
            arg="size")
    yield E(S(t_((4,), device=device), (0, 2, 0)), ArgumentError,
            r"unfold\(\): step is 0 but must be > 0", arg="step")


def _isin_samples(op, device, dtype, requires_grad):
    x = _x(op, device, dtype, False, (3, 4), low=0, high=5)
    tests = _x(op, device, dtype, False, (3,), low=0, high=5, key="tests")
    if op.variant == "":
        yield S(x, (tests,), name="1-D tests")
        yield S(x, (tests.reshape([3, 1]),), {"invert": True}, name="2-D tests, invert")
        yield S(x, (tp.zeros(0, dtype=dtype, device=device),), name="no tests")
    elif op.variant == "scalar_test":
        yield S(x, (3,), name="element 3")
        yield S(x, (2,), {"invert": True}, name="invert")
    else:
        yield S(tests, (3,), name="3 among tests")


def _isin_scalar_element(module):
    return lambda tests, element, **kw: module.isin(element, tests, **kw)


def _pair_samples(op, device, dtype, requires_grad):
    x = partial(_x, op, device, dtype, requires_grad)
    if op.name == "dist":
        yield S(x((3, 4)), (x((3, 4), key=1),), name="p=2")
        yield S(x((3, 4), "transposed"), (x((4,), key=1), 1), name="broadcast p=1")
        yield S(x((2, 3)), (x((2, 3), key=1), float("inf")), name="p=inf")
        yield S(x((2, 3)), (x((2, 3), key=1), 3.5), name="p=3.5")
        return
    yield S(x((4,)), (x((4,), key=1),), name="vectors")
    yield S(x((2, 3)), (x((4, 3), key=1),), name="matrices")
    yield S(x((2, 3, 4), "transposed"), (x((4,), key=1),), name="3-D and 1-D")
    yield S(x(()), (x((2, 3), key=1),), name="0-dim")


def _errors_inner(op, device):
    yield E(S(t_((2, 3), device=device), (t_((3, 2), device=device),)), ShapeError,
            r"inner\(\): inner\(\) the last dimension must match", arg="other")


def _errors_dist(op, device):
    yield E(S(t_((3,), tp.int64, device=device), (t_((3,), tp.int64, device=device),)),
            DTypeError, r"dist\(\): input dtype should be floating point", arg="self")


def _conversion_samples(op, device, dtype, requires_grad):
    """Values every target holds (uint8 takes no negatives; int8 no more than 127)."""
    low, high = (0, 100) if op.name == "byte" or dtype is tp.uint8 else (-100, 100)
    yield from sample_inputs_unary(op, device, dtype, requires_grad, low=low, high=high)


op_db = [
    *[OpInfo(name, overloads=(name,), ref=f"Tensor.{name}", gradcheck=False,
             sample_inputs_func=_conversion_samples) for name in ("byte", "char", "short")],
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
    OpInfo("cov", overloads=("cov",), dtypes=(tp.int64, tp.float32, tp.float64),
           tolerances=TOL, sample_inputs_func=_cov_samples, error_inputs_func=_errors_cov),
    OpInfo("corrcoef", overloads=("corrcoef",), dtypes=(tp.int64, tp.float32, tp.float64),
           tolerances=TOL, sample_inputs_func=_corrcoef_samples),
    OpInfo("ravel", overloads=("ravel",), view_like=True, sample_inputs_func=_shape_samples),
    OpInfo("fliplr", overloads=("fliplr",), sample_inputs_func=_shape_samples,
           error_inputs_func=_errors_shape),
    OpInfo("flipud", overloads=("flipud",), sample_inputs_func=_shape_samples),
    OpInfo("rot90", overloads=("rot90",), sample_inputs_func=_shape_samples,
           error_inputs_func=_errors_shape),
    OpInfo("msort", overloads=("msort",), dtypes=ALL_BUT_BOOL,
           sample_inputs_func=_shape_samples),
    OpInfo("block_diag", overloads=("block_diag",), op=_varargs_op(tp.block_diag),
           ref=_varargs_op(torch.block_diag), sample_inputs_func=_block_diag_samples),
    OpInfo("cartesian_prod", overloads=("cartesian_prod",), op=_varargs_op(tp.cartesian_prod),
           ref=_varargs_op(torch.cartesian_prod), sample_inputs_func=_cartesian_samples),
    # PyTorch's own vander backward fails (it modifies a saved tensor in place); the
    # gradient is checked against x ** k in tests/test_common_functions.py instead.
    OpInfo("vander", overloads=("vander",), dtypes=(tp.int64, tp.float32, tp.float64),
           tolerances=TOL, sample_inputs_func=_vander_samples, supports_autograd=False),
    OpInfo("unravel_index", overloads=("unravel_index",), dtypes=(tp.int32, tp.int64),
           supports_autograd=False, sample_inputs_func=_unravel_samples),
    OpInfo("unfold", overloads=("unfold",), is_view=True, sample_inputs_func=_unfold_samples,
           error_inputs_func=_errors_unfold),
    OpInfo("isin", overloads=("isin.Tensor_Tensor",), dtypes=ALL_BUT_BOOL,
           supports_autograd=False, sample_inputs_func=_isin_samples),
    OpInfo("isin", "scalar_test", overloads=("isin.Tensor_Scalar",), dtypes=ALL_BUT_BOOL,
           supports_autograd=False, sample_inputs_func=_isin_samples),
    OpInfo("isin", "scalar_element", overloads=("isin.Scalar_Tensor",), dtypes=ALL_BUT_BOOL,
           op=_isin_scalar_element(tp), ref=_isin_scalar_element(torch),
           supports_autograd=False, sample_inputs_func=_isin_samples),
    OpInfo("dist", overloads=("dist",), dtypes=FLOATING, tolerances=TOL,
           sample_inputs_func=_pair_samples, error_inputs_func=_errors_dist),
    OpInfo("inner", overloads=("inner",), dtypes=NUMERIC, tolerances=TOL,
           sample_inputs_func=_pair_samples, error_inputs_func=_errors_inner),
]
