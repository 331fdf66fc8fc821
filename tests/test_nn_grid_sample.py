"""tp.nn.functional grid_sample / affine_grid against PyTorch: every mode and padding, the
2-d and 3-d forms, gradients of the input, the grid and theta, and the argument errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import tensorplay as tp
import tensorplay.nn.functional as F
from tensorplay.errors import ArgumentError, ShapeError

RNG = np.random.default_rng(29)


def _pair(shape, low=-1.0, high=1.0):
    a = RNG.uniform(low, high, shape)
    return (tp.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True))


CASES = [(d, mode, pad, align)
         for d in (2, 3) for mode in ("bilinear", "nearest", "bicubic")
         for pad in ("zeros", "border", "reflection") for align in (False, True)
         if not (d == 3 and mode == "bicubic")]


@pytest.mark.parametrize("d, mode, padding_mode, align_corners", CASES)
def test_grid_sample_matches_torch(d, mode, padding_mode, align_corners):
    spatial = (3, 4) if d == 2 else (2, 3, 4)
    out = (2, 3) if d == 2 else (2, 2, 3)
    x, tx = _pair((2, 2) + spatial, -2, 2)
    g, tg = _pair((2,) + out + (d,), -1.3, 1.3)
    y = F.grid_sample(x, g, mode, padding_mode, align_corners)
    ty = TF.grid_sample(tx, tg, mode, padding_mode, align_corners)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-12,
                               atol=1e-12)
    w = RNG.standard_normal(tuple(ty.shape))
    (y * tp.tensor(w)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(g.grad.numpy(), tg.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("size", [[2, 3, 4, 5], [1, 2, 3, 1], [2, 1, 2, 3, 4]])
@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_matches_torch_and_feeds_grid_sample(size, align_corners):
    d = len(size) - 2
    theta, ttheta = _pair((size[0], d, d + 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # size-1 grids with align_corners warn in both
        grid = F.affine_grid(theta, size, align_corners)
        tgrid = TF.affine_grid(ttheta, size, align_corners)
    np.testing.assert_allclose(grid.detach().numpy(), tgrid.detach().numpy(), atol=1e-12)
    x, tx = _pair(tuple(size))
    y = F.grid_sample(x, grid, align_corners=align_corners)
    ty = TF.grid_sample(tx, tgrid, align_corners=align_corners)
    y.pow(2).sum().backward()
    ty.pow(2).sum().backward()
    np.testing.assert_allclose(theta.grad.numpy(), ttheta.grad.numpy(), rtol=1e-9,
                               atol=1e-12)


def test_modes_tables_match_torch():
    assert F.GRID_SAMPLE_INTERPOLATION_MODES == TF.GRID_SAMPLE_INTERPOLATION_MODES
    assert F.GRID_SAMPLE_PADDING_MODES == TF.GRID_SAMPLE_PADDING_MODES


def test_align_corners_default_warns_and_is_false():
    x, g = tp.randn(1, 1, 3, 3), tp.rand(1, 2, 2, 2) * 2 - 1
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        y = F.grid_sample(x, g)
    assert tp.equal(y, F.grid_sample(x, g, align_corners=False))


def test_double_backward_is_refused_as_in_torch():
    x = tp.randn(1, 1, 3, 3, dtype=tp.float64, requires_grad=True)
    g = (tp.rand(1, 2, 2, 2, dtype=tp.float64) * 2 - 1).requires_grad_()
    gx, = tp.autograd.grad(F.grid_sample(x, g, align_corners=True).sum(), x,
                           create_graph=True)
    with pytest.raises(NotImplementedError, match="grid_sampler_2d_backward"):
        gx.sum().backward()


@pytest.mark.parametrize("call, error, regex, arg", [
    (lambda: F.grid_sample(tp.ones(1, 1, 2, 2), tp.zeros(1, 1, 1, 2), mode="area",
                           align_corners=False),
     ArgumentError, r"grid_sample\(\): expected argument 'mode' to be 'bilinear'", "mode"),
    (lambda: F.grid_sample(tp.ones(1, 1, 2, 2), tp.zeros(1, 1, 1, 2), padding_mode="wrap",
                           align_corners=False),
     ArgumentError, r"grid_sample\(\): expected argument 'padding_mode'", "padding_mode"),
    (lambda: F.grid_sample(tp.ones(1, 1, 2, 2, 2), tp.zeros(1, 1, 1, 1, 3), mode="bicubic",
                           align_corners=False),
     ShapeError, r"grid_sample\(\): mode 'bicubic' needs a 4-D input", "input"),
    (lambda: F.affine_grid(tp.ones(2, 3, 3), [2, 1, 3, 3], False),
     ShapeError, r"affine_grid\(\): expected argument 'theta' to be a batch of 2-D", "theta"),
    (lambda: F.affine_grid(tp.ones(2, 2, 3), [2, 1, 3], False),
     ShapeError, r"affine_grid\(\): only supports 4-D and 5-D sizes", "size"),
    (lambda: F.affine_grid(tp.ones(2, 2, 3), [2, 1, 0, 3], False),
     ShapeError, r"affine_grid\(\): expected a non-zero, positive argument 'size'", "size"),
])
def test_errors(call, error, regex, arg):
    with pytest.raises(error, match=regex) as info:
        call()
    assert info.value.arg == arg
