"""Memory layouts: `tp.strided` (sizes + strides over one storage, every dense tensor)
and `tp.sparse_coo` (an indices tensor and a values tensor, see tensorplay/sparse).

A layout is a class attribute of the impl (`TensorImpl.layout`), so asking a tensor for
it costs nothing per tensor and the dense impl carries no extra field."""
from __future__ import annotations


class layout:   # noqa: N801 -- PyTorch's name: `tp.layout` mirrors `torch.layout`
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"tensorplay.{self.name}"

    def __reduce__(self):
        return self.name     # pickles as the module-level singleton of that name


strided = layout("strided")
sparse_coo = layout("sparse_coo")
