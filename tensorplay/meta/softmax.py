"""Shape and dtype rules of _softmax / _log_softmax and their backward ops."""
from __future__ import annotations

from tensorplay.errors import ArgumentError
from tensorplay.kernel_support.checks import OutSpec, wrap_dim
from tensorplay.meta._nn import check_floating, check_size


def _sizes(t):
    return t._impl.sizes


# ---- softmax ------------------------------------------------------------------------
def softmax(op, args):
    self, dim, half_to_float = args
    # PyTorch returns an empty input as it is before its kernel looks at the dtype: an
    # empty integer or bool tensor gives an empty result of its own dtype.
    if self._impl.numel():
        check_floating(op, self)
    wrap_dim(op, dim, len(_sizes(self)))
    if half_to_float:
        # PyTorch has this conversion on CUDA only; convert with dtype= instead.
        raise ArgumentError(f"{op}(): argument 'half_to_float' (softmax with half to float "
                            f"conversion) is not supported on the CPU; pass dtype= to "
                            f"softmax() instead", op=op, arg="half_to_float")
    return OutSpec(_sizes(self), self._impl.dtype)


def softmax_backward(op, args):
    grad_output, output, dim, input_dtype = args
    wrap_dim(op, dim, len(_sizes(output)))
    check_size(op, grad_output, "grad_output", _sizes(output), "the output's shape")
    return OutSpec(_sizes(output), input_dtype)
