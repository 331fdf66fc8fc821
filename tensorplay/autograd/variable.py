"""`Variable`, the wrapper every tensor needed before PyTorch 0.4 merged it into Tensor.

Old tutorials still write `Variable(x, requires_grad=True)`. As in PyTorch, it returns a
tensor sharing `x`'s memory, outside `x`'s graph, with the requested requires_grad; and
every tensor is an instance of `Variable`.
"""
from __future__ import annotations


class _VariableMeta(type):
    def __instancecheck__(cls, obj):
        from tensorplay._tensor import Tensor
        return isinstance(obj, Tensor)


class Variable(metaclass=_VariableMeta):
    def __new__(cls, data, requires_grad=False, volatile=False):
        from tensorplay._tensor import Tensor
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got "
                            f"{type(data).__name__}")
        out = data.detach()
        if requires_grad:
            out.requires_grad_(True)
        return out
