"""Shape and dtype rules of upsampling (nearest, bilinear) and its backward."""
from __future__ import annotations

from tensorplay.errors import ShapeError, fmt_shape
from tensorplay.kernel_support.arguments import check_list
from tensorplay.kernel_support.checks import OutSpec
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
    check_floating(op, "self", self)
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


