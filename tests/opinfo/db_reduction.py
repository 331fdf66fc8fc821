"""Database entries: statistics (prod, amax/amin, var/std, norm, logsumexp, all/any,
count_nonzero), scans, sorting and selection, and the gather/scatter-add pair.

Deviations from PyTorch CPU, by design:
- sort/argsort/topk are always stable (PyTorch's unstable sort may order ties otherwise);
- median.dim/kthvalue return the first index of a tied value in a stable sort; PyTorch's
  nth_element may return another one of the ties. The samples use distinct values.
- mode ignores NaN counts (NaN != NaN); PyTorch's result for NaN input is unspecified.
"""
from __future__ import annotations

from functools import partial


import tensorplay as tp
from tensorplay.errors import ArgumentError, DimError, DTypeError, ShapeError
from opinfo.core import (
    ALL_BUT_BOOL, ALL_DTYPES, COMPLEX, GRAD_COMPLEX, ErrorInput as E, FLOATING,
    make_tensor, OpInfo, rng_for, SampleInput as S,
)
from opinfo.reduction_common import distinct, grad_for, samples_dim, t_
from opinfo.samples import (
    _distinct_make, _errors_dim, _t, _trapezoid_samples, _x, HALF_SUM_TOL, NUMERIC,
    REDUCTION_SHAPES, sample_inputs_binary, sample_inputs_reduce_all, sample_inputs_reduce_dims,
    sample_inputs_unary, TOL,
)


def _errors_float_only(op, device):
    yield E(S(t_((3, 4), tp.int64, device=device)), DTypeError,
            rf"{op.name}\(\): expected a floating point or complex input, but argument 'self' "
            r"has dtype int64", arg="self")


# ---- prod ------------------------------------------------------------------------------
def _prod_samples(op, device, dtype, requires_grad):
    if dtype.is_complex:
        # parts in [-1, 1): the product of 24 numbers stays near 1, where finite
        # differences (gradgradcheck) can follow it (|z| up to 4 would make it 1e8)
        rng = rng_for(op.full_name, dtype)
        for shape, layout in REDUCTION_SHAPES + (((0, 3), "contiguous"),):
            yield S(make_tensor(shape, dtype, device, rng=rng, layout=layout, low=-1, high=1,
                                requires_grad=grad_for(dtype, requires_grad)),
                    name=f"{list(shape)} {layout}")
        yield S(make_tensor((3, 4), dtype, device, rng=rng, low=-1, high=1,
                            requires_grad=grad_for(dtype, requires_grad)),
                kwargs={"dtype": tp.complex128}, name="dtype=complex128")
    else:
        yield from sample_inputs_reduce_all(op, device, dtype, requires_grad,
                                            dtypes=(tp.float64,))
    if dtype.is_differentiable:
        for zeros in ([1], [1, 5]):   # one zero, two zeros: the gradient's special cases
            x = make_tensor((2, 3), tp.complex128 if dtype.is_complex else tp.float64, device,
                            rng=rng_for("prod", dtype), low=0.5)
            flat = x.reshape(-1)
            for z in zeros:
                flat[z] = 0.0
            yield S(x.to(dtype).detach().requires_grad_(grad_for(dtype, requires_grad)),
                    name=f"zeros at {zeros}")


def _prod_dim_samples(op, device, dtype, requires_grad):
    cases = [((3, 4), "contiguous", (0,)), ((3, 4), "transposed", (1,)),
             ((2, 3, 4), "strided", (-1,)), ((), "contiguous", (0,)), ((0, 3), "contiguous", (1,))]
    yield from samples_dim(op, device, dtype, requires_grad, cases, kwargs={"keepdim": False})
    yield from samples_dim(op, device, dtype, requires_grad, cases[:2], kwargs={"keepdim": True})
    if dtype.is_differentiable:
        x = tp.tensor([[0.0, 2.0, 3.0], [0.0, 0.0, 1.5], [1.0, 2.0, -1.0]], dtype=dtype,
                      device=device, requires_grad=grad_for(dtype, requires_grad))
        if dtype.is_complex:       # zeros among numbers off the real axis
            x = (x * (1 - 0.5j)).detach().requires_grad_(grad_for(dtype, requires_grad))
        yield S(x, (1,), name="zeros")


# ---- amax / amin -----------------------------------------------------------------------
def _amax_samples(op, device, dtype, requires_grad):
    cases = [((3, 4), "contiguous", ([0],)), ((3, 4), "transposed", ([-1],)),
             ((2, 3, 4), "contiguous", ([0, 2],)), ((3, 4), "contiguous", ([],)),
             ((), "contiguous", ([0],)), ((0, 3), "contiguous", ([1],))]
    yield from samples_dim(op, device, dtype, requires_grad, cases, make=_distinct_make)
    yield from samples_dim(op, device, dtype, requires_grad, cases[:3], make=_distinct_make,
                           kwargs={"keepdim": True})
    if dtype.is_floating_point:   # ties share the gradient
        x = tp.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]], dtype=dtype, device=device,
                      requires_grad=grad_for(dtype, requires_grad))
        yield S(x, ([1],), name="ties", grad=False)


def _errors_amax(op, device):
    yield from _errors_dim(op, device, ([5],))
    yield E(S(t_((0, 3), device=device), ([0],)), ShapeError,
            rf"{op.name}\(\): cannot reduce over dimension 0 of size 0", arg="dim")


# ---- var / std / norm ------------------------------------------------------------------
def _var_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = grad_for(dtype, requires_grad)
    cases = [((3, 4), "contiguous", None, {}), ((3, 4), "transposed", [1], {}),
             ((2, 3, 4), "strided", [0, 2], {"keepdim": True}),
             ((3, 4), "contiguous", [0], {"correction": 0}),
             ((3, 4), "expanded", [-1], {"correction": 2, "keepdim": True}),
             ((5,), "contiguous", None, {"correction": 0.5})]
    for shape, layout, dim, kw in cases:
        yield S(make_tensor(shape, dtype, device, rng=rng, layout=layout, requires_grad=grad),
                (dim,), kw, name=f"{list(shape)} {layout} dim={dim} {kw}")
    yield S(make_tensor((), dtype, device, rng=rng, requires_grad=grad), (None,),
            {"correction": 0}, name="0-dim")


def _var_unbiased_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = grad_for(dtype, requires_grad)
    for args, kw in (((1,), {"unbiased": False}), ((), {"unbiased": False}),
                     (([0, 1],), {"unbiased": True, "keepdim": True}),
                     ((None,), {"unbiased": False, "keepdim": True})):
        yield S(make_tensor((3, 4), dtype, device, rng=rng, layout="transposed",
                            requires_grad=grad), args, kw, name=f"{args} {kw}")


def _norm_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = grad_for(dtype, requires_grad)
    for p in (2, 1, float("inf"), float("-inf"), 0, 3, 0.5):
        for shape, layout, dim, keepdim in (((3, 4), "transposed", None, False),
                                            ((2, 3, 4), "strided", [1, 2], True)):
            # distinct |x| (smooth at the max), shifted off 0 (where sign and |x|**p kink)
            x = (distinct(shape, dtype, device, rng, layout) + 0.125).requires_grad_(grad) \
                if layout == "transposed" \
                else make_tensor(shape, dtype, device, rng=rng, layout=layout, exclude_zero=True,
                                 requires_grad=grad)
            yield S(x, (p, dim, keepdim), name=f"p={p} dim={dim}")
    yield S(make_tensor((3, 4), dtype, device, rng=rng, exclude_zero=True, requires_grad=grad),
            (2, [0]), {"dtype": tp.complex128 if dtype.is_complex else tp.float64},
            name="dtype=float64 (complex128 for complex: a norm's dtype= keeps the kind)")
    yield S(tp.zeros(2, 3, dtype=dtype, device=device, requires_grad=grad), (2, [1]),
            name="zero norm", grad=False)


def _norm_str_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = grad_for(dtype, requires_grad)
    yield S(make_tensor((3, 4), dtype, device, rng=rng, requires_grad=grad), ("fro",))
    yield S(make_tensor((2, 3, 4), dtype, device, rng=rng, layout="transposed",
                        requires_grad=grad), ("fro", [1, 2], True))
    if dtype in (tp.float32, tp.float64):     # the nuclear norm: the SVD's types only
        yield S(make_tensor((3, 4), dtype, device, rng=rng, requires_grad=grad), ("nuc",))
        yield S(make_tensor((2, 3, 4), dtype, device, rng=rng, layout="transposed",
                            requires_grad=grad), ("nuc", [2, 0], True))


def _errors_norm_str(op, device):
    yield E(S(t_((3, 4), device=device), ("bad",)), ArgumentError,
            r"norm\(\): argument 'p' must be a number, 'fro' or 'nuc'", arg="p")


# ---- logsumexp -------------------------------------------------------------------------
def _lse_samples(op, device, dtype, requires_grad):
    cases = [((3, 4), "contiguous", ([0],)), ((3, 4), "transposed", ([1],)),
             ((2, 3, 4), "strided", ([0, 2],)), ((), "contiguous", ([0],)),
             ((0, 3), "contiguous", ([0],)), ((3, 4), "expanded", ([-1],))]
    yield from samples_dim(op, device, dtype, requires_grad, cases)
    yield from samples_dim(op, device, dtype, requires_grad, cases[1:3], kwargs={"keepdim": True})
    if dtype.is_floating_point:
        big = 60000.0 if dtype is tp.float16 else 1e30
        for values in ([big, -big, 1.0], [float("-inf"), float("-inf")],
                       [float("inf"), 1.0], [float("nan"), 1.0]):
            yield S(tp.tensor(values, dtype=dtype, device=device,
                              requires_grad=grad_for(dtype, requires_grad)),
                    ([0],), name=f"extreme {values}", grad=False)


# ---- all / any / count_nonzero ---------------------------------------------------------
def _logic_samples(op, device, dtype, requires_grad, dims=True):
    rng = rng_for(op.full_name, dtype)
    for shape, layout in (((3, 4), "transposed"), ((), "contiguous"), ((0, 3), "contiguous"),
                          ((2, 3, 4), "strided")):
        x = make_tensor(shape, dtype, device, rng=rng, layout=layout, low=-1, high=2)
        yield S(x, name=f"{list(shape)} {layout}")
        if dims and shape:
            yield S(x, (-1,), {"keepdim": True}, name=f"{list(shape)} dim=-1")
            yield S(x, (0,), name=f"{list(shape)} dim=0")
    yield S(tp.ones(2, 3, dtype=dtype, device=device), (1,) if dims else (), name="all ones")


def _count_nonzero_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for shape, dim in (((3, 4), None), ((3, 4), [1]), ((2, 3, 4), [0, 2]), ((), None),
                       ((0, 3), [0])):
        yield S(make_tensor(shape, dtype, device, rng=rng, low=-1, high=2, layout="transposed"),
                (dim,), name=f"{list(shape)} dim={dim}")


STATS = [
    OpInfo("prod", overloads=("prod",), sample_inputs_func=_prod_samples,
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX, tolerances=HALF_SUM_TOL),
    OpInfo("prod", "dim", overloads=("prod.dim_int",), sample_inputs_func=_prod_dim_samples,
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           error_inputs_func=partial(_errors_dim, args_bad=(2,)), tolerances=HALF_SUM_TOL),
    OpInfo("amax", overloads=("amax",), sample_inputs_func=_amax_samples,
           error_inputs_func=_errors_amax),
    OpInfo("amin", overloads=("amin",), sample_inputs_func=_amax_samples,
           error_inputs_func=_errors_amax),
    OpInfo("var", overloads=("var.correction",), dtypes=FLOATING + COMPLEX,
           grad_dtypes=GRAD_COMPLEX, sample_inputs_func=_var_samples,
           error_inputs_func=_errors_float_only, tolerances=HALF_SUM_TOL),
    OpInfo("std", overloads=("std.correction",), dtypes=FLOATING + COMPLEX,
           grad_dtypes=GRAD_COMPLEX, sample_inputs_func=_var_samples,
           error_inputs_func=_errors_float_only, tolerances=HALF_SUM_TOL),
    OpInfo("var", "unbiased", overloads=("var.dim",), dtypes=FLOATING + COMPLEX,
           grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_var_unbiased_samples, tolerances=HALF_SUM_TOL),
    OpInfo("std", "unbiased", overloads=("std.dim",), dtypes=FLOATING + COMPLEX,
           grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_var_unbiased_samples, tolerances=HALF_SUM_TOL),
    OpInfo("var_mean", overloads=("var_mean.correction",), dtypes=FLOATING + COMPLEX,
           grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_var_samples, tolerances=HALF_SUM_TOL),
    OpInfo("std_mean", overloads=("std_mean.correction",), dtypes=FLOATING + COMPLEX,
           grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_var_samples, tolerances=HALF_SUM_TOL),
    OpInfo("norm", overloads=("norm.ScalarOpt_dim",), dtypes=FLOATING + COMPLEX,
           grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_norm_samples, error_inputs_func=_errors_float_only,
           tolerances=HALF_SUM_TOL),
    OpInfo("norm", "str", overloads=("norm.str",), dtypes=FLOATING + COMPLEX,
           grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_norm_str_samples, error_inputs_func=_errors_norm_str,
           tolerances=HALF_SUM_TOL),
    OpInfo("logsumexp", overloads=("logsumexp",), dtypes=ALL_DTYPES + COMPLEX,
           grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_lse_samples, tolerances=HALF_SUM_TOL),
    OpInfo("all", overloads=("all", "all.dim"), supports_autograd=False,
           sample_inputs_func=_logic_samples, error_inputs_func=partial(_errors_dim,
                                                                        args_bad=(2,))),
    OpInfo("any", overloads=("any", "any.dim"), supports_autograd=False,
           sample_inputs_func=_logic_samples),
    OpInfo("count_nonzero", overloads=("count_nonzero",), supports_autograd=False,
           sample_inputs_func=_count_nonzero_samples,
           error_inputs_func=partial(_errors_dim, args_bad=([2],))),
]


# ---- reductions -----------------------------------------------------------------------
def errors_reduce_dims(op, device):
    yield E(S(_t((3, 4), device=device), (5,)), DimError,
            rf"{op.name}\(\): Dimension out of range \(expected to be in range of \[-2, 1\], "
            r"but got 5\)", arg="dim")
    yield E(S(_t((3, 4), device=device), ((0, 0),)), DimError,
            rf"{op.name}\(\): dim \[0, 0\] appears multiple times", arg="dim")


def errors_mean(op, device):
    yield E(S(_t((3,), tp.int64, device=device)), DTypeError,
            r"mean\(\): could not infer output dtype. Argument 'self' must have a floating point "
            r"or complex dtype \(or pass dtype=\). Got: int64", arg="self")


def errors_reduce_all_nonempty(op, device):
    yield E(S(_t((0, 3), device=device)), ShapeError,
            rf"{op.name}\(\): expected a non-empty input when no dim is given", arg="self")


def errors_reduce_dim(op, device):
    yield E(S(_t((3, 4), device=device), (2,)), DimError,
            rf"{op.name}\(\): Dimension out of range", arg="dim")
    yield E(S(_t((0, 4), device=device), (0,)), ShapeError,
            rf"{op.name}\(\): cannot reduce over dimension 0 of size 0", arg="dim")


def errors_arg(op, device):
    yield from errors_reduce_all_nonempty(op, device)
    yield from errors_reduce_dim(op, device)


def _arg_samples(op, device, dtype, requires_grad):
    yield from sample_inputs_reduce_all(op, device, dtype, False, allow_empty=False)
    rng = rng_for(op.full_name, dtype, "keepdim")
    yield S(make_tensor((3, 4), dtype, device, rng=rng), kwargs={"keepdim": True},
            name="dim=None keepdim")
    yield from sample_inputs_reduce_dims(op, device, dtype, False, dim_lists=False,
                                         allow_empty=False)


def _with_nan(samples_func):
    """Add a sample with a nan (max/min propagate it; argmax picks it)."""
    def gen(op, device, dtype, requires_grad):
        yield from samples_func(op, device, dtype, requires_grad)
        if dtype.is_floating_point:
            yield S(tp.tensor([[1.0, float("nan"), 3.0], [2.0, 0.0, -1.0]], dtype=dtype,
                              device=device), name="nan")
    return gen


def _sum_samples(op, device, dtype, requires_grad):
    """A sum over everything, and with dtype=: float64, int32, float16 (complex128 for a
    complex input: a complex sum into a real dtype drops the imaginary parts, with a
    warning, as PyTorch's does)."""
    dtypes = (tp.complex128,) if dtype.is_complex else (tp.float64, tp.int32, tp.float16)
    yield from sample_inputs_reduce_all(op, device, dtype, requires_grad, dtypes=dtypes)


def _sum_dim_samples(op, device, dtype, requires_grad):
    """sum over dims, and with dtype=: float64 and int32 (complex128 for a complex input)."""
    dtypes = (tp.complex128,) if dtype.is_complex else (tp.float64, tp.int32)
    yield from sample_inputs_reduce_dims(op, device, dtype, requires_grad, dtypes=dtypes)


REDUCTIONS = [
    OpInfo("sum", overloads=("sum",), dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_sum_samples,
           tolerances={tp.float16: (5e-3, 1e-2), tp.bfloat16: (2e-2, 5e-2)}),
    OpInfo("sum", "dim", overloads=("sum.dim_IntList",), dtypes=ALL_DTYPES + COMPLEX,
           grad_dtypes=GRAD_COMPLEX, sample_inputs_func=_sum_dim_samples,
           error_inputs_func=errors_reduce_dims,
           tolerances={tp.float16: (5e-3, 1e-2), tp.bfloat16: (2e-2, 5e-2)}),
    OpInfo("mean", overloads=("mean",), dtypes=FLOATING + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=partial(sample_inputs_reduce_all, dtypes=(tp.float64,)),
           error_inputs_func=errors_mean),
    OpInfo("mean", "dim", overloads=("mean.dim",), dtypes=FLOATING + COMPLEX,
           grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=partial(sample_inputs_reduce_dims, dtypes=(tp.float64,)),
           error_inputs_func=errors_reduce_dims),
    OpInfo("max", overloads=("max",),
           sample_inputs_func=_with_nan(partial(sample_inputs_reduce_all, allow_empty=False)),
           error_inputs_func=errors_reduce_all_nonempty),
    OpInfo("max", "dim", overloads=("max.dim",),
           sample_inputs_func=partial(sample_inputs_reduce_dims, dim_lists=False,
                                      allow_empty=False),
           error_inputs_func=errors_reduce_dim),
    OpInfo("min", overloads=("min",),
           sample_inputs_func=_with_nan(partial(sample_inputs_reduce_all, allow_empty=False)),
           error_inputs_func=errors_reduce_all_nonempty),
    OpInfo("min", "dim", overloads=("min.dim",),
           sample_inputs_func=partial(sample_inputs_reduce_dims, dim_lists=False,
                                      allow_empty=False),
           error_inputs_func=errors_reduce_dim),
    # torch has no bool argmax/argmin kernels.
    OpInfo("argmax", overloads=("argmax",), dtypes=ALL_BUT_BOOL, supports_autograd=False,
           sample_inputs_func=_with_nan(_arg_samples), error_inputs_func=errors_arg),
    OpInfo("argmin", overloads=("argmin",), dtypes=ALL_BUT_BOOL, supports_autograd=False,
           sample_inputs_func=_with_nan(_arg_samples), error_inputs_func=errors_arg),
]


def _with_nans(op, device, dtype, requires_grad, shape, layout="contiguous"):
    x = _x(op, device, dtype, False, shape, layout)
    if dtype.is_floating_point and x.dim():   # a NaN in a 0-dim input leaves no value
        flat = x.reshape([-1]) if x.is_contiguous() else None
        if flat is not None:
            flat[::3] = float("nan")
    if grad_for(dtype, requires_grad):
        x.requires_grad_(True)
    return x


def _nan_reduce_samples(op, device, dtype, requires_grad):
    cases = [((3, 4), "contiguous", ()), ((2, 3, 4), "contiguous", (1,)),
             ((3, 4), "transposed", ((0, 1),)), ((5,), "contiguous", (0, True)),
             ((), "contiguous", ()), ((0, 3), "contiguous", (1,))]
    for shape, layout, args in cases:
        yield S(_with_nans(op, device, dtype, requires_grad, shape, layout), args,
                name=f"{list(shape)} {layout} {args} (every third value NaN)")
    yield S(_with_nans(op, device, dtype, requires_grad, (3, 4)), (1,),
            {"dtype": tp.float64}, name="dtype=float64")
    if dtype.is_floating_point:
        all_nan = tp.full((2, 3), float("nan"), dtype=dtype, device=device)
        yield S(all_nan, (1,), name="all NaN", grad=False)


def _errors_nanmean(op, device):
    yield E(S(t_((3,), tp.int64, device=device)), DTypeError,
            r"nanmean\(\): expected input to have floating point dtype but got int64",
            arg="self")


def _errors_trapezoid(op, device):
    yield E(S(t_((3, 4), device=device), (t_((3,), device=device),)), ShapeError,
            r"There must be one `x` value for each sample point", arg="x")


def _sum_to_size_samples(op, device, dtype, requires_grad):
    for shape, layout, size in (((2, 3, 4), "contiguous", (3, 1)), ((3, 4), "transposed", (1, 4)),
                                ((3, 4), "contiguous", (3, 4)), ((2, 3), "strided", (1,)),
                                ((3, 4), "expanded", (1, 1))):
        yield S(_x(op, device, dtype, requires_grad, shape, layout), size,
                name=f"{list(shape)} to {list(size)}")


def _errors_sum_to_size(op, device):
    yield E(S(t_((2, 3), device=device), (2,)), ShapeError,
            r"sum_to_size\(\): size \[2\] is not expandable to size \[2, 3\]", arg="size")


# ---- cov, corrcoef ----------------------------------------------------------------------
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

MOVED_DB_VIEWS_INPLACE_TMP = [
    OpInfo("nansum", overloads=("nansum",), dtypes=NUMERIC, tolerances=TOL,
           sample_inputs_func=_nan_reduce_samples),
    OpInfo("nanmean", overloads=("nanmean",), dtypes=FLOATING, tolerances=TOL,
           sample_inputs_func=_nan_reduce_samples, error_inputs_func=_errors_nanmean),
    OpInfo("trapezoid", overloads=("trapezoid.dx", "trapezoid.x"), dtypes=NUMERIC,
           sample_inputs_func=_trapezoid_samples, error_inputs_func=_errors_trapezoid,
           tolerances=TOL),
    OpInfo("sum_to_size", overloads=("sum_to_size",), dtypes=ALL_BUT_BOOL, tolerances=TOL,
           sample_inputs_func=_sum_to_size_samples, error_inputs_func=_errors_sum_to_size),
    OpInfo("cov", overloads=("cov",), dtypes=(tp.int64, tp.float32, tp.float64) + COMPLEX,
           grad_dtypes=GRAD_COMPLEX,
           tolerances=TOL, sample_inputs_func=_cov_samples, error_inputs_func=_errors_cov),
    OpInfo("corrcoef", overloads=("corrcoef",), dtypes=(tp.int64, tp.float32, tp.float64) + COMPLEX,
           grad_dtypes=GRAD_COMPLEX,
           tolerances=TOL, sample_inputs_func=_corrcoef_samples),
]

op_db = STATS + REDUCTIONS + MOVED_DB_VIEWS_INPLACE_TMP


# ---- aminmax, vdot, addbmm, the older norms, renorm -----------------------------------------
F64 = (tp.float32, tp.float64)


def _aminmax_samples(op, device, dtype, requires_grad):
    cases = [((3, 4), "transposed"), ((2, 3, 4), "strided"), ((), "contiguous"),
             ((5,), "expanded")]
    rng = rng_for(op.full_name, dtype)
    grad = grad_for(dtype, requires_grad)
    for shape, layout in cases:
        yield S(distinct(shape, dtype, device, rng, layout, grad), name=f"{list(shape)} all")
    x = distinct((3, 4), dtype, device, rng, "contiguous", grad)
    yield S(x, (), {"dim": 1}, name="dim=1")
    yield S(distinct((3, 4), dtype, device, rng, "transposed", grad), (),
            {"dim": 0, "keepdim": True}, name="dim=0 keepdim")
    yield S(distinct((), dtype, device, rng, "contiguous", grad), (), {"dim": 0},
            name="0-dim dim=0")
    yield S(make_tensor((0, 3), dtype, device, rng=rng, requires_grad=grad), (), {"dim": 1},
            name="empty, nonempty dim")


def _errors_aminmax(op, device):
    yield E(S(t_((0,), device=device)), ShapeError,
            r"aminmax\(\): cannot compute aminmax over an empty dimension", arg="self")
    yield E(S(t_((3, 4), device=device), (), {"dim": 2}), DimError,
            r"aminmax\(\): Dimension out of range", arg="dim")


def _vdot_samples(op, device, dtype, requires_grad):
    for n, layout in ((5, "contiguous"), (4, "strided"), (0, "contiguous"), (3, "expanded")):
        yield S(_x(op, device, dtype, requires_grad, (n,), layout, "a"),
                (_x(op, device, dtype, requires_grad, (n,), "contiguous", "b"),),
                name=f"n={n} {layout}")


def _errors_vdot(op, device):
    yield E(S(t_((3, 4), device=device), (t_((3,), device=device),)), ShapeError,
            r"vdot\(\): 1D tensors expected, but got 2D and 1D tensors", arg="self")
    yield E(S(t_((4,), device=device), (t_((3,), device=device),)), ShapeError,
            r"vdot\(\): inconsistent tensor size", arg="other")
    yield E(S(t_((3,), device=device), (t_((3,), tp.float64, device=device),)), DTypeError,
            r"vdot\(\): expected both vectors to have same dtype", arg="other")


def _addbmm_samples(op, device, dtype, requires_grad):
    def x(shape, key, layout="contiguous"):
        return _x(op, device, dtype, requires_grad, shape, layout, key)
    yield S(x((2, 3), "s"), (x((4, 2, 5), "a"), x((4, 5, 3), "b")), name="plain")
    yield S(x((2, 3), "s"), (x((2, 2, 4), "a"), x((2, 4, 3), "b", "transposed")),
            {"beta": 0.5, "alpha": 2}, name="beta, alpha")
    if dtype.is_complex:
        yield S(x((2, 3), "s"), (x((2, 2, 4), "a"), x((2, 4, 3), "b")),
                {"beta": 0.5 + 1j, "alpha": 2 - 1j}, name="complex beta, alpha")
    yield S(x((2, 2), "s", "transposed"), (x((0, 2, 3), "a"), x((0, 3, 2), "b")),
            {"beta": 2}, name="no batches")


def _addbmm_broadcast_samples(op, device, dtype, requires_grad):
    # (not in-place: PyTorch's addbmm_ writes a [2, 3] result over a [3] self)
    def x(shape, key):
        return _x(op, device, dtype, requires_grad, shape, "contiguous", key)
    yield S(x((3,), "s"), (x((2, 2, 4), "a"), x((2, 4, 3), "b")), {"beta": 0.5},
            name="self broadcast")
    yield S(x((2, 1), "s"), (x((3, 2, 1), "a"), x((3, 1, 3), "b")), name="self [2, 1]")


def _errors_addbmm(op, device):
    yield E(S(t_((2, 3), device=device), (t_((2, 5), device=device), t_((4, 6, 3), device=device))),
            ShapeError, r"addbmm\(\): batch1 must be a 3D tensor", arg="batch1")
    yield E(S(t_((2, 3), device=device), (t_((4, 2, 5), device=device),
                                         t_((4, 6, 3), device=device))),
            ShapeError, r"addbmm\(\): Incompatible matrix sizes for bmm", arg="batch2")


def _frobenius_samples(op, device, dtype, requires_grad):
    yield S(_x(op, device, dtype, requires_grad, (3, 4), "transposed"), ([0, 1],), name="both dims")
    yield S(_x(op, device, dtype, requires_grad, (2, 3, 4)), ([-1],), {"keepdim": True},
            name="one dim keepdim")
    yield S(_x(op, device, dtype, requires_grad, (2, 3, 4), "strided"), ([2, 0],),
            name="dims 2, 0 strided")
    yield S(_x(op, device, dtype, requires_grad, (0, 3)), ([1],), name="empty")


def _errors_frobenius(op, device):
    yield E(S(t_((2, 3, 4), device=device), ([0, 1, 2],)), ArgumentError,
            r"frobenius_norm\(\): Expected at most 2 dimensions, but got 3", arg="dim")
    yield E(S(t_((3,), tp.int64, device=device), ([0],)), DTypeError,
            r"frobenius_norm\(\): input dtype should be either floating point", arg="self")


def _nuclear_samples(op, device, dtype, requires_grad):
    if op.variant == "dim":
        yield S(_x(op, device, dtype, requires_grad, (3, 2, 4)), ([0, 2],), name="dims 0, 2")
        yield S(_x(op, device, dtype, requires_grad, (2, 3, 3), "transposed"), ([-1, -2], True),
                name="reversed keepdim")
    else:
        yield S(_x(op, device, dtype, requires_grad, (3, 4)), name="3x4")
        yield S(_x(op, device, dtype, requires_grad, (4, 3), "transposed"), (True,), name="keepdim")
        yield S(_x(op, device, dtype, requires_grad, (2, 3, 3)), name="batch")


def _errors_nuclear(op, device):
    yield E(S(t_((3, 4), device=device), ([0, 0],)), ArgumentError,
            r"nuclear_norm\(\): dims must be different", arg="dim")


def _norm_except_dim_samples(op, device, dtype, requires_grad):
    yield S(_x(op, device, dtype, requires_grad, (3, 4)), name="default: dim 0, pow 2")
    yield S(_x(op, device, dtype, requires_grad, (2, 3, 4), "transposed"), (2, 1), name="dim 1")
    yield S(_x(op, device, dtype, requires_grad, (3, 4)), (3, 1), name="pow 3 last dim")
    yield S(_x(op, device, dtype, requires_grad, (3, 4), "strided"), (1, -1), name="dim -1: all")


def _renorm_samples(op, device, dtype, requires_grad):
    def x(shape, layout="contiguous"):
        return _x(op, device, dtype, requires_grad, shape, layout, low=-2, high=2)
    yield S(x((3, 4)), (2, 0, 1.5), name="p 2 dim 0")
    yield S(x((3, 4), "transposed"), (1, 1, 2.0), name="p 1 dim 1 transposed")
    yield S(x((2, 3, 4)), (3, -1, 1.0), name="p 3 dim -1")
    yield S(x((2, 3)), (2, 0, 100.0), name="nothing to scale")
    yield S(x((0, 3)), (2, 1, 1.0), name="empty")


def _errors_renorm(op, device):
    yield E(S(t_((3, 4), device=device), (2, 0, -1)), ArgumentError,
            r"renorm\(\): expected maxnorm to be >= 0 but got -1", arg="maxnorm")
    yield E(S(t_((3, 4), device=device), (-1, 0, 1)), ArgumentError,
            r"renorm\(\): non-positive-norm not supported", arg="p")
    yield E(S(t_((3,), device=device), (2, 0, 1)), ShapeError,
            r"renorm\(\): input needs at least 2 dimensions, got 1", arg="self")


# ---- counting: bincount, histc, histograms ---------------------------------------------------
def _bincount_samples(op, device, dtype, requires_grad):
    values = tp.tensor([0, 2, 2, 5, 1, 2, 7], device=device).to(dtype)
    yield S(values, name="counts")
    yield S(values[::2], (), {"minlength": 10}, name="strided, minlength")
    for wd in (tp.float32, tp.float64, tp.int64):
        w = tp.tensor([0.5, 1.0, 2.0, -1.0, 3.0, 0.25, 1.5], device=device).to(wd)
        yield S(values, (w,), name=f"weights {wd.name}")
    yield S(tp.tensor([], device=device).to(dtype), (), {"minlength": 3}, name="empty")
    yield S(tp.tensor([], device=device).to(dtype), name="empty, no minlength")


def _errors_bincount(op, device):
    yield E(S(tp.tensor([1, -1], device=device)), ShapeError,
            r"bincount\(\): only supports 1-d non-negative integral inputs", arg="self",
            meta=False)
    yield E(S(tp.tensor([[1, 2]], device=device)), ShapeError,
            r"bincount\(\): only supports 1-d non-negative integral inputs", arg="self")
    yield E(S(tp.tensor([1, 2], device=device), (), {"minlength": -1}), ArgumentError,
            r"bincount\(\): minlength should be >= 0", arg="minlength")
    yield E(S(tp.tensor([1, 2], device=device), (tp.ones(3, device=device),)), ShapeError,
            r"bincount\(\): weights should be 1-d and have the same length", arg="weights")


def _histc_samples(op, device, dtype, requires_grad):
    x = tp.tensor([1.0, 2.0, 1.0, 4.0, 2.5, 3.0, 0.5], device=device).to(dtype)
    yield S(x, (4,), name="4 bins over the data's range")
    yield S(x[::2], (), {"bins": 3, "min": 0, "max": 3}, name="strided, range, outside skipped")
    yield S(_x(op, device, dtype, False, (3, 5), "transposed"), (6, -1, 1), name="2-d transposed")
    yield S(tp.tensor([2.0, 2.0], device=device).to(dtype), (3,), name="one value: widened")
    yield S(tp.tensor([], device=device).to(dtype), (3,), name="empty")
    yield S(tp.tensor(0.25, device=device).to(dtype), (2, 0, 1), name="0-dim")


def _errors_histc(op, device):
    yield E(S(t_((4,), device=device), (0,)), ArgumentError, r"histc\(\): bins must be > 0",
            arg="bins")
    yield E(S(t_((4,), device=device), (4, 3, 1)), ArgumentError,
            r"histc\(\): max must be larger than min", arg="max")
    yield E(S(tp.tensor([1, 2], device=device), (3,)), DTypeError,
            r"histc\(\): expected a floating point input", arg="self")


def _points(op, device, dtype, shape, layout="contiguous", key=""):
    return make_tensor(shape, dtype, device, rng=rng_for(op.full_name, dtype, shape, key),
                       layout=layout, low=-2, high=2)


def _histogram_samples(op, device, dtype, requires_grad):
    x = _points(op, device, dtype, (3, 5), "transposed")
    w = _points(op, device, dtype, (3, 5), key="w").abs()
    yield S(x, (4,), name="4 bins")
    yield S(x, (3,), {"range": [-1.0, 1.0], "weight": w}, name="range, weight")
    yield S(x, (5,), {"density": True}, name="density")
    yield S(x, (tp.tensor([-2.0, -0.5, 0.0, 1.0, 2.0], device=device).to(dtype),),
            name="bin edges")
    yield S(x, (tp.tensor([-1.0, 0.5, 1.5], device=device).to(dtype),),
            {"weight": w, "density": True}, name="bin edges, weight, density")
    yield S(tp.tensor([], device=device).to(dtype), (2,), name="empty")
    yield S(tp.tensor(1.0, device=device).to(dtype), (2,), name="0-dim")


def _errors_histogram(op, device):
    yield E(S(t_((4,), device=device), (0,)), ArgumentError, r"histogram\(\): bins must be > 0",
            arg="bins")
    yield E(S(t_((4,), device=device), (3,), {"range": [3.0, 0.0]}), ArgumentError,
            r"histogram\(\): min should not exceed max", arg="range")
    yield E(S(tp.tensor([1.0, float("inf")], device=device), (3,)), ArgumentError,
            r"histogram\(\): dimension 0's range \[1.0, inf\] is not finite", arg="self",
            meta=False)
    yield E(S(t_((4,), device=device), (3,), {"weight": t_((2,), device=device)}), ShapeError,
            r"histogram\(\): if weight tensor is provided", arg="weight")
    yield E(S(t_((4,), device=device), (t_((3,), tp.float64, device=device),)), DTypeError,
            r"histogram\(\): input tensor and bins tensors should have the same dtype",
            arg="bins")


def _histogramdd_samples(op, device, dtype, requires_grad):
    x = _points(op, device, dtype, (6, 2))
    yield S(x, ([2, 3],), name="bins per dim")
    yield S(_points(op, device, dtype, (2, 4, 3), "transposed"), (2,),
            {"range": [-1.0, 1.0, -2.0, 2.0, 0.0, 1.0]}, name="int bins, range, 3-d points")
    yield S(x, ([3, 2],), {"weight": _points(op, device, dtype, (6,), key="w").abs(),
                           "density": True}, name="weight, density")
    yield S(x, ([tp.tensor([-2.0, 0.0, 2.0], device=device).to(dtype),
                 tp.tensor([-1.0, 0.0, 0.5, 1.0], device=device).to(dtype)],),
            name="bin edges")
    yield S(_points(op, device, dtype, (0, 2)), ([2, 2],), name="no points")


def _errors_histogramdd(op, device):
    yield E(S(t_((4,), device=device), ([2],)), ShapeError,
            r"histogramdd\(\): input tensor should have at least 2 dimensions", arg="self")
    yield E(S(t_((4, 2), device=device), ([2, 2, 2],)), ArgumentError,
            r"histogramdd\(\): expected 2 sequences of bin edges", arg="bins")
    yield E(S(t_((4, 2), device=device), ([2, 2],), {"range": [0.0, 1.0]}), ArgumentError,
            r"histogramdd\(\): for a 2-dimensional histogram, range should have 4 elements",
            arg="range")


def _histogramdd_kernel_samples(op, device, dtype, requires_grad):
    x = _points(op, device, dtype, (6, 2))
    if op.name == "_histogramdd_from_bin_cts":
        yield S(x, ([2, 3],), name="bins per dim")
        yield S(x, ([3, 2],), {"range": [-1.0, 1.0, -2.0, 2.0],
                               "weight": _points(op, device, dtype, (6,), key="w").abs(),
                               "density": True}, name="range, weight, density")
    else:
        yield S(x, ([tp.tensor([-2.0, 0.0, 2.0], device=device).to(dtype),
                     tp.tensor([-1.0, 0.0, 0.5, 1.0], device=device).to(dtype)],),
                name="bin edges")


COUNTING_AND_NORMS = [
    OpInfo("aminmax", overloads=("aminmax",), sample_inputs_func=_aminmax_samples,
           error_inputs_func=_errors_aminmax),
    OpInfo("vdot", overloads=("vdot",), dtypes=(tp.int64, tp.float32, tp.float64) + COMPLEX,
           grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_vdot_samples, error_inputs_func=_errors_vdot, tolerances=TOL),
    OpInfo("addbmm", overloads=("addbmm", "addbmm_"), inplace="addbmm_", dtypes=F64 + COMPLEX,
           grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_addbmm_samples, error_inputs_func=_errors_addbmm,
           tolerances=TOL),
    OpInfo("addbmm", "broadcast", overloads=("addbmm",), dtypes=F64 + COMPLEX,
           grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_addbmm_broadcast_samples, tolerances=TOL),
    OpInfo("frobenius_norm", overloads=("frobenius_norm.dim",), dtypes=F64 + COMPLEX,
           grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_frobenius_samples, error_inputs_func=_errors_frobenius,
           tolerances=TOL),
    OpInfo("nuclear_norm", overloads=("nuclear_norm",), dtypes=F64,
           sample_inputs_func=_nuclear_samples, tolerances=TOL),
    OpInfo("nuclear_norm", "dim", overloads=("nuclear_norm.dim",), dtypes=F64,
           sample_inputs_func=_nuclear_samples, error_inputs_func=_errors_nuclear,
           tolerances=TOL),
    OpInfo("norm_except_dim", overloads=("norm_except_dim",), dtypes=F64,
           sample_inputs_func=_norm_except_dim_samples, tolerances=TOL),
    OpInfo("renorm", overloads=("renorm", "renorm_"), inplace="renorm_", dtypes=F64,
           sample_inputs_func=_renorm_samples, error_inputs_func=_errors_renorm,
           tolerances=TOL),
    OpInfo("bincount", overloads=("bincount",), dtypes=(tp.uint8, tp.int8, tp.int16, tp.int32,
                                                        tp.int64),
           sample_inputs_func=_bincount_samples, error_inputs_func=_errors_bincount,
           supports_autograd=False, supports_meta=False),
    OpInfo("histc", overloads=("histc",), dtypes=F64, sample_inputs_func=_histc_samples,
           error_inputs_func=_errors_histc, supports_autograd=False),
    OpInfo("histogram", overloads=("histogram.bin_ct", "histogram.bins_tensor"), dtypes=F64,
           sample_inputs_func=_histogram_samples, error_inputs_func=_errors_histogram,
           supports_autograd=False, supports_meta=False, tolerances=TOL),
    OpInfo("histogramdd", overloads=("histogramdd", "histogramdd.int_bins",
                                     "histogramdd.TensorList_bins"), dtypes=F64,
           sample_inputs_func=_histogramdd_samples, error_inputs_func=_errors_histogramdd,
           supports_autograd=False, supports_meta=False, tolerances=TOL),
    OpInfo("_histogramdd_from_bin_cts", overloads=("_histogramdd_from_bin_cts",), dtypes=F64,
           sample_inputs_func=_histogramdd_kernel_samples, supports_autograd=False,
           tolerances=TOL),
    OpInfo("_histogramdd_from_bin_tensors", overloads=("_histogramdd_from_bin_tensors",),
           dtypes=F64, sample_inputs_func=_histogramdd_kernel_samples,
           supports_autograd=False, tolerances=TOL),
]

op_db += COUNTING_AND_NORMS
