"""Memory layouts: `tp.strided` (sizes + strides over one storage, every dense tensor)
and `tp.sparse_coo` (an indices tensor and a values tensor, see tensorplay/sparse).

A layout is a class attribute of the impl (`TensorImpl.layout`), so asking a tensor for
it costs nothing per tensor and the dense impl carries no extra field."""
from __future__ import annotations


class NamedConstant:
    """A singleton printed as `tensorplay.<name>` and pickled as the module-level constant
    of that name: the base of `tp.layout` and `tp.memory_format` (PyTorch's are the same)."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"tensorplay.{self.name}"

    def __reduce__(self):
        return self.name


class layout(NamedConstant):   # noqa: N801 -- PyTorch's name: `tp.layout` mirrors `torch.layout`
    __slots__ = ()


strided = layout("strided")
sparse_coo = layout("sparse_coo")
