"""tp.nn.functional resampling: interpolate (nearest, linear, bilinear), grid_sample and
affine_grid.

A 1-D input (N, C, L) is resized as a (N, C, 1, L) image whose height stays 1, so the
2-D upsampling ops serve both.
"""
from __future__ import annotations

import math
import warnings

from tensorplay._generated import functional as _ops
from tensorplay._generated.functional import pixel_shuffle, pixel_unshuffle  # noqa: F401
from tensorplay.errors import ArgumentError, DTypeError, ShapeError, fmt_shape

__all__ = ["pixel_shuffle", "pixel_unshuffle", "interpolate", "channel_shuffle",
           "native_channel_shuffle", "upsample", "upsample_nearest", "upsample_bilinear",
           "grid_sample", "affine_grid", "GRID_SAMPLE_INTERPOLATION_MODES",
           "GRID_SAMPLE_PADDING_MODES"]


_MODES = {"nearest": 1, "linear": 1, "bilinear": 2}   # mode -> spatial dims it resizes


def _n_tuple(op, name, value, n, kind=int):
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ArgumentError(f"{op}(): argument '{name}' must have {n} element(s) for a "
                                f"{n + 2}-D input, but got {list(value)}", op=op, arg=name)
        return tuple(kind(v) for v in value)
    return (kind(value),) * n


def _output_size(op, spatial, size, scale_factor, recompute_scale_factor):
    """(output sizes, scales to pass to the op) from `size` or `scale_factor`."""
    n = len(spatial)
    if (size is None) == (scale_factor is None):
        raise ArgumentError(f"{op}(): exactly one of argument 'size' and argument "
                            f"'scale_factor' must be given", op=op, arg="size")
    if size is not None:
        return _n_tuple(op, "size", size, n), (None,) * n
    scales = _n_tuple(op, "scale_factor", scale_factor, n, float)
    out = tuple(int(math.floor(s * f)) for s, f in zip(spatial, scales))
    return out, (None,) * n if recompute_scale_factor else scales


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None):
    """Resize the spatial dims of (N, C, L) or (N, C, H, W), as torch's F.interpolate for
    modes 'nearest', 'linear' (3-D) and 'bilinear' (4-D)."""
    op = "interpolate"
    if mode not in _MODES:
        raise ArgumentError(f"{op}(): argument 'mode' must be one of "
                            f"{', '.join(_MODES)}, but got {mode!r}", op=op, arg="mode")
    n = input.dim() - 2
    if mode != "nearest" and n != _MODES[mode] or n not in (1, 2):
        raise ShapeError(f"{op}(): mode {mode!r} needs a "
                         f"{_MODES[mode] + 2 if mode != 'nearest' else '3-D or 4'}-D input, "
                         f"but got shape {fmt_shape(tuple(input.shape))} (argument 'input')",
                         op=op, arg="input")
    if mode == "nearest" and align_corners is not None:
        raise ArgumentError(f"{op}(): argument 'align_corners' only applies to the linear "
                            f"modes, not {mode!r}", op=op, arg="align_corners")
    out, scales = _output_size(op, tuple(input.shape[2:]), size, scale_factor,
                               recompute_scale_factor)
    x = input.unsqueeze(-2) if n == 1 else input
    if n == 1:
        out, scales = (1,) + out, (None,) + scales
    if mode == "nearest":
        y = _ops.upsample_nearest2d(x, out, *scales)
    else:
        y = _ops.upsample_bilinear2d(x, out, bool(align_corners), *scales)
    return y.squeeze(-2) if n == 1 else y


def _pair(op, name, value):
    return _n_tuple(op, name, value, 2)


def channel_shuffle(input, groups):
    """(N, g * c, ...) -> interleave the g groups: channel i * c + j goes to j * g + i."""
    op = "channel_shuffle"
    if input.dim() < 3 or input.shape[1] % groups:
        raise ShapeError(f"{op}(): expected an input (N, C, ...) with C divisible by groups="
                         f"{groups}, but got shape {fmt_shape(tuple(input.shape))}", op=op,
                         arg="input")
    shape = tuple(input.shape)
    grouped = input.reshape(shape[0], groups, shape[1] // groups, *shape[2:])
    return grouped.transpose(1, 2).reshape(*shape)


native_channel_shuffle = channel_shuffle


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated name of interpolate."""
    warnings.warn("nn.functional.upsample is deprecated. Use nn.functional.interpolate "
                  "instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    warnings.warn("nn.functional.upsample_nearest is deprecated. Use "
                  "nn.functional.interpolate instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """interpolate(mode='bilinear', align_corners=True), as the deprecated name did."""
    warnings.warn("nn.functional.upsample_bilinear is deprecated. Use "
                  "nn.functional.interpolate instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ---- grid_sample, affine_grid -----------------------------------------------------------
GRID_SAMPLE_INTERPOLATION_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
GRID_SAMPLE_PADDING_MODES = {"zeros": 0, "border": 1, "reflection": 2}


def _align_corners_default(align_corners):
    if align_corners is None:
        warnings.warn("Default grid_sample and affine_grid behavior has changed to "
                      "align_corners=False since 1.3.0. Please specify align_corners=True "
                      "if the old behavior is desired. See the documentation of grid_sample "
                      "for details.", stacklevel=3)
        return False
    return bool(align_corners)


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Read input (N, C, H, W) or (N, C, D, H, W) at the points of grid (N, Ho, Wo, 2) or
    (N, Do, Ho, Wo, 3), coordinates (x, y[, z]) in [-1, 1]: torch's F.grid_sample.
    ('bicubic' is 4-D only.)"""
    op = "grid_sample"
    if mode not in GRID_SAMPLE_INTERPOLATION_MODES:
        raise ArgumentError(f"{op}(): expected argument 'mode' to be 'bilinear', 'nearest' "
                            f"or 'bicubic', but got: {mode!r}", op=op, arg="mode")
    if padding_mode not in GRID_SAMPLE_PADDING_MODES:
        raise ArgumentError(f"{op}(): expected argument 'padding_mode' to be 'zeros', "
                            f"'border', or 'reflection', but got: {padding_mode!r}", op=op,
                            arg="padding_mode")
    if mode == "bicubic" and input.dim() != 4:
        raise ShapeError(f"{op}(): mode 'bicubic' needs a 4-D input, but got shape "
                         f"{fmt_shape(tuple(input.shape))} (argument 'input')", op=op,
                         arg="input")
    align_corners = _align_corners_default(align_corners)
    return _ops.grid_sampler(input, grid, GRID_SAMPLE_INTERPOLATION_MODES[mode],
                             GRID_SAMPLE_PADDING_MODES[padding_mode], align_corners)


def affine_grid(theta, size, align_corners=None):
    """The sampling grid of the affine maps theta (N, 2, 3) for size (N, C, H, W), or
    theta (N, 3, 4) for (N, C, D, H, W): torch's F.affine_grid (feed it to grid_sample)."""
    op = "affine_grid"
    align_corners = _align_corners_default(align_corners)
    size = [int(s) for s in size]
    if not theta.dtype.is_floating_point:
        raise DTypeError(f"{op}(): expected argument 'theta' to be a floating point "
                         f"tensor, but got {theta.dtype.name}", op=op, arg="theta")
    if len(size) not in (4, 5):
        raise ShapeError(f"{op}(): only supports 4-D and 5-D sizes, for 2-D and 3-D affine "
                         f"transforms, but got argument 'size' = {size}", op=op, arg="size")
    d = len(size) - 2
    if theta.dim() != 3 or tuple(theta.shape[1:]) != (d, d + 1):
        raise ShapeError(f"{op}(): expected argument 'theta' to be a batch of {d}-D affine "
                         f"matrices of shape Nx{d}x{d + 1} for size {size}, but got "
                         f"{fmt_shape(tuple(theta.shape))}", op=op, arg="theta")
    if min(size) <= 0:
        raise ShapeError(f"{op}(): expected a non-zero, positive argument 'size', but got "
                         f"{size}", op=op, arg="size")
    if align_corners and any(s == 1 for s in size[2:]):
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size "
                      "grids when align_corners=True. This is not an intended use case of "
                      "affine_grid. See the documentation of affine_grid for details.",
                      stacklevel=2)
    return _ops.affine_grid_generator(theta, size, align_corners)
