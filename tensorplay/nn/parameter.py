"""`tp.nn.Parameter`: a tensor that a Module registers as one of its parameters.

A Parameter is an ordinary leaf tensor (it shares memory with the tensor it was made
from) whose class tells `Module.__setattr__` to put it in `_parameters`, so that
`parameters()`, `state_dict()` and the optimizers find it. Results of ops on a
Parameter are plain Tensors, as in PyTorch.
"""
from __future__ import annotations

from tensorplay._creation import empty
from tensorplay._tensor import Tensor

__all__ = ["Parameter", "Buffer"]


class Parameter(Tensor):
    __slots__ = ()

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = empty(0)
        if getattr(data, "_impl", None) is None:
            raise TypeError(f"Parameter(): argument 'data' must be a Tensor, but got "
                            f"{type(data).__name__}")
        param = object.__new__(cls)
        # A detached alias: same memory and version counter, no history.
        param._impl = data.detach()._impl
        if requires_grad:
            param.requires_grad_(True)
        return param

    def __init__(self, data=None, requires_grad=True):
        pass

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        out = Parameter(self.detach().clone(), self.requires_grad)
        memo[id(self)] = out
        return out

    def __reduce_ex__(self, protocol):
        return (Parameter, (self.detach().clone(), self.requires_grad))


class Buffer:
    """`tp.nn.Buffer(t, persistent=True)`: assigning one to a Module attribute registers
    `t` as a buffer, as `register_buffer` does (PyTorch 2.5's marker class)."""

    def __init__(self, data, *, persistent=True):
        self.data = data
        self.persistent = persistent
