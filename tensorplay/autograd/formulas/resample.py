"""Tangent helpers of the resampling ops (grid_sampler_2d/3d), which PyTorch's forward
mode lacks.

Written with TensorPlay ops only.
"""
from __future__ import annotations

from tensorplay import _creation
from tensorplay._generated import functional as F


def _grid_sampler_jvp(sample, sample_backward, input_p, input_t, grid_p, grid_t,
                      interpolation_mode, padding_mode, align_corners):
    """out = sample(input, grid) is linear in input: that part of the tangent is the op
    on input_t. In grid, out[n, c, p] depends on the one grid point grid[n, p], so its
    tangent is sum_k D[n, c, p, k] grid_t[n, p, k] with D = d out[n, c, p] / d grid[n, p, k].
    The backward's grid gradient sums D over the channels; with every channel made a
    batch of its own (input (N*C, 1, ...), the grid repeated per channel) and grad 1, it
    gives D channel by channel."""
    out = sample(input_t, grid_p, interpolation_mode, padding_mode, align_corners)
    n, c = input_p.shape[0], input_p.shape[1]
    points = tuple(grid_p.shape[1:])                      # (H, W, 2) or (D, H, W, 3)
    per_channel = input_p.reshape((n * c, 1) + tuple(input_p.shape[2:]))
    grid = grid_p.unsqueeze(1).expand((n, c) + points).reshape((n * c,) + points)
    ones = _creation.ones((n * c, 1) + points[:-1], dtype=out.dtype, device=out.device)
    d = sample_backward(ones, per_channel, grid, interpolation_mode, padding_mode,
                        align_corners, [False, True])[1]
    return out + (d.reshape((n, c) + points) * grid_t.unsqueeze(1)).sum(-1)


def grid_sampler_2d_jvp(input_p, input_t, grid_p, grid_t, interpolation_mode, padding_mode,
                        align_corners):
    return _grid_sampler_jvp(F.grid_sampler_2d, F.grid_sampler_2d_backward, input_p, input_t,
                             grid_p, grid_t, interpolation_mode, padding_mode, align_corners)


def grid_sampler_3d_jvp(input_p, input_t, grid_p, grid_t, interpolation_mode, padding_mode,
                        align_corners):
    return _grid_sampler_jvp(F.grid_sampler_3d, F.grid_sampler_3d_backward, input_p, input_t,
                             grid_p, grid_t, interpolation_mode, padding_mode, align_corners)
