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

import torch

import tensorplay as tp
from tensorplay.errors import ArgumentError, DimError, DTypeError, ShapeError
from opinfo.core import (
    ALL_BUT_BOOL, ALL_DTYPES, FLOATING, ErrorInput as E, OpInfo, SampleInput as S, make_tensor,
    rng_for,
)
from opinfo.reduction_common import distinct, grad_for, samples_dim, t_
from opinfo.samples import sample_inputs_reduce_all

HALF_SUM_TOL = {tp.float16: (5e-3, 1e-2), tp.bfloat16: (2e-2, 5e-2)}


def _distinct_make(shape, dtype, device, rng, layout, grad):
    return distinct(shape, dtype, device, rng, layout, grad)


def _errors_dim(op, device, args_bad=(5,)):
    yield E(S(t_((3, 4), device=device), args_bad), DimError,
            rf"{op.name}\(\): Dimension out of range", arg="dim")


def _errors_float_only(op, device):
    yield E(S(t_((3, 4), tp.int64, device=device)), DTypeError,
            rf"{op.name}\(\): expected a floating point input, but argument 'self' has dtype "
            r"int64", arg="self")


# ---- prod ------------------------------------------------------------------------------
def _prod_samples(op, device, dtype, requires_grad):
    yield from sample_inputs_reduce_all(op, device, dtype, requires_grad, dtypes=(tp.float64,))
    if dtype.is_floating_point:
        for zeros in ([1], [1, 5]):   # one zero, two zeros: the gradient's special cases
            x = make_tensor((2, 3), tp.float64, device, rng=rng_for("prod", dtype), low=0.5)
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
    if dtype.is_floating_point:
        x = tp.tensor([[0.0, 2.0, 3.0], [0.0, 0.0, 1.5], [1.0, 2.0, -1.0]], dtype=dtype,
                      device=device, requires_grad=grad_for(dtype, requires_grad))
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
            (2, [0]), {"dtype": tp.float64}, name="dtype=float64")
    yield S(tp.zeros(2, 3, dtype=dtype, device=device, requires_grad=grad), (2, [1]),
            name="zero norm", grad=False)


def _norm_str_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = grad_for(dtype, requires_grad)
    yield S(make_tensor((3, 4), dtype, device, rng=rng, requires_grad=grad), ("fro",))
    yield S(make_tensor((2, 3, 4), dtype, device, rng=rng, layout="transposed",
                        requires_grad=grad), ("fro", [1, 2], True))


def _errors_norm_str(op, device):
    yield E(S(t_((3, 4), device=device), ("nuc",)), ArgumentError,
            r"norm\(\): argument 'p' must be a number or 'fro'", arg="p", torch_raises=False)


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


# ---- scans -----------------------------------------------------------------------------
SCAN_CASES = [((3, 4), "contiguous", (0,)), ((3, 4), "transposed", (1,)),
              ((2, 3, 4), "strided", (-1,)), ((), "contiguous", (0,)), ((0, 3), "contiguous", (1,)),
              ((5,), "expanded", (0,))]


def _cumsum_samples(op, device, dtype, requires_grad):
    yield from samples_dim(op, device, dtype, requires_grad, SCAN_CASES)
    rng = rng_for(op.full_name, dtype, "dtype")
    yield S(make_tensor((3, 4), dtype, device, rng=rng), (1,), {"dtype": tp.float64},
            name="dtype=float64")


def _cumprod_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    yield from samples_dim(op, device, dtype, requires_grad, SCAN_CASES[:5])
    if dtype.is_floating_point:
        base = make_tensor((4, 5), tp.float64, device, rng=rng, low=0.5, high=1.5)
        for zeros, what in (([(0, 2)], "one zero"), ([(1, 1), (1, 3)], "two zeros"),
                            ([(2, 0)], "zero first"), ([(3, 4)], "zero last")):
            x = base.clone()
            for i, j in zeros:
                x[i, j] = 0.0
            yield S(x.to(dtype).requires_grad_(grad_for(dtype, requires_grad)), (1,), name=what)


def _cum_extreme_samples(op, device, dtype, requires_grad):
    yield from samples_dim(op, device, dtype, requires_grad, SCAN_CASES[:5], make=_distinct_make)
    if dtype.is_floating_point:
        x = tp.tensor([[2.0, 1.0, 1.0, float("nan"), 0.0, 3.0], [1.0, 3.0, 3.0, 2.0, 3.0, 0.5]],
                      dtype=dtype, device=device)
        yield S(x, (1,), name="ties and nan")


def _errors_cumsum_(op, device):
    yield E(S(t_((3,), device=device), (0,), {"dtype": tp.float64}), DTypeError,
            r"cumsum_\(\): argument 'dtype' \(float64\) must match", arg="dtype", inplace=True,
            torch_raises=False)


# ---- sorting and selection -------------------------------------------------------------
SORT_CASES = [((3, 4), "contiguous", ()), ((3, 4), "transposed", (0,)),
              ((2, 3, 4), "contiguous", (1,)), ((), "contiguous", ()), ((0, 3), "contiguous", ()),
              ((5,), "contiguous", (-1,))]


def _sort_samples(op, device, dtype, requires_grad, stable=False):
    kw = {"stable": True} if stable else {}
    if stable:   # `dim` is keyword-only after `stable`
        for shape, layout, args in SORT_CASES:
            x = distinct(shape, dtype, device, rng_for(op.full_name, dtype, shape), layout,
                         grad_for(dtype, requires_grad))
            yield S(x, (), {**kw, **({"dim": args[0]} if args else {})},
                    name=f"{list(shape)} {layout} {args}")
    else:
        yield from samples_dim(op, device, dtype, requires_grad, SORT_CASES,
                               make=_distinct_make)
    rng = rng_for(op.full_name, dtype, "desc")
    x = distinct((3, 5), dtype, device, rng, "transposed", grad_for(dtype, requires_grad))
    yield S(x, (), {**kw, "dim": 0, "descending": True}, name="descending")
    if stable:   # ties: a stable sort keeps their order, in both directions
        y = tp.tensor([[1, 3, 3, 2, 1, 3]], device=device).to(dtype)
        yield S(y, (), {**kw, "descending": True}, name="ties descending")
        yield S(y, (), kw, name="ties ascending")
    if dtype.is_floating_point:
        nan = tp.tensor([2.0, float("nan"), -1.0, float("inf")], dtype=dtype, device=device)
        yield S(nan, (), {**kw, "descending": True}, name="nan", grad=False)


def _topk_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = grad_for(dtype, requires_grad)
    for shape, layout, args in (((3, 5), "contiguous", (2,)), ((3, 5), "transposed", (2, 0)),
                                ((2, 3, 4), "contiguous", (3, 1, False)), ((), "contiguous", (1,)),
                                ((4,), "contiguous", (0,)), ((4,), "contiguous", (4, -1, True))):
        yield S(distinct(shape, dtype, device, rng, layout, grad), args,
                name=f"{list(shape)} {layout} {args}")


def _kth_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = grad_for(dtype, requires_grad)
    for shape, layout, args, kw in (((3, 5), "contiguous", (2,), {}),
                                    ((3, 5), "transposed", (3, 0), {"keepdim": True}),
                                    ((2, 3, 4), "contiguous", (1, 1), {}),
                                    ((), "contiguous", (1,), {})):
        yield S(distinct(shape, dtype, device, rng, layout, grad), args, kw,
                name=f"{list(shape)} {layout} {args} {kw}")


def _median_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = grad_for(dtype, requires_grad)
    for shape, layout in (((3, 4), "transposed"), ((5,), "contiguous"), ((), "contiguous")):
        yield S(distinct(shape, dtype, device, rng, layout, grad), name=f"{list(shape)}")
    if dtype.is_floating_point:
        yield S(tp.tensor([1.0, float("nan"), 0.0], dtype=dtype, device=device), name="nan")


def _median_dim_samples(op, device, dtype, requires_grad):
    cases = [((3, 4), "contiguous", (0,)), ((3, 5), "transposed", (1,)),
             ((2, 3, 4), "contiguous", (-1,)), ((), "contiguous", (0,))]
    yield from samples_dim(op, device, dtype, requires_grad, cases, make=_distinct_make)
    yield from samples_dim(op, device, dtype, requires_grad, cases[:2], make=_distinct_make,
                           kwargs={"keepdim": True})
    if dtype.is_floating_point:
        x = tp.tensor([[1.0, float("nan"), 0.0, float("nan")], [3.0, 1.0, 2.0, 0.0]],
                      dtype=dtype, device=device)
        yield S(x, (1,), name="nan")


def _mode_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = grad_for(dtype, requires_grad)
    values = [[2, 1, 1, 2, 3, 0], [5, 5, 4, 4, 1, 4], [0, 1, 2, 3, 4, 6]]
    if dtype is tp.bool:
        values = [[v % 2 for v in row] for row in values]
    x = tp.tensor(values, device=device).to(dtype)
    yield S(x.detach().requires_grad_(grad), name="dim=-1", grad=False)
    yield S(x.t().detach().requires_grad_(grad), (0, True), name="transposed dim=0 keepdim",
            grad=False)
    yield S(distinct((2, 3, 4), dtype, device, rng, "contiguous", grad), (1,), name="distinct")
    yield S(distinct((), dtype, device, rng, "contiguous", grad), name="0-dim")


def _errors_topk(op, device):
    yield E(S(t_((3, 4), device=device), (5,)), ArgumentError,
            r"topk\(\): argument 'k' \(5\) is out of range", arg="k")
    yield from _errors_dim(op, device, (1, 2))


def _errors_kth(op, device):
    yield E(S(t_((3, 4), device=device), (0,)), ArgumentError,
            r"kthvalue\(\): argument 'k' \(0\) must be in range \[1, 4\]", arg="k")
    yield from _errors_dim(op, device, (1, 2))


def _errors_value_index(op, device):
    yield from _errors_dim(op, device, (2,))
    yield E(S(t_((0, 4), device=device), (0,)), ShapeError,
            rf"{op.name}\(\): cannot reduce over dimension 0 of size 0", arg="dim")


def _errors_median(op, device):
    # (median of an empty tensor is NaN, as in PyTorch: no error)
    yield E(S(t_((3,), tp.bool, device=device)), DTypeError,
            r"median\(\): not implemented for bool tensors", arg="self")


# ---- gather / scatter-add along a dim --------------------------------------------------
def _gather_samples(op, device, dtype, requires_grad, scatter=False):
    rng = rng_for(op.full_name, dtype)
    grad = grad_for(dtype, requires_grad)
    for shape, dim, index_shape in (((3, 4), 1, (3, 6)), ((3, 4), 0, (5, 4)),
                                    ((2, 3, 4), -1, (2, 3, 2)), ((), 0, ())):
        d = dim % max(len(shape), 1)
        n = shape[d] if shape else 1
        index = tp.tensor(rng.integers(0, n, index_shape), dtype=tp.int64, device=device)
        if scatter:
            src = make_tensor(index_shape, dtype, device, rng=rng, requires_grad=grad)
            yield S(src, (dim, index, list(shape)), name=f"{list(shape)} dim={dim}")
        else:
            x = make_tensor(shape, dtype, device, rng=rng, layout="transposed", requires_grad=grad)
            yield S(x, (dim, index), name=f"{list(shape)} dim={dim}")


def _torch_scatter_add(src, dim, index, sizes):
    return torch.zeros(sizes, dtype=src.dtype).scatter_add(dim, index, src)


def _errors_gather(op, device):
    yield E(S(t_((3, 4), device=device), (1, t_((3, 2), tp.float32, device=device))),
            DTypeError, r"_gather_along\(\): argument 'index' must be an int64 tensor",
            arg="index", torch_raises=True)


STATS = [
    OpInfo("prod", overloads=("prod",), sample_inputs_func=_prod_samples,
           tolerances=HALF_SUM_TOL),
    OpInfo("prod", "dim", overloads=("prod.dim_int",), sample_inputs_func=_prod_dim_samples,
           error_inputs_func=partial(_errors_dim, args_bad=(2,)), tolerances=HALF_SUM_TOL),
    OpInfo("amax", overloads=("amax",), sample_inputs_func=_amax_samples,
           error_inputs_func=_errors_amax),
    OpInfo("amin", overloads=("amin",), sample_inputs_func=_amax_samples,
           error_inputs_func=_errors_amax),
    OpInfo("var", overloads=("var.correction",), dtypes=FLOATING, sample_inputs_func=_var_samples,
           error_inputs_func=_errors_float_only, tolerances=HALF_SUM_TOL),
    OpInfo("std", overloads=("std.correction",), dtypes=FLOATING, sample_inputs_func=_var_samples,
           error_inputs_func=_errors_float_only, tolerances=HALF_SUM_TOL),
    OpInfo("var", "unbiased", overloads=("var.dim",), dtypes=FLOATING,
           sample_inputs_func=_var_unbiased_samples, tolerances=HALF_SUM_TOL),
    OpInfo("std", "unbiased", overloads=("std.dim",), dtypes=FLOATING,
           sample_inputs_func=_var_unbiased_samples, tolerances=HALF_SUM_TOL),
    OpInfo("var_mean", overloads=("var_mean.correction",), dtypes=FLOATING,
           sample_inputs_func=_var_samples, tolerances=HALF_SUM_TOL),
    OpInfo("std_mean", overloads=("std_mean.correction",), dtypes=FLOATING,
           sample_inputs_func=_var_samples, tolerances=HALF_SUM_TOL),
    OpInfo("norm", overloads=("norm.ScalarOpt_dim",), dtypes=FLOATING,
           sample_inputs_func=_norm_samples, error_inputs_func=_errors_float_only,
           tolerances=HALF_SUM_TOL),
    OpInfo("norm", "str", overloads=("norm.str",), dtypes=FLOATING,
           sample_inputs_func=_norm_str_samples, error_inputs_func=_errors_norm_str,
           tolerances=HALF_SUM_TOL),
    OpInfo("logsumexp", overloads=("logsumexp",), dtypes=ALL_DTYPES,
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

SCANS = [
    OpInfo("cumsum", overloads=("cumsum", "cumsum_"), inplace="cumsum_",
           sample_inputs_func=_cumsum_samples, error_inputs_func=_errors_cumsum_,
           tolerances=HALF_SUM_TOL),
    OpInfo("cumprod", overloads=("cumprod", "cumprod_"), inplace="cumprod_",
           sample_inputs_func=_cumprod_samples, tolerances=HALF_SUM_TOL),
    OpInfo("cummax", overloads=("cummax",), sample_inputs_func=_cum_extreme_samples,
           error_inputs_func=partial(_errors_dim, args_bad=(2,))),
    OpInfo("cummin", overloads=("cummin",), sample_inputs_func=_cum_extreme_samples),
]

SORTING = [
    OpInfo("sort", overloads=("sort",), sample_inputs_func=_sort_samples,
           error_inputs_func=partial(_errors_dim, args_bad=(2,))),
    OpInfo("sort", "stable", overloads=("sort.stable",),
           sample_inputs_func=partial(_sort_samples, stable=True)),
    OpInfo("argsort", overloads=("argsort",), supports_autograd=False,
           sample_inputs_func=_sort_samples),
    OpInfo("argsort", "stable", overloads=("argsort.stable",), supports_autograd=False,
           sample_inputs_func=partial(_sort_samples, stable=True)),
    OpInfo("topk", overloads=("topk",), dtypes=ALL_BUT_BOOL, sample_inputs_func=_topk_samples,
           error_inputs_func=_errors_topk),
    OpInfo("kthvalue", overloads=("kthvalue",), dtypes=ALL_BUT_BOOL,
           sample_inputs_func=_kth_samples, error_inputs_func=_errors_kth),
    OpInfo("median", overloads=("median",), dtypes=ALL_BUT_BOOL,
           sample_inputs_func=_median_samples, error_inputs_func=_errors_median),
    OpInfo("median", "dim", overloads=("median.dim",), dtypes=ALL_BUT_BOOL,
           sample_inputs_func=_median_dim_samples, error_inputs_func=_errors_value_index),
    OpInfo("mode", overloads=("mode",), dtypes=ALL_DTYPES, sample_inputs_func=_mode_samples,
           error_inputs_func=_errors_value_index),
    OpInfo("_gather_along", overloads=("_gather_along",), ref="gather",
           sample_inputs_func=_gather_samples, error_inputs_func=_errors_gather),
    OpInfo("_scatter_add_along", overloads=("_scatter_add_along",), ref=_torch_scatter_add,
           sample_inputs_func=partial(_gather_samples, scatter=True)),
]

op_db = STATS + SCANS + SORTING
