"""Flatten parameters into one vector and back (`parameters_to_vector`,
`vector_to_parameters`), e.g. for second-order methods or weight averaging."""
from __future__ import annotations

import tensorplay as tp
from tensorplay._tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check_same_device(param, device):
    if device is None:
        return param.device
    if param.device != device:
        raise TypeError("Found two parameters on different devices, this is currently not "
                        "supported.")
    return device


def parameters_to_vector(parameters):
    """One 1-D tensor holding every parameter, flattened, in iteration order (a copy)."""
    device = None
    vec = []
    for param in parameters:
        device = _check_same_device(param, device)
        vec.append(param.reshape(-1))
    return tp.cat(vec)


def vector_to_parameters(vec, parameters):
    """Point each parameter's data at its slice of `vec` (the inverse of
    parameters_to_vector; the parameters then share memory with `vec`, as in PyTorch)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    device = None
    pointer = 0
    for param in parameters:
        device = _check_same_device(param, device)
        num_param = param.numel()
        param.data = vec[pointer:pointer + num_param].view_as(param).data
        pointer += num_param
