"""Database entries for the ops about memory: copies and fills, dtype and
device conversions, and views (which must alias their input exactly when PyTorch's do:
`test_aliasing_matches_torch` checks storage, offsets, strides, version counter and
writes through the view against PyTorch for every entry).
"""
from __future__ import annotations

from functools import partial

import torch

import tensorplay as tp
from tensorplay.errors import ArgumentError, DeviceError, DimError, ShapeError
from opinfo.core import ALL_DTYPES, ErrorInput, OpInfo, SampleInput, make_tensor, rng_for
from opinfo.samples import UNARY_SHAPES, sample_inputs_unary

E = ErrorInput
S = SampleInput


def _t(shape, dtype=tp.float32, device="cpu", **kw):
    return make_tensor(shape, dtype, device, rng=rng_for("errors", shape, dtype), **kw)


def _source_low(src, dst):
    """Float -> unsigned conversion of negative values is undefined (in C, hence in both
    NumPy and PyTorch): sources for uint8 targets stay non-negative."""
    return 0 if dst is tp.uint8 and src.is_floating_point else None


# ---- copies and fills -----------------------------------------------------------------
def _copy_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for src_dtype in ALL_DTYPES:
        yield S(make_tensor((3, 4), dtype, device, rng=rng),
                (make_tensor((3, 4), src_dtype, device, rng=rng, layout="transposed",
                             low=_source_low(src_dtype, dtype)),),
                name=f"from {src_dtype.name}")
    low = _source_low(dtype, dtype)
    yield S(make_tensor((3, 4), dtype, device, rng=rng, layout="transposed"),
            (make_tensor((4,), dtype, device, rng=rng, low=low),), name="broadcast src")
    yield S(make_tensor((2, 3), dtype, device, rng=rng, layout="strided"),
            (make_tensor((), dtype, device, rng=rng, low=low),), name="0-dim src")
    yield S(make_tensor((), dtype, device, rng=rng),
            (make_tensor((), dtype, device, rng=rng, low=low),), name="0-dim")
    yield S(make_tensor((0, 3), dtype, device, rng=rng),
            (make_tensor((3,), dtype, device, rng=rng, low=low),), name="empty self")


def errors_copy(op, device):
    yield E(S(_t((3, 4), device=device), (_t((2, 4), device=device),)), ShapeError,
            r"copy_\(\): argument 'src' \(shape \[2, 4\]\) is not broadcastable", arg="src")
    yield E(S(_t((3, 1), device=device), (_t((3, 4), device=device),)), ShapeError,
            r"copy_\(\): argument 'src' \(shape \[3, 4\]\) cannot be broadcast to 'self'",
            arg="src")
    yield E(S(_t((3, 4), device=device), (tp.empty(3, 4, device="meta"),)), DeviceError,
            r"copy_\(\): cannot copy out of a meta tensor", arg="src", meta=False)


def _fill_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    values = [2, 2.5, True, 0, -1 if dtype is not tp.uint8 else 7]
    for v in values:
        for shape, layout in (((3, 4), "transposed"), ((), "contiguous"), ((0,), "contiguous")):
            yield S(make_tensor(shape, dtype, device, rng=rng, layout=layout), (v,),
                    name=f"{list(shape)} {layout} <- {v!r}")
    yield S(make_tensor((2, 3), dtype, device, rng=rng),
            (tp.tensor(3, dtype=tp.int64, device=device),), name="0-dim tensor value")


def errors_fill(op, device):
    yield E(S(_t((3,), device=device), ("a",)), ArgumentError,
            r"fill_\(\) received an invalid combination of arguments: got \(Tensor of dtype "
            r"\w+, str\)", meta=False)
    yield E(S(_t((3,), device=device), (_t((2,), device=device),)), ShapeError,
            r"fill_\(\): argument 'value' must be a 0-dim tensor, but got a 1-dim tensor",
            arg="value")


def _zero_samples(op, device, dtype, requires_grad):
    yield from sample_inputs_unary(op, device, dtype, False,
                                   shapes=[s for s in UNARY_SHAPES if s[1] != "expanded"])


# ---- conversions ----------------------------------------------------------------------
def _to_copy_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = requires_grad and dtype.is_floating_point
    for target in ALL_DTYPES:
        yield S(make_tensor((3, 4), dtype, device, rng=rng, layout="transposed",
                            low=_source_low(dtype, target), requires_grad=grad),
                kwargs={"dtype": target}, name=f"to {target.name}")
    # Samples that name their device are not meta samples: with meta inputs they would ask
    # for a copy out of meta, which raises (tests/test_meta.py checks it).
    yield S(make_tensor((2, 3), dtype, device, rng=rng, requires_grad=grad),
            kwargs={"device": tp.device(device)}, name="same device", meta=False)
    yield S(make_tensor((), dtype, device, rng=rng, requires_grad=grad), name="no change")


def _to_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = requires_grad and dtype.is_floating_point

    def x(layout="contiguous", low=None):
        return make_tensor((3, 4), dtype, device, rng=rng, layout=layout, low=low,
                           requires_grad=grad)

    for target in ALL_DTYPES:
        yield S(x("transposed", _source_low(dtype, target)), (target,), name=f"to {target.name}")
    yield S(x(), (dtype,), name="same dtype (returns self)")
    yield S(x(), (dtype,), {"copy": True}, name="same dtype, copy=True")
    yield S(x(), kwargs={"dtype": tp.float64}, name="dtype= keyword")
    yield S(x(), (device,), name="same device (returns self)", meta=False)
    yield S(x("strided", _source_low(dtype, tp.int32)), (tp.device(device), tp.int32),
            name="device and dtype", meta=False)
    yield S(x(), (make_tensor((2,), tp.float64, device, rng=rng),), name="like other")
    yield S(x(), (make_tensor((2,), dtype, device, rng=rng),), name="like other, same dtype")
    def image():
        return make_tensor((2, 3, 4, 5), dtype, device, rng=rng, requires_grad=grad)
    yield S(image(), kwargs={"memory_format": tp.channels_last}, name="to channels_last")
    yield S(image(), kwargs={"memory_format": tp.preserve_format}, name="preserve_format")
    yield S(x(), kwargs={"memory_format": tp.contiguous_format, "dtype": tp.float64},
            name="contiguous_format and dtype")


def errors_to(op, device):
    yield E(S(_t((3,), device=device), ("float33",)), ArgumentError,
            r"to\(\): argument 'device' must be a device, but got 'float33'", arg="device",
            meta=False)
    if not (tp.cuda.is_available() or tp.cuda.is_interpreted()):
        yield E(S(_t((3,), device=device), ("cuda",)), DeviceError, r"cuda", meta=False)


def _conversion_samples(op, device, dtype, requires_grad):
    target = {"float": tp.float32, "double": tp.float64, "long": tp.int64, "int": tp.int32,
              "bool": tp.bool, "half": tp.float16, "bfloat16": tp.bfloat16}[op.name]
    low = _source_low(dtype, target)
    yield from sample_inputs_unary(op, device, dtype, requires_grad, low=low)


COPIES = [
    OpInfo("copy_", overloads=("copy_",), mutates_input=True, sample_inputs_func=_copy_samples,
           error_inputs_func=errors_copy, supports_autograd=False),
    OpInfo("fill_", overloads=("fill_.Scalar", "fill_.Tensor"), mutates_input=True, ref="Tensor.fill_",
           sample_inputs_func=_fill_samples, error_inputs_func=errors_fill,
           supports_autograd=False),
    OpInfo("zero_", overloads=("zero_",), mutates_input=True, ref="Tensor.zero_",
           sample_inputs_func=_zero_samples, supports_autograd=False),
    OpInfo("clone", overloads=("clone",), sample_inputs_func=sample_inputs_unary),
    OpInfo("_to_copy", overloads=("_to_copy",), ref=torch.ops.aten._to_copy,
           sample_inputs_func=_to_copy_samples),
    OpInfo("to", overloads=("to.dtype", "to.device", "to.other", "to.memory_format"),
           ref="Tensor.to",
           sample_inputs_func=_to_samples, error_inputs_func=errors_to),
]
for _name in ("float", "double", "long", "int", "bool", "half", "bfloat16"):
    # Finite differences need a float64 result: only double() has one.
    COPIES.append(OpInfo(_name, overloads=(_name,), ref=f"Tensor.{_name}",
                         sample_inputs_func=_conversion_samples, gradcheck=_name == "double"))


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
    OpInfo("view", overloads=("view",), sample_inputs_func=_view_samples,
           error_inputs_func=errors_view),
    OpInfo("view_as", overloads=("view_as",), sample_inputs_func=_view_as_samples),
    OpInfo("reshape", overloads=("reshape",), ref="Tensor.reshape",
           sample_inputs_func=partial(_view_samples, reshape=True),
           error_inputs_func=errors_reshape),
    OpInfo("_unsafe_view", overloads=("_unsafe_view",), ref=torch.ops.aten._unsafe_view,
           sample_inputs_func=_unsafe_view_samples, error_inputs_func=errors_unsafe_view),
    OpInfo("as_strided", overloads=("as_strided",), sample_inputs_func=_as_strided_samples,
           error_inputs_func=errors_as_strided),
    OpInfo("transpose", overloads=("transpose.int",),
           sample_inputs_func=_dims_samples([
               ((3, 4), "contiguous", 0, 1), ((2, 3, 4), "strided", -1, 0),
               ((3, 4), "expanded", 1, 1), ((), "contiguous", 0, -1),
               ((0, 3), "contiguous", 0, 1)]),
           error_inputs_func=_dim_errors("transpose", "dim0", "Dimension out of range", (2, 0))),
    OpInfo("t", overloads=("t",), sample_inputs_func=_dims_samples([
               ((3, 4), "contiguous"), ((3, 4), "transposed"), ((4,), "strided"),
               ((), "contiguous"), ((0, 2), "contiguous")]),
           error_inputs_func=errors_t),
    OpInfo("permute", overloads=("permute",), ref="Tensor.permute",
           sample_inputs_func=_dims_samples([
               ((2, 3, 4), "contiguous", 2, 0, 1), ((2, 3, 4), "strided", (-1, 0, 1)),
               ((3, 4), "transposed", (1, 0)), ((), "contiguous", ()),
               ((0, 3), "contiguous", 1, 0)]),
           error_inputs_func=errors_permute),
    OpInfo("expand", overloads=("expand",), sample_inputs_func=_dims_samples(EXPAND_CASES),
           error_inputs_func=errors_expand),
    OpInfo("expand_as", overloads=("expand_as",), sample_inputs_func=_expand_as_samples),
    OpInfo("squeeze", overloads=("squeeze",), sample_inputs_func=_dims_samples([
               ((1, 3, 1), "contiguous"), ((3, 1), "transposed"), ((3,), "strided"),
               ((), "contiguous"), ((1, 0, 1), "contiguous")])),
    OpInfo("squeeze", "dim", overloads=("squeeze.dim",), sample_inputs_func=_dims_samples([
               ((1, 3, 1), "contiguous", 0), ((1, 3, 1), "contiguous", -1),
               ((3, 4), "transposed", 1), ((), "contiguous", 0), ((3, 1), "expanded", 1)]),
           error_inputs_func=_dim_errors("squeeze", "dim", "Dimension out of range", (2,))),
    OpInfo("unsqueeze", overloads=("unsqueeze",), sample_inputs_func=_dims_samples([
               ((3, 4), "contiguous", 0), ((3, 4), "transposed", -1), ((3, 4), "strided", 1),
               ((), "contiguous", 0), ((3, 4), "expanded", 2), ((0,), "contiguous", -2)]),
           error_inputs_func=_dim_errors("unsqueeze", "dim", "Dimension out of range", (3,))),
    OpInfo("flatten", overloads=("flatten.using_ints",), sample_inputs_func=_dims_samples([
               ((2, 3, 4), "contiguous"), ((2, 3, 4), "contiguous", 1),
               ((2, 3, 4), "strided", 0, 1), ((3, 4), "transposed"), ((), "contiguous"),
               ((2, 3, 4), "contiguous", -2, -1), ((3, 4), "expanded", 0, 1)]),
           error_inputs_func=errors_flatten),
    OpInfo("narrow", overloads=("narrow",), sample_inputs_func=_dims_samples([
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
    OpInfo("unbind", overloads=("unbind.int",), sample_inputs_func=_dims_samples([
               ((3, 4), "contiguous"), ((3, 4), "transposed", 1), ((2, 3, 4), "strided", -1),
               ((3, 2), "expanded", 0), ((0, 3), "contiguous", 0), ((2, 0), "contiguous", 1)]),
           error_inputs_func=_dim_errors("unbind", "dim", "Dimension out of range", (2,))),
    OpInfo("contiguous", overloads=("contiguous",), sample_inputs_func=_dims_samples(VIEW_SHAPES)),
    OpInfo("detach", overloads=("detach",), sample_inputs_func=_dims_samples(VIEW_SHAPES),
           supports_autograd=False),
    # Views cannot be detached in place: the samples are fresh tensors (make_tensor's
    # non-contiguous layouts are views).
    OpInfo("detach_", overloads=("detach_",), mutates_input=True,
           sample_inputs_func=_dims_samples([s for s in VIEW_SHAPES if s[1] == "contiguous"]),
           error_inputs_func=errors_detach_, supports_autograd=False),
]

op_db = COPIES + VIEWS
