"""Nearest and bilinear upsampling of (N, C, H, W), grid sampling (grid_sampler_2d/3d),
and their backwards.

Both are separable: along each spatial dim, output position o reads at most two input
positions, i0[o] and i1[o], with weights l0[o] and l1[o] (nearest: one position, weight
1). So, as PyTorch computes it (the H mix outside, the W mix inside),

    out[.., o, p]  = l0h[o] * (l0w[p] * x[.., i0h[o], i0w[p]] + l1w[p] * x[.., i0h[o], i1w[p]])
                   + l1h[o] * (l0w[p] * x[.., i1h[o], i0w[p]] + l1w[p] * x[.., i1h[o], i1w[p]])

and the backward adds each weighted gradient back into the positions it was read from.
NOTE: gathering only the positions read (rather than multiplying by an (out, in) matrix of
weights) keeps PyTorch's NaN convention: an infinite input reaches only the outputs that
read it (0 * inf = NaN there, as in PyTorch), not every output of its row.

The index arithmetic follows PyTorch's exactly (including computing the source
coordinate in float32 for float32 inputs), so results match it bit for bit in the
positions chosen.
"""
from __future__ import annotations

import itertools

import numpy as np

from tensorplay.kernel_support.arguments import upsample_params
from tensorplay.kernel_support.ops import shape_rule
from tensorplay.library import kernel
from cpu_kernels._common import accumulate_dtype, check_result, out


def _scale(in_size, out_size, scale, align_corners, ftype):
    """How far apart, in input coordinates, two output positions are."""
    if align_corners:
        return ftype((in_size - 1) / (out_size - 1)) if out_size > 1 else ftype(0)
    if scale is not None and scale > 0:
        return ftype(1.0 / scale)
    return ftype(in_size) / ftype(out_size)


def nearest_taps(in_size, out_size, scale, ftype):
    """One tap: i0[o] = min(floor(o * scale), in - 1) (PyTorch's nearest_idx), weight 1."""
    o = np.arange(out_size)
    if out_size == in_size:
        src = o
    elif out_size == 2 * in_size:
        src = o >> 1
    else:
        s = _scale(in_size, out_size, scale, False, np.float32)
        src = np.minimum(np.floor(o.astype(np.float32) * s).astype(np.int64), in_size - 1)
    return ((src, np.ones(out_size, ftype)),)


def linear_taps(in_size, out_size, align_corners, scale, ftype):
    """Two taps of linear interpolation (PyTorch's area_pixel_compute_source_index):

        src = o * s (align_corners)  or  max((o + 0.5) * s - 0.5, 0)
        i0 = floor(src), weight 1 - frac;  i1 = i0 + 1 (clamped to in - 1), weight frac
    """
    s = _scale(in_size, out_size, scale, align_corners, ftype)
    o = np.arange(out_size).astype(ftype)
    src = o * s if align_corners else np.maximum((o + ftype(0.5)) * s - ftype(0.5), ftype(0))
    i0 = src.astype(np.int64)
    i1 = np.where(i0 < in_size - 1, i0 + 1, i0)
    frac = np.clip(src - i0, 0, 1).astype(ftype)
    return ((i0, (1 - frac).astype(ftype)), (i1, frac))


def _taps(mode, in_hw, out_hw, align_corners, scales_h, scales_w, dtype):
    ftype = np.dtype(dtype).type
    if mode == "nearest":
        return (nearest_taps(in_hw[0], out_hw[0], scales_h, ftype),
                nearest_taps(in_hw[1], out_hw[1], scales_w, ftype))
    return (linear_taps(in_hw[0], out_hw[0], align_corners, scales_h, ftype),
            linear_taps(in_hw[1], out_hw[1], align_corners, scales_w, ftype))


def _mix(x, taps):
    """sum over the taps of weight * x gathered along the last dim (W)."""
    total = None
    for index, weight in taps:
        term = weight * np.take(x, index, axis=-1)
        total = term if total is None else total + term
    return total


def _spread(g, taps, axis, size):
    """The transpose of a mix along `axis`: each weighted gradient added back at the
    input position it was read from (so 0 * an infinite gradient stays where it was read)."""
    g = np.moveaxis(g, axis, -1)
    total = np.zeros(g.shape[:-1] + (size,), g.dtype)
    for index, weight in taps:
        np.add.at(total, (Ellipsis, index), weight * g)
    return np.moveaxis(total, -1, axis)


@kernel(family=True)
def upsample2d(op, self, output_size, *params):
    """upsample_nearest2d and upsample_bilinear2d (their parameters: upsample_params)."""
    mode, align_corners, scales_h, scales_w = upsample_params(op, params)
    shape_rule("resample.upsample2d")(op, (self, output_size))
    acc = accumulate_dtype(self._impl.dtype)
    sizes = self._impl.sizes
    check_result(op, "output_size", (*sizes[:-2], *output_size), self._impl.dtype)
    for out_len, in_len in zip(output_size, sizes[-2:]):   # the interpolation matrices
        check_result(op, "output_size", (out_len, in_len), np.dtype(acc))
    x = self._impl.array().astype(acc, copy=False)
    taps_h, taps_w = _taps(mode, x.shape[-2:], output_size, align_corners, scales_h,
                           scales_w, acc)
    with np.errstate(invalid="ignore"):
        # the H mix of W mixes: a sum over i of l_h[i] * (W mix of the rows at i_h[i])
        y = None
        for index, weight in taps_h:
            term = weight[:, None] * _mix(np.take(x, index, axis=-2), taps_w)
            y = term if y is None else y + term
    return out(y, self._impl.dtype)


@kernel(family=True)
def upsample2d_backward(op, grad_output, output_size, input_size, *params):
    """The backwards of upsample_nearest2d and upsample_bilinear2d."""
    mode, align_corners, scales_h, scales_w = upsample_params(op, params)
    shape_rule("resample.upsample2d_backward")(op, (grad_output, output_size, input_size))
    acc = accumulate_dtype(grad_output._impl.dtype)
    g = grad_output._impl.array().astype(acc, copy=False)
    taps_h, taps_w = _taps(mode, input_size[-2:], output_size, align_corners, scales_h,
                           scales_w, acc)
    with np.errstate(invalid="ignore"):
        rows = _spread(g, taps_w, -1, input_size[-1])
        grad = _spread(rows, taps_h, -2, input_size[-2])
    return out(grad, grad_output._impl.dtype)


# ---- grid sampling ----------------------------------------------------------------------
# grid_sampler_2d / grid_sampler_3d: out[n, c, *o] reads input[n, c] at the point grid[n, *o],
# whose last dim holds (x, y[, z]) in [-1, 1]: x along W (the last spatial dim), y along H,
# z along D. Each coordinate is handled alone, as PyTorch's GridSampler.h does:
#
#   unnormalize   align_corners: (c + 1) / 2 * (size - 1)   (-1, +1 = the corner pixels'
#                                                            centres)
#                 otherwise:     ((c + 1) * size - 1) / 2   (-1, +1 = the image's edges)
#   padding       zeros: as it is (taps outside the image read 0); border: clipped to
#                 [0, size - 1]; reflection: reflected at the border, then clipped
#   taps          nearest: 1 tap, rint (half to even); bilinear: 2 taps, floor and floor + 1,
#                 weights 1 - frac and frac; bicubic (2-d only): 4 taps floor - 1 ... floor
#                 + 2, Keys' cubic weights (A = -0.75); here the padding applies to each tap's
#                 index, not to the coordinate
#
# A point's value is the sum over the product of its axes' taps of (the product of the
# weights) * (the input there). The coordinate's derivative is each axis's weight
# derivative in that product, times the derivative of unnormalize and padding (0 where
# border/reflection clipped; for bicubic only unnormalize's).
CUBIC_A = -0.75


def _unnormalize(coord, size, align_corners):
    """(pixel coordinate, its derivative by the grid coordinate)."""
    if align_corners:
        return (coord + 1) / 2 * (size - 1), (size - 1) / 2
    return ((coord + 1) * size - 1) / 2, size / 2


def _clip(c, size):
    """Clipped to [0, size - 1]; the derivative is 0 on and beyond the borders (PyTorch's
    clip_coordinates_set_grad: the borders count as outside)."""
    return np.clip(c, 0, size - 1), ((c > 0) & (c < size - 1)).astype(c.dtype)


def _reflect(c, twice_low, twice_high):
    """Reflected into [low, high] (given doubled, so half-integers are exact); the
    derivative is +1 or -1 by the number of reflections."""
    if twice_low == twice_high:
        return np.zeros_like(c), np.zeros_like(c)
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    c = c - low
    sign = np.where(c < 0, -1, 1).astype(c.dtype)
    c = np.abs(c)
    extra = np.fmod(c, span)
    even = np.floor(c / span) % 2 == 0
    return np.where(even, extra + low, span - extra + low), np.where(even, sign, -sign)


def _pad(c, size, padding_mode, align_corners):
    """(coordinate after padding, its derivative)."""
    if padding_mode == 0:
        return c, 1
    grad = 1
    if padding_mode == 2:
        twice = (0, 2 * (size - 1)) if align_corners else (-1, 2 * size - 1)
        c, grad = _reflect(c, *twice)
    c, clip_grad = _clip(c, size)
    return c, grad * clip_grad


def _cubic_weights(t):
    """Keys' 4 weights at offsets -1, 0, 1, 2 of a point t in [0, 1) past its floor, and
    their derivatives by t (PyTorch's get_cubic_upsample_coefficients and ..._grad)."""
    A = CUBIC_A

    def near(x):    # |x| <= 1
        return ((A + 2) * x - (A + 3)) * x * x + 1

    def far(x):     # 1 < |x| < 2
        return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A

    def d_near(x):
        return (3 * (A + 2) * x - 2 * (A + 3)) * x

    def d_far(x):
        return (3 * A * x - 10 * A) * x + 8 * A

    weights = (far(t + 1), near(t), near(1 - t), far(2 - t))
    slopes = (d_far(t + 1), d_near(t), -d_near(1 - t), -d_far(2 - t))
    return weights, slopes


def _axis_taps(coord, size, interpolation_mode, padding_mode, align_corners):
    """[(index, weight, d weight / d grid coordinate), ...] of one spatial axis."""
    src, scale = _unnormalize(coord, size, align_corners)
    if interpolation_mode == 2:
        base = np.floor(src)
        weights, slopes = _cubic_weights(src - base)
        taps = []
        for k, (w, dw) in enumerate(zip(weights, slopes)):
            at, _ = _pad(base + (k - 1), size, padding_mode, align_corners)
            taps.append((at.astype(np.int64), w, dw * scale))
        return taps
    src, pad_grad = _pad(src, size, padding_mode, align_corners)
    scale = scale * pad_grad
    if interpolation_mode == 1:
        one = np.ones_like(src)
        return [(np.rint(src).astype(np.int64), one, 0 * one)]
    base = np.floor(src)
    frac = src - base
    base = base.astype(np.int64)
    return [(base, 1 - frac, -scale * np.ones_like(src)),
            (base + 1, frac, scale * np.ones_like(src))]


def _grid_taps(spatial, grid, interpolation_mode, padding_mode, align_corners):
    """Each tap of the points grid (N, P, d) reads: (flat index into the spatial dims
    (N, P), in bounds (N, P), weight (N, P), [d weight / d grid[..., k] for each k])."""
    d = len(spatial)
    axes = [_axis_taps(grid[..., d - 1 - a], spatial[a], interpolation_mode, padding_mode,
                       align_corners) for a in range(d)]
    strides = [int(np.prod(spatial[a + 1:])) for a in range(d)]
    for combo in itertools.product(*axes):
        flat = np.zeros(grid.shape[:-1], np.int64)
        inside = np.ones(grid.shape[:-1], bool)
        for a, (index, _, _) in enumerate(combo):
            inside &= (index >= 0) & (index < spatial[a])
            flat += index * strides[a]
        flat = np.where(inside, flat, 0)
        weight = combo[0][1]
        for _, w, _ in combo[1:]:
            weight = weight * w
        slopes = [None] * d     # by grid component k = d - 1 - a
        for a in range(d):
            slope = combo[a][2]
            for b in range(d):
                if b != a:
                    slope = slope * combo[b][1]
            slopes[d - 1 - a] = slope
        yield flat, inside, weight, slopes


def _flat_planes(x, grid):
    """x (N, C, *S) as (N, C, prod(S)) and grid (N, *O, d) as (N, prod(O), d); the sizes
    spelled out, not -1, which NumPy cannot infer when N or C is 0."""
    n, c = x.shape[:2]
    return (x.reshape(n, c, int(np.prod(x.shape[2:]))),
            grid.reshape(n, int(np.prod(grid.shape[1:-1])), grid.shape[-1]))


def grid_sample_arrays(x, grid, interpolation_mode, padding_mode, align_corners):
    """The forward on NumPy arrays x (N, C, *S) and grid (N, *O, d), in x's dtype."""
    n, c, *spatial = x.shape
    xf, g = _flat_planes(x, grid)
    y = np.zeros((n, c, g.shape[1]), x.dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        for flat, inside, weight, _ in _grid_taps(spatial, g, interpolation_mode,
                                                  padding_mode, align_corners):
            values = np.take_along_axis(xf, flat[:, None, :], axis=2)
            # the value read is 0 off the input, and then weighted: a NaN grid point
            # (NaN weights) gives NaN even there, as PyTorch's masked gather does
            y += weight[:, None, :] * np.where(inside[:, None, :], values, 0)
    return y.reshape((n, c) + grid.shape[1:-1])


def grid_sample_backward_arrays(grad_output, x, grid, interpolation_mode, padding_mode,
                                align_corners, input_grad):
    """(grad_input or None, grad_grid): each output's gradient spread, weighted, over the
    taps it read; and the taps' weight slopes against the values they read."""
    n, c, *spatial = x.shape
    xf, g = _flat_planes(x, grid)
    go = grad_output.reshape(n, c, g.shape[1])
    grad_input = np.zeros_like(xf) if input_grad else None
    grad_grid = np.zeros_like(g)
    rows, chans = np.arange(n)[:, None, None], np.arange(c)[None, :, None]
    with np.errstate(invalid="ignore", over="ignore"):
        for flat, inside, weight, slopes in _grid_taps(spatial, g, interpolation_mode,
                                                       padding_mode, align_corners):
            mask = inside[:, None, :]
            if grad_input is not None:
                np.add.at(grad_input, (rows, chans, flat[:, None, :]),
                          np.where(mask, weight[:, None, :] * go, 0))
            if interpolation_mode == 1:
                continue    # nearest: the grid has a zero gradient
            values = np.take_along_axis(xf, flat[:, None, :], axis=2)
            dot = np.where(mask, values * go, 0).sum(axis=1)
            for k, slope in enumerate(slopes):
                grad_grid[..., k] += slope * dot
    return (None if grad_input is None else grad_input.reshape(x.shape),
            grad_grid.reshape(grid.shape))


def _float_array(t):
    return t._impl.array().astype(accumulate_dtype(t._impl.dtype), copy=False)


@kernel(family=True)
def grid_sampler(op, input, grid, interpolation_mode, padding_mode, align_corners):
    """grid_sampler_2d and grid_sampler_3d: input (N, C, *S) read at grid (N, *O, d)."""
    spec = shape_rule("resample.grid_sampler")(op, (input, grid, interpolation_mode,
                                                    padding_mode, align_corners))
    check_result(op, "grid", spec.sizes, spec.dtype)
    y = grid_sample_arrays(_float_array(input), _float_array(grid), interpolation_mode,
                           padding_mode, align_corners)
    return out(y, input._impl.dtype)


@kernel(family=True)
def grid_sampler_backward(op, grad_output, input, grid, interpolation_mode, padding_mode,
                          align_corners, output_mask):
    """(grad_input, grad_grid) of grid_sampler_2d / _3d."""
    shape_rule("resample.grid_sampler_backward")(
        op, (grad_output, input, grid, interpolation_mode, padding_mode, align_corners,
             output_mask))
    grad_input, grad_grid = grid_sample_backward_arrays(
        _float_array(grad_output), _float_array(input), _float_array(grid),
        interpolation_mode, padding_mode, align_corners, output_mask[0])
    dtype = input._impl.dtype
    return (None if grad_input is None else out(grad_input, dtype), out(grad_grid, dtype))
