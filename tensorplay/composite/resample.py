"""pixel_shuffle / pixel_unshuffle: a reshape, a permute and a reshape; grid_sampler picks
the 2-d or 3-d op; affine_grid_generator: a base grid times the affine matrices."""
from __future__ import annotations

from tensorplay import _creation
from tensorplay._generated import functional as F
from tensorplay.errors import ArgumentError, ShapeError, fmt_shape


def _check_factor(op, name, factor):
    if factor < 1:
        raise ArgumentError(f"{op}(): argument '{name}' must be positive, but got {factor}",
                            op=op, arg=name)


def _new_tensor(self, result):
    """PyTorch's pixel (un)shuffle never returns a view: copy when the reshape made one
    (r == 1, or an empty input)."""
    if result.untyped_storage() is self.untyped_storage():
        return result.clone()
    return result


def pixel_shuffle(self, upscale_factor):
    """(*, C * r * r, H, W) -> (*, C, H * r, W * r):

        out[..., c, h * r + i, w * r + j] = self[..., c * r * r + i * r + j, h, w]
    """
    op, r = "pixel_shuffle", upscale_factor
    _check_factor(op, "upscale_factor", r)
    sizes = tuple(self.shape)
    if len(sizes) < 3 or sizes[-3] % (r * r):
        raise ShapeError(f"{op}(): argument 'self' must have at least 3 dims and a channel "
                         f"dim (-3) divisible by upscale_factor**2 = {r * r}, but got shape "
                         f"{fmt_shape(sizes)}", op=op, arg="self")
    *batch, c, h, w = sizes
    n = len(batch)
    x = self.reshape(tuple(batch) + (c // (r * r), r, r, h, w))
    x = x.permute(list(range(n)) + [n, n + 3, n + 1, n + 4, n + 2])
    return _new_tensor(self, x.reshape(tuple(batch) + (c // (r * r), h * r, w * r)))


def pixel_unshuffle(self, downscale_factor):
    """The inverse of pixel_shuffle: (*, C, H * r, W * r) -> (*, C * r * r, H, W)."""
    op, r = "pixel_unshuffle", downscale_factor
    _check_factor(op, "downscale_factor", r)
    sizes = tuple(self.shape)
    if len(sizes) < 3 or sizes[-1] % r or sizes[-2] % r:
        raise ShapeError(f"{op}(): argument 'self' must have at least 3 dims and height and "
                         f"width divisible by downscale_factor = {r}, but got shape "
                         f"{fmt_shape(sizes)}", op=op, arg="self")
    *batch, c, h, w = sizes
    n = len(batch)
    x = self.reshape(tuple(batch) + (c, h // r, r, w // r, r))
    x = x.permute(list(range(n)) + [n, n + 2, n + 4, n + 1, n + 3])
    return _new_tensor(self, x.reshape(tuple(batch) + (c * r * r, h // r, w // r)))


# ---- grid_sampler, affine_grid_generator ------------------------------------------------
def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """grid_sampler_2d for a 4-D input, grid_sampler_3d for a 5-D one."""
    if input.dim() == 5:
        return F.grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners)
    if input.dim() != 4:
        raise ShapeError(f"grid_sampler(): expected argument 'input' to be 4-D or 5-D, with "
                         f"a grid of as many dims, but got input with sizes "
                         f"{fmt_shape(tuple(input.shape))} and grid with sizes "
                         f"{fmt_shape(tuple(grid.shape))}", op="grid_sampler", arg="input")
    return F.grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners)


def _steps(n, align_corners, like):
    """n points spread over [-1, 1]: the pixels' centres (align_corners=False: the
    linspace shrunk by (n - 1) / n) or the corners' centres; a single point is 0."""
    if n <= 1:
        return _creation.zeros(max(n, 0), dtype=like.dtype, device=like.device)
    steps = _creation.linspace(-1, 1, n, dtype=like.dtype, device=like.device)
    return steps if align_corners else steps * ((n - 1) / n)


def affine_grid_generator(theta, size, align_corners):
    """grid[n, *p] = theta[n] @ (x, y[, z], 1) at each output point p, whose coordinates
    run over [-1, 1] along W (x), H (y) and D (z): the base grid times theta transposed."""
    op = "affine_grid_generator"
    size = [int(s) for s in size]
    if len(size) not in (4, 5):
        raise ShapeError(f"{op}(): argument 'size' must have 4 (N, C, H, W) or 5 "
                         f"(N, C, D, H, W) elements, but got {size}", op=op, arg="size")
    d = len(size) - 2
    n, spatial = size[0], size[2:]
    if theta.dim() != 3 or tuple(theta.shape) != (n, d, d + 1):
        raise ShapeError(f"{op}(): argument 'theta' must have shape [{n}, {d}, {d + 1}] for "
                         f"size {size}, but got {fmt_shape(tuple(theta.shape))}", op=op,
                         arg="theta")
    # One coordinate per spatial dim, broadcast over the others: x varies along the last.
    columns = []
    for k in range(d):
        axis = d - 1 - k                      # x: the last spatial dim, y the one before...
        shape = [1] * d
        shape[axis] = spatial[axis]
        columns.append(_steps(spatial[axis], align_corners, theta).reshape(shape)
                       .expand(*spatial))
    columns.append(_creation.ones(spatial, dtype=theta.dtype, device=theta.device))
    base = F.stack(columns, -1).reshape(1, -1, d + 1)
    grid = F.matmul(base, theta.transpose(1, 2))
    return grid.reshape(n, *spatial, d)
