"""`Variable`, the wrapper every tensor needed before PyTorch 0.4 merged it into Tensor.

Old tutorials still write `Variable(x, requires_grad=True)`. As in PyTorch, it returns a
tensor sharing `x`'s memory, outside `x`'s graph, with the requested requires_grad; and
every tensor is an instance of `Variable`.
"""
from __future__ import annotations

from tensorplay import _tensor_factory as factory


class _VariableMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, factory.Tensor)


class Variable(metaclass=_VariableMeta):
    def __new__(cls, data, requires_grad=False, volatile=False):
        if not isinstance(data, factory.Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got "
                            f"{type(data).__name__}")
        out = data.detach()
        if requires_grad:
            out.requires_grad_(True)
        return out
