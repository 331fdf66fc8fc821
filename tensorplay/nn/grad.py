"""`tp.nn.grad` (`torch.nn.grad`): the gradients of a convolution with respect to its input
and to its weight, without building a graph: the `convolution_backward` op the autograd
node runs, called with an output mask that asks for one gradient. `input_size` /
`weight_size` say the shape of the tensor whose gradient is wanted (a grad_output does
not determine it: the strides' rounding loses rows)."""
from __future__ import annotations

from tensorplay._generated.functional import convolution_backward

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input",
           "conv3d_weight"]


def _tuple(value, n):
    return tuple(value) if isinstance(value, (list, tuple)) else (value,) * n


def _grad(n, which, input, weight, grad_output, stride, padding, dilation, groups):
    mask = [which == 0, which == 1, False]
    return convolution_backward(grad_output, input, weight, None, _tuple(stride, n),
                                _tuple(padding, n), _tuple(dilation, n), False, [0] * n,
                                groups, mask)[which]


def _input_grad(n, input_size, weight, grad_output, stride, padding, dilation, groups):
    # Only the input's shape is read: a one-element tensor expanded to it stands in.
    input = grad_output.new_empty(1).expand(tuple(input_size))
    return _grad(n, 0, input, weight, grad_output, stride, padding, dilation, groups)


def _weight_grad(n, input, weight_size, grad_output, stride, padding, dilation, groups):
    weight = grad_output.new_empty(1).expand(tuple(weight_size))
    return _grad(n, 1, input, weight, grad_output, stride, padding, dilation, groups)


def conv1d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _input_grad(1, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv1d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _weight_grad(1, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv2d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _input_grad(2, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv2d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _weight_grad(2, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv3d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _input_grad(3, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv3d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _weight_grad(3, input, weight_size, grad_output, stride, padding, dilation, groups)
