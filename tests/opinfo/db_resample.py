"""Operator database entries: upsampling (nearest, bilinear), pixel (un)shuffle, grid
sampling and affine grids."""
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
    """Whether a sample tensor of `dtype` takes a gradient: floating and complex ones."""
    return requires_grad and dtype.is_differentiable


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


# ---- grid_sampler_2d / _3d, grid_sampler, affine_grid_generator ------------------------
# (input shape, output spatial shape, mode, padding, align_corners, layout): every mode and
# padding once; the grid reaches a little past [-1, 1] so that padding matters.
GRID_CASES_2D = (
    ((2, 2, 3, 4), (2, 3), 0, 0, False, "contiguous"),
    ((1, 3, 4, 3), (3, 2), 1, 1, True, "transposed"),
    ((2, 1, 3, 5), (2, 2), 2, 2, False, "strided"),
    ((1, 2, 4, 4), (2, 3), 0, 2, True, "contiguous"),
    ((1, 2, 3, 3), (3, 2), 2, 1, True, "contiguous"),
    ((2, 1, 3, 3), (0, 2), 0, 0, False, "contiguous"),
)
GRID_CASES_3D = (
    ((1, 2, 2, 3, 4), (2, 2, 2), 0, 1, False, "contiguous"),
    ((2, 1, 3, 2, 3), (1, 2, 3), 1, 0, True, "strided"),
    ((1, 1, 3, 3, 2), (2, 1, 2), 0, 2, True, "transposed"),
)


def _grid_samples(op, device, dtype, requires_grad, cases):
    rng = rng_for(op.full_name, dtype)
    grad = _grad(dtype, requires_grad)
    for shape, out, mode, pad, align, layout in cases:
        x = make_tensor(shape, dtype, device, rng=rng, layout=layout, requires_grad=grad)
        g = make_tensor((shape[0],) + out + (len(out),), dtype, device, rng=rng, low=-1.2,
                        high=1.2, layout=layout, requires_grad=grad)
        yield S(x, (g, mode, pad, align), name=f"{list(shape)} {layout} -> {out} mode={mode} "
                                                f"padding={pad} align_corners={align}")


def sample_inputs_grid_sampler(op, device, dtype, requires_grad):
    yield from _grid_samples(op, device, dtype, requires_grad,
                             GRID_CASES_3D if op.name.endswith("3d") else GRID_CASES_2D)
    if op.name == "grid_sampler":
        yield from _grid_samples(op, device, dtype, requires_grad, GRID_CASES_3D[:1])


def sample_inputs_grid_sampler_backward(op, device, dtype, requires_grad):
    forward = OpInfo(op.name.replace("_backward", ""), sample_inputs_func=sample_inputs_upsample)
    cases = GRID_CASES_3D if "3d" in op.name else GRID_CASES_2D
    for i, s in enumerate(_grid_samples(forward, device, dtype, False, cases)):
        g = s.args[0]
        go = make_tensor(tuple(s.input.shape[:2]) + tuple(g.shape[1:-1]), dtype, device,
                         rng=rng_for(op.name, s.name))
        mask = [i % 3 != 1, True]
        # (The Meta test compares every output's shape: not for a left-out grad_input.)
        yield S(go, (s.input, g) + s.args[1:] + (mask,), name=f"{s.name} mask={mask}",
                meta=mask[0])


def errors_grid_sampler(op, device):
    name = op.name
    d = 3 if "3d" in name else 2
    x = _t((1, 2) + (3,) * d)
    grid = _t((1,) + (2,) * d + (d,))
    backward = name.endswith("_backward")

    def call(inp, g, *rest):
        if not backward:
            return S(inp, (g,) + rest)
        go = _t((1, 2) + tuple(g.shape[1:-1]))
        return S(go, (inp, g) + rest + ([True, True],))

    forward = name
    yield E(call(x, _t((1,) + (2,) * d + (d + 1,)), 0, 0, False), ShapeError,
            rf"{forward}\(\): expected argument 'grid' to have size {d} in the last dim",
            arg="grid")
    yield E(call(x, _t((2,) + (2,) * d + (d,)), 0, 0, False), ShapeError,
            rf"{forward}\(\): expected argument 'grid' and argument 'input' to have the same "
            r"batch size", arg="grid")
    yield E(call(x, grid.to(tp.float64), 0, 0, False), DTypeError,
            rf"{forward}\(\): expected argument 'grid' to have the dtype of 'input'",
            arg="grid")
    yield E(call(x, grid, 0, 3, False), ArgumentError,
            rf"{forward}\(\): argument 'padding_mode' must be 0 \(zeros\)", arg="padding_mode",
            torch_raises=False)
    yield E(call(_t((1, 2, 0) + (3,) * (d - 1)), grid, 0, 0, False), ShapeError,
            rf"{forward}\(\): expected argument 'input' to have non-empty spatial dim",
            arg="input")
    if d == 3:
        yield E(call(x, grid, 2, 0, False), ArgumentError,
                rf"{forward}\(\): bicubic interpolation \(argument 'interpolation_mode' = 2\) "
                r"only supports 4-D input", arg="interpolation_mode")


def errors_grid_sampler_dispatch(op, device):
    yield E(S(_t((2, 3, 4)), (_t((2, 3, 2)), 0, 0, False)), ShapeError,
            r"grid_sampler\(\): expected argument 'input' to be 4-D or 5-D", arg="input",
            meta=False)


def sample_inputs_affine_grid(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = _grad(dtype, requires_grad)
    for size, align, layout in (([2, 1, 3, 4], False, "contiguous"),
                                ([1, 3, 2, 5], True, "transposed"),
                                ([2, 2, 1, 3], False, "strided"),
                                ([1, 1, 2, 3, 2], True, "contiguous"),
                                ([2, 1, 2, 2, 3], False, "strided")):
        d = len(size) - 2
        theta = make_tensor((size[0], d, d + 1), dtype, device, rng=rng, layout=layout,
                            requires_grad=grad)
        yield S(theta, (size, align), name=f"size={size} align_corners={align} {layout}")


def errors_affine_grid(op, device):
    yield E(S(_t((2, 2, 3)), ([2, 1, 3], False)), ShapeError,
            r"affine_grid_generator\(\): argument 'size' must have 4 \(N, C, H, W\) or 5",
            arg="size", meta=False)
    yield E(S(_t((2, 3, 4)), ([2, 1, 3, 3], False)), ShapeError,
            r"affine_grid_generator\(\): argument 'theta' must have shape \[2, 2, 3\]",
            arg="theta", meta=False, torch_raises=False)


# float32 and float64 only: PyTorch's half-precision grid sampling rounds its coordinates
# and weights to half, so a tap's floor can differ from ours (float32 math); its CPU
# affine_grid_generator has no half kernel.
GRID_DTYPES = (tp.float32, tp.float64)

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
    OpInfo("grid_sampler_2d", overloads=("grid_sampler_2d",), dtypes=GRID_DTYPES,
           sample_inputs_func=sample_inputs_grid_sampler, supports_gradgrad=False,
           error_inputs_func=errors_grid_sampler),
    OpInfo("grid_sampler_3d", overloads=("grid_sampler_3d",), dtypes=GRID_DTYPES,
           sample_inputs_func=sample_inputs_grid_sampler, supports_gradgrad=False,
           error_inputs_func=errors_grid_sampler),
    OpInfo("grid_sampler_2d_backward", overloads=("grid_sampler_2d_backward",),
           dtypes=GRID_DTYPES, ref=aten.grid_sampler_2d_backward, supports_autograd=False,
           sample_inputs_func=sample_inputs_grid_sampler_backward,
           error_inputs_func=errors_grid_sampler),
    OpInfo("grid_sampler_3d_backward", overloads=("grid_sampler_3d_backward",),
           dtypes=GRID_DTYPES, ref=aten.grid_sampler_3d_backward, supports_autograd=False,
           sample_inputs_func=sample_inputs_grid_sampler_backward,
           error_inputs_func=errors_grid_sampler),
    OpInfo("grid_sampler", overloads=("grid_sampler", "grid_sampler_2d", "grid_sampler_3d"),
           dtypes=GRID_DTYPES, sample_inputs_func=sample_inputs_grid_sampler,
           supports_gradgrad=False, error_inputs_func=errors_grid_sampler_dispatch,),
    OpInfo("affine_grid_generator", overloads=("affine_grid_generator",), dtypes=GRID_DTYPES,
           sample_inputs_func=sample_inputs_affine_grid, error_inputs_func=errors_affine_grid,),
]
