"""Database entries: sorting and selection (sort, argsort, topk, kthvalue, median,
mode, cummax/cummin, msort), searchsorted, bucketize, isin."""
from __future__ import annotations
from functools import partial
import torch
import tensorplay as tp
from tensorplay.errors import ArgumentError, DimError, DTypeError, ShapeError
from opinfo.core import (
    ALL_BUT_BOOL, ALL_DTYPES, ErrorInput as E, FLOATING, make_tensor, OpInfo, rng_for,
    SampleInput as S,
)
from opinfo.reduction_common import distinct, grad_for, samples_dim, t_
from opinfo.samples import (
    _distinct_make, _errors_dim, _shape_samples, _x, sample_inputs_binary,
    sample_inputs_reduce_all, sample_inputs_unary,
)

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



# ---- searchsorted, bucketize -------------------------------------------------------------
def _sorted(op, device, dtype, shape):
    x = _x(op, device, dtype, False, shape, low=-9, high=9)
    return x.sort(-1)[0].contiguous()


def _searchsorted_samples(op, device, dtype, requires_grad):
    seq = _sorted(op, device, dtype, (6,))
    values = _x(op, device, dtype, False, (3, 4), low=-10, high=10)
    yield S(seq, (values,), name="1-D sequence")
    yield S(seq, (values,), {"right": True}, name="right")
    yield S(seq, (values,), {"side": "right", "out_int32": True}, name="side='right', int32")
    yield S(seq, (seq,), name="values equal to the boundaries")
    yield S(_sorted(op, device, dtype, (2, 5)), (_x(op, device, dtype, False, (2, 3)),),
            name="batched sequence")
    shuffled = seq.flip([0])
    sorter = tp.arange(5, -1, -1, device=device)
    yield S(shuffled, (values,), {"sorter": sorter}, name="sorter")
    yield S(seq, (tp.zeros(0, dtype=dtype, device=device),), name="no values")
    if dtype.is_floating_point:
        edge = tp.tensor([float("nan"), float("inf"), -float("inf")], dtype=dtype,
                         device=device)
        yield S(seq, (edge,), name="nan and infinities")


def _searchsorted_scalar_samples(op, device, dtype, requires_grad):
    seq = _sorted(op, device, dtype, (6,))
    for value in (3, 2.5, 20) if dtype is tp.uint8 else (3, -20, 2.5):
        yield S(seq, (value,), name=f"value {value}", meta=False)
    yield S(seq, (3,), {"right": True}, name="right", meta=False)


def _errors_searchsorted(op, device):
    seq = t_((2, 5), device=device)
    yield E(S(seq, (t_((3, 2), device=device),)), ShapeError,
            r"searchsorted\(\): boundaries tensor should be 1 dimension or the first N-1 "
            r"dimensions", arg="self")
    yield E(S(t_((5,), device=device), (t_((3,), device=device),), {"right": True,
                                                                 "side": "left"}),
            ArgumentError, r"searchsorted\(\): side and right can't be set to opposites",
            arg="side")
    yield E(S(t_((5,), device=device), (t_((3,), device=device),),
              {"sorter": tp.zeros(5, dtype=tp.int32, device=device)}), DTypeError,
            r"searchsorted\(\): sorter must be a tensor of long dtype", arg="sorter")


def _bucketize_samples(op, device, dtype, requires_grad):
    boundaries = _sorted(op, device, dtype, (5,))
    values = _x(op, device, dtype, False, (3, 4), "transposed", low=-10, high=10)
    yield S(values, (boundaries,), name="2-D values")
    yield S(values, (boundaries,), {"right": True, "out_int32": True}, name="right, int32")
    yield S(boundaries, (boundaries,), name="values on the boundaries")
    yield S(_x(op, device, dtype, False, ()), (boundaries,), name="0-dim value")


def _bucketize_scalar_samples(op, device, dtype, requires_grad):
    """(boundaries, value): the tensor comes first so that the generic tests see it."""
    boundaries = _sorted(op, device, dtype, (5,))
    for value in (0, 2.5, 30) if dtype is tp.uint8 else (0, 2.5, -30):
        yield S(boundaries, (value,), name=f"value {value}", meta=False)
    yield S(boundaries, (0,), {"right": True}, name="right", meta=False)


def _bucketize_scalar(module):
    return lambda boundaries, value, **kw: module.bucketize(value, boundaries, **kw)


def _errors_bucketize(op, device):
    yield E(S(t_((3,), device=device), (t_((2, 2), device=device),)), ShapeError,
            r"bucketize\(\): boundaries tensor must be 1 dimension, but got dim\(2\)",
            arg="boundaries")


# ---- isin, dist, inner ------------------------------------------------------------------
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

MOVED_DB_VIEWS_INPLACE_TMP = [
    OpInfo("searchsorted", overloads=("searchsorted.Tensor",), dtypes=ALL_BUT_BOOL,
           supports_autograd=False, sample_inputs_func=_searchsorted_samples,
           error_inputs_func=_errors_searchsorted),
    OpInfo("searchsorted", "scalar", overloads=("searchsorted.Scalar",), dtypes=ALL_BUT_BOOL,
           supports_autograd=False, sample_inputs_func=_searchsorted_scalar_samples),
    OpInfo("bucketize", overloads=("bucketize.Tensor",), dtypes=ALL_BUT_BOOL,
           supports_autograd=False, sample_inputs_func=_bucketize_samples,
           error_inputs_func=_errors_bucketize),
    OpInfo("bucketize", "scalar", overloads=("bucketize.Scalar",), dtypes=ALL_BUT_BOOL,
           op=_bucketize_scalar(tp), ref=_bucketize_scalar(torch), supports_autograd=False,
           sample_inputs_func=_bucketize_scalar_samples),
    OpInfo("msort", overloads=("msort",), dtypes=ALL_BUT_BOOL,
           sample_inputs_func=_shape_samples),
    OpInfo("isin", overloads=("isin.Tensor_Tensor",), dtypes=ALL_BUT_BOOL,
           supports_autograd=False, sample_inputs_func=_isin_samples),
    OpInfo("isin", "scalar_test", overloads=("isin.Tensor_Scalar",), dtypes=ALL_BUT_BOOL,
           supports_autograd=False, sample_inputs_func=_isin_samples),
    OpInfo("isin", "scalar_element", overloads=("isin.Scalar_Tensor",), dtypes=ALL_BUT_BOOL,
           op=_isin_scalar_element(tp), ref=_isin_scalar_element(torch),
           supports_autograd=False, sample_inputs_func=_isin_samples),
]

op_db = SORTING + MOVED_DB_VIEWS_INPLACE_TMP


# ---- nanmedian, quantile, nanquantile, unique_consecutive ------------------------------------
NAN = float("nan")


def _nanmedian_samples(op, device, dtype, requires_grad):
    yield from _median_samples(op, device, dtype, requires_grad)
    if dtype.is_floating_point:
        yield S(tp.tensor([NAN, 2.0, NAN, -1.0, 0.5], dtype=dtype, device=device),
                name="NaNs skipped")
        yield S(tp.tensor([NAN, NAN], dtype=dtype, device=device), name="all NaN")
        yield S(tp.tensor([], dtype=dtype, device=device), name="empty")


def _nanmedian_dim_samples(op, device, dtype, requires_grad):
    yield from _median_dim_samples(op, device, dtype, requires_grad)
    if dtype.is_floating_point:
        # (an all-NaN slice of more than one element: PyTorch's index is its nth_element's)
        x = tp.tensor([[1.0, NAN, 0.0, NAN], [3.0, 1.0, 2.0, 0.0], [NAN, 5.0, NAN, NAN]],
                      dtype=dtype, device=device)
        yield S(x, (1,), name="NaNs skipped")
        yield S(x.t(), (0, True), name="NaNs skipped, transposed, keepdim")
        yield S(tp.tensor([[NAN], [1.0]], dtype=dtype, device=device), (1,), name="all NaN")


def _quantile_samples(op, device, dtype, requires_grad):
    def x(shape, layout="contiguous", key=""):
        return distinct(shape, dtype, device, rng_for(op.full_name, dtype, shape, layout, key),
                        layout, grad_for(dtype, requires_grad))

    def q(values):
        return tp.tensor(values, dtype=dtype, device=device)
    yield S(x((3, 5)), (0.3,), {"keepdim": True}, name="all elements, scalar q, keepdim")
    yield S(x((3, 5), "transposed"), (q([0.0, 0.25, 1.0]),), {"dim": 1}, name="q vector dim 1")
    yield S(x((2, 3, 4)), (q(0.6),), {"dim": 0, "keepdim": True}, name="0-dim q keepdim")
    for mode in ("lower", "higher", "midpoint", "nearest"):
        yield S(x((4, 5), key=mode), (q([0.2, 0.5, 0.9]),), {"dim": -1, "interpolation": mode},
                name=mode)
    yield S(x(()), (0.5,), {"dim": 0}, name="0-dim input")
    nan = tp.tensor([[1.0, NAN, 3.0, 2.0], [NAN, NAN, NAN, NAN], [4.0, 1.0, 0.5, 2.0]],
                    dtype=dtype, device=device)
    yield S(nan, (q([0.3, 0.75]),), {"dim": 1}, name="NaN", grad=False)


def _errors_quantile(op, device):
    name = op.name
    yield E(S(t_((0,), device=device), (0.5,)), ShapeError,
            rf"{name}\(\): input tensor must be non-empty", arg="self")
    yield E(S(t_((3,), device=device), (1.5,)), ArgumentError,
            rf"{name}\(\): q must be in the range \[0, 1\] but got 1.5", arg="q")
    yield E(S(t_((3,), device=device), (tp.tensor([0.5, 1.5], device=device),)), ArgumentError,
            rf"{name}\(\): q values must be in the range \[0, 1\]", arg="q", meta=False)
    yield E(S(t_((3,), device=device), (tp.tensor([[0.5]], device=device),)), ShapeError,
            rf"{name}\(\): q must be a scalar or 1D tensor", arg="q")
    yield E(S(t_((3,), device=device), (tp.tensor([0.5], dtype=tp.float64, device=device),)),
            DTypeError, rf"{name}\(\): q tensor must be same dtype as the input tensor", arg="q")
    yield E(S(t_((3,), tp.int64, device=device), (0.5,)), DTypeError,
            rf"{name}\(\): input tensor must be either float or double dtype", arg="self")
    yield E(S(t_((3,), device=device), (0.5,), {"interpolation": "foo"}), ArgumentError,
            rf"{name}\(\): interpolation must be one of linear, lower, higher, midpoint or "
            r"nearest, but got foo", arg="interpolation")


def _unique_consecutive_samples(op, device, dtype, requires_grad):
    values = [[1, 1, 2], [1, 1, 2], [3, 1, 2], [1, 1, 2]]
    if dtype is tp.bool:
        values = [[v % 2 for v in row] for row in values]
    x = tp.tensor(values, device=device).to(dtype)
    yield S(x, name="flattened")
    both = {"return_inverse": True, "return_counts": True}
    yield S(x, (), both, name="inverse, counts")
    yield S(x, (), {"return_counts": True}, name="counts")
    yield S(x, (), {"return_inverse": True, "dim": 0}, name="dim 0, inverse")
    yield S(x.t(), (), {"return_counts": True, "dim": 0}, name="transposed dim 0, counts")
    yield S(x, (), {**both, "dim": 1}, name="dim 1: no two columns alike")
    yield S(tp.tensor(3, device=device).to(dtype), (), both, name="0-dim")
    yield S(tp.tensor([], device=device).to(dtype), (), both, name="empty")
    if dtype.is_floating_point:
        yield S(tp.tensor([1.0, NAN, NAN, 2.0, 2.0], dtype=dtype, device=device), (), both,
                name="each NaN a run of its own")


def _errors_unique_consecutive(op, device):
    yield E(S(t_((), device=device), (), {"dim": 0}), ArgumentError,
            rf"{op.name}\(\): Dimension specified as 0 but tensor has no dimensions", arg="dim")
    yield E(S(t_((0, 3), device=device), (), {"dim": 1}), ShapeError,
            rf"{op.name}\(\): There are 0 sized dimensions, and they aren't selected",
            arg="self")


def _aten_unique_consecutive(x, *args, **kwargs):
    return torch.ops.aten.unique_consecutive(x, *args, **kwargs)


op_db += [
    OpInfo("nanmedian", overloads=("nanmedian",), dtypes=ALL_BUT_BOOL,
           sample_inputs_func=_nanmedian_samples),
    OpInfo("nanmedian", "dim", overloads=("nanmedian.dim",), dtypes=ALL_BUT_BOOL,
           sample_inputs_func=_nanmedian_dim_samples, error_inputs_func=_errors_value_index),
    OpInfo("quantile", overloads=("quantile", "quantile.scalar"), dtypes=(tp.float32, tp.float64),
           sample_inputs_func=_quantile_samples, error_inputs_func=_errors_quantile),
    OpInfo("nanquantile", overloads=("nanquantile", "nanquantile.scalar"),
           dtypes=(tp.float32, tp.float64), sample_inputs_func=_quantile_samples,
           error_inputs_func=_errors_quantile),
    OpInfo("unique_consecutive", overloads=("unique_consecutive", "_unique_consecutive"),
           supports_autograd=False, sample_inputs_func=_unique_consecutive_samples,
           error_inputs_func=_errors_unique_consecutive, supports_meta=False),
    OpInfo("_unique_consecutive", overloads=("_unique_consecutive",), ref=_aten_unique_consecutive,
           supports_autograd=False, sample_inputs_func=_unique_consecutive_samples,
           supports_meta=False),
]
