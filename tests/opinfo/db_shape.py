"""Database entries: shape ops (cat, stack, split, flip, roll, repeat, movedim, ...).

Ops with a Tensor[] argument take their samples as (first tensor, other tensors, ...) so
that the generic tests see a tensor input; `op`/`ref` put the list back together.
"""
from __future__ import annotations

import torch

import tensorplay as tp
from tensorplay.errors import ArgumentError, DeviceError, DimError, DTypeError, ShapeError
from opinfo.core import (
    ALL_DTYPES, COMPLEX, GRAD_COMPLEX, ErrorInput as E, make_tensor, OpInfo, rng_for,
    SampleInput as S,
)
from opinfo.reduction_common import grad_for, samples_dim, t_
from functools import partial
from opinfo.samples import TOL, _shape_samples, _x

LAYOUTS = ("contiguous", "transposed", "strided", "expanded")


def _flip_samples(op, device, dtype, requires_grad):
    cases = [((3, 4), "contiguous", ([0],)), ((3, 4), "transposed", ([0, 1],)),
             ((2, 3, 4), "strided", ([-1, 0],)), ((), "contiguous", ([],)),
             ((0, 3), "contiguous", ([1],)), ((3, 4), "expanded", ([0],))]
    yield from samples_dim(op, device, dtype, requires_grad, cases)


def _errors_flip(op, device):
    yield E(S(t_((3, 4), device=device), ([0, 0],)), DimError,
            r"flip\(\): dim \(0, 0\) appears multiple times", arg="dims")
    yield E(S(t_((3, 4), device=device), ([2],)), DimError, r"flip\(\): Dimension out of range",
            arg="dims")


# ---- joining ---------------------------------------------------------------------------
def _list_samples(op, device, dtype, requires_grad, cases):
    """cases: (shapes, extra args); dtypes of the later tensors may differ (promotion)."""
    rng = rng_for(op.full_name, dtype)
    grad = grad_for(dtype, requires_grad)
    for k, (shapes, args) in enumerate(cases):
        ts = []
        for i, s in enumerate(shapes):
            mixed = len(s) == 2 and isinstance(s[1], tp.dtype)   # (shape, another dtype)
            shape, d = s if mixed else (s, dtype)
            ts.append(make_tensor(shape, d, device, rng=rng, layout=LAYOUTS[(k + i) % 4],
                                  requires_grad=grad and d.is_differentiable))
        yield S(ts[0], (ts[1:],) + tuple(args), name=f"{shapes} {args}")


def _cat_samples(op, device, dtype, requires_grad):
    yield from _list_samples(op, device, dtype, requires_grad, [
        ([(3, 4), (2, 4)], ()), ([(3, 4), (3, 2), (3, 1)], (1,)), ([(2, 3, 4), (2, 3, 4)], (-1,)),
        ([(3,), (0,)], ()), ([(0, 4), (2, 4)], ()), ([(2, 3), ((0,), tp.float32)], (1,)),
        ([(2, 3), ((2, 3), tp.float64)], ()), ([(4,)], ())])


def _stack_samples(op, device, dtype, requires_grad):
    yield from _list_samples(op, device, dtype, requires_grad, [
        ([(3, 4), (3, 4)], ()), ([(3, 4), (3, 4), (3, 4)], (2,)), ([(), ()], ()),
        ([(2, 3), (2, 3)], (-1,)), ([(0, 2), (0, 2)], (1,))])


def _hvstack_samples(op, device, dtype, requires_grad):
    yield from _list_samples(op, device, dtype, requires_grad, [
        ([(3,), (2,)] if op.name == "hstack" else [(3,), (3,)], ()),
        ([(2, 3), (2, 1)] if op.name == "hstack" else [(2, 3), (1, 3)], ()),
        ([(2, 3, 4), (2, 1, 4)] if op.name == "hstack" else [(2, 3, 4), (1, 3, 4)], ()),
        ([(), ()], ()), ([(2, 3), ((2, 3), tp.float64)], ())])


def _errors_cat(op, device):
    yield E(S(t_((3, 4), device=device), ([t_((3, 5), device=device)],)), ShapeError,
            r"cat\(\): sizes of tensors must match except in dimension 0", arg="tensors")
    yield E(S(t_((3, 4), device=device), ([t_((3,), device=device)],)), ShapeError,
            r"cat\(\): tensors must have the same number of dimensions", arg="tensors")
    yield E(S(t_((3, 4), device=device), ([], 2)), DimError, r"cat\(\): Dimension out of range",
            arg="dim")
    yield E(S(t_((), device=device), ([],)), ShapeError,
            r"cat\(\): zero-dimensional tensor \(at position 0", arg="tensors")
    if device != "meta":
        yield E(S(t_((3, 4), device=device), ([tp.empty(3, 4, device="meta")],)), DeviceError,
                r"cat\(\): expected all tensors to be on the same device, but argument "
                r"'tensors\[1\]' is on meta", arg="tensors[1]", meta=False)


def _errors_stack(op, device):
    yield E(S(t_((3, 4), device=device), ([t_((3, 5), device=device)],)), ShapeError,
            r"stack\(\): stack expects each tensor to be equal size", arg="tensors")


def _list_op(fn):
    return lambda x, rest, *args: fn([x, *rest], *args)


# ---- splitting -------------------------------------------------------------------------
def _split_samples(op, device, dtype, requires_grad):
    sized = op.variant == "sizes"
    cases = {
        "split": [((5, 4), (2,)), ((3, 4), (2, 1)), ((3, 4), (4,)), ((0, 2), (0,))],
        "split.sizes": [((5, 4), ([2, 3],)), ((3, 4), ([1, 0, 3], 1)), ((3, 4), ([3],))],
        "chunk": [((5, 4), (2,)), ((3, 4), (3, 1)), ((2, 3), (5, -1)), ((0, 3), (2,))],
        "tensor_split": [((5, 4), (3,)), ((3, 4), (2, 1)), ((2, 3), (5, -1))],
        "tensor_split.indices": [((5, 4), ([1, 3],)), ((3, 4), ([3, 1, 7], 1)),
                                 ((3, 4), ([],))],
    }[op.full_name]
    rng = rng_for(op.full_name, dtype)
    grad = grad_for(dtype, requires_grad)
    for k, (shape, args) in enumerate(cases):
        x = make_tensor(shape, dtype, device, rng=rng, layout=LAYOUTS[k % 3], requires_grad=grad)
        yield S(x, args, name=f"{list(shape)} {args}", grad=not sized or k == 0)


def _errors_split(op, device):
    if op.full_name == "split.sizes":
        yield E(S(t_((5,), device=device), ([2, 2],)), ShapeError,
                r"split\(\): argument 'split_size' \[2, 2\] must be non-negative and sum to",
                arg="split_size")
    elif op.name == "chunk":
        yield E(S(t_((5,), device=device), (0,)), ArgumentError,
                r"chunk\(\): argument 'chunks' must be greater than 0", arg="chunks")
    elif op.full_name == "tensor_split":
        yield E(S(t_((5,), device=device), (0,)), ArgumentError,
                r"tensor_split\(\): argument 'sections' must be greater than 0", arg="sections")
    yield E(S(t_((), device=device), (1,)), DimError,
            rf"{op.name}\(\): expected at least a 1-dimensional tensor", arg="self",
            torch_raises=op.name != "tensor_split")


# ---- copies: roll, repeat, tile, repeat_interleave -------------------------------------
def _roll_samples(op, device, dtype, requires_grad):
    cases = [((3, 4), "contiguous", (1,)), ((3, 4), "transposed", ([1, -2], [0, 1])),
             ((2, 3, 4), "strided", (5, -1)), ((), "contiguous", (2,)),
             ((0, 3), "contiguous", (1, 1)), ((3, 4), "expanded", (-1, 0))]
    yield from samples_dim(op, device, dtype, requires_grad, cases)


def _errors_roll(op, device):
    yield E(S(t_((3, 4), device=device), ([1, 2], [0])), ArgumentError,
            r"roll\(\): arguments 'shifts' and 'dims' must align", arg="dims")


def _repeat_samples(op, device, dtype, requires_grad):
    cases = [((3, 4), "contiguous", ([2, 1],)), ((3, 4), "transposed", ([2, 1, 3],)),
             ((2, 3), "strided", ([1, 0],)), ((), "contiguous", ([3],)),
             ((0, 3), "contiguous", ([2, 2],)), ((3, 1), "expanded", ([1, 4],))]
    if op.name == "tile":
        cases += [((2, 3), "contiguous", ([2],)), ((2, 3), "transposed", ([],))]
    yield from samples_dim(op, device, dtype, requires_grad, cases)


def _errors_repeat(op, device):
    yield E(S(t_((3, 4), device=device), ([2],)), ShapeError,
            r"repeat\(\): number of dimensions of 'repeats' \(1\) can not be smaller",
            arg="repeats")


def _ri_int_samples(op, device, dtype, requires_grad):
    cases = [((3, 4), "contiguous", (2,)), ((3, 4), "transposed", (2, 1)),
             ((2, 3, 4), "strided", (3, -1)), ((), "contiguous", (2,)),
             ((0, 3), "contiguous", (2, 0)), ((3, 4), "contiguous", (0, 1))]
    yield from samples_dim(op, device, dtype, requires_grad, cases)


def _ri_tensor_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = grad_for(dtype, requires_grad)
    for k, (shape, repeats, args) in enumerate((((3, 4), [1, 0, 2], (0,)),
                                               ((3, 4), [2, 1, 1, 3], (1,)),
                                               ((3, 4), [2], (-1,)), ((2, 3), [1] * 6, ()),
                                               ((2, 3), [3], ()))):
        x = make_tensor(shape, dtype, device, rng=rng, layout=LAYOUTS[k % 3], requires_grad=grad)
        r = tp.tensor(repeats, dtype=tp.int64, device=device)
        yield S(x, (r,) + args, name=f"{list(shape)} repeats={repeats} {args}", meta=False)
    r = tp.tensor([1, 0, 2], dtype=tp.int64, device=device)
    yield S(make_tensor((3, 2), dtype, device, rng=rng, requires_grad=grad), (r, 0),
            {"output_size": 3}, name="output_size")


def _errors_ri(op, device):
    yield E(S(t_((3, 4), device=device), (t_((3,), tp.float32, device=device), 0)), DTypeError,
            r"repeat_interleave\(\): argument 'repeats' must be an int64 or int32 tensor",
            arg="repeats")
    yield E(S(t_((3, 4), device=device), (tp.tensor([1, 2], device=device), 0)), ShapeError,
            r"repeat_interleave\(\): argument 'repeats' \(shape \[2\]\) must be 0-D, or 1-D",
            arg="repeats")


def _ri_repeats_samples(op, device, dtype, requires_grad):
    for values in ([2, 0, 1], [3], []):
        yield S(tp.tensor(values, dtype=dtype, device=device), name=f"{values}", meta=False)
    yield S(tp.tensor([1, 2], dtype=dtype, device=device), kwargs={"output_size": 3},
            name="output_size")


# ---- views -----------------------------------------------------------------------------
def _view_samples(op, device, dtype, requires_grad):
    cases = {
        "movedim": [((2, 3, 4), ([0, 1], [2, 0])), ((2, 3, 4), ([-1], [0])), ((3, 4), ([], []))],
        "movedim.int": [((2, 3, 4), (0, -1)), ((2, 3, 4), (2, 1)), ((), (0, 0))],
        "swapaxes": [((2, 3, 4), (0, 2)), ((3, 4), (1, 1)), ((), (0, -1))],
        "swapdims": [((2, 3, 4), (-1, 0)), ((3, 4), (0, 1))],
        "unflatten": [((2, 12), (1, [3, 4])), ((6, 4), (0, [2, -1])), ((2, 0), (1, [0, 3]))],
        "broadcast_to": [((3, 1), ([2, 3, 4],)), ((4,), ([3, 4],)), ((), ([2, 2],)),
                         ((3, 4), ([-1, 4],))],
    }[op.full_name]
    rng = rng_for(op.full_name, dtype)
    grad = grad_for(dtype, requires_grad)
    for k, (shape, args) in enumerate(cases):
        x = make_tensor(shape, dtype, device, rng=rng, layout=LAYOUTS[k % 3], requires_grad=grad)
        yield S(x, args, name=f"{list(shape)} {args}")


def _errors_movedim(op, device):
    yield E(S(t_((2, 3, 4), device=device), ([0, 1], [2])), ArgumentError,
            r"movedim\(\): invalid source or destination dims", arg="destination")
    yield E(S(t_((2, 3, 4), device=device), ([0, 1], [2, 2])), DimError,
            r"movedim\(\): repeated dim in argument 'destination'", arg="destination")


def _errors_unflatten(op, device):
    yield E(S(t_((2, 12), device=device), (1, [5, 2])), ShapeError,
            r"unflatten\(\): provided sizes \[5, 2\] \(argument 'sizes'\) don't multiply up",
            arg="sizes")


def _bt_samples(op, device, dtype, requires_grad):
    yield from _list_samples(op, device, dtype, requires_grad, [
        ([(3, 1), (4,)], ()), ([(2, 3, 4), (3, 1), ()], ()), ([(3,)], ()),
        ([(0, 1), (3,)], ())])


def _errors_bt(op, device):
    yield E(S(t_((3,), device=device), ([t_((4,), device=device)],)), ShapeError,
            r"broadcast_tensors\(\): argument 'tensors\[1\]' \(shape \[4\]\) is not "
            r"broadcastable", arg="tensors[1]")


SHAPE = [
    OpInfo("flip", overloads=("flip",),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX, sample_inputs_func=_flip_samples,
           error_inputs_func=_errors_flip),
    OpInfo("cat", overloads=("cat",),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           op=_list_op(tp.cat), ref=_list_op(torch.cat), method=False,
           sample_inputs_func=_cat_samples, error_inputs_func=_errors_cat),
    OpInfo("stack", overloads=("stack",),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           op=_list_op(tp.stack), ref=_list_op(torch.stack),
           method=False, sample_inputs_func=_stack_samples, error_inputs_func=_errors_stack),
    OpInfo("hstack", overloads=("hstack",),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           op=_list_op(tp.hstack), ref=_list_op(torch.hstack),
           method=False, sample_inputs_func=_hvstack_samples),
    OpInfo("vstack", overloads=("vstack",),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           op=_list_op(tp.vstack), ref=_list_op(torch.vstack),
           method=False, sample_inputs_func=_hvstack_samples),
    OpInfo("split", overloads=("split.Tensor",),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           is_view=True, sample_inputs_func=_split_samples,
           error_inputs_func=_errors_split),
    OpInfo("split", "sizes", overloads=("split.sizes",),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX, is_view=True,
           sample_inputs_func=_split_samples, error_inputs_func=_errors_split),
    OpInfo("chunk", overloads=("chunk",),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           is_view=True, sample_inputs_func=_split_samples,
           error_inputs_func=_errors_split),
    OpInfo("tensor_split", overloads=("tensor_split.sections",), is_view=True,
           sample_inputs_func=_split_samples, error_inputs_func=_errors_split),
    OpInfo("tensor_split", "indices", overloads=("tensor_split.indices",), is_view=True,
           sample_inputs_func=_split_samples),
    OpInfo("roll", overloads=("roll",),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX, sample_inputs_func=_roll_samples,
           error_inputs_func=_errors_roll),
    OpInfo("repeat", overloads=("repeat",),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_repeat_samples,
           error_inputs_func=_errors_repeat),
    OpInfo("tile", overloads=("tile",),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_repeat_samples),
    OpInfo("repeat_interleave", overloads=("repeat_interleave.self_int",),
           sample_inputs_func=_ri_int_samples),
    OpInfo("repeat_interleave", "tensor", overloads=("repeat_interleave.self_Tensor",),
           sample_inputs_func=_ri_tensor_samples, error_inputs_func=_errors_ri),
    OpInfo("repeat_interleave", "repeats", overloads=("repeat_interleave.Tensor",),
           dtypes=(tp.int64, tp.int32), supports_autograd=False, method=False,
           sample_inputs_func=_ri_repeats_samples),
    OpInfo("movedim", overloads=("movedim.intlist",),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX, is_view=True,
           sample_inputs_func=_view_samples, error_inputs_func=_errors_movedim),
    OpInfo("movedim", "int", overloads=("movedim.int",), is_view=True,
           sample_inputs_func=_view_samples),
    OpInfo("swapaxes", overloads=("swapaxes",), is_view=True, sample_inputs_func=_view_samples),
    OpInfo("swapdims", overloads=("swapdims",), is_view=True, sample_inputs_func=_view_samples),
    OpInfo("unflatten", overloads=("unflatten.int",), is_view=True,
           sample_inputs_func=_view_samples, error_inputs_func=_errors_unflatten),
    OpInfo("broadcast_to", overloads=("broadcast_to",), is_view=True,
           sample_inputs_func=_view_samples),
    OpInfo("broadcast_tensors", overloads=("broadcast_tensors",),
           op=lambda x, rest: tp.broadcast_tensors(x, *rest),
           ref=lambda x, rest: torch.broadcast_tensors(x, *rest),
           method=False, sample_inputs_func=_bt_samples, error_inputs_func=_errors_bt),
]


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

MOVED_DB_VIEWS_INPLACE_TMP = [
    *[OpInfo(name, overloads=(name,), sample_inputs_func=_atleast_samples, is_view=True)
      for name in ("atleast_1d", "atleast_2d", "atleast_3d")],
    *[OpInfo(name, "sequence", overloads=(f"{name}.Sequence",),
             op=_list_op(getattr(tp, name)), ref=_list_op(getattr(torch, name)),
             sample_inputs_func=_atleast_sequence_samples)
      for name in ("atleast_1d", "atleast_2d", "atleast_3d")],
    OpInfo("meshgrid", overloads=("meshgrid",), op=_list_op(tp.meshgrid),
           ref=_list_op(torch.meshgrid), sample_inputs_func=_meshgrid_samples,
           error_inputs_func=_errors_meshgrid),
    OpInfo("fliplr", overloads=("fliplr",),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_shape_samples,
           error_inputs_func=_errors_shape),
    OpInfo("flipud", overloads=("flipud",),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_shape_samples),
    OpInfo("rot90", overloads=("rot90",),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_shape_samples,
           error_inputs_func=_errors_shape),
    OpInfo("block_diag", overloads=("block_diag",),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX, op=_varargs_op(tp.block_diag),
           ref=_varargs_op(torch.block_diag), sample_inputs_func=_block_diag_samples),
    OpInfo("cartesian_prod", overloads=("cartesian_prod",), op=_varargs_op(tp.cartesian_prod),
           ref=_varargs_op(torch.cartesian_prod), sample_inputs_func=_cartesian_samples),
    # PyTorch's own vander backward fails (it modifies a saved tensor in place); the
    # gradient is checked against x ** k in tests/test_common_functions.py instead.
    OpInfo("vander", overloads=("vander",), dtypes=(tp.int64, tp.float32, tp.float64),
           tolerances=TOL, sample_inputs_func=_vander_samples, supports_autograd=False),
]



# ---- column_stack, dstack, diag_embed, diagflat, combinations, the numpy splits --------------
# (column_stack's and dstack's own error, an empty list, is in
# tests/test_resize_and_storage_views.py: these samples always hold a first tensor)
def _column_dstack_samples(op, device, dtype, requires_grad):
    column = op.name == "column_stack"
    yield from _list_samples(op, device, dtype, requires_grad, [
        ([(3,), (3, 2)] if column else [(3,), (3,)], ()),
        ([(2, 3), (2, 1)] if column else [(2, 3), (2, 3, 2)], ()),
        ([(), ()], ()),
        ([(2, 3), ((2, 3), tp.float64)], ()),
        ([(0,), (0, 2)] if column else [(0, 2), (0, 2)], ())])


def _diag_embed_samples(op, device, dtype, requires_grad):
    for shape, layout, args in (((3,), "contiguous", ()), ((2, 3), "transposed", (1,)),
                                ((2, 3), "strided", (-1, 0, 2)), ((2, 2, 3), "contiguous", (0, -1, 1)),
                                ((0,), "contiguous", (2,)), ((3, 2), "expanded", (-2, 2, 0))):
        yield S(_x(op, device, dtype, requires_grad, shape, layout), args,
                name=f"{list(shape)} {layout} {args}")


def _errors_diag_embed(op, device):
    yield E(S(t_((3,), device=device), (0, 0, 0)), ArgumentError,
            r"diag_embed\(\): diagonal dimensions cannot be identical \(arguments 'dim1' and "
            r"'dim2': 0, 0\)", arg="dim2")
    yield E(S(t_((3,), device=device), (0, 3)), DimError, r"diag_embed\(\): Dimension out of range",
            arg="dim1")
    yield E(S(t_((), device=device)), ShapeError,
            r"diag_embed\(\): expected a tensor with at least 1 dimension", arg="self")


def _diagflat_samples(op, device, dtype, requires_grad):
    for shape, layout, args in (((3,), "contiguous", ()), ((2, 2), "transposed", (1,)),
                                ((2, 3), "strided", (-2,)), ((), "contiguous", ()),
                                ((0,), "contiguous", (1,))):
        yield S(_x(op, device, dtype, requires_grad, shape, layout), args,
                name=f"{list(shape)} {layout} {args}")


def _combinations_samples(op, device, dtype, requires_grad):
    for shape, layout, args in (((4,), "contiguous", ()), ((4,), "strided", (3,)),
                                ((3,), "contiguous", (2, True)), ((3,), "contiguous", (4,)),
                                ((3,), "contiguous", (1,)), ((3,), "contiguous", (0,)),
                                ((0,), "contiguous", (2, True))):
        yield S(_x(op, device, dtype, requires_grad, shape, layout), args,
                name=f"{list(shape)} {layout} {args}")


def _errors_combinations(op, device):
    yield E(S(t_((2, 2), device=device)), ShapeError,
            r"combinations\(\): expected a 1-D tensor \(argument 'self'\), but got shape \[2, 2\]",
            arg="self")
    yield E(S(t_((3,), device=device), (-1,)), ArgumentError,
            r"combinations\(\): argument 'r' must be non-negative, but got -1", arg="r")


SPLITS = {
    "split_with_sizes": [((5, 4), "contiguous", ([2, 3],)), ((3, 4), "transposed", ([1, 0, 3], 1)),
                         ((3, 4), "strided", ([3],)), ((0, 2), "contiguous", ([0, 0],))],
    "hsplit": [((4,), "contiguous", (2,)), ((3, 4), "transposed", (2,)),
               ((2, 6, 3), "strided", (3,))],
    "hsplit.array": [((5,), "contiguous", ([1, 3],)), ((3, 4), "transposed", ([3, 1, 7],)),
                     ((2, 3), "strided", ([],))],
    "vsplit": [((4, 3), "contiguous", (2,)), ((6, 2, 3), "transposed", (3,))],
    "vsplit.array": [((5, 2), "contiguous", ([1, -1],)), ((3, 4), "transposed", ([2],))],
    "dsplit": [((2, 3, 4), "contiguous", (2,)), ((2, 2, 3), "strided", (1,))],
    "dsplit.array": [((2, 3, 4), "transposed", ([1, 3],)), ((1, 2, 5), "strided", ([2, 2],))],
}


def _numpy_split_samples(op, device, dtype, requires_grad):
    for shape, layout, args in SPLITS[op.full_name]:
        yield S(_x(op, device, dtype, requires_grad, shape, layout), args,
                name=f"{list(shape)} {layout} {args}")


def _errors_numpy_split(op, device):
    least = {"hsplit": 1, "vsplit": 2, "dsplit": 3, "split_with_sizes": 1}[op.name]
    if op.name == "split_with_sizes":
        yield E(S(t_((5,), device=device), ([2, 2],)), ShapeError,
                r"split_with_sizes\(\): argument 'split_sizes' \[2, 2\] must be non-negative "
                r"and sum exactly to 5", arg="split_sizes")
        yield E(S(t_((), device=device), ([1],)), DimError,
                r"split_with_sizes\(\): expected at least a 1-dimensional tensor", arg="self")
        return
    shape = (1,) * (least - 1)
    yield E(S(t_(shape, device=device), (2,)), DimError,
            rf"{op.name}\(\): expected a tensor with at least {least} dimensions? \(argument "
            rf"'self'\), but got a tensor with {least - 1} dimensions", arg="self")
    if op.variant == "":
        yield E(S(t_((5, 5, 5), device=device), (3,)), ShapeError,
                rf"{op.name}\(\): attempted to split along dimension \d, but the size of the "
                rf"dimension 5 is not divisible by argument 'sections' \(3\)", arg="sections")


SHAPE_EXTRA = [
    OpInfo("column_stack", overloads=("column_stack",),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX, op=_list_op(tp.column_stack),
           ref=_list_op(torch.column_stack), method=False,
           sample_inputs_func=_column_dstack_samples),
    OpInfo("dstack", overloads=("dstack",),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           op=_list_op(tp.dstack), ref=_list_op(torch.dstack),
           method=False, sample_inputs_func=_column_dstack_samples),
    OpInfo("diag_embed", overloads=("diag_embed",),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_diag_embed_samples,
           error_inputs_func=_errors_diag_embed),
    OpInfo("diagflat", overloads=("diagflat",), sample_inputs_func=_diagflat_samples),
    OpInfo("combinations", overloads=("combinations",), sample_inputs_func=_combinations_samples,
           error_inputs_func=_errors_combinations),
    OpInfo("split_with_sizes", overloads=("split_with_sizes",), is_view=True,
           sample_inputs_func=_numpy_split_samples, error_inputs_func=_errors_numpy_split),
    *[OpInfo(name, variant, overloads=(f"{name}.{variant or 'int'}",), is_view=True,
             sample_inputs_func=_numpy_split_samples, error_inputs_func=_errors_numpy_split)
      for name in ("hsplit", "vsplit", "dsplit") for variant in ("", "array")],
]

op_db = SHAPE + MOVED_DB_VIEWS_INPLACE_TMP + SHAPE_EXTRA
