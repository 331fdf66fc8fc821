"""Operator database entries: convolution and its backward (see opinfo/__init__.py).

Shapes are tiny on purpose: gradcheck nudges every element of every input.
"""
from __future__ import annotations

import torch

import tensorplay as tp
from tensorplay.errors import ArgumentError, DTypeError, ShapeError
from opinfo.core import ALL_BUT_BOOL, FLOATING, ErrorInput, OpInfo, SampleInput, make_tensor, \
    rng_for

E = ErrorInput
S = SampleInput

# (name, input shape, weight shape, with bias, stride, padding, dilation, transposed,
#  output_padding, groups, input layout)
CONV_CASES = (
    ("2d", (2, 2, 4, 4), (2, 2, 3, 2), True, (1, 1), (0, 0), (1, 1), False, (0, 0), 1,
     "contiguous"),
    ("2d strided dilated grouped", (1, 4, 6, 5), (4, 2, 2, 2), True, (2, 1), (1, 2), (2, 1),
     False, (0, 0), 2, "transposed"),
    ("1d no bias", (2, 3, 7), (2, 3, 3), False, (2,), (1,), (1,), False, (0,), 1, "strided"),
    ("3d", (1, 1, 3, 4, 3), (2, 1, 2, 2, 2), True, (1, 2, 1), (1, 0, 1), (1, 1, 1), False,
     (0, 0, 0), 1, "contiguous"),
    ("2d transposed", (1, 4, 3, 2), (4, 1, 3, 2), True, (2, 3), (1, 0), (1, 2), True, (1, 2),
     2, "contiguous"),
    ("1d transposed dilation > stride", (2, 2, 4), (2, 3, 2), False, (1,), (0,), (3,), True,
     (2,), 1, "contiguous"),
    ("empty batch", (0, 2, 4, 4), (3, 2, 2, 2), True, (1, 1), (0, 0), (1, 1), False, (0, 0), 1,
     "contiguous"),
)


def _grad(dtype, requires_grad):
    return requires_grad and dtype.is_floating_point


def _values(dtype):
    # Small integers keep integer convolutions exact and far from overflow.
    return dict(low=-2, high=3) if not dtype.is_floating_point else {}


def sample_inputs_convolution(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = _grad(dtype, requires_grad)
    for (name, xs, ws, has_bias, stride, padding, dilation, transposed, output_padding,
         groups, layout) in CONV_CASES:
        if not dtype.is_floating_point and max(dilation) > 1:
            continue   # PyTorch has no dilated integer convolution to compare with
        x = make_tensor(xs, dtype, device, rng=rng, layout=layout, requires_grad=grad,
                        **_values(dtype))
        w = make_tensor(ws, dtype, device, rng=rng, requires_grad=grad, **_values(dtype))
        c_out = ws[1] * groups if transposed else ws[0]
        b = make_tensor((c_out,), dtype, device, rng=rng, requires_grad=grad,
                        **_values(dtype)) if has_bias else None
        yield S(x, (w, b, stride, padding, dilation, transposed, output_padding, groups),
                name=name)


def sample_inputs_convolution_backward(op, device, dtype, requires_grad):
    for s in sample_inputs_convolution(op, device, dtype, requires_grad):
        x, (w, b, stride, padding, dilation, transposed, output_padding, groups) = \
            s.input, s.args
        with tp.no_grad():
            y = tp.convolution(x, w, b, stride, padding, dilation, transposed,
                               output_padding, groups)
        rng = rng_for(op.full_name, dtype, s.name)
        g = make_tensor(tuple(y.shape), dtype, device, rng=rng,
                        requires_grad=_grad(dtype, requires_grad))
        bias_sizes = None if b is None else tuple(b.shape)
        # Every output computed: the generic tests compare tensors, not None (the
        # masks are tested in tests/test_nn_spatial_conv.py).
        # Finite differences of a backward (and, in gradgradcheck, of its backward) cost
        # a convolution per element: two samples, one per direction, are enough.
        yield S(g, (x, w, bias_sizes, stride, padding, dilation, transposed,
                    output_padding, groups, [True, True, True]), name=s.name,
                grad=s.name in ("1d no bias", "1d transposed dilation > stride"))


def _conv_args(x, w, b=None, stride=(1, 1), padding=(0, 0), dilation=(1, 1),
               transposed=False, output_padding=(0, 0), groups=1):
    return S(x, (w, b, stride, padding, dilation, transposed, output_padding, groups))


def _t(shape, dtype=tp.float32, device="cpu"):
    return make_tensor(shape, dtype, device, rng=rng_for("errors", shape, dtype))


def errors_convolution(op, device):
    x = _t((1, 4, 5, 5), device=device)
    w = _t((6, 2, 3, 3), device=device)
    yield E(_conv_args(_t((4, 5), device=device), w), ShapeError,
            r"convolution\(\): expected argument 'input' to be 4-D", arg="input")
    yield E(_conv_args(x, _t((6, 4), device=device)), ShapeError,
            r"convolution\(\): argument 'weight' must have at least 3 dims", arg="weight")
    yield E(_conv_args(x, w), ShapeError,
            r"convolution\(\): expected argument 'input' \(shape \[1, 4, 5, 5\]\) to have 2 "
            r"channels for weight of shape \[6, 2, 3, 3\] and groups=1, but got 4", arg="input")
    yield E(_conv_args(x, _t((5, 2, 3, 3), device=device), groups=2), ShapeError,
            r"convolution\(\): argument 'weight' .* divisible by groups=2", arg="weight")
    yield E(_conv_args(x, _t((6, 4, 8, 8), device=device), padding=(1, 1)), ShapeError,
            r"convolution\(\): the kernel \(argument 'weight', dilated size \[8, 8\]\) is "
            r"larger than the padded input \[7, 7\]", arg="weight")
    yield E(_conv_args(x, w, _t((5,), device=device), groups=2), ShapeError,
            r"convolution\(\): expected argument 'bias' to have shape \[6\]", arg="bias")
    yield E(_conv_args(x, w, stride=(0, 1), groups=2), ArgumentError,
            r"convolution\(\): argument 'stride' must be positive", arg="stride")
    yield E(_conv_args(x, w, padding=(1,), groups=2), ArgumentError,
            r"convolution\(\): argument 'padding' must have 2 element\(s\)", arg="padding",
            torch_raises=False)
    yield E(_conv_args(x, _t((6, 2, 3, 3), tp.float64, device), groups=2), DTypeError,
            r"convolution\(\): argument 'weight' \(float64\) must have the same dtype as "
            r"'input' \(float32\)", arg="weight")
    yield E(_conv_args(_t((1, 4, 5, 5), tp.bool, device), _t((6, 2, 3, 3), tp.bool, device),
                       groups=2), DTypeError,
            r"convolution\(\): not implemented for bool tensors", arg="input")
    yield E(_conv_args(_t((1, 6, 3, 3), device=device), w, stride=(2, 2), transposed=True,
                       output_padding=(2, 0)), ArgumentError,
            r"convolution\(\): argument 'output_padding' \(\[2, 0\]\) must be smaller than "
            r"either stride", arg="output_padding")


def errors_convolution_backward(op, device):
    x = _t((1, 2, 5, 5), device=device)
    w = _t((3, 2, 3, 3), device=device)
    yield E(S(_t((1, 3, 4, 4), device=device),
              (x, w, None, (1, 1), (0, 0), (1, 1), False, (0, 0), 1, [True, True, True])),
            ShapeError, r"convolution_backward\(\): argument 'grad_output' must have the "
            r"convolution's output shape \[1, 3, 3, 3\], but got \[1, 3, 4, 4\]",
            arg="grad_output")


CONV = [
    OpInfo("convolution", overloads=("convolution",), dtypes=ALL_BUT_BOOL,
           sample_inputs_func=sample_inputs_convolution,
           error_inputs_func=errors_convolution,
           tolerances={tp.float16: (3e-3, 3e-3), tp.bfloat16: (2e-2, 3e-2),
                       tp.float32: (1e-5, 1e-5)}),
    OpInfo("convolution_backward", overloads=("convolution_backward",), dtypes=FLOATING,
           ref=torch.ops.aten.convolution_backward,
           sample_inputs_func=sample_inputs_convolution_backward,
           error_inputs_func=errors_convolution_backward,
           tolerances={tp.float16: (5e-3, 5e-3), tp.bfloat16: (3e-2, 5e-2),
                       tp.float32: (1e-5, 1e-5)}),
]


# ---- conv_tbc ---------------------------------------------------------------------------
def sample_inputs_conv_tbc(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = requires_grad and dtype.is_floating_point
    # (input (T, B, C_in), kernel width, C_out, pad, layout); a negative pad crops
    for (T, B, C), K, O, pad, layout in (((5, 2, 3), 2, 4, 1, "contiguous"),
                                         ((4, 1, 2), 3, 2, 0, "transposed"),
                                         ((6, 2, 2), 2, 3, -1, "strided"),
                                         ((2, 3, 1), 1, 2, 2, "contiguous")):
        x = make_tensor((T, B, C), dtype, device, rng=rng, layout=layout, requires_grad=grad)
        w = make_tensor((K, C, O), dtype, device, rng=rng, requires_grad=grad)
        b = make_tensor((O,), dtype, device, rng=rng, requires_grad=grad)
        yield S(x, (w, b, pad), name=f"T,B,C={T},{B},{C} K={K} out={O} pad={pad} {layout}")


def errors_conv_tbc(op, device):
    x, w, b = _t((5, 2, 3), device=device), _t((2, 3, 4), device=device), \
        _t((4,), device=device)
    yield E(S(x[0], (w, b)), ShapeError, r"conv_tbc\(\): input must have 3 dims: time, "
            r"batch, in_channel", arg="self", meta=False)
    yield E(S(x, (w[0], b)), ShapeError, r"conv_tbc\(\): weight must have 3 dims",
            arg="weight", meta=False)
    yield E(S(x, (w, b[None])), ShapeError, r"conv_tbc\(\): bias must be 1-D", arg="bias",
            meta=False)
    yield E(S(x, (_t((2, 2, 4), device=device), b)), ShapeError,
            r"conv_tbc\(\): dim 1 of the weight \(in_channels\) must equal the input's "
            r"dim 2 \(3\)", arg="weight", meta=False)
    yield E(S(x, (w, _t((3,), device=device))), ShapeError,
            r"conv_tbc\(\): bias size must equal dim 2 of the weight", arg="bias",
            meta=False)


CONV_TBC = [
    OpInfo("conv_tbc", overloads=("conv_tbc",), dtypes=(tp.float32, tp.float64),
           sample_inputs_func=sample_inputs_conv_tbc, error_inputs_func=errors_conv_tbc),
]

op_db = CONV + CONV_TBC
