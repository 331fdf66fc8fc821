"""Shape helpers scripts reach for, composed of views and existing ops: atleast_1d/2d/3d,
meshgrid, sum_to_size, argwhere."""
from __future__ import annotations

from tensorplay._generated import functional as F
from tensorplay.errors import ArgumentError, ShapeError, fmt_shape


def atleast_1d(self):
    return self.reshape([1]) if self.dim() == 0 else self


def atleast_2d(self):
    if self.dim() == 0:
        return self.reshape([1, 1])
    return self.unsqueeze(0) if self.dim() == 1 else self


def atleast_3d(self):
    """(n) -> (1, n, 1) and (m, n) -> (m, n, 1), as NumPy and PyTorch do."""
    n = self.dim()
    if n == 0:
        return self.reshape([1, 1, 1])
    if n == 1:
        return self.unsqueeze(0).unsqueeze(-1)
    return self.unsqueeze(-1) if n == 2 else self


def atleast_1d_sequence(tensors):
    return [atleast_1d(t) for t in tensors]


def atleast_2d_sequence(tensors):
    return [atleast_2d(t) for t in tensors]


def atleast_3d_sequence(tensors):
    return [atleast_3d(t) for t in tensors]


def meshgrid(tensors, indexing):
    """Coordinate grids: output i holds tensors[i] along dim i, expanded (views) over the
    others. indexing='xy' (Cartesian, NumPy's default) makes the first two tensors vary
    along dims 1 and 0: the 'ij' grids of the inputs with those two swapped, swapped back."""
    op = "meshgrid"
    if indexing is None:
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise ArgumentError(f"meshgrid(): argument 'indexing' must be 'ij' or 'xy', but got "
                            f"{indexing!r}", op=op, arg="indexing")
    if not tensors:
        raise ArgumentError("meshgrid(): expects a non-empty TensorList", op=op,
                            arg="tensors")
    for i, t in enumerate(tensors):
        if t.dim() > 1:
            raise ShapeError(f"meshgrid(): expects scalar or 1D tensors, but got tensor "
                             f"{i} with {t.dim()} dimensions (argument 'tensors[{i}]')", op=op,
                             arg=f"tensors[{i}]")
        if t.dtype is not tensors[0].dtype or t.device != tensors[0].device:
            raise ArgumentError(f"meshgrid(): expects all tensors to have the same dtype and "
                                f"device, but tensor {i} differs from tensor 0 (argument "
                                f"'tensors[{i}]')", op=op, arg=f"tensors[{i}]")
    ts = [t.reshape([-1]) for t in tensors]
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    sizes = [t.shape[0] for t in ts]
    grids = []
    for i, t in enumerate(ts):
        shape = [1] * len(ts)
        shape[i] = sizes[i]
        grids.append(t.reshape(shape).expand(sizes))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return grids


def sum_to_size(self, size):
    """Sum self down to `size` (which self must be expandable from): the reverse of
    expand, as the gradient of a broadcast is."""
    size = tuple(size)
    sizes = tuple(self.shape)
    lead = len(sizes) - len(size)
    ok = lead >= 0 and all(s == 1 or s == t for s, t in zip(size, sizes[lead:]))
    if not ok:
        raise ShapeError(f"sum_to_size(): size {fmt_shape(size)} is not expandable to size "
                         f"{fmt_shape(sizes)} (argument 'size')", op="sum_to_size",
                         arg="size")
    out = self
    if lead:
        out = out.sum(list(range(lead)))
    dims = [i for i, s in enumerate(size) if s == 1 and sizes[lead + i] != 1]
    if dims:
        out = out.sum(dims, True)
    return out if out is not self else self.view(sizes)


def argwhere(self):
    """The indices of the non-zero elements, one row each: nonzero(self)."""
    return F.nonzero(self)
