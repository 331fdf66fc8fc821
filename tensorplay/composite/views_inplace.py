"""The in-place view ops (`x.unsqueeze_(0)`, `x.t_()`, ...): the tensor itself takes the
new shape and strides over the same memory.

Each one computes the out-of-place view, and the tensor adopts its sizes and strides
(`adopt_view`, which bumps the version counter as any in-place op does): afterwards it
is what `x = x.unsqueeze(0)` would have made it, but the Python object is the same. The
generated autograd wrapper records the backward node (the out-of-place view's formula
from derivatives.yaml) and rebases the tensor's history on it.
"""
from __future__ import annotations

from tensorplay.autograd.api import adopt_view
from tensorplay.autograd.recording import check_inplace
from tensorplay.errors import ShapeError


def _in_place(self, op, view):
    # as for the other in-place ops (their autograd wrappers): the graph rules apply only
    # to a tensor that requires grad, so a split/unbind output that does not may be reshaped
    if self.requires_grad:
        check_inplace(self, op)
    return adopt_view(self, view(self))


def unsqueeze_(self, dim):
    return _in_place(self, "unsqueeze_", lambda t: t.unsqueeze(dim))


def squeeze_(self):
    return _in_place(self, "squeeze_", lambda t: t.squeeze())


def squeeze__dim(self, dim):
    return _in_place(self, "squeeze_", lambda t: t.squeeze(dim))


def transpose_(self, dim0, dim1):
    return _in_place(self, "transpose_", lambda t: t.transpose(dim0, dim1))


# These three have no derivative formula of their own: they call transpose_, whose
# autograd wrapper records the backward node.
def t_(self):
    n = self.dim()
    if n > 2:
        raise ShapeError(f"t_(): expects a tensor with <= 2 dimensions, but 'self' is {n}D",
                         op="t_", arg="self")
    return self.transpose_(0, 1 if n == 2 else 0)


def swapaxes_(self, axis0, axis1):
    return self.transpose_(axis0, axis1)


def swapdims_(self, dim0, dim1):
    return self.transpose_(dim0, dim1)
