"""Operator database entries: constant, reflect, replicate and circular padding."""
from __future__ import annotations

import torch
import torch.nn.functional as TF

import tensorplay as tp
from tensorplay.errors import ArgumentError, DTypeError, ShapeError
from opinfo.core import ALL_BUT_BOOL, ALL_DTYPES, FLOATING, ErrorInput, OpInfo, SampleInput, \
    make_tensor, rng_for

E = ErrorInput
S = SampleInput


def _grad(dtype, requires_grad):
    return requires_grad and dtype.is_floating_point


def _t(shape, dtype=tp.float32):
    return make_tensor(shape, dtype, "cpu", rng=rng_for("errors", shape, dtype))


# ---- constant_pad_nd ------------------------------------------------------------------
def sample_inputs_constant_pad(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = _grad(dtype, requires_grad)
    value = True if dtype is tp.bool else (2.5 if dtype.is_floating_point else 2)
    for shape, layout, pad, v in (((3, 4), "contiguous", (1, 2), 0),
                                  ((2, 3, 4), "transposed", (1, 0, -1, 2), value),
                                  ((2, 3, 4), "strided", (0, 1, 1, 1, 2, 0), value),
                                  ((5,), "contiguous", (-2, -1), value),
                                  ((0, 3), "contiguous", (1, 1, 2, 0), value),
                                  ((), "contiguous", (), value)):
        yield S(make_tensor(shape, dtype, device, rng=rng, layout=layout, requires_grad=grad),
                (pad, v), name=f"{list(shape)} {layout} pad={pad}")


def errors_constant_pad(op, device):
    yield E(S(_t((3, 4)), ((1, 2, 3),)), ArgumentError,
            r"constant_pad_nd\(\): argument 'pad' must have an even length", arg="pad")
    yield E(S(_t((3,)), ((1, 1, 1, 1),)), ArgumentError,
            r"constant_pad_nd\(\): argument 'pad' \(\[1, 1, 1, 1\]\) pads 2 dims, but the "
            r"input has only 1", arg="pad")
    yield E(S(_t((3, 2)), ((-2, -1),)), ShapeError,
            r"constant_pad_nd\(\): the negative entries of argument 'pad' \(\[-2, -1\]\) crop "
            r"3 elements off dim 1 of size 2", arg="pad")
    # the crop alone must fit, even where the other side's pad makes up for it
    yield E(S(_t((2, 0)), ((1, -1),)), ShapeError,
            r"constant_pad_nd\(\): the negative entries of argument 'pad' \(\[1, -1\]\) crop "
            r"1 elements off dim 1 of size 0", arg="pad")


# ---- _pad_nd and its backward ---------------------------------------------------------
PAD_CASES = (
    ((2, 5), "contiguous", (2, 1), "reflect"),
    ((1, 2, 4, 5), "transposed", (1, 2, 0, 3), "replicate"),
    ((1, 3, 2, 4), "strided", (1, 1, 2, 1, 0, 2), "circular"),
    ((2, 3, 4), "contiguous", (-1, 2, 1, 0), "reflect"),
    ((3, 4), "expanded", (3, 0), "replicate"),
    ((0, 2, 3), "contiguous", (2, 2), "circular"),
)


def sample_inputs_pad_nd(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for shape, layout, pad, mode in PAD_CASES:
        yield S(make_tensor(shape, dtype, device, rng=rng, layout=layout,
                            requires_grad=_grad(dtype, requires_grad)),
                (pad, mode), name=f"{list(shape)} {layout} {mode} {pad}")


def sample_inputs_pad_nd_backward(op, device, dtype, requires_grad):
    for s in sample_inputs_pad_nd(op, device, dtype, False):
        pad, mode = s.args
        out_shape = tp._pad_nd(s.input, pad, mode).shape
        g = make_tensor(tuple(out_shape), dtype, device, rng=rng_for(op.full_name, s.name),
                        requires_grad=_grad(dtype, requires_grad))
        yield S(g, (tuple(s.input.shape), pad, mode), name=s.name)


def torch_pad_nd_backward(grad, input_sizes, pad, mode):
    """PyTorch's gradient of F.pad, differentiable in `grad` (create_graph)."""
    x = torch.zeros(input_sizes, dtype=grad.dtype, requires_grad=True)
    return torch.autograd.grad(TF.pad(x, pad, mode=mode), x, grad, create_graph=True)[0]


def errors_pad_nd(op, device):
    yield E(S(_t((2, 3)), ((1, 1), "wrap")), ArgumentError,
            r"_pad_nd\(\): argument 'mode' must be one of reflect, replicate, circular",
            arg="mode", torch_raises=False)
    yield E(S(_t((2, 3)), ((3, 0), "reflect")), ShapeError,
            r"_pad_nd\(\): reflect padding \(3, 0\) of dim 1 must be less than its size 3",
            arg="pad", torch_raises=False)
    yield E(S(_t((3,)), ((1, 1), "replicate")), ShapeError,
            r"_pad_nd\(\): replicate padding of 1 dim\(s\) .* needs a 2-D or 3-D input",
            arg="pad", torch_raises=False)
    yield E(S(_t((2, 3), tp.bool), ((1, 1), "reflect")), DTypeError,
            r"_pad_nd\(\): reflect padding is not implemented for bool tensors", arg="self",
            torch_raises=False)


def sample_inputs_pad(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = _grad(dtype, requires_grad)
    for shape, layout, pad, mode in PAD_CASES[:3]:
        yield S(make_tensor(shape, dtype, device, rng=rng, layout=layout, requires_grad=grad),
                (pad,), {"mode": mode}, name=f"{mode} {pad}")
    yield S(make_tensor((2, 3), dtype, device, rng=rng, requires_grad=grad), ((1, -1, 2, 0),),
            name="constant default")
    yield S(make_tensor((2, 3), dtype, device, rng=rng, requires_grad=grad), ((1, 2),),
            {"mode": "constant", "value": 1.0}, name="constant value=1.0")


def errors_pad(op, device):
    yield E(S(_t((2, 3)), ((1, 1),), {"mode": "wrap"}), ArgumentError,
            r"pad\(\): argument 'mode' must be one of constant, reflect", arg="mode",
            meta=False)
    yield E(S(_t((2, 3)), ((1, 1, 1),)), ArgumentError,
            r"pad\(\): argument 'pad' must have an even length", arg="pad",
            meta=False)
    yield E(S(_t((2, 3)), ((3, 0),), {"mode": "reflect"}), ShapeError,
            r"pad\(\): reflect padding \(3, 0\) of dim 1 must be less than its size 3",
            arg="pad", meta=False)
    yield E(S(_t((2, 3)), ((1, 0),), {"mode": "reflect", "value": 2.0}), ArgumentError,
            r"pad\(\): argument 'value' \(2.0\) is only used with mode='constant'",
            arg="value", meta=False)


op_db = [
    OpInfo("constant_pad_nd", overloads=("constant_pad_nd",), dtypes=ALL_DTYPES,
           sample_inputs_func=sample_inputs_constant_pad,
           error_inputs_func=errors_constant_pad),
    OpInfo("_pad_nd", overloads=("_pad_nd",), dtypes=ALL_BUT_BOOL,
           ref=lambda x, pad, mode: TF.pad(x, pad, mode=mode),
           sample_inputs_func=sample_inputs_pad_nd, error_inputs_func=errors_pad_nd),
    OpInfo("_pad_nd_backward", overloads=("_pad_nd_backward",), dtypes=FLOATING,
           ref=torch_pad_nd_backward, sample_inputs_func=sample_inputs_pad_nd_backward),
    OpInfo("pad", overloads=("pad",), dtypes=ALL_BUT_BOOL, ref=TF.pad,
           sample_inputs_func=sample_inputs_pad, error_inputs_func=errors_pad),
]
