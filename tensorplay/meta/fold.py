"""Shape and dtype rules of im2col / col2im (F.unfold, F.fold)."""
from __future__ import annotations

from tensorplay.errors import ShapeError, fmt_shape
from tensorplay.kernel_support.arguments import check_list, window_out_size
from tensorplay.kernel_support.checks import OutSpec
from tensorplay.meta.reduction import check_floating_or_complex


def _sizes(t):
    return t._impl.sizes


def fold_params(op, kernel_size, dilation, padding, stride):
    return (check_list(op, "kernel_size", kernel_size, 2, 1),
            check_list(op, "dilation", dilation, 2, 1),
            check_list(op, "padding", padding, 2, 0),
            check_list(op, "stride", stride, 2, 1))


def _blocks(op, spatial, kernel, dilation, padding, stride, arg):
    out = tuple(window_out_size(s, k, st, p, d) for s, k, st, p, d
                in zip(spatial, kernel, stride, padding, dilation))
    if any(o <= 0 for o in out):
        raise ShapeError(f"{op}(): no sliding block fits: spatial size {fmt_shape(spatial)} "
                         f"(argument '{arg}') with kernel {list(kernel)}, dilation "
                         f"{list(dilation)}, padding {list(padding)} and stride {list(stride)}",
                         op=op, arg=arg)
    return out


def im2col(op, args):
    self, kernel_size, dilation, padding, stride = args
    sizes = _sizes(self)
    if len(sizes) not in (3, 4) or 0 in sizes[-3:]:
        raise ShapeError(f"{op}(): expected argument 'self' to be a 3-D (C, H, W) or 4-D "
                         f"(N, C, H, W) tensor with non-empty C, H, W, but got shape "
                         f"{fmt_shape(sizes)}", op=op, arg="self")
    check_floating_or_complex(op, self)
    kernel, dilation, padding, stride = fold_params(op, kernel_size, dilation, padding, stride)
    blocks = _blocks(op, sizes[-2:], kernel, dilation, padding, stride, "self")
    out = (sizes[-3] * kernel[0] * kernel[1], blocks[0] * blocks[1])
    return OutSpec(tuple(sizes[:-3]) + out, self._impl.dtype)


def col2im(op, args):
    self, output_size, kernel_size, dilation, padding, stride = args
    sizes = _sizes(self)
    if len(sizes) not in (2, 3) or 0 in sizes[-2:]:
        raise ShapeError(f"{op}(): expected argument 'self' to be a 2-D (C * kH * kW, L) or "
                         f"3-D (N, C * kH * kW, L) tensor with non-empty dims, but got shape "
                         f"{fmt_shape(sizes)}", op=op, arg="self")
    check_floating_or_complex(op, self)
    output_size = check_list(op, "output_size", output_size, 2, 1)
    kernel, dilation, padding, stride = fold_params(op, kernel_size, dilation, padding, stride)
    k = kernel[0] * kernel[1]
    if sizes[-2] % k:
        raise ShapeError(f"{op}(): argument 'self' dim -2 ({sizes[-2]}) must be divisible by "
                         f"the kernel's size {kernel[0]} * {kernel[1]}", op=op, arg="self")
    blocks = _blocks(op, output_size, kernel, dilation, padding, stride, "output_size")
    if sizes[-1] != blocks[0] * blocks[1]:
        raise ShapeError(f"{op}(): argument 'self' has {sizes[-1]} blocks (dim -1), but "
                         f"output_size {list(output_size)} with these kernel, dilation, padding "
                         f"and stride gives {blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]}",
                         op=op, arg="self")
    return OutSpec(tuple(sizes[:-2]) + (sizes[-2] // k,) + output_size, self._impl.dtype)
