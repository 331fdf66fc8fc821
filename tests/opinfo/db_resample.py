"""Operator database entries: upsampling and im2col / col2im (joined in db_nn_spatial.py)."""
from __future__ import annotations

import torch

import tensorplay as tp
from tensorplay.errors import ArgumentError, DTypeError, ShapeError
from opinfo.core import FLOATING, ErrorInput, OpInfo, SampleInput, make_tensor, rng_for

E = ErrorInput
S = SampleInput
aten = torch.ops.aten


def _grad(dtype, requires_grad):
    return requires_grad and dtype.is_floating_point


def _t(shape, dtype=tp.float32):
    return make_tensor(shape, dtype, "cpu", rng=rng_for("errors", shape, dtype))


# (input shape, layout, output size, scales)
UPSAMPLE_CASES = (
    ((1, 2, 3, 4), "contiguous", (6, 8), (None, None)),
    ((2, 1, 4, 3), "transposed", (5, 7), (None, None)),
    ((1, 2, 3, 4), "strided", (5, 6), (1.7, 1.6)),
    ((2, 2, 4, 4), "contiguous", (2, 3), (None, None)),
)


def sample_inputs_upsample(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    bilinear = op.name == "upsample_bilinear2d"
    for shape, layout, size, scales in UPSAMPLE_CASES:
        for align in ((False, True) if bilinear else (None,)):
            x = make_tensor(shape, dtype, device, rng=rng, layout=layout,
                            requires_grad=_grad(dtype, requires_grad))
            args = (size, align, *scales) if bilinear else (size, *scales)
            yield S(x, args, name=f"{list(shape)} {layout} -> {size} scales={scales} "
                                  f"align_corners={align}")


def sample_inputs_upsample_backward(op, device, dtype, requires_grad):
    bilinear = op.name == "upsample_bilinear2d_backward"
    forward = "upsample_bilinear2d" if bilinear else "upsample_nearest2d"
    fake = OpInfo(forward, sample_inputs_func=sample_inputs_upsample)
    for s in sample_inputs_upsample(fake, device, dtype, False):
        size = s.args[0]
        g = make_tensor(tuple(s.input.shape[:2]) + size, dtype, device,
                        rng=rng_for(op.name, s.name), requires_grad=_grad(dtype, requires_grad))
        yield S(g, (size, tuple(s.input.shape)) + tuple(s.args[1:]), name=s.name)


def errors_upsample(op, device):
    args = ((4, 4), False) if op.name == "upsample_bilinear2d" else ((4, 4),)
    yield E(S(_t((2, 3, 4)), args), ShapeError,
            rf"{op.name}\(\): expected argument 'self' to be a non-empty 4-D tensor", arg="self")
    yield E(S(_t((1, 1, 2, 2), tp.int64), args), DTypeError,
            rf"{op.name}\(\): argument 'self' must have a floating point dtype", arg="self")
    bad = ((4, 0),) + args[1:]
    yield E(S(_t((1, 1, 2, 2)), bad), ArgumentError,
            rf"{op.name}\(\): argument 'output_size' must be positive", arg="output_size")


# (input shape, layout, kernel, dilation, padding, stride)
FOLD_CASES = (
    ((1, 2, 4, 5), "contiguous", (2, 2), (1, 1), (0, 0), (1, 1)),
    ((2, 1, 5, 4), "transposed", (2, 3), (2, 1), (1, 1), (2, 1)),
    ((2, 4, 3), "strided", (3, 1), (1, 1), (1, 0), (1, 2)),
)


def sample_inputs_im2col(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for shape, layout, k, d, p, s in FOLD_CASES:
        yield S(make_tensor(shape, dtype, device, rng=rng, layout=layout,
                            requires_grad=_grad(dtype, requires_grad)),
                (k, d, p, s), name=f"{list(shape)} {layout} k={k} d={d} p={p} s={s}")


def sample_inputs_col2im(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for shape, layout, k, d, p, s in FOLD_CASES:
        cols = tp.im2col(tp.zeros(shape, dtype=dtype, device=device), k, d, p, s)
        yield S(make_tensor(tuple(cols.shape), dtype, device, rng=rng, layout=layout,
                            requires_grad=_grad(dtype, requires_grad)),
                (tuple(shape[-2:]), k, d, p, s), name=f"{list(shape)} {layout} k={k}")


def errors_im2col(op, device):
    yield E(S(_t((5, 4)), ((2, 2), (1, 1), (0, 0), (1, 1))), ShapeError,
            r"im2col\(\): expected argument 'self' to be a 3-D", arg="self")
    yield E(S(_t((1, 1, 2, 2)), ((3, 3), (1, 1), (0, 0), (1, 1))), ShapeError,
            r"im2col\(\): no sliding block fits", arg="self")
    yield E(S(_t((1, 1, 4, 4)), ((2, 2), (0, 1), (0, 0), (1, 1))), ArgumentError,
            r"im2col\(\): argument 'dilation' must be positive", arg="dilation")


def errors_col2im(op, device):
    yield E(S(_t((1, 5, 9)), ((4, 4), (2, 2), (1, 1), (0, 0), (1, 1))), ShapeError,
            r"col2im\(\): argument 'self' dim -2 \(5\) must be divisible", arg="self")
    yield E(S(_t((1, 4, 8)), ((4, 4), (2, 2), (1, 1), (0, 0), (1, 1))), ShapeError,
            r"col2im\(\): argument 'self' has 8 blocks", arg="self")


TOL = {tp.float16: (2e-3, 4e-3), tp.bfloat16: (1.6e-2, 3e-2)}

RESAMPLE = [
    OpInfo("upsample_nearest2d", overloads=("upsample_nearest2d",), dtypes=FLOATING,
           ref=aten.upsample_nearest2d, sample_inputs_func=sample_inputs_upsample,
           error_inputs_func=errors_upsample),
    OpInfo("upsample_nearest2d_backward", overloads=("upsample_nearest2d_backward",),
           dtypes=FLOATING, ref=aten.upsample_nearest2d_backward,
           sample_inputs_func=sample_inputs_upsample_backward, tolerances=TOL),
    OpInfo("upsample_bilinear2d", overloads=("upsample_bilinear2d",), dtypes=FLOATING,
           ref=aten.upsample_bilinear2d, sample_inputs_func=sample_inputs_upsample,
           error_inputs_func=errors_upsample, tolerances=TOL),
    OpInfo("upsample_bilinear2d_backward", overloads=("upsample_bilinear2d_backward",),
           dtypes=FLOATING, ref=aten.upsample_bilinear2d_backward,
           sample_inputs_func=sample_inputs_upsample_backward, tolerances=TOL),
    OpInfo("im2col", overloads=("im2col",), dtypes=FLOATING, ref=aten.im2col,
           sample_inputs_func=sample_inputs_im2col, error_inputs_func=errors_im2col),
    OpInfo("col2im", overloads=("col2im",), dtypes=FLOATING, ref=aten.col2im,
           sample_inputs_func=sample_inputs_col2im, error_inputs_func=errors_col2im,
           tolerances=TOL),
]
