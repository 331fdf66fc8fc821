"""Sample generators shared by whole families of ops (unary, binary, scalar, reductions).

Each has the signature `(op, device, dtype, requires_grad, **options) -> Iterator[SampleInput]`
and covers, with small shapes: 0-dim, empty, broadcasting, and the non-contiguous layouts
of `make_tensor` (transposed, sliced with a step, expanded). Entries bind the options with
`functools.partial`, e.g. `partial(sample_inputs_binary, rhs_exclude_zero=True)` for div.
"""
from __future__ import annotations

import tensorplay as tp
from opinfo.core import (
    ErrorInput as E, FLOATING, make_tensor, rng_for, SampleInput, SampleInput as S,
)
from functools import partial

from tensorplay.errors import DimError
from opinfo.reduction_common import distinct, grad_for, t_

# The dtype each dtype meets in a mixed-dtype sample: exercises promotion inside the ops.
PARTNER = {
    tp.bool: tp.uint8, tp.uint8: tp.int8, tp.int8: tp.int16, tp.int16: tp.uint8,
    tp.int32: tp.float16, tp.int64: tp.float32, tp.float16: tp.bfloat16,
    tp.bfloat16: tp.float16, tp.float32: tp.float64, tp.float64: tp.int32,
    tp.complex64: tp.float64, tp.complex128: tp.float64,
}

UNARY_SHAPES = (
    ((), "contiguous"),
    ((0,), "contiguous"),
    ((5,), "contiguous"),
    ((3, 4), "contiguous"),
    ((3, 4), "transposed"),
    ((2, 3, 4), "strided"),
    ((3, 4), "expanded"),
    ((0, 3), "contiguous"),
)

# (self shape, other shape, self layout, other layout, what it exercises)
BINARY_SHAPES = (
    ((5,), (5,), "contiguous", "contiguous", "same shape"),
    ((3, 4), (3, 4), "transposed", "strided", "non-contiguous"),
    ((3, 4), (3, 4), "strided", "expanded", "expanded other"),
    ((3, 4), (4,), "contiguous", "contiguous", "broadcast other"),
    ((2, 3, 4), (3, 1), "contiguous", "transposed", "broadcast rank"),
    ((), (), "contiguous", "contiguous", "0-dim"),
    ((3, 4), (), "contiguous", "contiguous", "0-dim other"),
    ((0, 4), (4,), "contiguous", "contiguous", "empty"),
    # These change the output's shape: no in-place variant can take them.
    ((3, 1), (1, 4), "contiguous", "contiguous", "broadcast both"),
    ((), (3, 4), "contiguous", "contiguous", "0-dim self"),
)


# Python complex numbers in the samples of real tensors (`x * 1j`: a complex result) and
# the complex refusals' error inputs (opinfo/complex_errors.py), by device. Triton has no
# complex type: the cuda kernels' complex forms are the Triton side of issue 27, which
# turns cuda on here. (A complex dtype's own samples are in the slow cuda sweep.)
COMPLEX_NUMBERS_ON = {"cpu": True, "meta": True, "cuda": False}


def complex_numbers_on(device):
    return COMPLEX_NUMBERS_ON.get(str(device).split(":")[0], False)


def _grad(dtype, requires_grad):
    return requires_grad and dtype.is_differentiable


def sample_inputs_unary(op, device, dtype, requires_grad, low=None, high=None,
                        exclude_zero=False, shapes=UNARY_SHAPES, extra_values=()):
    """One tensor argument. `extra_values`: a 1-D sample with these exact values (edge
    cases like 0, inf, nan), for dtypes that can hold them."""
    rng = rng_for(op.full_name, dtype)
    for shape, layout in shapes:
        yield SampleInput(make_tensor(shape, dtype, device, rng=rng, low=low, high=high,
                                      layout=layout, exclude_zero=exclude_zero,
                                      requires_grad=_grad(dtype, requires_grad)),
                          name=f"{list(shape)} {layout}")
    if extra_values and dtype.is_floating_point:
        t = tp.tensor(list(extra_values), dtype=dtype, device=device)
        if _grad(dtype, requires_grad):
            t.requires_grad_(True)
        yield SampleInput(t, name="edge values", grad=False)


def sample_inputs_binary(op, device, dtype, requires_grad, low=None, high=None,
                         rhs_low=None, rhs_high=None, rhs_exclude_zero=False, mixed=True,
                         shapes=BINARY_SHAPES, kwargs=None):
    """Two tensors: same shape, broadcasting, 0-dim, empty, non-contiguous, and (with
    `mixed`) an `other` of another dtype, dimensioned or 0-dim (type promotion)."""
    rng = rng_for(op.full_name, dtype)
    grad = _grad(dtype, requires_grad)
    kwargs = kwargs or {}
    for a, b, la, lb, what in shapes:
        yield SampleInput(
            make_tensor(a, dtype, device, rng=rng, low=low, high=high, layout=la,
                        requires_grad=grad),
            (make_tensor(b, dtype, device, rng=rng, low=rhs_low, high=rhs_high, layout=lb,
                         exclude_zero=rhs_exclude_zero, requires_grad=grad),),
            dict(kwargs), name=what)
    if not mixed:
        return
    for other_dtype, shape, what in ((PARTNER[dtype], (3, 4), "mixed dtypes"),
                                     (tp.int64, (), "0-dim int64 other"),
                                     (tp.float64, (), "0-dim float64 other")):
        yield SampleInput(
            make_tensor((3, 4), dtype, device, rng=rng, low=low, high=high, requires_grad=grad),
            (make_tensor(shape, other_dtype, device, rng=rng, low=rhs_low, high=rhs_high,
                         exclude_zero=rhs_exclude_zero,
                         requires_grad=_grad(other_dtype, requires_grad)),),
            dict(kwargs), name=what)


def scalars_for(dtype, exclude_zero=False, nonnegative=False, bools=True):
    """Python numbers to pair with a tensor of `dtype`: int, float and bool, as torch
    promotes them (`int_tensor + 2.5` is float32, `half_tensor + 2.5` stays half)."""
    values = [3, 2.5, True, -2, -0.5] if bools else [3, 2.5, -2, -0.5]
    if exclude_zero:
        values = [v for v in values if v]
    if nonnegative or dtype is tp.uint8:
        values = [v for v in values if v >= 0]
    return values


def sample_inputs_scalar(op, device, dtype, requires_grad, low=None, high=None,
                         exclude_zero=False, nonnegative=False, bools=True,
                         complex_numbers=False, kwargs=None):
    """A tensor and a Python number (the `.Scalar` overloads). `complex_numbers`: a Python
    complex number too, which makes any tensor's result complex (`x * 1j`; not for float16,
    whose result is PyTorch's complex32, a dtype TensorPlay does not have)."""
    rng = rng_for(op.full_name, dtype)
    grad = _grad(dtype, requires_grad)
    shapes = (((3, 4), "contiguous"), ((), "contiguous"), ((3, 4), "transposed"),
              ((0, 2), "contiguous"))
    values = scalars_for(dtype, exclude_zero, nonnegative, bools)
    if complex_numbers and dtype is not tp.float16 and complex_numbers_on(device):
        values = values + [1.5 - 2j]
    for value in values:
        for shape, layout in shapes:
            yield SampleInput(make_tensor(shape, dtype, device, rng=rng, low=low, high=high,
                                          layout=layout, requires_grad=grad),
                              (value,), dict(kwargs or {}), name=f"{layout} with {value!r}")


# ---- reductions -------------------------------------------------------------------------
REDUCTION_SHAPES = (
    ((), "contiguous"),
    ((5,), "contiguous"),
    ((3, 4), "transposed"),
    ((2, 3, 4), "strided"),
    ((3, 4), "expanded"),
)


def sample_inputs_reduce_all(op, device, dtype, requires_grad, allow_empty=True, dtypes=()):
    """`op(x)` over every element, and `op(x, dtype=d)` for each `d` in `dtypes`."""
    rng = rng_for(op.full_name, dtype)
    shapes = REDUCTION_SHAPES + ((((0, 3), "contiguous"),) if allow_empty else ())
    for shape, layout in shapes:
        yield SampleInput(make_tensor(shape, dtype, device, rng=rng, layout=layout,
                                      requires_grad=_grad(dtype, requires_grad)),
                          name=f"{list(shape)} {layout}")
    for d in dtypes:
        yield SampleInput(make_tensor((3, 4), dtype, device, rng=rng,
                                      requires_grad=_grad(dtype, requires_grad)),
                          kwargs={"dtype": d}, name=f"dtype={d.name}")


def sample_inputs_reduce_dims(op, device, dtype, requires_grad, dim_lists=True,
                              allow_empty=True, dtypes=()):
    """`op(x, dim, keepdim)`: one dim, negative dims, (with `dim_lists`) several dims and
    dim=None, 0-dim inputs, and an empty input reduced over its non-empty dim."""
    rng = rng_for(op.full_name, dtype)
    grad = _grad(dtype, requires_grad)
    cases = [((3, 4), "contiguous", 0), ((3, 4), "transposed", 1), ((2, 3, 4), "strided", -1),
             ((3, 4), "expanded", 0), ((), "contiguous", 0), ((5,), "contiguous", -1)]
    if dim_lists:
        cases += [((2, 3, 4), "contiguous", (0, 2)), ((2, 3, 4), "transposed", [-1, 1]),
                  ((3, 4), "contiguous", None)]
    if allow_empty:
        cases += [((0, 3), "contiguous", 1)]
    for shape, layout, dim in cases:
        for keepdim in (False, True):
            yield SampleInput(make_tensor(shape, dtype, device, rng=rng, layout=layout,
                                          requires_grad=grad),
                              (dim,), {"keepdim": keepdim},
                              name=f"{list(shape)} {layout} dim={dim} keepdim={keepdim}")
    for d in dtypes:
        yield SampleInput(make_tensor((3, 4), dtype, device, rng=rng, requires_grad=grad),
                          (1,), {"dtype": d}, name=f"dtype={d.name}")


def _x(op, device, dtype, requires_grad, shape, layout="contiguous", key="", **kw):
    """A fresh tensor for each sample (a leaf shared by two samples would add up both
    gradients); `key` tells apart tensors of one shape in one sample."""
    rng = rng_for(op.full_name, dtype, shape, layout, key)
    return make_tensor(shape, dtype, device, rng=rng, layout=layout,
                       requires_grad=grad_for(dtype, requires_grad), **kw)


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


TOL = {tp.float32: (1e-5, 1e-5), tp.float16: (2e-3, 2e-3), tp.bfloat16: (1.6e-2, 1e-2)}


NUMERIC = (tp.int32, tp.int64) + FLOATING


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


HALF_SUM_TOL = {tp.float16: (5e-3, 1e-2), tp.bfloat16: (2e-2, 5e-2)}


def _distinct_make(shape, dtype, device, rng, layout, grad):
    return distinct(shape, dtype, device, rng, layout, grad)


def _errors_dim(op, device, args_bad=(5,)):
    yield E(S(t_((3, 4), device=device), args_bad), DimError,
            rf"{op.name}\(\): Dimension out of range", arg="dim")


def _t(shape, dtype=tp.float32, device="cpu", **kw):
    """A tensor for error inputs (its values never matter)."""
    return make_tensor(shape, dtype, device, rng=rng_for("errors", shape, dtype), **kw)
