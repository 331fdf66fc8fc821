"""Operator database entries: upsampling (nearest, bilinear) and pixel (un)shuffle."""
from __future__ import annotations

import torch

import tensorplay as tp
from tensorplay.errors import ArgumentError, DTypeError, ShapeError
from opinfo.core import ALL_DTYPES, ErrorInput, FLOATING, make_tensor, OpInfo, rng_for, SampleInput
from opinfo.db_padding import E, S, _grad, _t

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


TOL = {tp.float16: (2e-3, 4e-3), tp.bfloat16: (1.6e-2, 3e-2)}


# ---- pixel_shuffle / pixel_unshuffle ---------------------------------------------------
def sample_inputs_pixel_shuffle(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = _grad(dtype, requires_grad)
    unshuffle = op.name == "pixel_unshuffle"
    cases = (((1, 8, 2, 3), "contiguous", 2), ((2, 9, 1, 2), "transposed", 3),
             ((4, 2, 2), "strided", 2), ((2, 1, 4, 2, 2), "contiguous", 1))
    # (No empty input: PyTorch's pixel_unshuffle returns an empty input's shape unchanged,
    # which also breaks pixel_shuffle's gradient there.)
    for shape, layout, r in cases:
        if unshuffle:   # the inverse's input: channels / r^2, space * r
            *batch, c, h, w = shape
            shape = tuple(batch) + (c // (r * r), h * r, w * r)
        yield S(make_tensor(shape, dtype, device, rng=rng, layout=layout, requires_grad=grad),
                (r,), name=f"{list(shape)} {layout} r={r}")


def errors_pixel_shuffle(op, device):
    name = op.name
    arg = "upscale_factor" if name == "pixel_shuffle" else "downscale_factor"
    bad = (1, 3, 2, 2) if name == "pixel_shuffle" else (1, 3, 3, 2)
    yield E(S(_t(bad), (2,)), ShapeError, rf"{name}\(\): argument 'self' must have "
            r"at least 3 dims", arg="self", meta=False)
    yield E(S(_t((4, 2)), (2,)), ShapeError, rf"{name}\(\): argument 'self' must have "
            r"at least 3 dims", arg="self", meta=False)
    yield E(S(_t((1, 4, 2, 2)), (0,)), ArgumentError,
            rf"{name}\(\): argument '{arg}' must be positive", arg=arg, meta=False)

op_db = [
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
    OpInfo("pixel_shuffle", overloads=("pixel_shuffle",), dtypes=ALL_DTYPES,
           sample_inputs_func=sample_inputs_pixel_shuffle,
           error_inputs_func=errors_pixel_shuffle),
    OpInfo("pixel_unshuffle", overloads=("pixel_unshuffle",), dtypes=ALL_DTYPES,
           sample_inputs_func=sample_inputs_pixel_shuffle,
           error_inputs_func=errors_pixel_shuffle),
]
