"""Max, average, adaptive and fractional pooling over the last two or three dims, and
their backwards.

Inputs are (C, *spatial) or (N, C, *spatial) with 2 spatial dims (H, W) or 3 (D, H, W);
the kernels view both as (B, *spatial) with B = N * C, and are written once for either
number of dims (`nd`). Windows come from `windows` (a strided view, no copy), so each
forward is one reduction over the window axes; the backward of an average adds the
windows back (`add_windows`). Indices are flat positions in each (H, W) plane (each
(D, H, W) volume), as in PyTorch. Channels_last 2-D inputs have their own NHWC kernels
(the section at the end).

The max pools are PyTorch's CPU loops, compiled (cpu_kernels/_loops.py): the forward of
float32, float64 and integer inputs reads each window inside the plane and keeps the
first of equal maxima, the last NaN (`_max_pool_loop`; 2x2 windows at stride 2 by
`_max_pool_2x2_loop`, which compares by `>` alone and says when it read a NaN, for the
general loop to take over), and every max pool's backward
adds each gradient at its saved index in the gradient's dtype (`_scatter_add_loop`),
both with PyTorch's order, hence its bits. NumPy does the rest: the half types' forward,
the NHWC forward (whose elementwise steps over channel runs beat the loop there) and
fractional pooling's gathered windows, all by `_window_max`, a loop over the kernel
offsets, each step over all windows at once, to the same rule; the half types' backward
by `np.bincount`.
"""
from __future__ import annotations

import math
from functools import lru_cache, reduce

import numpy as np

from tensorplay import _dtype as dt
from tensorplay.errors import DimError
from tensorplay.kernel_support.arguments import pool_params, spatial_dims
from tensorplay.kernel_support.ops import shape_rule
from tensorplay.library import Library, kernel
from cpu_kernels._common import accumulate_dtype, out, out_channels_last
from cpu_kernels._loops import loop
from cpu_kernels._windows import add_windows, windows

# NCHW kernels: a channels_last call reaches them through the layout-conversion
# fallback of kernel selection, which lays their 4-D results out channels_last again.
NCHW = "contiguous_format"


def _planes(t, nd=2):
    """The (B, *spatial) array of a (C, *spatial) or (N, C, *spatial) tensor."""
    a = t._impl.array()
    return a.reshape((-1,) + a.shape[-nd:]) if a.size else a.reshape((0,) + a.shape[-nd:])


def _pad_for(sizes, out_sizes, kernel, stride, padding, dilation):
    """((before, after) per spatial dim): `padding` on both sides, and on the right as much
    more as ceil_mode's last partial window needs."""
    pads = []
    for n, o, k, s, p, d in zip(sizes, out_sizes, kernel, stride, padding, dilation):
        need = (o - 1) * s + d * (k - 1) + 1
        pads.append((p, max(p, need - n - p)))
    return pads


def _lowest(dtype):
    """The padding value of a max, and its loop's start: below every value of `dtype` (a
    TensorPlay dtype)."""
    return -np.inf if dtype.is_floating_point else np.iinfo(dtype.np).min


def _plane_strides(sizes):
    """How far apart neighbours along each spatial dim are in a flat plane (volume):
    (W, 1) for (H, W), (H * W, W, 1) for (D, H, W)."""
    return tuple(int(np.prod(sizes[i + 1:], dtype=np.int64)) for i in range(len(sizes)))


def _window_max(win, floating, offsets):
    """(max, offsets[k] of the max's kernel offset k) of each window of `win` (B, *out,
    *kernel): the first of equal maxima, but the last NaN, as PyTorch's CPU kernel decides
    (it takes a value when `value > max or isnan(value)`); a max of -inf may be found in
    the padding (`_max_positions` moves its index). A loop over the kernel offsets
    (`offsets` lists them in row-major order), each step elementwise over all windows at
    once (np.where and copyto with a mask are several times slower than the arithmetic
    below):

        values, arg = win[..., first offset], offsets[0]
        for k in the other offsets:
            taken = win[..., k] > values or isnan(win[..., k])
            arg += taken * (offsets[k] - arg);  values = maximum(values, win[..., k])
    """
    nd = (win.ndim - 1) // 2
    kernel = win.shape[-nd:]
    values = np.array(win[(Ellipsis,) + (0,) * nd])
    arg = np.full(values.shape, offsets[0], np.int64)
    if values.size == 0:
        return values, arg
    # Of two equal values (-0.0, 0.0) np.maximum returns its second argument, but for
    # float16 its first: the current max goes there, to stay on a tie.
    current_first = values.dtype == np.float16
    with np.errstate(invalid="ignore"):
        for k in range(1, len(offsets)):
            candidate = win[(Ellipsis,) + np.unravel_index(k, kernel)]
            taken = candidate > values
            if floating:
                taken |= np.isnan(candidate)
            step = offsets[k] - arg
            step *= taken
            arg += step
            # (NaN propagates, as taken says)
            if current_first:
                np.maximum(values, candidate, out=values)
            else:
                np.maximum(candidate, values, out=values)
    return values, arg


def _kernel_offsets(kernel, dilation, strides):
    """The flat plane offset of each kernel offset (row-major): sum of u_i * d_i * stride_i."""
    grids = np.meshgrid(*[np.arange(k) * d * st for k, d, st in zip(kernel, dilation, strides)],
                        indexing="ij")
    return [int(v) for v in sum(grids).ravel()]


def _max_positions(values, arg, sizes, out_sizes, kernel, stride, padding, dilation,
                   lowest):
    """The flat plane position of each window's max, from _window_max's `values` and `arg`
    (the output's spatial dims last): the window's first element's position (it may lie in
    the padding) + the kernel offset's plane offset `arg`. Where the max is `lowest`
    (-inf) it may have been read in the padding, the first of equal maxima: the position
    is then the window's first inside the plane, where PyTorch's loop, which reads no
    padding, leaves it."""
    nd = len(sizes)
    corners = firsts = np.zeros((1,) * nd, np.int64)
    for i, (n, o, k, s, p, d, st) in enumerate(zip(sizes, out_sizes, kernel, stride, padding,
                                                   dilation, _plane_strides(sizes))):
        shape = (1,) * i + (o,) + (1,) * (nd - i - 1)
        corners = corners + ((np.arange(o) * s - p) * st).reshape(shape)
        firsts = firsts + (_spans(n, o, k, s, p, d)[0] * st).reshape(shape)
    positions = arg + corners
    if any(padding):     # (only a window that starts in the padding reads it first)
        positions = np.where(values == lowest, firsts, positions)
    return positions


def _max_pool(op, self, kernel_size, stride, padding, dilation, ceil_mode):
    """out[b, *o] = max over kernel offsets u of x[b, *(o * s - p + u * d)], and its flat
    position (row * W + column, or (depth * H + row) * W + column) in the plane."""
    nd = spatial_dims(op)
    spec, _ = shape_rule(f"pooling.{op}")(
        op, (self, kernel_size, stride, padding, dilation, ceil_mode))
    kernel, stride, padding, dilation = pool_params(op, kernel_size, stride, padding,
                                                    dilation, nd)
    x = _planes(self, nd)
    out_sizes = tuple(spec.sizes[-nd:])
    pool = _max_pool_by_loop if _looped(x.dtype) else _max_pool_by_windows
    values, indices = pool(x, out_sizes, kernel, stride, padding, dilation,
                           _lowest(self._impl.dtype))
    return (out(values.reshape(spec.sizes), self._impl.dtype),
            out(indices.reshape(spec.sizes), dt.int64))


def _looped(np_dtype):
    """Whether the compiled loops run pooling of `np_dtype`: float32, float64 and the
    integers. The half types (float16, bfloat16) run NumPy (Numba has no bfloat16)."""
    return np_dtype.kind in "iu" or np_dtype in (np.float32, np.float64)


def _max_pool_by_loop(x, out_sizes, kernel, stride, padding, dilation, lowest):
    """(values, indices) of max pooling of `x` (B, *spatial) by _max_pool_loop, or by
    _max_pool_2x2_loop for the CNN's usual 2x2 windows at stride 2 (unless it read a NaN)."""
    # (ceil_mode's partial last window, on odd sizes, is left to the general loop)
    if (tuple(kernel) == (2, 2) and tuple(stride) == (2, 2) and not any(padding)
            and tuple(dilation) == (1, 1) and out_sizes == (x.shape[1] // 2, x.shape[2] // 2)):
        values = np.empty((x.shape[0],) + out_sizes, x.dtype)
        indices = np.empty(values.shape, np.int64)
        if not _max_pool_2x2_loop(np.ascontiguousarray(x), values, indices):
            return values, indices
    depth = (1,) * (3 - len(out_sizes))      # a plane is a volume of depth 1
    volumes = np.ascontiguousarray(x).reshape((x.shape[0],) + depth + x.shape[1:])
    values = np.empty((x.shape[0],) + depth + out_sizes, x.dtype)
    indices = np.empty(values.shape, np.int64)
    _max_pool_loop(volumes, values, indices,
                   *_volume_spans(x.shape[1:], out_sizes, tuple(kernel), tuple(stride),
                                  tuple(padding), tuple(dilation)),
                   x.dtype.type(lowest))
    return values, indices


@lru_cache(maxsize=64)
def _volume_spans(sizes, out_sizes, kernel, stride, padding, dilation):
    """The _spans of a volume's depth, height and width, one after the other (a plane's
    depth: one window of one position). Kept per geometry: a training loop asks for the
    same few."""
    spans = [_spans(1, 1, 1, 1, 0, 1)] * (3 - len(sizes)) + [
        _spans(*dim) for dim in zip(sizes, out_sizes, kernel, stride, padding, dilation)]
    return tuple(a for span in spans for a in span)


@lru_cache(maxsize=64)
def _spans(size, out_size, kernel, stride, padding, dilation):
    """(first, end, step) of the windows along one dim, as PyTorch's loop reads them: the
    first position of each window inside 0..size-1 (PyTorch's ih0, moved out of the
    padding), the end (exclusive) of its range, and the dilation it steps by (read-only,
    kept per geometry)."""
    start = np.arange(out_size, dtype=np.int64) * stride - padding
    end = np.minimum(start + (kernel - 1) * dilation + 1, size)
    skipped = np.maximum(-start + dilation - 1, 0) // dilation   # offsets in the padding
    first = start + skipped * dilation
    first.flags.writeable = end.flags.writeable = False
    return first, end, np.int64(dilation)


@loop
def _max_pool_loop(x, values, indices, first_d, end_d, step_d, first_h, end_h, step_h,
                   first_w, end_w, step_w, lowest):
    """PyTorch's loop (ATen's cpu_max_pool): values[b, i, j, k] is the max of window
    (i, j, k) of volume x[b] (B, D, H, W) and indices[b, i, j, k] its flat position
    (d * H + h) * W + w. A window is read in row-major order and only inside the volume
    (the padding is never taken), and a value is taken when it is above the max so far or
    NaN: the first of equal maxima wins, but the last NaN. A window whose values are all
    `lowest` (-inf) gives its first position inside the volume.

    (The window loops are `while` loops: a `range` with a step that is not a constant
    divides to count its steps, and three divisions a window made the loop 1.6x slower.)"""
    height, width = x.shape[2], x.shape[3]
    for b in range(x.shape[0]):
        for i in range(values.shape[1]):
            d_first, d_end = first_d[i], end_d[i]
            for j in range(values.shape[2]):
                h_first, h_end = first_h[j], end_h[j]
                for k in range(values.shape[3]):
                    w_first, w_end = first_w[k], end_w[k]
                    best = lowest
                    best_at = (d_first * height + h_first) * width + w_first
                    d = d_first
                    while d < d_end:
                        h = h_first
                        while h < h_end:
                            w = w_first
                            while w < w_end:
                                value = x[b, d, h, w]
                                if value > best or value != value:
                                    best = value
                                    best_at = (d * height + h) * width + w
                                w += step_w
                            h += step_h
                        d += step_d
                    values[b, i, j, k] = best
                    indices[b, i, j, k] = best_at


@loop
def _max_pool_2x2_loop(x, values, indices):
    """_max_pool_loop's result for 2x2 windows at stride 2 without padding, if no NaN is
    read: it returns whether one was, and the caller then runs _max_pool_loop. Its rule
    (`value > best or value != value`) costs a second, unpredictable branch per value;
    without it, and with the window's four reads written out, the loop is about 4x faster
    (165 -> 34 us on 1024 8x8 planes)."""
    width = x.shape[2]
    nan = False
    for b in range(x.shape[0]):
        for i in range(values.shape[1]):
            top = 2 * i
            for j in range(values.shape[2]):
                left = 2 * j
                best = x[b, top, left]
                best_at = top * width + left
                nan |= best != best
                for h, w in ((top, left + 1), (top + 1, left), (top + 1, left + 1)):
                    value = x[b, h, w]
                    nan |= value != value
                    if value > best:    # row-major order: the first of equal maxima stays
                        best = value
                        best_at = h * width + w
                values[b, i, j] = best
                indices[b, i, j] = best_at
    return nan


def _max_pool_by_windows(x, out_sizes, kernel, stride, padding, dilation, lowest):
    """(values, indices) of max pooling of `x` (B, *spatial) by NumPy: `_window_max` over
    the windows of the padded planes."""
    sizes = x.shape[1:]
    pads = _pad_for(sizes, out_sizes, kernel, stride, padding, dilation)
    xp = x
    if any(p for pair in pads for p in pair):
        xp = np.pad(x, [(0, 0)] + pads, constant_values=lowest)
    win = windows(xp, kernel, stride, dilation)[(slice(None),)
                                                + tuple(slice(o) for o in out_sizes)]
    values, arg = _window_max(win, x.dtype.kind not in "iu",
                              _kernel_offsets(kernel, dilation, _plane_strides(sizes)))
    return values, _max_positions(values, arg, sizes, out_sizes, kernel, stride, padding,
                                  dilation, lowest)


@kernel(layout=NCHW)
def max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode):
    return _max_pool("max_pool2d_with_indices", self, kernel_size, stride, padding, dilation,
                     ceil_mode)


def max_pool3d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode):
    return _max_pool("max_pool3d_with_indices", self, kernel_size, stride, padding, dilation,
                     ceil_mode)


def _check_indices(op, idx, sizes):
    """Saved indices must be positions in the input plane (volume): np.bincount would add
    a bad one into a neighbouring plane (or fail on the result's size) without a word."""
    if not idx.size:
        return
    size = math.prod(sizes)
    # (int64 read as uint64: a negative index is above any plane size, one reduction)
    if (idx.view(np.uint64).max() >= size) if idx.dtype == np.int64 else \
            (idx.min() < 0 or idx.max() >= size):
        raise _outside_plane(op, sizes)


def _outside_plane(op, sizes):
    return DimError(f"{op}(): argument 'indices' holds a position outside the "
                    f"{' x '.join(map(str, sizes))} input plane", op=op, arg="indices")


def _scatter_to_planes(op, grad_output, indices, sizes, nd=2, channels_last=False):
    """The gradient of a max pool's input (`sizes`): zeros, with each element of
    grad_output added at the flat position in its plane that `indices` saved; laid out
    NCHW, or NHWC when channels_last. float32 and float64 by _scatter_add_loop, adding in
    the dtype in PyTorch's order; the half types by np.bincount, whose float64 sums are
    rounded once."""
    n, c = sizes[:-nd] if len(sizes) == nd + 2 else (1,) + tuple(sizes[:-nd])
    plane_sizes = sizes[-nd:]
    plane = math.prod(plane_sizes)     # (Python ints: np.prod costs 3 us a call)
    g = grad_output._impl.array()
    per_plane = g.size // max(n * c, 1)
    # (N, C, positions) views of any layout: the loop reads them as they lie
    g = g.reshape(n, c, per_plane)
    idx = indices._impl.array().reshape(n, c, per_plane)
    memory = np.zeros((n, plane, c) if channels_last else (n, c, plane), g.dtype)
    grad_input = memory.transpose(0, 2, 1) if channels_last else memory    # (N, C, plane)
    if _looped(g.dtype):
        if _scatter_add_loop(g, idx.astype(np.int64, copy=False), grad_input):
            raise _outside_plane(op, plane_sizes)
    else:
        _check_indices(op, idx, plane_sizes)
        # each (n, c, position)'s place in `memory`, from grad_input's strides
        step_n, step_c, step = (st // memory.itemsize for st in grad_input.strides)
        flat = idx * step + (np.arange(n) * step_n)[:, None, None] + \
            (np.arange(c) * step_c)[:, None]
        memory = np.bincount(flat.ravel(), weights=g.astype(np.float64).ravel(),
                             minlength=memory.size).reshape(memory.shape)
    if channels_last:
        return out_channels_last(memory.reshape((n,) + tuple(plane_sizes) + (c,)),
                                 grad_output._impl.dtype)
    return out(memory.reshape(sizes), grad_output._impl.dtype)


@loop
def _scatter_add_loop(grad_output, indices, grad_input):
    """PyTorch's loop (ATen's cpu_max_pool_backward): grad_input[n, c, indices[n, c, k]]
    += grad_output[n, c, k] for each plane (n, c) and output k in that order, adding in
    the gradient's dtype where windows overlap. Returns whether an index lies outside its
    plane (the loop stops there; the caller raises)."""
    plane = grad_input.shape[2]
    for n in range(grad_output.shape[0]):
        for c in range(grad_output.shape[1]):
            for k in range(grad_output.shape[2]):
                at = indices[n, c, k]
                if at < 0 or at >= plane:
                    return True
                grad_input[n, c, at] += grad_output[n, c, k]
    return False


def _max_pool_backward(op, grad_output, self, kernel_size, stride, padding, dilation,
                       ceil_mode, indices):
    _checked_geometry(op, (grad_output, self, kernel_size, stride, padding, dilation,
                           ceil_mode, indices))
    return _scatter_to_planes(op, grad_output, indices, self._impl.sizes, spatial_dims(op))


# Geometries whose shape rule passed. A training loop runs the same max-pool backward
# every step: its shape rule (~9 us inside a backward pass) runs once per geometry. A bad
# argument raises before its key is stored, so it is checked (and raises) on every call;
# the index values, which change every step, are checked every call.
_CHECKED_GEOMETRIES = set()


def _checked_geometry(op, args):
    """Run the shape rule of max-pool backward `op` on `args` (its arguments, in schema
    order) once per geometry."""
    grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, _ = args
    key = (op, self._impl.sizes, self._impl.dtype, grad_output._impl.sizes,
           grad_output._impl.dtype, tuple(kernel_size), tuple(stride), tuple(padding),
           tuple(dilation), ceil_mode)
    if key not in _CHECKED_GEOMETRIES:
        shape_rule(f"pooling.{op}")(op, args)
        if len(_CHECKED_GEOMETRIES) >= 64:      # a bound, for a sweep over many shapes
            _CHECKED_GEOMETRIES.clear()
        _CHECKED_GEOMETRIES.add(key)


@kernel(layout=NCHW)
def max_pool2d_with_indices_backward(grad_output, self, kernel_size, stride, padding,
                                     dilation, ceil_mode, indices):
    return _max_pool_backward("max_pool2d_with_indices_backward", grad_output, self,
                              kernel_size, stride, padding, dilation, ceil_mode, indices)


def max_pool3d_with_indices_backward(grad_output, self, kernel_size, stride, padding,
                                     dilation, ceil_mode, indices):
    return _max_pool_backward("max_pool3d_with_indices_backward", grad_output, self,
                              kernel_size, stride, padding, dilation, ceil_mode, indices)


def _avg_divisor(sizes, out_sizes, kernel, stride, padding, count_include_pad,
                 divisor_override):
    """(*out) divisors: the window's size inside the padded input (count_include_pad) or
    inside the input itself, unless divisor_override fixes it."""
    if divisor_override is not None:
        return np.full(out_sizes, float(divisor_override))
    lengths = []
    for n, o, k, s, p in zip(sizes, out_sizes, kernel, stride, padding):
        start = np.arange(o) * s - p
        end = np.minimum(start + k, n + p)
        if not count_include_pad:
            start, end = np.maximum(start, 0), np.minimum(end, n)
        lengths.append(end - start)
    return reduce(np.multiply.outer, lengths)


def _avg_pool(op, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override):
    """out[b, *o] = sum of the window at o / its divisor (see _avg_divisor)."""
    nd = spatial_dims(op)
    spec = shape_rule(f"pooling.{op}")(
        op, (self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override))
    kernel, stride, padding, _ = pool_params(op, kernel_size, stride, padding, (1,) * nd, nd)
    acc = accumulate_dtype(self._impl.dtype)
    x = _planes(self, nd).astype(acc, copy=False)
    sizes, out_sizes = x.shape[1:], tuple(spec.sizes[-nd:])
    xp = np.pad(x, [(0, 0)] + _pad_for(sizes, out_sizes, kernel, stride, padding, (1,) * nd))
    win = windows(xp, kernel, stride, (1,) * nd)[(slice(None),)
                                                 + tuple(slice(o) for o in out_sizes)]
    sums = win.sum(tuple(range(-nd, 0)))
    divisor = _avg_divisor(sizes, out_sizes, kernel, stride, padding, count_include_pad,
                           divisor_override)
    return out((sums / divisor).reshape(spec.sizes), self._impl.dtype)


@kernel(layout=NCHW)
def avg_pool2d(self, kernel_size, stride, padding, ceil_mode, count_include_pad,
               divisor_override):
    return _avg_pool("avg_pool2d", self, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def avg_pool3d(self, kernel_size, stride, padding, ceil_mode, count_include_pad,
               divisor_override):
    return _avg_pool("avg_pool3d", self, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def _avg_pool_backward(op, grad_output, self, kernel_size, stride, padding, ceil_mode,
                       count_include_pad, divisor_override):
    """Each output's gradient / divisor, added to every input position of its window."""
    nd = spatial_dims(op)
    shape_rule(f"pooling.{op}")(op, (grad_output, self, kernel_size, stride, padding,
                                     ceil_mode, count_include_pad, divisor_override))
    kernel, stride, padding, _ = pool_params(op, kernel_size, stride, padding, (1,) * nd, nd)
    acc = accumulate_dtype(grad_output._impl.dtype)
    sizes = tuple(self._impl.sizes[-nd:])
    g = _planes(grad_output, nd).astype(acc, copy=False)
    out_sizes = g.shape[1:]
    divisor = _avg_divisor(sizes, out_sizes, kernel, stride, padding, count_include_pad,
                           divisor_override)
    cols = np.broadcast_to((g / divisor)[(Ellipsis,) + (None,) * nd], g.shape + tuple(kernel))
    pads = _pad_for(sizes, out_sizes, kernel, stride, padding, (1,) * nd)
    full = [n + before + after for n, (before, after) in zip(sizes, pads)]
    image = add_windows(cols, full, stride, (1,) * nd)
    image = image[(slice(None),) + tuple(slice(before, before + n)
                                         for n, (before, _) in zip(sizes, pads))]
    return out(image.reshape(self._impl.sizes), grad_output._impl.dtype)


@kernel(layout=NCHW)
def avg_pool2d_backward(grad_output, self, kernel_size, stride, padding, ceil_mode,
                        count_include_pad, divisor_override):
    return _avg_pool_backward("avg_pool2d_backward", grad_output, self, kernel_size, stride,
                              padding, ceil_mode, count_include_pad, divisor_override)


def avg_pool3d_backward(grad_output, self, kernel_size, stride, padding, ceil_mode,
                        count_include_pad, divisor_override):
    return _avg_pool_backward("avg_pool3d_backward", grad_output, self, kernel_size, stride,
                              padding, ceil_mode, count_include_pad, divisor_override)


def adaptive_ranges(size, out_size):
    """(start, end) of each adaptive window: [floor(i * n / o), ceil((i + 1) * n / o))."""
    i = np.arange(out_size)
    return (i * size) // out_size, -((-(i + 1) * size) // out_size)


def _window_means(x, out_size, axis):
    """The mean of each adaptive window of x along `axis` (-2 or -1).

    NOTE: each window is summed on its own (not by multiplying with an averaging matrix),
    so a NaN or inf reaches only the windows that hold it, as in PyTorch."""
    start, end = adaptive_ranges(x.shape[axis], out_size)
    means = [np.take(x, np.arange(s, e), axis=axis).sum(axis=axis) / (e - s)
             for s, e in zip(start, end)]
    return np.stack(means, axis=axis) if means else \
        np.zeros(x.shape[:axis % x.ndim] + (0,) + x.shape[axis % x.ndim + 1:], x.dtype)


def _window_spread(g, size, axis):
    """The transpose of _window_means: each window's gradient / its size, added back over
    the positions of the window."""
    axis = axis % g.ndim
    start, end = adaptive_ranges(size, g.shape[axis])
    total = np.zeros(g.shape[:axis] + (size,) + g.shape[axis + 1:], g.dtype)
    for i, (s, e) in enumerate(zip(start, end)):
        if e == s:      # an empty window (a mean to 1 of an empty dim): nothing to spread
            continue
        window = [slice(None)] * g.ndim
        window[axis] = slice(s, e)
        total[tuple(window)] += np.expand_dims(np.take(g, i, axis=axis), axis) / (e - s)
    return total


def _adaptive_avg(op, self, output_size):
    """The mean of each adaptive window: means along each spatial dim in turn (an adaptive
    window is a product of one range per dim, so the means separate)."""
    nd = spatial_dims(op)
    spec = shape_rule(f"pooling.{op}")(op, (self, output_size))
    acc = accumulate_dtype(self._impl.dtype)
    y = self._impl.array().astype(acc, copy=False)
    with np.errstate(invalid="ignore"):
        for axis in range(-nd, 0):
            y = _window_means(y, spec.sizes[axis], axis)
    return out(y, self._impl.dtype)


@kernel(layout=NCHW)
def adaptive_avg_pool2d(self, output_size):
    return _adaptive_avg("adaptive_avg_pool2d", self, output_size)


def adaptive_avg_pool3d(self, output_size):
    return _adaptive_avg("adaptive_avg_pool3d", self, output_size)


def _adaptive_avg_backward(op, grad_output, self):
    """The transposed map: each window's gradient spread evenly over its positions."""
    nd = spatial_dims(op)
    shape_rule(f"pooling.{op}")(op, (grad_output, self))
    acc = accumulate_dtype(grad_output._impl.dtype)
    grad = grad_output._impl.array().astype(acc, copy=False)
    with np.errstate(invalid="ignore"):
        for axis in range(-1, -nd - 1, -1):
            grad = _window_spread(grad, self._impl.sizes[axis], axis)
    return out(grad, grad_output._impl.dtype)


@kernel(layout=NCHW)
def adaptive_avg_pool2d_backward(grad_output, self):
    return _adaptive_avg_backward("adaptive_avg_pool2d_backward", grad_output, self)


def adaptive_avg_pool3d_backward(grad_output, self):
    return _adaptive_avg_backward("adaptive_avg_pool3d_backward", grad_output, self)


def _adaptive_max(op, self, output_size):
    """The max of each adaptive window and its flat index. Windows differ in size, so this
    loops over output cells (output_size is small: 1x1, 7x7), each one vectorised over the
    planes."""
    nd = spatial_dims(op)
    spec, _ = shape_rule(f"pooling.{op}")(op, (self, output_size))
    x = _planes(self, nd)
    b, sizes, out_sizes = x.shape[0], x.shape[1:], tuple(spec.sizes[-nd:])
    values = np.empty((b,) + out_sizes, x.dtype)
    indices = np.empty((b,) + out_sizes, np.int64)
    ranges = [adaptive_ranges(n, o) for n, o in zip(sizes, out_sizes)]
    strides = _plane_strides(sizes)
    for cell in np.ndindex(*out_sizes):
        bounds = [(starts[i], ends[i]) for i, (starts, ends) in zip(cell, ranges)]
        block = x[(slice(None),) + tuple(slice(s, e) for s, e in bounds)]
        extent = block.shape[1:]
        flat = block.reshape(b, int(np.prod(extent)))    # (not -1: b may be 0)
        if b == 0:
            continue
        with np.errstate(invalid="ignore"):
            arg = np.argmax(flat, axis=1)
        if flat.dtype.kind == "f" and flat.size:
            # PyTorch's loop takes `val > max || isnan(val)`: the last NaN of a window wins
            # (np.argmax stops at the first)
            nan = np.isnan(flat)
            last_nan = flat.shape[1] - 1 - np.argmax(nan[:, ::-1], axis=1)
            arg = np.where(nan.any(axis=1), last_nan, arg)
        values[(slice(None),) + cell] = flat[np.arange(b), arg]
        where = np.unravel_index(arg, extent)
        indices[(slice(None),) + cell] = sum((s + w) * st for (s, _), w, st
                                             in zip(bounds, where, strides))
    return (out(values.reshape(spec.sizes), self._impl.dtype),
            out(indices.reshape(spec.sizes), dt.int64))


@kernel(layout=NCHW)
def adaptive_max_pool2d(self, output_size):
    return _adaptive_max("adaptive_max_pool2d", self, output_size)


def adaptive_max_pool3d(self, output_size):
    return _adaptive_max("adaptive_max_pool3d", self, output_size)


def _adaptive_max_backward(op, grad_output, self, indices):
    shape_rule(f"pooling.{op}")(op, (grad_output, self, indices))
    return _scatter_to_planes(op, grad_output, indices, self._impl.sizes, spatial_dims(op))


@kernel(layout=NCHW)
def adaptive_max_pool2d_backward(grad_output, self, indices):
    return _adaptive_max_backward("adaptive_max_pool2d_backward", grad_output, self, indices)


def adaptive_max_pool3d_backward(grad_output, self, indices):
    return _adaptive_max_backward("adaptive_max_pool3d_backward", grad_output, self, indices)


# ---- fractional max pooling -----------------------------------------------------------
def fractional_starts(samples, size, out_size, kernel):
    """The first position of each window along one dim, per plane: (B, out_size) for the
    (B,) random samples u in [0, 1) of that dim (PyTorch's generate_intervals):

        alpha = (size - kernel) / (out_size - 1)
        start[i] = int((i + u) * alpha) - int(u * alpha)     for i < out_size - 1
        start[out_size - 1] = size - kernel                  (the last window ends at the edge)

    computed in the samples' dtype as PyTorch does (float32 for half types, as its CUDA
    kernel), so the same samples give the same windows."""
    kind = samples.dtype.type
    starts = np.full(samples.shape + (out_size,), size - kernel, np.int64)
    if out_size > 1:
        alpha = kind(size - kernel) / kind(out_size - 1)
        i = np.arange(out_size - 1).astype(samples.dtype)
        u = samples[:, None]
        starts[:, :-1] = (((i + u) * alpha).astype(np.int64)
                          - (u * alpha).astype(np.int64))
    return starts


def _fractional(op, self, kernel_size, output_size, random_samples):
    """The max of each window (windows of `kernel_size` that start at the pseudo-random
    positions of fractional_starts), and its flat position, as max_pool's."""
    nd = spatial_dims(op)
    spec, _ = shape_rule(f"pooling.{op}")(op, (self, kernel_size, output_size,
                                               random_samples))
    kernel, out_sizes = tuple(kernel_size), tuple(output_size)
    x = _planes(self, nd)
    b, sizes = x.shape[0], x.shape[1:]
    channels = self._impl.sizes[-(nd + 1)]
    # Which sample draws which dim's windows is PyTorch's order: (W, H) for 2-D, but
    # (D, H, W) for 3-D.
    # (no planes: an empty batch, or a 3-D input's empty C; nothing to draw for)
    u = random_samples._impl.array()[:b // channels if b else 0].reshape(b, nd)
    u = u.astype(accumulate_dtype(self._impl.dtype), copy=False)
    if nd == 2:
        u = u[:, ::-1]
    # The gather: index arrays shaped (B, *out, *kernel) broadcast, one per spatial dim.
    index = [np.arange(b).reshape((b,) + (1,) * (2 * nd))]
    for i, (n, o, k) in enumerate(zip(sizes, out_sizes, kernel)):
        starts = fractional_starts(u[:, i], n, o, k)           # (B, o)
        shape = [b] + [1] * (2 * nd)
        shape[1 + i] = o
        offset = [1] * (2 * nd + 1)
        offset[1 + nd + i] = k
        index.append(starts.reshape(shape) + np.arange(k).reshape(offset))
    win = x[tuple(index)]                                                 # (B, *out, *kernel)
    strides = _plane_strides(sizes)
    values, arg = _window_max(win, True, _kernel_offsets(kernel, (1,) * nd, strides))
    # arg is the kernel offset's plane offset; the window's first position is
    # sum of start_i * stride_i, read from the index arrays at kernel offset 0.
    corner = sum(ix[(Ellipsis,) + (0,) * nd] * st for ix, st in zip(index[1:], strides))
    indices = arg + corner
    return (out(values.reshape(spec.sizes), self._impl.dtype),
            out(indices.reshape(spec.sizes), dt.int64))


def fractional_max_pool2d(self, kernel_size, output_size, random_samples):
    return _fractional("fractional_max_pool2d", self, kernel_size, output_size, random_samples)


def fractional_max_pool3d(self, kernel_size, output_size, random_samples):
    return _fractional("fractional_max_pool3d", self, kernel_size, output_size, random_samples)


def _fractional_backward(op, grad_output, self, kernel_size, output_size, indices):
    shape_rule(f"pooling.{op}")(op, (grad_output, self, kernel_size, output_size, indices))
    return _scatter_to_planes(op, grad_output, indices, self._impl.sizes, spatial_dims(op))


def fractional_max_pool2d_backward(grad_output, self, kernel_size, output_size, indices):
    return _fractional_backward("fractional_max_pool2d_backward", grad_output, self,
                                kernel_size, output_size, indices)


def fractional_max_pool3d_backward(grad_output, self, kernel_size, output_size, indices):
    return _fractional_backward("fractional_max_pool3d_backward", grad_output, self,
                                kernel_size, output_size, indices)


# ---- NHWC kernels: pooling of channels_last inputs -----------------------------------
# In NHWC memory the channels are the fastest dim. These kernels pad and pool the
# (N, H, W, C) array in place of the (N * C, H, W) planes, so every step of the window
# loop runs over contiguous channel runs, and the result is written NHWC directly: none of
# the two layout copies the NCHW kernels need through the fallback. Indices are still
# flat positions in each (H, W) plane, as PyTorch returns them for channels_last input.
def _nhwc(t, dtype=None):
    """The (N, H, W, C) array of a 4-D tensor (a view when it is stored channels_last)."""
    a = t._impl.array().transpose(0, 2, 3, 1)
    return a if dtype is None else a.astype(dtype, copy=False)


def _pad_nhwc(a, pads, value=0):
    """`a` (N, H, W, C) padded on H and W by `pads` ((before, after) per dim)."""
    if not any(p for pair in pads for p in pair):
        return a
    return np.pad(a, [(0, 0)] + list(pads) + [(0, 0)], constant_values=value)


def _nchw_windows(a, kernel, stride, dilation):
    """(N, C, oh', ow', kh, kw) windows of `a` (N, H, W, C): `windows` over the NCHW view
    of the same memory, so a window offset [..., u, v] is an (N, C, oh', ow') view whose
    innermost memory run is still the channels."""
    return windows(a.transpose(0, 3, 1, 2), kernel, stride, dilation)


def max_pool2d_with_indices_nhwc(self, kernel_size, stride, padding, dilation, ceil_mode):
    op = "max_pool2d_with_indices"
    spec, _ = shape_rule("pooling.max_pool2d_with_indices")(
        op, (self, kernel_size, stride, padding, dilation, ceil_mode))
    kernel, stride, padding, dilation = pool_params(op, kernel_size, stride, padding,
                                                    dilation)
    x = _nhwc(self)
    sizes, out_sizes = x.shape[1:3], tuple(spec.sizes[-2:])
    lowest = _lowest(self._impl.dtype)
    if _looped(x.dtype):
        x = np.ascontiguousarray(x)
        n, c = x.shape[0], x.shape[3]
        values = np.empty((n,) + out_sizes + (c,), x.dtype)
        indices = np.empty(values.shape, np.int64)
        _max_pool_nhwc_loop(x, values, indices,
                            *_volume_spans(sizes, out_sizes, tuple(kernel), tuple(stride),
                                           tuple(padding), tuple(dilation))[3:],
                            x.dtype.type(lowest))
        return (out_channels_last(values, self._impl.dtype),
                out_channels_last(indices, dt.int64))
    xp = _pad_nhwc(x, _pad_for(sizes, out_sizes, kernel, stride, padding, dilation), lowest)
    win = _nchw_windows(xp, kernel, stride, dilation)[:, :, :out_sizes[0], :out_sizes[1]]
    values, arg = _window_max(win, self._impl.dtype.is_floating_point,
                              _kernel_offsets(kernel, dilation, _plane_strides(sizes)))
    indices = _max_positions(values, arg, sizes, out_sizes, kernel, stride, padding, dilation,
                             lowest)
    return (out_channels_last(values.transpose(0, 2, 3, 1), self._impl.dtype),
            out_channels_last(indices.transpose(0, 2, 3, 1), dt.int64))


@loop
def _max_pool_nhwc_loop(x, values, indices, first_h, end_h, step_h, first_w, end_w, step_w,
                        lowest):
    """_max_pool_loop over (N, H, W, C) images: the same windows read in the same order
    with the same test, every channel at once (the innermost loop runs along the
    contiguous channels, which the compiler vectorizes)."""
    width, channels = x.shape[2], x.shape[3]
    for b in range(x.shape[0]):
        for j in range(values.shape[1]):
            h_first, h_end = first_h[j], end_h[j]
            for k in range(values.shape[2]):
                w_first, w_end = first_w[k], end_w[k]
                best, best_at = values[b, j, k], indices[b, j, k]
                first_at = h_first * width + w_first
                for ch in range(channels):
                    best[ch] = lowest
                    best_at[ch] = first_at
                h = h_first
                while h < h_end:
                    w = w_first
                    while w < w_end:
                        at = h * width + w
                        pixel = x[b, h, w]
                        for ch in range(channels):
                            value = pixel[ch]
                            if value > best[ch] or value != value:
                                best[ch] = value
                                best_at[ch] = at
                        w += step_w
                    h += step_h


def max_pool2d_with_indices_backward_nhwc(grad_output, self, kernel_size, stride, padding,
                                          dilation, ceil_mode, indices):
    """Each gradient added at its max's position, into NHWC memory."""
    shape_rule("pooling.max_pool2d_with_indices_backward")(
        "max_pool2d_with_indices_backward", (grad_output, self, kernel_size, stride, padding,
                                             dilation, ceil_mode, indices))
    return _scatter_to_planes("max_pool2d_with_indices_backward", grad_output, indices,
                              self._impl.sizes, channels_last=True)


def avg_pool2d_nhwc(self, kernel_size, stride, padding, ceil_mode, count_include_pad,
                    divisor_override):
    op = "avg_pool2d"
    spec = shape_rule("pooling.avg_pool2d")(
        op, (self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override))
    kernel, stride, padding, _ = pool_params(op, kernel_size, stride, padding, (1, 1))
    x = _nhwc(self, accumulate_dtype(self._impl.dtype))
    sizes, out_sizes = x.shape[1:3], spec.sizes[-2:]
    xp = _pad_nhwc(x, _pad_for(sizes, out_sizes, kernel, stride, padding, (1, 1)))
    # The sum of kernel-offset slices (each (N, oh, ow, C)), not a reduction over the
    # window axes of a view, whose innermost axes would not be the contiguous channels.
    win = _nchw_windows(xp, kernel, stride, (1, 1))[:, :, :out_sizes[0], :out_sizes[1]]
    sums = np.zeros((x.shape[0],) + tuple(out_sizes) + (x.shape[3],), x.dtype)
    for u in range(kernel[0]):
        for v in range(kernel[1]):
            sums += win[..., u, v].transpose(0, 2, 3, 1)
    divisor = _avg_divisor(sizes, out_sizes, kernel, stride, padding, count_include_pad,
                           divisor_override)
    return out_channels_last(sums / divisor[:, :, None], self._impl.dtype)


def avg_pool2d_backward_nhwc(grad_output, self, kernel_size, stride, padding, ceil_mode,
                             count_include_pad, divisor_override):
    """Each output's gradient / divisor, added to every input position of its window."""
    op = "avg_pool2d_backward"
    shape_rule("pooling.avg_pool2d_backward")(op, (grad_output, self, kernel_size, stride, padding,
                                                   ceil_mode, count_include_pad, divisor_override))
    kernel, stride, padding, _ = pool_params(op, kernel_size, stride, padding, (1, 1))
    g = _nhwc(grad_output, accumulate_dtype(grad_output._impl.dtype))   # (N, oh, ow, C)
    n, c, h, w = self._impl.sizes
    out_sizes = g.shape[1:3]
    divisor = _avg_divisor((h, w), out_sizes, kernel, stride, padding, count_include_pad,
                           divisor_override)
    share = g / divisor[:, :, None]
    pads = _pad_for((h, w), out_sizes, kernel, stride, padding, (1, 1))
    image = np.zeros((n, h + sum(pads[0]), w + sum(pads[1]), c), g.dtype)
    # add_windows by hand, over NHWC: one strided block per kernel offset.
    for u in range(kernel[0]):
        for v in range(kernel[1]):
            image[:, u:u + (out_sizes[0] - 1) * stride[0] + 1:stride[0],
                  v:v + (out_sizes[1] - 1) * stride[1] + 1:stride[1]] += share
    image = image[:, pads[0][0]:pads[0][0] + h, pads[1][0]:pads[1][0] + w]
    return out_channels_last(image, grad_output._impl.dtype)


def adaptive_avg_pool2d_nhwc(self, output_size):
    """The mean of each adaptive window, over the (N, H, W, C) array: along H, then W."""
    spec = shape_rule("pooling.adaptive_avg_pool2d")("adaptive_avg_pool2d", (self, output_size))
    acc = accumulate_dtype(self._impl.dtype)
    x = _nhwc(self, acc)
    with np.errstate(invalid="ignore"):
        y = _window_means(_window_means(x, spec.sizes[-2], 1), spec.sizes[-1], 2)
    return out_channels_last(y, self._impl.dtype)


def adaptive_avg_pool2d_backward_nhwc(grad_output, self):
    """The transposed map over (N, OH, OW, C): each window's gradient spread evenly."""
    shape_rule("pooling.adaptive_avg_pool2d_backward")(
        "adaptive_avg_pool2d_backward", (grad_output, self))
    acc = accumulate_dtype(grad_output._impl.dtype)
    g = _nhwc(grad_output, acc)
    with np.errstate(invalid="ignore"):
        rows = _window_spread(g, self._impl.sizes[-1], 2)
        grad = _window_spread(rows, self._impl.sizes[-2], 1)
    return out_channels_last(grad, grad_output._impl.dtype)


# Every NHWC pooling kernel beats the NCHW one with the layout fallback's two copies, at
# every width measured (benchmarks/bench_kernel_selection.py): a channels_last call is a
# 4-D one, so no shape rule is needed. (The max's compiled loop runs along the channels; at
# 3 channels it still measured 2.5x the fallback, at 64 channels 16x.)
nhwc = Library("CPU", "cpu_kernels.pooling (NHWC)")
for _name, _fn in (("max_pool2d_with_indices", max_pool2d_with_indices_nhwc),
                   ("max_pool2d_with_indices_backward", max_pool2d_with_indices_backward_nhwc),
                   ("avg_pool2d", avg_pool2d_nhwc),
                   ("avg_pool2d_backward", avg_pool2d_backward_nhwc),
                   ("adaptive_avg_pool2d", adaptive_avg_pool2d_nhwc),
                   ("adaptive_avg_pool2d_backward", adaptive_avg_pool2d_backward_nhwc)):
    nhwc.impl(_name, _fn, priority=10, layout="channels_last")
