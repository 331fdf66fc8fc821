"""tp.nn.functional resampling: interpolate (nearest, linear, bilinear), unfold and fold.

A 1-D input (N, C, L) is resized as a (N, C, 1, L) image whose height stays 1, so the
2-D upsampling ops serve both.
"""
from __future__ import annotations

import math
import warnings

from tensorplay._generated import functional as _ops
from tensorplay._generated.functional import pixel_shuffle, pixel_unshuffle  # noqa: F401
from tensorplay.errors import ArgumentError, ShapeError, fmt_shape

__all__ = ["pixel_shuffle", "pixel_unshuffle", "interpolate", "channel_shuffle",
           "native_channel_shuffle", "upsample", "upsample_nearest", "upsample_bilinear"]


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
