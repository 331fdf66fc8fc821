"""matmul with NumPy/PyTorch rank rules, built from mm and bmm."""
from __future__ import annotations

from tensorplay.errors import ShapeError, fmt_shape
from tensorplay.meta.rules import broadcast


def matmul(self, other):
    a, b = self.dim(), other.dim()
    if a == 0 or b == 0:
        arg = "self" if a == 0 else "other"
        raise ShapeError(f"matmul(): both arguments need at least 1 dimension, but got "
                         f"{a}D and {b}D tensors (argument '{arg}' is 0-D)", op="matmul", arg=arg)
    if a == 1 and b == 1:
        if self.shape[0] != other.shape[0]:
            raise ShapeError(f"matmul(): 1D tensors expected to have the same size, but got "
                             f"{self.shape[0]} ('self') and {other.shape[0]} ('other')",
                             op="matmul", arg="other")
        return self.unsqueeze(0).mm(other.unsqueeze(1)).view(())
    if a == 2 and b == 2:
        return self.mm(other)
    if a == 1 and b == 2:
        return self.unsqueeze(0).mm(other).squeeze(0)
    if a == 2 and b == 1:
        return self.mm(other.unsqueeze(1)).squeeze(1)
    # Batched: move vectors to matrices, broadcast the batch dims, flatten them for bmm.
    x = self.unsqueeze(0) if a == 1 else self
    y = other.unsqueeze(-1) if b == 1 else other
    if x.shape[-1] != y.shape[-2]:
        raise ShapeError(f"matmul(): shapes {fmt_shape(self.shape)} ('self') and "
                         f"{fmt_shape(other.shape)} ('other') cannot be multiplied "
                         f"({x.shape[-1]} vs {y.shape[-2]})", op="matmul", arg="other")
    batch = broadcast("matmul", [("self", tuple(x.shape[:-2])), ("other", tuple(y.shape[:-2]))])
    n, k, m = x.shape[-2], x.shape[-1], y.shape[-1]
    size = 1
    for s in batch:
        size *= s
    x3 = x.expand(batch + (n, k)).reshape((size, n, k))
    y3 = y.expand(batch + (k, m)).reshape((size, k, m))
    out = x3.bmm(y3).view(batch + (n, m))
    if a == 1:
        out = out.squeeze(-2)
    if b == 1:
        out = out.squeeze(-1)
    return out
