"""Shape ops composed from others: stack/hstack/vstack from cat; split, chunk and
tensor_split as narrow views; tile from repeat; movedim, swapaxes, unflatten,
broadcast_to and broadcast_tensors as views (permute, transpose, view, expand).

Where PyTorch returns views, these do too, because the ops they call are views; and
autograd, Meta and every backend come from those ops (no derivatives.yaml entries)."""
from __future__ import annotations

from tensorplay._frontdoor import wrap_dim
from tensorplay._generated import functional as F
from tensorplay.autograd.view_impl import mark_multi_output_views
from tensorplay.errors import ArgumentError, DimError, ShapeError, fmt_shape
from tensorplay.meta.rules import broadcast, reduce_dim_list


# ---- joining ---------------------------------------------------------------------------
def stack(tensors, dim):
    if not tensors:
        raise ArgumentError("stack(): argument 'tensors' must be a non-empty list of tensors",
                            op="stack", arg="tensors")
    first = tuple(tensors[0].shape)
    for i, t in enumerate(tensors):
        if tuple(t.shape) != first:
            raise ShapeError(f"stack(): stack expects each tensor to be equal size, but got "
                             f"{fmt_shape(first)} at entry 0 and {fmt_shape(t.shape)} at entry "
                             f"{i} (argument 'tensors')", op="stack", arg="tensors")
    d = wrap_dim("stack", "dim", dim, len(first) + 1)
    return F.cat([t.unsqueeze(d) for t in tensors], d)


def hstack(tensors):
    """Along dim 1, or dim 0 when every tensor is 1-D (0-dim ones count as 1-D)."""
    ts = [t.reshape([1]) if t.dim() == 0 else t for t in tensors]
    return F.cat(ts, 0 if all(t.dim() == 1 for t in ts) else 1)


def vstack(tensors):
    """Along dim 0, after making 0-D and 1-D tensors rows (atleast_2d)."""
    return F.cat([t.reshape([1, -1]) if t.dim() < 2 else t for t in tensors], 0)


# ---- splitting (views) -----------------------------------------------------------------
def _pieces(self, dim, sizes, op):
    d = wrap_dim(op, "dim", dim, self.dim())
    out, start = [], 0
    for n in sizes:
        out.append(self.narrow(d, start, n))
        start += n
    return out


def _dim_size(op, self, dim):
    if self.dim() == 0:
        raise DimError(f"{op}(): expected at least a 1-dimensional tensor (argument 'self')",
                       op=op, arg="self")
    return self.shape[wrap_dim(op, "dim", dim, self.dim())]


def split(self, split_size, dim):
    """Pieces of split_size along dim (the last may be smaller)."""
    n = _dim_size("split", self, dim)
    if split_size < 0 or (split_size == 0 and n != 0):
        raise ArgumentError(f"split(): argument 'split_size' must be positive (or 0 for an "
                            f"empty dim), but got {split_size} for a dim of size {n}",
                            op="split", arg="split_size")
    count = max(1, -(-n // split_size)) if split_size else 1
    sizes = [min(split_size, n - i * split_size) for i in range(count)]
    return mark_multi_output_views(_pieces(self, dim, sizes, "split"))


def split_sizes(self, split_size, dim):
    n = _dim_size("split", self, dim)
    if sum(split_size) != n or any(s < 0 for s in split_size):
        raise ShapeError(f"split(): argument 'split_size' {list(split_size)} must be "
                         f"non-negative and sum to the size of dim {dim} ({n})", op="split",
                         arg="split_size")
    return mark_multi_output_views(_pieces(self, dim, split_size, "split"))


def chunk(self, chunks, dim):
    """At most `chunks` pieces of ceil(n / chunks) elements (fewer when n is small)."""
    if chunks <= 0:
        raise ArgumentError(f"chunk(): argument 'chunks' must be greater than 0, but got "
                            f"{chunks}", op="chunk", arg="chunks")
    n = _dim_size("chunk", self, dim)
    return split(self, max(1, -(-n // chunks)) if n else 0, dim) if n else \
        mark_multi_output_views(_pieces(self, dim, [0] * chunks, "chunk"))


def tensor_split_sections(self, sections, dim):
    """Exactly `sections` pieces; the first n % sections get one element more."""
    if sections <= 0:
        raise ArgumentError(f"tensor_split(): argument 'sections' must be greater than 0, but "
                            f"got {sections}", op="tensor_split", arg="sections")
    n = _dim_size("tensor_split", self, dim)
    base, extra = divmod(n, sections)
    return _pieces(self, dim, [base + (i < extra) for i in range(sections)], "tensor_split")


def tensor_split_indices(self, indices, dim):
    """Pieces between consecutive indices (clamped to the dim; decreasing ones give empty
    pieces), as NumPy's array_split."""
    n = _dim_size("tensor_split", self, dim)
    bounds = [0] + [min(max(i, 0), n) for i in indices] + [n]
    out, d = [], wrap_dim("tensor_split", "dim", dim, self.dim())
    for a, b in zip(bounds[:-1], bounds[1:]):
        out.append(self.narrow(d, a, max(0, b - a)))
    return out


# ---- repeating -------------------------------------------------------------------------
def tile(self, dims):
    """repeat, with `dims` padded by leading 1s when shorter than the tensor's rank."""
    dims = list(dims)
    return self.repeat([1] * (self.dim() - len(dims)) + dims)


# ---- views -----------------------------------------------------------------------------
def movedim(self, source, destination):
    """Move dims `source` to positions `destination`; the others keep their order."""
    n = self.dim()
    if len(source) != len(destination):
        raise ArgumentError(f"movedim(): invalid source or destination dims: 'source' "
                            f"{list(source)} should contain the same number of dims as "
                            f"'destination' {list(destination)}", op="movedim",
                            arg="destination")
    src = reduce_dim_list("movedim", source, n)
    dst = [wrap_dim("movedim", "destination", d, n) for d in destination]
    if len(set(dst)) != len(dst):
        raise DimError(f"movedim(): repeated dim in argument 'destination' {list(destination)}",
                       op="movedim", arg="destination")
    if n == 0:   # (0-dim: dims 0 and -1 are accepted, and there is nothing to move)
        return self.permute([])
    order = [None] * n
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(n) if d not in src)
    order = [next(rest) if o is None else o for o in order]
    return self.permute(order)


def movedim_int(self, source, destination):
    return movedim(self, [source], [destination])


def swapaxes(self, axis0, axis1):
    return self.transpose(axis0, axis1)


def swapdims(self, dim0, dim1):
    return self.transpose(dim0, dim1)


def unflatten(self, dim, sizes):
    """Split dim into `sizes` (one may be -1), as a view."""
    if self.dim() == 0:
        raise DimError(f"unflatten(): Dimension specified as {dim} but tensor has no "
                       f"dimensions (argument 'dim')", op="unflatten", arg="dim")
    d = wrap_dim("unflatten", "dim", dim, self.dim())
    if len(sizes) == 0:
        raise ArgumentError("unflatten(): argument 'sizes' must be non-empty", op="unflatten",
                            arg="sizes")
    n = self.shape[d]
    known = 1
    for s in sizes:
        known *= s if s != -1 else 1
    sizes = [n // known if s == -1 and known else s for s in sizes]
    total = 1
    for s in sizes:
        total *= s
    if total != n:
        raise ShapeError(f"unflatten(): provided sizes {list(sizes)} (argument 'sizes') don't "
                         f"multiply up to the size of dim {dim} ({n}) in the input tensor",
                         op="unflatten", arg="sizes")
    shape = list(self.shape)
    return self.view(shape[:d] + list(sizes) + shape[d + 1:])


def broadcast_to(self, size):
    return self.expand(size)


def broadcast_tensors(tensors):
    sizes = broadcast("broadcast_tensors", [(f"tensors[{i}]", tuple(t.shape))
                                            for i, t in enumerate(tensors)]) if tensors else ()
    return [t.expand(sizes) for t in tensors]
