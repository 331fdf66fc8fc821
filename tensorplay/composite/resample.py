"""pixel_shuffle / pixel_unshuffle: a reshape, a permute and a reshape."""
from __future__ import annotations

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
