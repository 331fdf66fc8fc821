"""Operator database entries: indexing ops (gather/scatter, index_*, masked_*, take,
nonzero, unique, advanced indexing). `x[...]` itself is tested in
tests/test_indexing_getitem.py; the error inputs of the index-taking ops are in
indexing_errors.py.

Index tensors are int64 with values in range (out-of-range ones are error inputs).
Ops whose result depends on which of several writes to one place wins (scatter,
index_copy, index_put without accumulate) get indices without repeats; the
accumulating ops (scatter_add, index_add, index_put(accumulate=True)) get repeats.
"""
from __future__ import annotations

import warnings
from functools import partial

import numpy as np
import torch

import tensorplay as tp
from tensorplay.errors import ArgumentError, DimError, DTypeError, ShapeError
from opinfo.core import (
    ALL_BUT_BOOL, ALL_DTYPES, COMPLEX, GRAD_COMPLEX, ErrorInput as E, make_tensor, OpInfo,
    rng_for, SampleInput, SampleInput as S,
)
from opinfo import indexing_errors as err
from opinfo.samples import _x

S = SampleInput


def _grad(dtype, requires_grad):
    return requires_grad and dtype.is_differentiable


def _index(values, device):
    return tp.tensor(np.asarray(values, dtype=np.int64), device=device)


def _random_index(rng, shape, high, device):
    return _index(rng.integers(0, max(high, 1), shape) if high else np.zeros(shape), device)


def _unique_index(rng, shape, dim, size, device):
    """An index along `dim` with no repeats within any line along `dim`."""
    shape = tuple(shape) or (1,)
    out = np.zeros(shape, np.int64)
    moved = np.moveaxis(out, dim, -1)
    for pos in np.ndindex(moved.shape[:-1]):
        moved[pos] = rng.permutation(size)[:shape[dim]]
    return _index(out, device)


def _value_for(dtype):
    if dtype.is_complex:
        return 2.5 - 1j
    return True if dtype is tp.bool else 2.5 if dtype.is_floating_point else 3


# ---- gather / scatter -----------------------------------------------------------------
# (self shape, self layout, dim, index shape, src shape)
GATHER_CASES = (
    ((3, 4), "contiguous", 0, (2, 4), (2, 4)),
    ((3, 4), "transposed", 1, (3, 2), (3, 3)),
    ((2, 3, 4), "strided", -1, (2, 2, 3), (2, 3, 4)),
    ((4, 3), "expanded", 0, (2, 3), (2, 3)),
    ((), "contiguous", 0, (), ()),
    ((3, 4), "contiguous", 0, (0, 4), (0, 4)),
)


def _gather_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for shape, layout, dim, ishape, _ in GATHER_CASES:
        x = make_tensor(shape, dtype, device, rng=rng, layout=layout,
                        requires_grad=_grad(dtype, requires_grad))
        size = shape[dim] if shape else 1
        yield S(x, (dim, _random_index(rng, ishape, size, device)),
                name=f"{list(shape)} {layout} dim={dim} index {list(ishape)}")


def _scatter_samples(op, device, dtype, requires_grad, kind="src", unique=True, reduce=None):
    """kind: 'src' (a tensor, possibly larger than index) or 'value' (a number)."""
    rng = rng_for(op.full_name, dtype)
    grad = _grad(dtype, requires_grad)
    for shape, layout, dim, ishape, sshape in GATHER_CASES:
        if layout == "expanded":
            layout = "contiguous"   # the in-place variant writes into self
        x = make_tensor(shape, dtype, device, rng=rng, layout=layout, requires_grad=grad)
        size = shape[dim] if shape else 1
        index = _unique_index(rng, ishape, dim % max(len(shape), 1), size, device) \
            if unique and ishape else _random_index(rng, ishape, size, device)
        # PyTorch's src gradient is index-shaped (it fails for a larger src; ours pads,
        # see test_indexing_ops.py): gradient samples use an index-shaped src.
        sshape = ishape if grad else sshape
        src = make_tensor(sshape, dtype, device, rng=rng, requires_grad=grad) \
            if kind == "src" else _value_for(dtype)
        kwargs = {"reduce": reduce} if reduce else {}
        yield S(x, (dim, index, src), kwargs, name=f"{list(shape)} {layout} dim={dim} "
                                                   f"index {list(ishape)} {kind}")


def _scatter_reduce_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = _grad(dtype, requires_grad)
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        for include_self in (True, False):
            for shape, layout, dim, ishape, sshape in GATHER_CASES[:3] + GATHER_CASES[4:]:
                x = make_tensor(shape, dtype, device, rng=rng, layout=layout, low=-2, high=3,
                                requires_grad=grad)
                index = _random_index(rng, ishape, shape[dim] if shape else 1, device)
                src = make_tensor(ishape if grad else sshape, dtype, device, rng=rng, low=-2,
                                  high=3, requires_grad=grad)
                yield S(x, (dim, index, src, reduce), {"include_self": include_self},
                        name=f"{reduce} include_self={include_self} {list(shape)} {layout}")
    if dtype.is_floating_point:
        # prod with zeros: one zero in a slot (its gradient is the product of the others)
        # and two zeros (every gradient in the slot is 0; as in PyTorch, the second
        # derivative is not supported there, so no gradcheck: grad=False).
        for src, index, two in (([0.0, 3.0, 1.5, -2.0, 0.0], [0, 0, 2, 1, 1], False),
                                ([0.0, 3.0, 0.0, -2.0, 0.0], [0, 0, 1, 1, 1], True)):
            x = tp.tensor([1.5, 2.0, 0.0], dtype=dtype, device=device).requires_grad_(grad)
            src = tp.tensor(src, dtype=dtype, device=device).requires_grad_(grad)
            yield S(x, (0, _index(index, device), src, "prod"),
                    name=f"prod with zeros (two in a slot: {two})", grad=not two)


def _take_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for shape, layout, ishape in (((3, 4), "contiguous", (5,)), ((3, 4), "transposed", (2, 3)),
                                  ((2, 3, 4), "strided", ()), ((), "contiguous", (2,)),
                                  ((3, 4), "expanded", (0,))):
        x = make_tensor(shape, dtype, device, rng=rng, layout=layout,
                        requires_grad=_grad(dtype, requires_grad))
        n = int(np.prod(shape))
        idx = _index(rng.integers(-n, n, ishape), device)   # negative values count from the end
        yield S(x, (idx,), name=f"{list(shape)} {layout} index {list(ishape)}")


def _take_along_dim_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = _grad(dtype, requires_grad)
    for shape, layout, ishape, dim in (((3, 4), "contiguous", (3, 2), 1),
                                       ((3, 4), "transposed", (1, 4), 0),
                                       ((2, 3, 4), "strided", (2, 1, 5), -1),
                                       ((3, 4), "contiguous", (2, 3), None),
                                       ((), "contiguous", (), None)):
        x = make_tensor(shape, dtype, device, rng=rng, layout=layout, requires_grad=grad)
        high = int(np.prod(shape)) if dim is None else (shape[dim] if shape else 1)
        yield S(x, (_random_index(rng, ishape, high, device),),
                {} if dim is None else {"dim": dim}, name=f"{list(shape)} dim={dim}")


# ---- index_select / index_add / index_copy / index_fill ---------------------------------
# (self shape, layout, dim, index values)
INDEX_CASES = (
    ((3, 4), "contiguous", 0, [2, 0]),
    ((3, 4), "transposed", 1, [3, 1, 0]),
    ((2, 3, 4), "strided", -1, [1]),
    ((3, 4), "contiguous", 1, 2),            # a 0-dim index
    ((), "contiguous", 0, [0]),
    ((3, 4), "contiguous", 0, []),
)


def _index_select_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for shape, layout, dim, values in INDEX_CASES + (((4, 3), "expanded", 0, [3, 3, 1]),):
        x = make_tensor(shape, dtype, device, rng=rng, layout=layout,
                        requires_grad=_grad(dtype, requires_grad))
        yield S(x, (dim, _index(values, device)), name=f"{list(shape)} {layout} {values}")


def _index_source_samples(op, device, dtype, requires_grad, repeats=False, alpha=False):
    rng = rng_for(op.full_name, dtype)
    grad = _grad(dtype, requires_grad)
    cases = INDEX_CASES + ((((3, 4), "contiguous", 0, [1, 1, 2]),) if repeats else ())
    for shape, layout, dim, values in cases:
        x = make_tensor(shape, dtype, device, rng=rng, layout=layout, requires_grad=grad)
        ssizes = list(shape)
        if ssizes:
            ssizes[dim] = int(np.size(values))
        source = make_tensor(ssizes, dtype, device, rng=rng, requires_grad=grad)
        yield S(x, (dim, _index(values, device), source), name=f"{list(shape)} {values}")
        if alpha and dtype is not tp.bool:
            a = 0.5 if dtype.is_differentiable else 2
            x = make_tensor(shape, dtype, device, rng=rng, layout=layout, requires_grad=grad)
            source = make_tensor(ssizes, dtype, device, rng=rng, requires_grad=grad)
            yield S(x, (dim, _index(values, device), source), {"alpha": a},
                    name=f"{list(shape)} {values} alpha={a}")


def _index_fill_samples(op, device, dtype, requires_grad, tensor_value=False):
    rng = rng_for(op.full_name, dtype)
    grad = _grad(dtype, requires_grad)
    # Negative and repeated indices; not for a tensor value's gradient, which PyTorch
    # computes with index_select (no negative indices).
    cases = INDEX_CASES + (((3, 4), "contiguous", 1, [-1, 0, 0] if not (tensor_value and grad)
                            else [3, 0, 0]),)
    for shape, layout, dim, values in cases:
        x = make_tensor(shape, dtype, device, rng=rng, layout=layout, requires_grad=grad)
        value = make_tensor((), dtype, device, rng=rng, requires_grad=grad) if tensor_value \
            else _value_for(dtype)
        yield S(x, (dim, _index(values, device), value), name=f"{list(shape)} {values}")


# ---- masked_* -----------------------------------------------------------------------
# (self shape, self layout, mask shape); the last ones broadcast self (out-of-place only)
MASK_CASES = (
    ((3, 4), "contiguous", (3, 4)),
    ((3, 4), "transposed", (4,)),
    ((2, 3, 4), "strided", (3, 1)),
    ((), "contiguous", ()),
    ((0, 4), "contiguous", (4,)),
    ((3, 1), "contiguous", (3, 4)),
)


def _mask(rng, shape, device):
    return tp.tensor(rng.random(shape) < 0.5, device=device)


def _masked_fill_samples(op, device, dtype, requires_grad, tensor_value=False):
    rng = rng_for(op.full_name, dtype)
    grad = _grad(dtype, requires_grad)
    for shape, layout, mshape in MASK_CASES:
        x = make_tensor(shape, dtype, device, rng=rng, layout=layout, requires_grad=grad)
        value = make_tensor((), dtype, device, rng=rng, requires_grad=grad) if tensor_value \
            else _value_for(dtype)
        yield S(x, (_mask(rng, mshape, device), value), name=f"{list(shape)} mask {mshape}")


def _masked_select_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for shape, layout, mshape in MASK_CASES + (((3, 4), "expanded", (3, 4)),):
        x = make_tensor(shape, dtype, device, rng=rng, layout=layout,
                        requires_grad=_grad(dtype, requires_grad))
        yield S(x, (_mask(rng, mshape, device),), name=f"{list(shape)} mask {mshape}",
                meta=False)


def _masked_scatter_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = _grad(dtype, requires_grad)
    for (shape, layout, mshape), extra in zip(MASK_CASES, (0, 3, 1, 0, 2, 0)):
        x = make_tensor(shape, dtype, device, rng=rng, layout=layout, requires_grad=grad)
        mask = _mask(rng, mshape, device)
        n = int(np.prod(np.broadcast_shapes(tuple(shape), tuple(mshape))))
        source = make_tensor((n + extra,), dtype, device, rng=rng, requires_grad=grad)
        yield S(x, (mask, source), name=f"{list(shape)} mask {mshape} +{extra} source")


# ---- nonzero / where(condition) / unique ------------------------------------------------
def _nonzero_samples(op, device, dtype, requires_grad, kwargs=None):
    rng = rng_for(op.full_name, dtype)
    for shape, layout in (((3, 4), "contiguous"), ((2, 3, 4), "transposed"), ((5,), "strided"),
                          ((), "contiguous"), ((0, 3), "contiguous"), ((3, 4), "expanded")):
        x = make_tensor(shape, dtype, device, rng=rng, layout=layout, low=-1, high=2)
        yield S(x, kwargs=dict(kwargs or {}), name=f"{list(shape)} {layout}", meta=False)


def _unique_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    flags = ((False, False), (True, False), (False, True), (True, True))
    for shape, layout, dim in (((3, 4), "contiguous", None), ((5,), "strided", None),
                               ((), "contiguous", None), ((0, 2), "contiguous", None),
                               ((4, 3), "transposed", 0), ((2, 3, 2), "contiguous", 1)):
        for inverse, counts in flags:
            # Few distinct values (and, along a dim, repeated slices) so that there are
            # repeats to find.
            x = make_tensor(shape, dtype, device, rng=rng, layout=layout, low=0,
                            high=3 if dim is None else 2)
            yield S(x, kwargs={"sorted": True, "return_inverse": inverse,
                               "return_counts": counts, "dim": dim},
                    name=f"{list(shape)} dim={dim} inverse={inverse} counts={counts}",
                    meta=False)


# ---- advanced indexing: index.Tensor / index_put -----------------------------------------
def _advanced_cases(rng, device):
    """(self shape, indices) pairs: one tensor, several broadcast, split by a slice (the
    result's dims move to the front), a bool mask, negative and empty indices."""
    idx = partial(_index, device=device)
    return (
        ((5, 6), [idx([4, 0, 2])]),
        ((5, 6), [None, idx([[5, 0], [1, 1]])]),
        ((5, 6, 7), [idx([1, 2]), idx([[0], [3]])]),
        ((5, 6, 7), [idx([1, 2]), None, idx([-1, 0])]),
        ((5, 6), [tp.tensor(rng.random((5, 6)) < 0.5, device=device)]),
        ((5, 6), [None, tp.tensor(rng.random(6) < 0.5, device=device)]),
        ((5, 6), [idx([], )]),
    )


def _index_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for shape, indices in _advanced_cases(rng, device):
        x = make_tensor(shape, dtype, device, rng=rng, requires_grad=_grad(dtype, requires_grad))
        yield S(x, (indices,), name=f"{list(shape)} {indices!r}",
                meta=not any(t is not None and t.dtype is tp.bool for t in indices))


def _index_put_samples(op, device, dtype, requires_grad, accumulate=False):
    rng = rng_for(op.full_name, dtype)
    grad = _grad(dtype, requires_grad)
    for shape, indices in _advanced_cases(rng, device):
        if any(t is None for t in indices):
            continue   # torch's Tensor.index_put_ takes no None (x[:, i] = v: test_indexing_*)
        indexed = make_tensor(shape, dtype, device, rng=rng)[tuple(indices)].shape
        repeated = any(t.dtype is tp.int64 and len(set(t.reshape(-1).tolist())) < t.numel()
                       for t in indices)
        if repeated and not accumulate:
            continue   # which write wins is unspecified
        for vshape in (tuple(indexed), tuple(indexed)[-1:], ()):
            x = make_tensor(shape, dtype, device, rng=rng, requires_grad=grad)
            values = make_tensor(vshape, dtype, device, rng=rng, requires_grad=grad)
            yield S(x, (indices, values), {"accumulate": accumulate},
                    name=f"{list(shape)} values {list(vshape)} accumulate={accumulate}",
                    meta=not any(t is not None and t.dtype is tp.bool for t in indices))


def _index_put_all(op, device, dtype, requires_grad):
    yield from _index_put_samples(op, device, dtype, requires_grad, accumulate=False)
    if dtype is not tp.bool:
        yield from _index_put_samples(op, device, dtype, requires_grad, accumulate=True)


def _legacy_scatter(x, dim, index, src, reduce):
    """torch.scatter(reduce=...) warns that it is deprecated (for scatter_reduce); the
    reference is still the behaviour to match."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return torch.scatter(x, dim, index, src, reduce=reduce)



def _argwhere_samples(op, device, dtype, requires_grad):
    for shape, layout in (((3, 4), "contiguous"), ((2, 3, 2), "transposed"), ((5,), "strided"),
                          ((), "contiguous"), ((0, 2), "contiguous")):
        x = _x(op, device, dtype, False, shape, layout, low=-1, high=2)
        yield S(x, name=f"{list(shape)} {layout}")


def _unravel_samples(op, device, dtype, requires_grad):
    yield S(tp.tensor([4, 5, 0, 3], dtype=dtype, device=device), ((2, 3),), name="1-D")
    yield S(tp.tensor([[7, 1], [2, 6]], dtype=dtype, device=device), ((2, 2, 2),),
            name="2-D indices")
    yield S(tp.tensor(4, dtype=dtype, device=device), ((5,),), name="0-dim index")

op_db = [
    OpInfo("gather", overloads=("gather",),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_gather_samples,
           error_inputs_func=err.errors_gather),
    OpInfo("scatter", overloads=("scatter.src", "scatter_.src"),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX, inplace="scatter_",
           sample_inputs_func=_scatter_samples, error_inputs_func=err.errors_scatter),
    OpInfo("scatter", "value", overloads=("scatter.value", "scatter_.value"),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX, inplace="scatter_",
           sample_inputs_func=partial(_scatter_samples, kind="value")),
    # PyTorch has no derivative for scatter(reduce=...): scatter_reduce is the one to use.
    OpInfo("scatter", "reduce", overloads=("scatter.reduce", "scatter_.reduce"),
           inplace="scatter_", dtypes=ALL_BUT_BOOL, supports_autograd=False, ref=_legacy_scatter,
           sample_inputs_func=partial(_scatter_samples, unique=False, reduce="add")),
    OpInfo("scatter", "value_reduce", overloads=("scatter.value_reduce",
                                                 "scatter_.value_reduce"),
           inplace="scatter_", dtypes=ALL_BUT_BOOL, supports_autograd=False,
           sample_inputs_func=partial(_scatter_samples, kind="value", unique=False,
                                      reduce="multiply")),
    OpInfo("scatter_add", overloads=("scatter_add", "scatter_add_"), inplace="scatter_add_",
           dtypes=ALL_BUT_BOOL + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=partial(_scatter_samples, unique=False),
           error_inputs_func=err.errors_scatter),
    OpInfo("scatter_reduce", overloads=("scatter_reduce.two", "scatter_reduce_.two"),
           inplace="scatter_reduce_", dtypes=ALL_BUT_BOOL,
           sample_inputs_func=_scatter_reduce_samples,
           error_inputs_func=err.errors_scatter_reduce,
           tolerances={tp.float16: (4e-3, 4e-3), tp.bfloat16: (3e-2, 3e-2)}),
    OpInfo("take", overloads=("take",),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX, sample_inputs_func=_take_samples,
           error_inputs_func=err.errors_take),
    OpInfo("take_along_dim", overloads=("take_along_dim",),
           sample_inputs_func=_take_along_dim_samples,
           error_inputs_func=err.errors_take_along_dim),
    OpInfo("index_select", overloads=("index_select",),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_index_select_samples,
           error_inputs_func=err.errors_index_select),
    OpInfo("index_add", overloads=("index_add", "index_add_"), inplace="index_add_",
           dtypes=ALL_BUT_BOOL + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=partial(_index_source_samples, repeats=True, alpha=True),
           error_inputs_func=err.errors_index_add),
    OpInfo("index_copy", overloads=("index_copy", "index_copy_"),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX, inplace="index_copy_",
           sample_inputs_func=_index_source_samples, error_inputs_func=err.errors_index_copy),
    OpInfo("index_fill", overloads=("index_fill.int_Scalar", "index_fill_.int_Scalar"),
           inplace="index_fill_", sample_inputs_func=_index_fill_samples,
           error_inputs_func=err.errors_index_fill),
    OpInfo("index_fill", "tensor", overloads=("index_fill.int_Tensor", "index_fill_.int_Tensor"),
           inplace="index_fill_",
           sample_inputs_func=partial(_index_fill_samples, tensor_value=True)),
    OpInfo("masked_fill", overloads=("masked_fill.Scalar", "masked_fill_.Scalar"),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           inplace="masked_fill_", sample_inputs_func=_masked_fill_samples,
           error_inputs_func=err.errors_masked_fill),
    OpInfo("masked_fill", "tensor", overloads=("masked_fill.Tensor", "masked_fill_.Tensor"),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           inplace="masked_fill_",
           sample_inputs_func=partial(_masked_fill_samples, tensor_value=True)),
    # Data-dependent output shapes: on meta a DataDependentError (tests/test_meta.py), as
    # PyTorch refuses them there.
    OpInfo("masked_select", overloads=("masked_select",),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX, supports_meta=False,
           sample_inputs_func=_masked_select_samples,
           error_inputs_func=err.errors_masked_select),
    OpInfo("masked_scatter", overloads=("masked_scatter", "masked_scatter_"),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           inplace="masked_scatter_", sample_inputs_func=_masked_scatter_samples,
           error_inputs_func=err.errors_masked_scatter),
    OpInfo("nonzero", overloads=("nonzero",), supports_meta=False, supports_autograd=False,
           sample_inputs_func=_nonzero_samples),
    OpInfo("nonzero", "as_tuple", overloads=("nonzero.as_tuple",), supports_meta=False,
           supports_autograd=False,
           sample_inputs_func=partial(_nonzero_samples, kwargs={"as_tuple": True})),
    OpInfo("where", "condition", overloads=("where",),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX, supports_meta=False,
           supports_autograd=False, method=False, sample_inputs_func=_nonzero_samples),
    OpInfo("unique", overloads=("unique", "_unique2", "unique_dim"), supports_meta=False,
           supports_autograd=False, dtypes=ALL_DTYPES,
           sample_inputs_func=_unique_samples),
    OpInfo("index", overloads=("index.Tensor",),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX, method=False,
           ref=lambda x, indices: torch.ops.aten.index.Tensor(x, indices),
           sample_inputs_func=_index_samples, error_inputs_func=err.errors_index),
    OpInfo("index_put", overloads=("index_put", "index_put_"),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX, inplace="index_put_",
           ref=lambda x, indices, values, accumulate=False:
               torch.ops.aten.index_put(x, indices, values, accumulate),
           sample_inputs_func=_index_put_all, error_inputs_func=err.errors_index_put),
    OpInfo("argwhere", overloads=("argwhere",), supports_autograd=False,
           sample_inputs_func=_argwhere_samples, supports_meta=False),
    OpInfo("unravel_index", overloads=("unravel_index",), dtypes=(tp.int32, tp.int64),
           supports_autograd=False, sample_inputs_func=_unravel_samples),
]


# ---- scatters into views, put, index_reduce ----------------------------------------------
# (self shape, layout, args); src has the shape of the view the args pick
VIEW_SCATTER_CASES = {
    "diagonal_scatter": [((3, 4), "contiguous", ()), ((3, 4), "transposed", (1, 1, 0)),
                         ((2, 3, 4), "strided", (-1, 0, 2)), ((3, 3), "expanded", (0,)),
                         ((0, 3), "contiguous", ())],
    "select_scatter": [((3, 4), "contiguous", (0, 1)), ((3, 4), "transposed", (1, -1)),
                       ((2, 3, 4), "strided", (-1, 2)), ((4,), "contiguous", (0, 3)),
                       ((3, 4), "expanded", (1, 0))],
    "slice_scatter": [((5, 3), "contiguous", (0, 1, 4, 2)), ((3, 6), "transposed", (1, None, None, 4)),
                      ((3, 4), "strided", (-1, -3)), ((5,), "contiguous", ()),
                      ((3, 4), "expanded", (0, 1, 100))],
    # (size, stride, storage_offset) address self's storage
    "as_strided_scatter": [((3, 4), "contiguous", ([2], [2], 1)),
                           ((3, 4), "contiguous", ([2, 2], [1, 4])),
                           ((3, 4), "transposed", ([3], [5], 0)),
                           ((2, 3), "strided", ([2, 2], [6, 2], 1)),
                           ((3, 2), "expanded", ([2], [1])), ((), "contiguous", ([], []))],
}


def _view_of(op, x, args):
    if op.name == "as_strided_scatter":
        size, stride, *offset = args
        if any(st == 0 and sz > 1 for sz, st in zip(x.shape, x.stride())):
            x = x.clone()   # an overlapping self is cloned plainly (contiguous)
        return x.as_strided(size, stride, *offset)
    return getattr(x, op.name.replace("_scatter", ""))(*args)


def _view_scatter_samples(op, device, dtype, requires_grad):
    grad = _grad(dtype, requires_grad)
    for shape, layout, args in VIEW_SCATTER_CASES[op.name]:
        rng = rng_for(op.full_name, dtype, shape, layout)
        x = make_tensor(shape, dtype, device, rng=rng, layout=layout, requires_grad=grad)
        src = make_tensor(_view_of(op, x.detach(), args).shape, dtype, device, rng=rng,
                          requires_grad=grad)
        # as_strided_scatter's positions depend on self's strides (and the "strided"
        # sample's reach into its larger buffer), which gradcheck's copies do not keep
        yield S(x, (src,) + tuple(args), name=f"{list(shape)} {layout} {args}",
                grad=not (op.name == "as_strided_scatter" and layout != "contiguous"))


def _errors_view_scatter(op, device):
    args = {"diagonal_scatter": (), "select_scatter": (0, 0), "slice_scatter": (0, 0, 2),
            "as_strided_scatter": ([3], [1])}[op.name]
    x = err._t((3, 3), device=device)
    want = ", ".join(str(n) for n in _view_of(op, x, args).shape)
    yield E(S(x, (err._t((4,), device=device),) + args), ShapeError,
            rf"{op.name}\(\): expected argument 'src' to have the size of the slice of self "
            rf"\[{want}\], but got \[4\]", arg="src")


def _put_samples(op, device, dtype, requires_grad):
    grad = _grad(dtype, requires_grad)
    # (self shape, layout, index, accumulate): repeats only with accumulate
    for shape, layout, index, accumulate in (((3, 4), "contiguous", [0, 5, 11], False),
                                             ((3, 4), "transposed", [[1, -1], [4, 2]], False),
                                             ((2, 3), "strided", [0, 0, -6, 3], True),
                                             ((), "contiguous", [0, -1], True),
                                             ((3,), "contiguous", [], False),
                                             ((0, 2), "contiguous", [], True)):
        rng = rng_for(op.full_name, dtype, shape, layout)
        x = make_tensor(shape, dtype, device, rng=rng, layout=layout, requires_grad=grad)
        idx = _index(np.asarray(index, dtype=np.int64), device)
        src = make_tensor(tuple(idx.shape), dtype, device, rng=rng, requires_grad=grad)
        yield S(x, (idx, src), {"accumulate": accumulate},
                name=f"{list(shape)} {layout} index {index} accumulate={accumulate}")


def _errors_put(op, device):
    x = err._t((2, 3), device=device)
    yield E(S(x, (_index([6], device), err._t((1,), device=device))), DimError,
            r"put\(\): index 6 in argument 'index' is out of bounds for a tensor of 6 elements",
            arg="index", meta=False)
    yield E(S(x, (_index([1, 2], device), err._t((1,), device=device))), ShapeError,
            r"put\(\): arguments 'source' and 'index' must have the same number of elements",
            arg="source")
    yield E(S(x, (_index([1], device), err._t((1,), tp.float64, device))), DTypeError,
            r"put\(\): argument 'source' \(float64\) must have the same dtype as 'self'",
            arg="source")
    yield E(S(x, (err._t((1,), device=device), err._t((1,), device=device))), DTypeError,
            r"put\(\): argument 'index' must be an int64 tensor of indices, but got float32",
            arg="index")


# (self shape, layout, dim, index, source shape); the index repeats
INDEX_REDUCE_CASES = (((3, 4), "contiguous", 0, [0, 2, 0, 0], (4, 4)),
                      ((3, 4), "transposed", 1, [3, 1, 3], (3, 3)),
                      ((2, 3, 4), "strided", -1, [1, 1], (2, 3, 2)),
                      ((), "contiguous", 0, 0, ()))


def _index_reduce_samples(op, device, dtype, requires_grad):
    grad = _grad(dtype, requires_grad)
    # include_self alternates over the cases (both for every reduction; the suite's time)
    for r, reduce in enumerate(("prod", "mean", "amax", "amin")):
        for k, (shape, layout, dim, index, sshape) in enumerate(INDEX_REDUCE_CASES):
            include_self = (r + k) % 2 == 0
            rng = rng_for(op.full_name, dtype, reduce, include_self, shape)
            x = make_tensor(shape, dtype, device, rng=rng, layout=layout, low=-2, high=3,
                            requires_grad=grad)
            src = make_tensor(sshape, dtype, device, rng=rng, low=-2, high=3,
                              requires_grad=grad)
            yield S(x, (dim, _index(index, device), src, reduce),
                    {"include_self": include_self},
                    name=f"{reduce} include_self={include_self} {list(shape)} {layout}")


def _errors_index_reduce(op, device):
    x = err._t((3, 2), device=device)
    yield E(S(x, (0, _index([0, 0], device), err._t((2, 2), device=device), "sum")),
            ArgumentError, r"index_reduce\(\): argument 'reduce' must be one of prod, mean, amax "
            r"or amin, but got 'sum'", arg="reduce")
    yield E(S(x, (0, _index([0, 3], device), err._t((2, 2), device=device), "amax")),
            DimError, r"index_reduce\(\): index 3 in argument 'index' is out of bounds for "
            r"dimension 0 with size 3", arg="index", meta=False)
    yield E(S(x, (0, _index([0, 1], device), err._t((2, 3), device=device), "amax")),
            ShapeError, r"index_reduce\(\): argument 'source' must have shape \[2, 2\]",
            arg="source")
    yield E(S(x, (0, _index([0], device), err._t((1, 2), tp.float64, device), "amin")),
            DTypeError, r"index_reduce\(\): argument 'source' \(float64\) must have the same "
            r"dtype", arg="source")


ASSC_TORCH_GRAD = ("PyTorch 2.13 gives as_strided_scatter's self the gradient of the elements "
                   "src overwrote (and asserts on a non-contiguous self); gradcheck checks ours")

SCATTERS_PUT_INDEX_REDUCE = [
    *[OpInfo(name, overloads=(name,), sample_inputs_func=_view_scatter_samples,
             error_inputs_func=_errors_view_scatter,
             xfails={"test_grad_matches_torch": ASSC_TORCH_GRAD}
             if name == "as_strided_scatter" else {})
      for name in VIEW_SCATTER_CASES],
    OpInfo("put", overloads=("put", "put_"),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           inplace="put_", sample_inputs_func=_put_samples,
           error_inputs_func=_errors_put),
    OpInfo("index_reduce", overloads=("index_reduce", "index_reduce_"), inplace="index_reduce_",
           dtypes=ALL_BUT_BOOL, sample_inputs_func=_index_reduce_samples,
           error_inputs_func=_errors_index_reduce,
           tolerances={tp.float16: (4e-3, 4e-3), tp.bfloat16: (3e-2, 3e-2)}),
]
op_db += SCATTERS_PUT_INDEX_REDUCE
