"""Shape and dtype rules of upsampling (nearest, bilinear), grid sampling and their backwards."""
from __future__ import annotations

from tensorplay.errors import ArgumentError, DTypeError, ShapeError, fmt_shape
from tensorplay.kernel_support.arguments import check_list
from tensorplay.kernel_support.checks import OutSpec, check_devices
from tensorplay.meta._spatial import check_floating


def _sizes(t):
    return t._impl.sizes


def _check_4d(op, name, t):
    sizes = _sizes(t)
    if len(sizes) != 4 or 0 in sizes[1:]:
        raise ShapeError(f"{op}(): expected argument '{name}' to be a non-empty 4-D tensor "
                         f"(N, C, H, W), but got shape {fmt_shape(sizes)}", op=op, arg=name)
    return sizes


def upsample2d(op, args):
    self, output_size = args[:2]
    sizes = _check_4d(op, "self", self)
    if not (op == "upsample_nearest2d" and self._impl.dtype.name == "uint8"):
        check_floating(op, "self", self)     # (uint8 images resize by nearest, as in PyTorch)
    out = check_list(op, "output_size", output_size, 2, 1)
    return OutSpec(tuple(sizes[:2]) + out, self._impl.dtype)


def upsample2d_backward(op, args):
    grad_output, output_size, input_size = args[:3]
    input_size = check_list(op, "input_size", input_size, 4, 0)
    out = check_list(op, "output_size", output_size, 2, 1)
    expected = tuple(input_size[:2]) + out
    if tuple(_sizes(grad_output)) != expected:
        raise ShapeError(f"{op}(): argument 'grad_output' must have shape "
                         f"{fmt_shape(expected)} (input_size's N, C and output_size), but got "
                         f"{fmt_shape(_sizes(grad_output))}", op=op, arg="grad_output")
    check_floating(op, "grad_output", grad_output)
    return OutSpec(input_size, grad_output._impl.dtype)



# ---- grid_sampler_2d / grid_sampler_3d -------------------------------------------------
INTERPOLATION_MODES = ("bilinear", "nearest", "bicubic")   # the ints 0, 1, 2
PADDING_MODES = ("zeros", "border", "reflection")


def check_grid_sampler(op, input, grid, interpolation_mode, padding_mode):
    """PyTorch's grid_sampler checks: input (N, C, *S) and grid (N, *O, d) with d = len(S)
    spatial dims (2 for grid_sampler_2d, 3 for grid_sampler_3d), one dtype."""
    d = 3 if "3d" in op else 2
    isz, gsz = _sizes(input), _sizes(grid)
    if len(isz) != d + 2 or len(gsz) != d + 2:
        raise ShapeError(f"{op}(): expected argument 'input' and argument 'grid' to be "
                         f"{d + 2}-D, but got input with sizes {fmt_shape(isz)} and grid "
                         f"with sizes {fmt_shape(gsz)}", op=op, arg="grid")
    if gsz[-1] != d:
        raise ShapeError(f"{op}(): expected argument 'grid' to have size {d} in the last "
                         f"dimension, but got grid with sizes {fmt_shape(gsz)}", op=op,
                         arg="grid")
    if isz[0] != gsz[0]:
        raise ShapeError(f"{op}(): expected argument 'grid' and argument 'input' to have the "
                         f"same batch size, but got input with sizes {fmt_shape(isz)} and "
                         f"grid with sizes {fmt_shape(gsz)}", op=op, arg="grid")
    for i, s in enumerate(isz[2:]):
        if s == 0:
            raise ShapeError(f"{op}(): expected argument 'input' to have non-empty spatial "
                             f"dimensions, but input has sizes {fmt_shape(isz)} with "
                             f"dimension {i + 2} being empty", op=op, arg="input")
    check_floating(op, "input", input)
    if grid._impl.dtype is not input._impl.dtype:
        raise DTypeError(f"{op}(): expected argument 'grid' to have the dtype of 'input' "
                         f"({input._impl.dtype.name}), but got {grid._impl.dtype.name}",
                         op=op, arg="grid")
    if interpolation_mode not in (0, 1, 2):
        raise ArgumentError(f"{op}(): argument 'interpolation_mode' must be 0 (bilinear), "
                            f"1 (nearest) or 2 (bicubic), but got {interpolation_mode}",
                            op=op, arg="interpolation_mode")
    if interpolation_mode == 2 and d == 3:
        raise ArgumentError(f"{op}(): bicubic interpolation (argument 'interpolation_mode' "
                            f"= 2) only supports 4-D input, but got 5-D", op=op,
                            arg="interpolation_mode")
    if padding_mode not in (0, 1, 2):
        raise ArgumentError(f"{op}(): argument 'padding_mode' must be 0 (zeros), 1 (border) "
                            f"or 2 (reflection), but got {padding_mode}", op=op,
                            arg="padding_mode")
    check_devices(op, [("input", input), ("grid", grid)])
    return isz, gsz


def grid_sampler(op, args):
    input, grid, interpolation_mode, padding_mode = args[:4]
    isz, gsz = check_grid_sampler(op, input, grid, interpolation_mode, padding_mode)
    return OutSpec(tuple(isz[:2]) + tuple(gsz[1:-1]), input._impl.dtype)


def grid_sampler_backward(op, args):
    grad_output, input, grid, interpolation_mode, padding_mode = args[:5]
    isz, gsz = check_grid_sampler(op, input, grid, interpolation_mode, padding_mode)
    expected = tuple(isz[:2]) + tuple(gsz[1:-1])
    if tuple(_sizes(grad_output)) != expected:
        raise ShapeError(f"{op}(): argument 'grad_output' must have shape "
                         f"{fmt_shape(expected)} (input's N, C and grid's output sizes), but "
                         f"got {fmt_shape(_sizes(grad_output))}", op=op, arg="grad_output")
    check_floating(op, "grad_output", grad_output)
    mask = tuple(args[6]) if len(args) > 6 else (True, True)
    dtype = input._impl.dtype
    return (OutSpec(tuple(isz), dtype) if mask[0] else None, OutSpec(tuple(gsz), dtype))
