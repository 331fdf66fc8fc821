"""Linear algebra PyTorch composes from other ops: outer, tensordot, trace, kron, and the
`diagonal` view (new strides over the same storage, like transpose)."""
from __future__ import annotations

from tensorplay._frontdoor import wrap_dim
from tensorplay._generated import functional as F
from tensorplay.composite.views import make_view
from tensorplay.errors import DimError, ShapeError, fmt_shape
from tensorplay.meta.reduction_linalg import check_rank


def outer(self, vec2):
    """out[i, j] = self[i] * vec2[j]."""
    check_rank("outer", "self", self, (1,), "a vector (1-D)")
    check_rank("outer", "vec2", vec2, (1,), "a vector (1-D)")
    return self.unsqueeze(1) * vec2.unsqueeze(0)


def tensordot(self, other, dims_self, dims_other):
    """Contract dims_self of self with dims_other of other: move them last (first), flatten
    to two matrices and multiply, as PyTorch does."""
    if len(dims_self) != len(dims_other):
        raise ShapeError(f"tensordot(): arguments 'dims_self' and 'dims_other' must have the "
                         f"same length, but got {list(dims_self)} and {list(dims_other)}",
                         op="tensordot", arg="dims_other")
    da = [wrap_dim("tensordot", "dims_self", d, self.dim()) for d in dims_self]
    db = [wrap_dim("tensordot", "dims_other", d, other.dim()) for d in dims_other]
    for a, b in zip(da, db):
        if self.shape[a] != other.shape[b]:
            raise ShapeError(f"tensordot(): contracted dimensions need to match, but dim {a} "
                             f"of 'self' has size {self.shape[a]} and dim {b} of 'other' has "
                             f"size {other.shape[b]} (argument 'dims_other')",
                             op="tensordot", arg="dims_other")
    keep_a = [d for d in range(self.dim()) if d not in da]
    keep_b = [d for d in range(other.dim()) if d not in db]
    k = 1
    for d in da:
        k *= self.shape[d]
    a = self.permute(keep_a + da).reshape([-1 if keep_a else 1, k])
    b = other.permute(db + keep_b).reshape([k, -1 if keep_b else 1])
    sizes = [self.shape[d] for d in keep_a] + [other.shape[d] for d in keep_b]
    return a.mm(b).reshape(sizes)


def tensordot_dims(self, other, dims):
    if dims < 0 or dims > min(self.dim(), other.dim()):
        raise ShapeError(f"tensordot(): argument 'dims' ({dims}) must be between 0 and the "
                         f"smaller rank of 'self' ({self.dim()}) and 'other' ({other.dim()})",
                         op="tensordot", arg="dims")
    return tensordot(self, other, list(range(self.dim() - dims, self.dim())),
                     list(range(dims)))


def diagonal(self, offset, dim1, dim2):
    """A view of the diagonal `offset` of the (dim1, dim2) planes, appended as the last dim.

    Stepping along a diagonal moves one step in both dims: its stride is the sum of their
    strides, and it starts `offset` columns right (or -offset rows down)."""
    impl = self._impl
    n = len(impl.sizes)
    d1 = wrap_dim("diagonal", "dim1", dim1, n)
    d2 = wrap_dim("diagonal", "dim2", dim2, n)
    if d1 == d2:
        raise DimError(f"diagonal(): arguments 'dim1' and 'dim2' cannot be identical, but got "
                       f"{dim1} and {dim2}", op="diagonal", arg="dim2")
    s1, s2 = impl.sizes[d1], impl.sizes[d2]
    length = max(0, min(s1, s2 - offset) if offset >= 0 else min(s1 + offset, s2))
    start = impl.offset
    if length > 0:
        start += offset * impl.strides[d2] if offset >= 0 else -offset * impl.strides[d1]
    keep = [d for d in range(n) if d not in (d1, d2)]
    sizes = [impl.sizes[d] for d in keep] + [length]
    strides = [impl.strides[d] for d in keep] + [impl.strides[d1] + impl.strides[d2]]
    return make_view(self, sizes, strides, start)


def trace(self):
    if self.dim() != 2:
        raise ShapeError(f"trace(): argument 'self' must be a matrix (2-D), but got "
                         f"{self.dim()}-D shape {fmt_shape(self.shape)}", op="trace", arg="self")
    return F.sum(self.diagonal())


def kron(self, other):
    """out[i0*b0 + j0, i1*b1 + j1, ...] = self[i0, i1, ...] * other[j0, j1, ...]: interleave
    the dims of both (self's then other's, pairwise) and merge each pair."""
    n = max(self.dim(), other.dim())
    a = self.reshape([1] * (n - self.dim()) + list(self.shape))
    b = other.reshape([1] * (n - other.dim()) + list(other.shape))
    for d in range(n):
        a = a.unsqueeze(2 * d + 1)   # a: [a0, 1, a1, 1, ...]
        b = b.unsqueeze(2 * d)       # b: [1, b0, 1, b1, ...]
    return (a * b).reshape([a.shape[2 * d] * b.shape[2 * d + 1] for d in range(n)])
