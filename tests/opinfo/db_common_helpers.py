"""Database entries: the common helpers (the last section of ops.yaml), names PyTorch
scripts use often, each a decomposition into existing ops:

- square, nansum, nanmean, diff, trapezoid, cumulative_trapezoid;
- atleast_1d/2d/3d, meshgrid, sum_to_size, argwhere, searchsorted, bucketize;
- cdist and the tp.linalg norms;
- the in-place view ops (unsqueeze_, squeeze_, t_, transpose_, swapaxes_, swapdims_);
- the pointwise helpers deg2rad, rad2deg, logaddexp, logaddexp2, fmax, fmin, sinc,
  float_power, heaviside;
- cov and corrcoef;
- the shape helpers ravel, fliplr, flipud, rot90, msort, block_diag, cartesian_prod,
  vander, unravel_index and Tensor.unfold;
- isin, dist, inner, and the conversions byte, char, short.
"""
from __future__ import annotations

import math
from functools import partial

import torch

import tensorplay as tp
from tensorplay.errors import ArgumentError, DTypeError, ShapeError
from opinfo.core import (
    ALL_BUT_BOOL, ALL_DTYPES, FLOATING, ErrorInput as E, OpInfo, SampleInput as S, make_tensor,
    rng_for,
)
from opinfo.reduction_common import grad_for, t_
from opinfo.samples import sample_inputs_binary, sample_inputs_unary

TOL = {tp.float32: (1e-5, 1e-5), tp.float16: (2e-3, 2e-3), tp.bfloat16: (1.6e-2, 1e-2)}
NUMERIC = (tp.int32, tp.int64) + FLOATING


def _x(op, device, dtype, requires_grad, shape, layout="contiguous", key="", **kw):
    """A fresh tensor for each sample (a leaf shared by two samples would add up both
    gradients); `key` tells apart tensors of one shape in one sample."""
    rng = rng_for(op.full_name, dtype, shape, layout, key)
    return make_tensor(shape, dtype, device, rng=rng, layout=layout,
                       requires_grad=grad_for(dtype, requires_grad), **kw)


# ---- square, nansum, nanmean ------------------------------------------------------------
def _square_samples(op, device, dtype, requires_grad):
    yield from sample_inputs_unary(op, device, dtype, requires_grad, low=-4, high=4,
                                   extra_values=(0.0, float("inf"), float("nan")))


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


# ---- diff, trapezoid ---------------------------------------------------------------------
def _diff_samples(op, device, dtype, requires_grad):
    x = _x(op, device, dtype, requires_grad, (3, 5), low=-5, high=5)
    yield S(x, name="n=1 last dim")
    yield S(_x(op, device, dtype, requires_grad, (4, 3), "transposed"), (2, 0),
            name="n=2 dim=0 transposed")
    yield S(_x(op, device, dtype, requires_grad, (6,)), (7,), name="n beyond the length")
    yield S(_x(op, device, dtype, requires_grad, (2, 3)), (0,), name="n=0")
    yield S(_x(op, device, dtype, requires_grad, (2, 3)), (1, 1),
            {"prepend": _x(op, device, dtype, requires_grad, (2, 1)),
             "append": _x(op, device, dtype, requires_grad, (2, 2))}, name="prepend, append")


def _errors_diff(op, device):
    yield E(S(t_((), device=device)), ShapeError,
            r"diff\(\): expects input to be at least one-dimensional", arg="self")


def _trapezoid_samples(op, device, dtype, requires_grad):
    y = _x(op, device, dtype, requires_grad, (3, 5))
    yield S(y, name="dx=1")
    yield S(_x(op, device, dtype, requires_grad, (4, 3), "transposed"), (),
            {"dx": 0.5, "dim": 0}, name="dx=0.5 dim=0")
    yield S(_x(op, device, dtype, requires_grad, (2, 4)), (), {"dx": 2}, name="int dx")
    yield S(_x(op, device, dtype, requires_grad, (2, 0)), name="no samples")
    x = tp.tensor([0.0, 0.5, 2.0, 2.25, 4.0], dtype=tp.float32, device=device)
    yield S(_x(op, device, dtype, requires_grad, (3, 5)), (x,), name="1-D x")
    xs = _x(op, device, tp.float32, False, (3, 5), low=0, high=4)
    yield S(_x(op, device, dtype, requires_grad, (3, 5)), (xs,), {"dim": 1}, name="x like y")


def _errors_trapezoid(op, device):
    yield E(S(t_((3, 4), device=device), (t_((3,), device=device),)), ShapeError,
            r"There must be one `x` value for each sample point", arg="x")


# ---- atleast, meshgrid, sum_to_size, argwhere --------------------------------------------
def _atleast_samples(op, device, dtype, requires_grad):
    for shape in ((), (3,), (2, 3), (2, 3, 4), (2, 1, 3, 2)):
        yield S(_x(op, device, dtype, requires_grad, shape), name=f"{list(shape)}")


def _atleast_sequence_samples(op, device, dtype, requires_grad):
    first = _x(op, device, dtype, requires_grad, ())
    rest = [_x(op, device, dtype, requires_grad, s) for s in ((3,), (2, 3), (2, 3, 4))]
    yield S(first, (rest,), name="0-dim, 1-D, 2-D and 3-D")


def _list_op(fn):
    return lambda first, rest, **kw: fn([first, *rest], **kw)


def _meshgrid_samples(op, device, dtype, requires_grad):
    def vec(n):
        return _x(op, device, dtype, requires_grad, (n,))
    for indexing in ("ij", "xy"):
        yield S(vec(3), ([vec(2)],), {"indexing": indexing}, name=f"two, {indexing}")
        yield S(vec(3), ([vec(2), vec(4)],), {"indexing": indexing}, name=f"three, {indexing}")
    yield S(_x(op, device, dtype, requires_grad, ()), ([vec(3)],), {"indexing": "ij"},
            name="0-dim counts as one element")
    yield S(vec(3), ([],), {"indexing": "xy"}, name="one tensor")


def _errors_meshgrid(op, device):
    yield E(S(t_((3,), device=device), ([t_((2, 2), device=device)],), {"indexing": "ij"}),
            ShapeError, r"meshgrid\(\): expects scalar or 1D tensors", arg="tensors[1]")
    yield E(S(t_((3,), device=device), ([t_((2,), device=device)],), {"indexing": "ji"}),
            ArgumentError,
            r"meshgrid\(\): argument 'indexing' must be 'ij' or 'xy'", arg="indexing")


def _sum_to_size_samples(op, device, dtype, requires_grad):
    for shape, layout, size in (((2, 3, 4), "contiguous", (3, 1)), ((3, 4), "transposed", (1, 4)),
                                ((3, 4), "contiguous", (3, 4)), ((2, 3), "strided", (1,)),
                                ((3, 4), "expanded", (1, 1))):
        yield S(_x(op, device, dtype, requires_grad, shape, layout), size,
                name=f"{list(shape)} to {list(size)}")


def _errors_sum_to_size(op, device):
    yield E(S(t_((2, 3), device=device), (2,)), ShapeError,
            r"sum_to_size\(\): size \[2\] is not expandable to size \[2, 3\]", arg="size")


def _argwhere_samples(op, device, dtype, requires_grad):
    for shape, layout in (((3, 4), "contiguous"), ((2, 3, 2), "transposed"), ((5,), "strided"),
                          ((), "contiguous"), ((0, 2), "contiguous")):
        x = _x(op, device, dtype, False, shape, layout, low=-1, high=2)
        yield S(x, name=f"{list(shape)} {layout}")


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


# ---- cdist, norms -----------------------------------------------------------------------
def _cdist_samples(op, device, dtype, requires_grad):
    def pair():
        return (_x(op, device, dtype, requires_grad, (4, 3)),
                _x(op, device, dtype, requires_grad, (5, 3), "transposed"))
    for p in (2.0, 1.0, 3.0, float("inf")):
        x1, x2 = pair()
        yield S(x1, (x2,), {"p": p}, name=f"p={p}")
    x1, x2 = pair()
    yield S(x1, (x2,), {"p": 0.0}, name="p=0 (count)", grad=False)
    yield S(_x(op, device, dtype, requires_grad, (2, 3, 2)),
            (_x(op, device, dtype, requires_grad, (1, 4, 2)),), name="broadcast batch")


def _errors_cdist(op, device):
    yield E(S(t_((3, 4), device=device), (t_((2, 5), device=device),)), ShapeError,
            r"X1 and X2 must have the same number of columns", arg="x2")
    yield E(S(t_((4,), device=device), (t_((2, 4), device=device),)), ShapeError,
            r"only supports at least 2D tensors, X1 got: 1D", arg="x1")


def _vector_norm_samples(op, device, dtype, requires_grad):
    for ord in (2, 1, 3, math.inf, -math.inf):
        yield S(_x(op, device, dtype, requires_grad, (3, 4), exclude_zero=True), (ord,),
                name=f"ord={ord} all")
    yield S(_x(op, device, dtype, requires_grad, (2, 3, 4), "transposed", exclude_zero=True),
            (2, (0, 2), True), name="dims (0, 2) keepdim")
    yield S(_x(op, device, dtype, requires_grad, (3, 4), "strided", exclude_zero=True),
            (1, -1), name="ord=1 dim=-1")
    yield S(_x(op, device, dtype, requires_grad, (3, 4)), (0,), name="ord=0", grad=False)
    yield S(_x(op, device, dtype, requires_grad, (3, 4)), (), {"dtype": tp.float64},
            name="dtype=float64")


def _errors_norms(op, device):
    yield E(S(t_((3, 4), tp.int64, device=device)), DTypeError,
            r"Expected a floating point tensor as input", arg="self")


def _matrix_norm_samples(op, device, dtype, requires_grad):
    for ord in (1, -1, math.inf, -math.inf):
        yield S(_x(op, device, dtype, requires_grad, (2, 3, 4), "transposed"), (ord,),
                name=f"ord={ord}")
    yield S(_x(op, device, dtype, requires_grad, (3, 2, 4)), (1, (0, 2), True),
            name="dims (0, 2) keepdim")


def _matrix_norm_str_samples(op, device, dtype, requires_grad):
    yield S(_x(op, device, dtype, requires_grad, (2, 3, 4), "transposed"), name="fro")
    yield S(_x(op, device, dtype, requires_grad, (3, 2, 4)), ("fro", (2, 0)), name="fro (2, 0)")


def _errors_matrix_norm(op, device):
    yield E(S(t_((3, 4), device=device), (2,)), ArgumentError,
            r"argument 'ord'=2 needs the singular values of A", arg="ord",
            torch_raises=False)
    yield E(S(t_((4,), device=device), (1,)), ShapeError,
            r"The input tensor A must have at least 2 dimensions", arg="self")


def _norm_samples(op, device, dtype, requires_grad):
    yield S(_x(op, device, dtype, requires_grad, (2, 3, 4), exclude_zero=True),
            name="all elements")
    yield S(_x(op, device, dtype, requires_grad, (5,), exclude_zero=True), (3,), name="vector")
    yield S(_x(op, device, dtype, requires_grad, (3, 4), "transposed"), (math.inf,),
            name="matrix ord=inf")
    yield S(_x(op, device, dtype, requires_grad, (2, 3, 4), exclude_zero=True), (None, (1,)),
            name="dim=(1,)")
    yield S(_x(op, device, dtype, requires_grad, (2, 3, 4)), (-1, (2, 1), True),
            name="matrix over (2, 1)")


def _norm_str_samples(op, device, dtype, requires_grad):
    yield S(_x(op, device, dtype, requires_grad, (3, 4)), ("fro",), name="fro")
    yield S(_x(op, device, dtype, requires_grad, (2, 3, 4)), ("fro", (0, 2)),
            name="fro (0, 2)")


def _errors_norm(op, device):
    yield E(S(t_((2, 3, 4), device=device), (2,)), ShapeError,
            r"If dim is not specified but ord is, the input must be 1D or 2D", arg="self")


# ---- in-place view ops ------------------------------------------------------------------
def _inplace_view_samples(cases):
    def samples(op, device, dtype, requires_grad):
        for shape, layout, args in cases:
            yield S(_x(op, device, dtype, False, shape, layout), args,
                    name=f"{list(shape)} {layout} {args}")
    return samples


def _errors_t_(op, device):
    yield E(S(t_((2, 3, 4), device=device)), ShapeError,
            r"t_\(\): expects a tensor with <= 2 dimensions", arg="self")


def _method(name):
    return lambda x, *args, **kw: getattr(x, name)(*args, **kw)



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


# ---- ravel, fliplr, flipud, rot90, msort, block_diag, vander, unfold, ... ---------------
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


# ---- byte, char, short ------------------------------------------------------------------
def _conversion_samples(op, device, dtype, requires_grad):
    """Values every target holds (uint8 takes no negatives; int8 no more than 127)."""
    low, high = (0, 100) if op.name == "byte" or dtype is tp.uint8 else (-100, 100)
    yield from sample_inputs_unary(op, device, dtype, requires_grad, low=low, high=high)


LINALG = [
    OpInfo("linalg_vector_norm", op=tp.linalg.vector_norm, ref=torch.linalg.vector_norm,
           overloads=("linalg_vector_norm",), dtypes=FLOATING, tolerances=TOL,
           sample_inputs_func=_vector_norm_samples, error_inputs_func=_errors_norms),
    OpInfo("linalg_matrix_norm", op=tp.linalg.matrix_norm, ref=torch.linalg.matrix_norm,
           overloads=("linalg_matrix_norm",), dtypes=FLOATING, tolerances=TOL,
           sample_inputs_func=_matrix_norm_samples, error_inputs_func=_errors_matrix_norm),
    OpInfo("linalg_matrix_norm", "str", op=tp.linalg.matrix_norm, ref=torch.linalg.matrix_norm,
           overloads=("linalg_matrix_norm.str_ord",), dtypes=FLOATING, tolerances=TOL,
           sample_inputs_func=_matrix_norm_str_samples),
    OpInfo("linalg_norm", op=tp.linalg.norm, ref=torch.linalg.norm, overloads=("linalg_norm",),
           dtypes=FLOATING, tolerances=TOL, sample_inputs_func=_norm_samples,
           error_inputs_func=_errors_norm),
    OpInfo("linalg_norm", "str", op=tp.linalg.norm, ref=torch.linalg.norm,
           overloads=("linalg_norm.ord_str",), dtypes=FLOATING, tolerances=TOL,
           sample_inputs_func=_norm_str_samples),
]

INPLACE_VIEWS = [
    OpInfo("unsqueeze_", overloads=("unsqueeze_",), mutates_input=True, is_view=True, dtypes=ALL_DTYPES,
           sample_inputs_func=_inplace_view_samples([((3, 4), "transposed", (0,)),
                                                     ((3,), "contiguous", (-1,)),
                                                     ((), "contiguous", (0,))])),
    OpInfo("squeeze_", overloads=("squeeze_", "squeeze_.dim"), mutates_input=True, is_view=True,
           op=_method("squeeze_"), ref=_method("squeeze_"),
           sample_inputs_func=_inplace_view_samples([((3, 1, 4), "contiguous", ()),
                                                     ((1, 4), "transposed", (0,)),
                                                     ((3, 4), "contiguous", (1,))])),
    OpInfo("t_", overloads=("t_",), mutates_input=True, is_view=True,
           sample_inputs_func=_inplace_view_samples([((3, 4), "transposed", ()),
                                                     ((3,), "contiguous", ()),
                                                     ((), "contiguous", ())]),
           error_inputs_func=_errors_t_),
    OpInfo("transpose_", overloads=("transpose_.int",), mutates_input=True, is_view=True,
           op=_method("transpose_"), ref=_method("transpose_"),
           sample_inputs_func=_inplace_view_samples([((2, 3, 4), "strided", (0, 2)),
                                                     ((3, 4), "contiguous", (-1, 0))])),
    OpInfo("swapaxes_", overloads=("swapaxes_",), mutates_input=True, is_view=True,
           sample_inputs_func=_inplace_view_samples([((2, 3, 4), "contiguous", (2, 1))])),
    OpInfo("swapdims_", overloads=("swapdims_",), mutates_input=True, is_view=True,
           sample_inputs_func=_inplace_view_samples([((2, 3), "transposed", (0, 1))])),
]

# The fuzzer (tests/fuzzing/programs.py) draws ops by their index in the database, so the
# order of these entries decides what each seed's program calls: moving one changes them.
op_db = [
    OpInfo("square", overloads=("square", "square_"), inplace="square_", dtypes=ALL_BUT_BOOL,
           sample_inputs_func=_square_samples, tolerances=TOL),
    OpInfo("nansum", overloads=("nansum",), dtypes=NUMERIC, tolerances=TOL,
           sample_inputs_func=_nan_reduce_samples),
    OpInfo("nanmean", overloads=("nanmean",), dtypes=FLOATING, tolerances=TOL,
           sample_inputs_func=_nan_reduce_samples, error_inputs_func=_errors_nanmean),
    OpInfo("diff", overloads=("diff",), dtypes=ALL_DTYPES, sample_inputs_func=_diff_samples,
           error_inputs_func=_errors_diff, tolerances=TOL),
    OpInfo("trapezoid", overloads=("trapezoid.dx", "trapezoid.x"), dtypes=NUMERIC,
           sample_inputs_func=_trapezoid_samples, error_inputs_func=_errors_trapezoid,
           tolerances=TOL),
    OpInfo("cumulative_trapezoid", overloads=("cumulative_trapezoid.dx",
                                              "cumulative_trapezoid.x"),
           dtypes=NUMERIC, sample_inputs_func=_trapezoid_samples, tolerances=TOL),
    *[OpInfo(name, overloads=(name,), sample_inputs_func=_atleast_samples, is_view=True)
      for name in ("atleast_1d", "atleast_2d", "atleast_3d")],
    *[OpInfo(name, "sequence", overloads=(f"{name}.Sequence",),
             op=_list_op(getattr(tp, name)), ref=_list_op(getattr(torch, name)),
             sample_inputs_func=_atleast_sequence_samples)
      for name in ("atleast_1d", "atleast_2d", "atleast_3d")],
    OpInfo("meshgrid", overloads=("meshgrid",), op=_list_op(tp.meshgrid),
           ref=_list_op(torch.meshgrid), sample_inputs_func=_meshgrid_samples,
           error_inputs_func=_errors_meshgrid),
    OpInfo("sum_to_size", overloads=("sum_to_size",), dtypes=ALL_BUT_BOOL, tolerances=TOL,
           sample_inputs_func=_sum_to_size_samples, error_inputs_func=_errors_sum_to_size),
    OpInfo("argwhere", overloads=("argwhere",), supports_autograd=False,
           sample_inputs_func=_argwhere_samples, supports_meta=False),
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
    # PyTorch's cdist has no float16 / bfloat16 kernel on the CPU to compare with.
    OpInfo("cdist", overloads=("cdist",), dtypes=(tp.float32, tp.float64), tolerances=TOL,
           sample_inputs_func=_cdist_samples, error_inputs_func=_errors_cdist),
    *LINALG,
    *INPLACE_VIEWS,
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
