"""Database entries for the ops about memory: copies and fills, dtype and
device conversions, and views (which must alias their input exactly when PyTorch's do:
`test_aliasing_matches_torch` checks storage, offsets, strides, version counter and
writes through the view against PyTorch for every entry).
"""
from __future__ import annotations

from functools import partial

import torch

import tensorplay as tp
from tensorplay.errors import ArgumentError, DimError, ShapeError
from opinfo.core import (
    ALL_DTYPES, COMPLEX, GRAD_COMPLEX, ErrorInput, ErrorInput as E, make_tensor, OpInfo,
    rng_for, SampleInput, SampleInput as S,
)
from opinfo.samples import _shape_samples, _x, sample_inputs_unary
from opinfo.reduction_common import t_


E = ErrorInput
S = SampleInput


def _t(shape, dtype=tp.float32, device="cpu", **kw):
    return make_tensor(shape, dtype, device, rng=rng_for("errors", shape, dtype), **kw)


# ---- views ----------------------------------------------------------------------------
def _view_samples(op, device, dtype, requires_grad, reshape=False):
    """(shape, layout, target sizes); the first arg form is varargs, then a tuple."""
    rng = rng_for(op.full_name, dtype)
    grad = requires_grad and dtype.is_floating_point
    cases = [((3, 4), "contiguous", (12,)), ((3, 4), "contiguous", (2, -1, 2)),
             ((2, 3, 4), "strided", (6, 2, 2)), ((3, 4), "transposed", (3, 4, 1)),
             ((), "contiguous", (1,)), ((1,), "contiguous", ()), ((0, 3), "contiguous", (3, -1)),
             ((3, 4), "expanded", (3, 2, 2))]
    if reshape:   # not viewable: reshape copies
        cases += [((3, 4), "transposed", (12,)), ((2, 3, 4), "strided", (-1,))]
    for i, (shape, layout, target) in enumerate(cases):
        x = make_tensor(shape, dtype, device, rng=rng, layout=layout, requires_grad=grad)
        args = (target,) if i % 2 or not target else tuple(target)
        yield S(x, args, name=f"{list(shape)} {layout} -> {list(target)}")


def errors_view(op, device):
    yield E(S(_t((2, 3), device=device), (5,)), ShapeError,
            r"view\(\): shape \[5\] \(argument 'size'\) is invalid for input of size 6",
            arg="size")
    yield E(S(_t((2, 3), device=device), ((-1, -1),)), ShapeError,
            r"view\(\): only one dimension can be inferred", arg="size")
    yield E(S(_t((3, 4), device=device, layout="transposed"), (12,)), ShapeError,
            r"view\(\): view size \[12\] \(argument 'size'\) is not compatible with input "
            r"tensor's size and stride",
            arg="size")


def _unsafe_view_samples(op, device, dtype, requires_grad):
    """view's viewable samples (the size as one list: the op has no varargs form)."""
    for s in _view_samples(op, device, dtype, requires_grad):
        size = s.args[0] if len(s.args) == 1 and isinstance(s.args[0], tuple) else s.args
        yield S(s.input, (list(size),), name=s.name)


def errors_unsafe_view(op, device):
    yield E(S(_t((3, 4), device=device, layout="transposed"), ([12],)), ShapeError,
            r"_unsafe_view\(\): view size \[12\] \(argument 'size'\) is not compatible",
            arg="size")


def errors_reshape(op, device):
    yield E(S(_t((2, 3), device=device), ((4, 2),)), ShapeError,
            r"reshape\(\): shape \[4, 2\] \(argument 'shape'\) is invalid for input of size 6",
            arg="shape")


def _view_as_samples(op, device, dtype, requires_grad):
    for s in _view_samples(op, device, dtype, requires_grad):
        target = tuple(s.args[0]) if isinstance(s.args[0], tuple) else s.args
        sizes = list(target)
        if -1 in sizes:
            known = 1
            for v in sizes:
                known *= v if v != -1 else 1
            sizes[sizes.index(-1)] = s.input.numel() // known
        yield S(s.input, (tp.empty(tuple(sizes), dtype=tp.int8, device=device),), name=s.name)


def _as_strided_samples(op, device, dtype, requires_grad):
    # Contiguous and transposed inputs only: as_strided addresses the storage, and other
    # layouts have storage gaps whose contents differ between the two frameworks.
    rng = rng_for(op.full_name, dtype)
    grad = requires_grad and dtype.is_floating_point
    for layout in ("contiguous", "transposed"):
        for size, stride, offset in (((2, 2), (1, 2), None), ((3,), (4,), 1), ((2, 3), (0, 1), 2),
                                     ((), (), 5)):
            x = make_tensor((3, 4), dtype, device, rng=rng, layout=layout, requires_grad=grad)
            args = (size, stride) if offset is None else (size, stride, offset)
            # gradcheck perturbs contiguous copies of the input, which as_strided reads
            # differently: transposed inputs are checked against PyTorch's gradient only.
            yield S(x, args, name=f"{layout} size={size} stride={stride} offset={offset}",
                    grad=layout == "contiguous")


def errors_as_strided(op, device):
    yield E(S(_t((3, 4), device=device), ((2, 2), (1,))), ShapeError,
            r"as_strided\(\): mismatch in length of size \[2, 2\] and stride \[1\]",
            arg="stride")


def _dims_samples(cases):
    """Samples `(shape, layout, args...)` for the ops that take dims or indices."""
    def gen(op, device, dtype, requires_grad):
        rng = rng_for(op.full_name, dtype)
        grad = requires_grad and dtype.is_floating_point
        for shape, layout, *args in cases:
            yield S(make_tensor(shape, dtype, device, rng=rng, layout=layout,
                                requires_grad=grad),
                    tuple(args), name=f"{list(shape)} {layout} {tuple(args)}")
    return gen


def _expand_as_samples(op, device, dtype, requires_grad):
    for s in _dims_samples(EXPAND_CASES)(op, device, dtype, requires_grad):
        sizes = s.args[0] if isinstance(s.args[0], tuple) else s.args
        sizes = [s.input.shape[i - len(sizes) + s.input.dim()] if v == -1 else v
                 for i, v in enumerate(sizes)]
        yield S(s.input, (tp.empty(tuple(sizes), dtype=tp.int8, device=device),), name=s.name)


EXPAND_CASES = [((3, 1), "contiguous", 3, 4), ((4,), "strided", (2, 3, 4)),
                ((3, 1), "transposed", (-1, 5)), ((), "contiguous", (2, 2)),
                ((1,), "contiguous", (0,)), ((2, 1, 3), "contiguous", 2, 4, 3)]


def _dim_errors(op_name, arg, message, args):
    def gen(op, device):
        yield E(S(_t((2, 3), device=device), args), DimError, rf"{op_name}\(\): {message}",
                arg=arg)
    return gen


def errors_permute(op, device):
    yield E(S(_t((2, 3), device=device), ((0,),)), ShapeError,
            r"permute\(\): number of dims in 'dims' \(1\) doesn't match", arg="dims")
    yield E(S(_t((2, 3), device=device), ((0, 0),)), DimError, r"permute\(\): repeated dim",
            arg="dims")


def errors_expand(op, device):
    yield E(S(_t((3, 2), device=device), ((3, 4),)), ShapeError,
            r"expand\(\): the expanded size of the tensor \(4\) must match the existing size "
            r"\(2\) at non-singleton dimension 1", arg="size")
    yield E(S(_t((3, 2), device=device), ((2,),)), ShapeError,
            r"expand\(\): the number of sizes provided in argument 'size' \(1\) must be greater "
            r"or equal",
            arg="size")


def errors_t(op, device):
    yield E(S(_t((2, 3, 4), device=device)), ShapeError,
            r"t\(\): expects a tensor with <= 2 dimensions, but 'self' is 3D", arg="self")


def errors_narrow(op, device):
    yield E(S(_t((2, 3), device=device), (1, 2, 2)), DimError,
            r"narrow\(\): start \(2\) \+ length \(2\) exceeds dimension size \(3\)", arg="length")


def errors_select(op, device):
    yield E(S(_t((2, 3), device=device), (1, 3)), DimError,
            r"select\(\): index 3 \(argument 'index'\) out of range for tensor of size \[2, 3\] "
            r"at dimension 1",
            arg="index")
    yield E(S(_t((), device=device), (0, 0)), DimError,
            r"select\(\) cannot be applied to a 0-dim tensor", arg="self")


def errors_slice(op, device):
    yield E(S(_t((2, 3), device=device), (2,)), DimError, r"slice\(\): Dimension out of range",
            arg="dim")
    yield E(S(_t((2, 3), device=device), (0, None, None, 0)), ArgumentError,
            r"slice\(\): argument 'step' must be greater than zero", arg="step")


def errors_flatten(op, device):
    yield E(S(_t((2, 3, 4), device=device), (2, 1)), DimError,
            r"flatten\(\): 'start_dim' cannot come after 'end_dim' \(2 > 1\)", arg="start_dim")


def errors_detach_(op, device):
    # PyTorch raises the same, but the bridge's copy of a view is not a view in PyTorch
    # (to_torch builds it with empty_strided), hence torch_raises=False.
    yield E(S(_t((3, 4), device=device)[1:]), ArgumentError,
            r"detach_\(\): can't detach views in-place", arg="self", torch_raises=False,
            meta=False)


VIEW_SHAPES = [((2, 3, 4), "contiguous"), ((3, 4), "transposed"), ((2, 3, 4), "strided"),
               ((3, 4), "expanded"), ((), "contiguous"), ((0, 3), "contiguous")]


def _slice_ref(x, dim=0, start=None, end=None, step=1):
    return torch.ops.aten.slice.Tensor(x, dim, start, end, step)


VIEWS = [
    OpInfo("view", overloads=("view",),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX, sample_inputs_func=_view_samples,
           error_inputs_func=errors_view),
    OpInfo("view_as", overloads=("view_as",),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_view_as_samples),
    OpInfo("reshape", overloads=("reshape",),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX, ref="Tensor.reshape",
           sample_inputs_func=partial(_view_samples, reshape=True),
           error_inputs_func=errors_reshape),
    OpInfo("_unsafe_view", overloads=("_unsafe_view",), ref=torch.ops.aten._unsafe_view,
           sample_inputs_func=_unsafe_view_samples, error_inputs_func=errors_unsafe_view),
    OpInfo("as_strided", overloads=("as_strided",), sample_inputs_func=_as_strided_samples,
           error_inputs_func=errors_as_strided),
    OpInfo("transpose", overloads=("transpose.int",),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_dims_samples([
               ((3, 4), "contiguous", 0, 1), ((2, 3, 4), "strided", -1, 0),
               ((3, 4), "expanded", 1, 1), ((), "contiguous", 0, -1),
               ((0, 3), "contiguous", 0, 1)]),
           error_inputs_func=_dim_errors("transpose", "dim0", "Dimension out of range", (2, 0))),
    OpInfo("t", overloads=("t",),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_dims_samples([
               ((3, 4), "contiguous"), ((3, 4), "transposed"), ((4,), "strided"),
               ((), "contiguous"), ((0, 2), "contiguous")]),
           error_inputs_func=errors_t),
    OpInfo("permute", overloads=("permute",),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX, ref="Tensor.permute",
           sample_inputs_func=_dims_samples([
               ((2, 3, 4), "contiguous", 2, 0, 1), ((2, 3, 4), "strided", (-1, 0, 1)),
               ((3, 4), "transposed", (1, 0)), ((), "contiguous", ()),
               ((0, 3), "contiguous", 1, 0)]),
           error_inputs_func=errors_permute),
    OpInfo("expand", overloads=("expand",),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_dims_samples(EXPAND_CASES),
           error_inputs_func=errors_expand),
    OpInfo("expand_as", overloads=("expand_as",), sample_inputs_func=_expand_as_samples),
    OpInfo("squeeze", overloads=("squeeze",),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_dims_samples([
               ((1, 3, 1), "contiguous"), ((3, 1), "transposed"), ((3,), "strided"),
               ((), "contiguous"), ((1, 0, 1), "contiguous")])),
    OpInfo("squeeze", "dim", overloads=("squeeze.dim",),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_dims_samples([
               ((1, 3, 1), "contiguous", 0), ((1, 3, 1), "contiguous", -1),
               ((3, 4), "transposed", 1), ((), "contiguous", 0), ((3, 1), "expanded", 1)]),
           error_inputs_func=_dim_errors("squeeze", "dim", "Dimension out of range", (2,))),
    OpInfo("unsqueeze", overloads=("unsqueeze",),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_dims_samples([
               ((3, 4), "contiguous", 0), ((3, 4), "transposed", -1), ((3, 4), "strided", 1),
               ((), "contiguous", 0), ((3, 4), "expanded", 2), ((0,), "contiguous", -2)]),
           error_inputs_func=_dim_errors("unsqueeze", "dim", "Dimension out of range", (3,))),
    OpInfo("flatten", overloads=("flatten.using_ints",),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_dims_samples([
               ((2, 3, 4), "contiguous"), ((2, 3, 4), "contiguous", 1),
               ((2, 3, 4), "strided", 0, 1), ((3, 4), "transposed"), ((), "contiguous"),
               ((2, 3, 4), "contiguous", -2, -1), ((3, 4), "expanded", 0, 1)]),
           error_inputs_func=errors_flatten),
    OpInfo("narrow", overloads=("narrow",),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_dims_samples([
               ((5, 3), "contiguous", 0, 1, 2), ((3, 5), "transposed", -1, -3, 2),
               ((3, 4), "strided", 1, 0, 0), ((3, 4), "expanded", 0, 1, 2)]),
           error_inputs_func=errors_narrow),
    OpInfo("select", overloads=("select.int",), sample_inputs_func=_dims_samples([
               ((3, 4), "contiguous", 0, 1), ((3, 4), "transposed", 1, -1),
               ((2, 3, 4), "strided", -1, 2), ((3, 4), "expanded", 0, 2),
               ((3,), "contiguous", 0, 0)]),
           error_inputs_func=errors_select),
    OpInfo("slice", overloads=("slice.Tensor",), ref=_slice_ref,
           sample_inputs_func=_dims_samples([
               ((5,), "contiguous", 0, 1, 4, 2), ((3, 6), "transposed", 1, None, None, 4),
               ((3, 4), "strided", -1, -3), ((5, 2), "contiguous", 0, 2, 100),
               ((5, 2), "contiguous", 0, 4, 1), ((3, 4), "expanded", 0, -2, None, 1),
               ((5,), "contiguous")]),
           error_inputs_func=errors_slice),
    OpInfo("unbind", overloads=("unbind.int",),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_dims_samples([
               ((3, 4), "contiguous"), ((3, 4), "transposed", 1), ((2, 3, 4), "strided", -1),
               ((3, 2), "expanded", 0), ((0, 3), "contiguous", 0), ((2, 0), "contiguous", 1)]),
           error_inputs_func=_dim_errors("unbind", "dim", "Dimension out of range", (2,))),
    OpInfo("contiguous", overloads=("contiguous",),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=_dims_samples(VIEW_SHAPES)),
    OpInfo("detach", overloads=("detach",), sample_inputs_func=_dims_samples(VIEW_SHAPES),
           supports_autograd=False),
    # (aten::alias: torch has no torch.alias, so the reference is the aten op)
    OpInfo("alias", overloads=("alias",), ref=torch.ops.aten.alias, method=False,
           is_view=True, sample_inputs_func=_dims_samples(VIEW_SHAPES)),
    # Views cannot be detached in place: the samples are fresh tensors (make_tensor's
    # non-contiguous layouts are views).
    OpInfo("detach_", overloads=("detach_",), mutates_input=True,
           sample_inputs_func=_dims_samples([s for s in VIEW_SHAPES if s[1] == "contiguous"]),
           error_inputs_func=errors_detach_, supports_autograd=False),
]

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


def _errors_as_strided_(op, device):
    yield E(S(t_((2, 3), device=device), ([3, 3], [3, 1])), ShapeError,
            r"as_strided_\(\): sizes \[3, 3\] \(argument 'size'\), strides \[3, 1\] and storage "
            r"offset 0 need a "
            r"storage of 36 bytes", arg="size", meta=False)


def _method(name):
    return lambda x, *args, **kw: getattr(x, name)(*args, **kw)


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
    OpInfo("as_strided_", overloads=("as_strided_",), mutates_input=True, is_view=True,
           # (the offset kept: the in-place test checks that data_ptr() does not move)
           sample_inputs_func=_inplace_view_samples([((3, 4), "contiguous", ([2, 2], [1, 4])),
                                                     ((3, 4), "transposed", ([6], [2])),
                                                     ((2, 3), "strided", ([3], [4], 0)),
                                                     ((), "contiguous", ([], []))]),
           error_inputs_func=_errors_as_strided_),
]


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

def _errors_adjoint(op, device):
    yield E(S(t_((3,), device=device)), ShapeError,
            r"adjoint\(\): expected a matrix or a batch of matrices \(argument 'self'\), but "
            r"got a 1-D tensor", arg="self")


# resize_ within the storage (a larger one moves the data: tests/test_resize_and_storage_views.py)
def _resize_samples(op, device, dtype, requires_grad):
    for shape, layout, size in (((4,), "contiguous", (2, 2)), ((3, 4), "contiguous", (2, 3)),
                                ((3, 4), "transposed", (3, 4)), ((2, 3), "contiguous", (0,)),
                                ((2, 3), "contiguous", (2, 3))):
        x = _x(op, device, dtype, False, shape, layout)
        arg = (size,) if op.name == "resize_" else (t_(size, device=device),)
        yield S(x, arg, name=f"{list(shape)} {layout} -> {list(size)}")


def _errors_resize(op, device):
    x = t_((3,), device=device).requires_grad_()
    arg = ((2,),) if op.name == "resize_" else (t_((2,), device=device),)
    yield E(S(x, arg), ArgumentError,
            rf"{op.name}\(\): cannot resize a tensor that requires grad \(argument 'self'\)",
            arg="self", meta=False)


MOVED_DB_VIEWS_INPLACE_TMP = [
    OpInfo("adjoint", overloads=("adjoint",), is_view=True, error_inputs_func=_errors_adjoint,
           sample_inputs_func=_dims_samples([
               ((3, 4), "contiguous"), ((2, 3, 4), "transposed"), ((2, 3, 4), "strided"),
               ((3, 4), "expanded"), ((0, 3), "contiguous")])),
    # is_view: the in-place test then checks the new strides against PyTorch's
    OpInfo("resize_", overloads=("resize_",), mutates_input=True, is_view=True,
           supports_autograd=False,
           op=_method("resize_"), ref=_method("resize_"), sample_inputs_func=_resize_samples,
           error_inputs_func=_errors_resize),
    OpInfo("resize_as_", overloads=("resize_as_",), mutates_input=True, is_view=True,
           supports_autograd=False,
           sample_inputs_func=_resize_samples, error_inputs_func=_errors_resize),
    OpInfo("ravel", overloads=("ravel",), view_like=True, sample_inputs_func=_shape_samples),
    OpInfo("unfold", overloads=("unfold",),
           dtypes=ALL_DTYPES + COMPLEX, grad_dtypes=GRAD_COMPLEX,
           is_view=True, sample_inputs_func=_unfold_samples,
           error_inputs_func=_errors_unfold),
]

op_db = VIEWS + INPLACE_VIEWS + MOVED_DB_VIEWS_INPLACE_TMP
