"""View ops: new sizes/strides/offset over the *same* storage, written once for
every backend. A view shares its base's version counter, so an in-place change
through the view is seen by anything autograd saved from the base."""
from __future__ import annotations

import builtins

import numpy as np

from tensorplay import _subclass as subclass
from tensorplay._alloc_limit import check_bytes, check_sizes
from tensorplay._frontdoor import wrap_dim
from tensorplay._impl import TensorImpl, contiguous_strides, numel_of
from tensorplay._memory_format import channels_last, contiguous_format
from tensorplay._subclass import PythonTensorImpl
from tensorplay._tensor import Tensor, _new, wrap
from tensorplay.autograd.api import adopt_view
from tensorplay.autograd.recording import check_inplace
from tensorplay.autograd.view_impl import DEFAULT, mark_multi_output_views, ViewImpl
from tensorplay.errors import ArgumentError, DimError, fmt_shape, ShapeError
from tensorplay.kernel_support.checks import broadcast, reduce_dim_list
from tensorplay.kernel_support.layout import (
    copy_strides, expand_strides, is_in_format, is_row_major, view_strides,
)


def make_view(self, sizes, strides, offset, contiguous=None, dtype=None):
    """A ViewImpl of `self`'s memory wrapped in a Tensor; `contiguous`, when the caller
    knows it, saves ViewImpl the contiguity walk. `dtype`: another element type over the
    same bytes (view_as_real), measured in its own units."""
    src = self._impl
    base = src.base
    if base is None:
        base = src
    # Most callers pass tuples already; the impl's private flag saves a property call.
    if type(sizes) is not tuple:
        sizes = tuple(sizes)
    if type(strides) is not tuple:
        strides = tuple(strides)
    impl = ViewImpl(base, src.storage, sizes, strides, offset, dtype or src.dtype,
                    src._device, src.version, src._inference, contiguous)
    # A view of a view made in no_grad mode or by split/unbind/chunk is made that way too
    # (PyTorch's propagate_creation_meta): a write into its base must then make reading
    # its history raise as for the view it was taken from, not rebase it silently.
    if base is not src and impl.creation == DEFAULT:
        impl.creation = src.creation
    # wrap(impl), without its call (the result of every view takes this line)
    t = _new(Tensor)
    t._impl = impl
    return t


def infer_size(op, shape, numel, arg="size"):
    """Resolve one -1 in `shape` (the argument named `arg`) so that the product is `numel`."""
    # The usual cases in one pass: no negative size and the right product, or one -1 that
    # the other sizes divide `numel` for (`x.view(-1)`, `x.view(n, -1)`). Anything else,
    # the errors included, takes the checks below.
    product = 1
    minus_one = False
    for s in shape:
        if s >= 0:
            product *= s
        elif s == -1 and not minus_one:
            minus_one = True
        else:
            break
    else:
        if not minus_one:
            if product == numel:
                return tuple(shape)
        elif product and numel % product == 0:
            shape = list(shape)
            shape[shape.index(-1)] = numel // product
            return tuple(shape)
    shape = list(shape)
    unknown = [i for i, s in enumerate(shape) if s == -1]
    if len(unknown) > 1:
        raise ShapeError(f"{op}(): only one dimension can be inferred (-1), got "
                         f"{fmt_shape(shape)} as argument '{arg}'", op=op, arg=arg)
    if any(s < -1 for s in shape):
        raise ShapeError(f"{op}(): invalid shape dimension in argument '{arg}' "
                         f"{fmt_shape(shape)}", op=op, arg=arg)
    known = numel_of([s for s in shape if s != -1])
    if unknown:
        if known == 0 or numel % known:
            raise ShapeError(f"{op}(): shape {fmt_shape(shape)} (argument '{arg}') is invalid "
                             f"for input of size {numel}", op=op, arg=arg)
        shape[unknown[0]] = numel // known
    elif known != numel:
        raise ShapeError(f"{op}(): shape {fmt_shape(shape)} (argument '{arg}') is invalid for "
                         f"input of size {numel}", op=op, arg=arg)
    return tuple(shape)


def view(self, size):
    impl = self._impl
    sizes = infer_size("view", size, numel_of(impl.sizes))
    old_strides = impl.strides
    if is_row_major(impl.sizes, old_strides):
        # view_strides' first answer, without its call; the new sizes' row-major strides
        # make a contiguous view, so ViewImpl need not walk them again.
        return make_view(self, sizes, contiguous_strides(sizes), impl.offset, True)
    strides = view_strides(impl.sizes, old_strides, sizes)
    if strides is None:
        raise ShapeError(f"view(): view size {fmt_shape(sizes)} (argument 'size') is not "
                         f"compatible with input tensor's size and stride (at least one "
                         f"dimension spans across two contiguous subspaces). Use .reshape(...) "
                         f"instead.", op="view", arg="size")
    return make_view(self, sizes, strides, impl.offset)


def unsafe_view(self, size):
    """`view`'s memory without its aliasing for autograd (PyTorch's `_unsafe_view`): a
    fresh version counter and no base. Composites use it where PyTorch does, so a write
    into their input after the call goes unnoticed by backward, as in PyTorch."""
    impl = self._impl
    sizes = infer_size("_unsafe_view", size, impl.numel())
    strides = view_strides(impl.sizes, impl.strides, sizes)
    if strides is None:
        raise ShapeError(f"_unsafe_view(): view size {fmt_shape(sizes)} (argument 'size') is "
                         f"not compatible with input tensor's size and stride (at least one "
                         f"dimension spans across two contiguous subspaces)",
                         op="_unsafe_view", arg="size")
    return wrap(TensorImpl(impl.storage, sizes, strides, impl.offset, impl.dtype,
                           impl.device, inference=impl.inference))


def view_as(self, other):
    return self.view(other.shape)


def reshape(self, shape):
    impl = self._impl
    sizes = infer_size("reshape", shape, impl.numel(), arg="shape")
    if view_strides(impl.sizes, impl.strides, sizes) is not None:
        return self.view(sizes)
    return self.clone(memory_format=contiguous_format).view(sizes)


def as_strided(self, size, stride, storage_offset):
    return _as_strided("as_strided", self, size, stride, storage_offset)


def _as_strided(op, self, size, stride, storage_offset):
    """(`op`: as_strided_ checks its arguments here too, under its own name)"""
    if len(size) != len(stride):
        raise ShapeError(f"{op}(): mismatch in length of size {list(size)} and stride "
                         f"{list(stride)} (arguments 'size' and 'stride')", op=op,
                         arg="stride")
    offset = self._impl.offset if storage_offset is None else storage_offset
    _check_reach(self._impl, tuple(size), tuple(stride), offset, op)
    return make_view(self, size, stride, offset)


def _check_reach(impl, sizes, strides, offset, op="as_strided"):
    """A view may only address its storage: PyTorch's setStorage checks, before any element
    is read through it (a reach past the end would read or write foreign memory). One
    pass over the dims: as_strided is on the path of views made by other ops."""
    last = offset   # the last element addressed, in elements
    for size, stride in zip(sizes, strides):
        if size <= 0 or stride < 0:
            if size < 0:
                check_sizes(op, "size", sizes)
            if stride < 0:
                raise ShapeError(f"{op}(): negative strides are not supported, but "
                                 f"argument 'stride' is {list(strides)}", op=op,
                                 arg="stride")
            if size == 0:
                last = -1   # no element: any strides and offset fit
        elif last >= 0:
            last += (size - 1) * stride
    if offset < 0:
        raise ShapeError(f"{op}(): invalid storage offset {offset} (argument "
                         f"'storage_offset' must be non-negative)", op=op,
                         arg="storage_offset")
    itemsize = impl.dtype.itemsize
    if (last + 1) * itemsize > impl.storage.nbytes:
        raise ShapeError(f"{op}(): sizes {list(sizes)} (argument 'size'), strides "
                         f"{list(strides)} and "
                         f"storage offset {offset} need a storage of {(last + 1) * itemsize} "
                         f"bytes, but the storage of 'self' holds {impl.storage.nbytes} bytes",
                         op=op, arg="size")


def transpose(self, dim0, dim1):
    impl = self._impl
    n = len(impl.sizes)
    d0, d1 = wrap_dim("transpose", "dim0", dim0, n), wrap_dim("transpose", "dim1", dim1, n)
    if n == 0:
        return make_view(self, (), (), impl.offset)
    sizes, strides = list(impl.sizes), list(impl.strides)
    sizes[d0], sizes[d1] = sizes[d1], sizes[d0]
    strides[d0], strides[d1] = strides[d1], strides[d0]
    return make_view(self, sizes, strides, impl.offset)


def t(self):
    n = len(self._impl.sizes)
    if n > 2:
        raise ShapeError(f"t(): expects a tensor with <= 2 dimensions, but 'self' is {n}D",
                         op="t", arg="self")
    return self.transpose(0, 1) if n == 2 else self.view(self._impl.sizes)


def permute(self, dims):
    impl = self._impl
    n = len(impl.sizes)
    if len(dims) != n:
        raise ShapeError(f"permute(): number of dims in 'dims' ({len(dims)}) doesn't match "
                         f"the tensor's dimension ({n})", op="permute", arg="dims")
    wrapped = [wrap_dim("permute", "dims", d, n) for d in dims]
    if len(set(wrapped)) != n:
        raise DimError(f"permute(): repeated dim in argument 'dims' {list(dims)}", op="permute",
                       arg="dims")
    return make_view(self, [impl.sizes[d] for d in wrapped], [impl.strides[d] for d in wrapped],
                     impl.offset)


def expand(self, size, implicit):
    impl = self._impl
    if not impl.sizes:
        # A 0-dim tensor (SumBackward0's gradient, `grad.expand(self.sizes())`): every dim
        # of `size` is a new leading one. When none is negative the loop below accepts
        # them all, and expand_strides gives each stride 0 (the last dim 0 as broadcast,
        # each dim before it its next dim's size times that 0), so the view is made here.
        for target in size:
            if target < 0:
                break
        else:
            # One dim of stride 0 is contiguous when it holds at most one element
            # (is_contiguous_layout's 1-d case); more dims are left to ViewImpl.
            contiguous = size[0] < 2 if len(size) == 1 else None
            return make_view(self, size, (0,) * len(size), impl.offset, contiguous)
    if len(size) < len(impl.sizes):
        raise ShapeError(f"expand(): the number of sizes provided in argument 'size' "
                         f"({len(size)}) must be greater or equal to the number of dimensions "
                         f"in the tensor ({len(impl.sizes)})", op="expand", arg="size")
    lead = len(size) - len(impl.sizes)
    sizes = []
    for i, target in enumerate(size):
        if i < lead:
            if target < 0:
                raise ShapeError(f"expand(): -1 is not allowed in a leading, non-existing "
                                 f"dimension {i} of argument 'size'", op="expand", arg="size")
            sizes.append(target)
            continue
        have = impl.sizes[i - lead]
        if target == -1:
            target = have
        if have == target or have == 1:
            sizes.append(target)
        else:
            raise ShapeError(f"expand(): the expanded size of the tensor ({target}) must match "
                             f"the existing size ({have}) at non-singleton dimension {i}.  "
                             f"Target sizes: {list(size)}.  Tensor sizes: "
                             f"{list(impl.sizes)} (argument 'size')", op="expand", arg="size")
    return make_view(self, sizes, expand_strides(impl.sizes, impl.strides, sizes), impl.offset)


def expand_as(self, other):
    return self.expand(other.shape)


def squeeze(self):
    impl = self._impl
    keep = [i for i, s in enumerate(impl.sizes) if s != 1]
    return make_view(self, [impl.sizes[i] for i in keep], [impl.strides[i] for i in keep],
                     impl.offset)


def squeeze_dim(self, dim):
    impl = self._impl
    d = wrap_dim("squeeze", "dim", dim, len(impl.sizes))
    if not impl.sizes or impl.sizes[d] != 1:
        return make_view(self, impl.sizes, impl.strides, impl.offset)
    return make_view(self, impl.sizes[:d] + impl.sizes[d + 1:],
                     impl.strides[:d] + impl.strides[d + 1:], impl.offset)


def unsqueeze(self, dim):
    impl = self._impl
    d = wrap_dim("unsqueeze", "dim", dim, len(impl.sizes) + 1)
    stride = impl.sizes[d] * impl.strides[d] if d < len(impl.sizes) else 1
    return make_view(self, impl.sizes[:d] + (1,) + impl.sizes[d:],
                     impl.strides[:d] + (stride,) + impl.strides[d:], impl.offset)


def flatten(self, start_dim, end_dim):
    sizes = self._impl.sizes
    # checked first: a 0-dim tensor takes the dims -1 and 0, as PyTorch's wrap_dim
    s = wrap_dim("flatten", "start_dim", start_dim, len(sizes))
    e = wrap_dim("flatten", "end_dim", end_dim, len(sizes))
    if not sizes:
        return self.reshape((1,))
    if s > e:
        raise DimError(f"flatten(): 'start_dim' cannot come after 'end_dim' ({s} > {e})",
                       op="flatten", arg="start_dim")
    return self.reshape(sizes[:s] + (numel_of(sizes[s:e + 1]),) + sizes[e + 1:])


def narrow(self, dim, start, length):
    sizes = self._impl.sizes
    if not sizes:
        raise DimError("narrow() cannot be applied to a 0-dim tensor (argument 'self').",
                       op="narrow", arg="self")
    d = wrap_dim("narrow", "dim", dim, len(sizes))
    if start < 0:
        start += sizes[d]
    if start < 0 or length < 0 or start + length > sizes[d]:
        raise DimError(f"narrow(): start ({start}) + length ({length}) exceeds dimension size "
                       f"({sizes[d]}) (arguments 'start' and 'length').", op="narrow",
                       arg="length")
    return self.slice(d, start, start + length, 1)


def select(self, dim, index):
    impl = self._impl
    if not impl.sizes:
        raise DimError("select() cannot be applied to a 0-dim tensor (argument 'self').",
                       op="select", arg="self")
    ndim = len(impl.sizes)
    # an int dim in range (x[i] gives 0) is its own wrapped dim: wrap_dim has nothing to do
    d = dim if type(dim) is int and 0 <= dim < ndim else wrap_dim("select", "dim", dim, ndim)
    size = impl.sizes[d]
    if index < -size or index >= size:
        raise DimError(f"select(): index {index} (argument 'index') out of range for tensor of "
                       f"size {fmt_shape(impl.sizes)} at dimension {d}", op="select",
                       arg="index")
    if index < 0:
        index += size
    return make_view(self, impl.sizes[:d] + impl.sizes[d + 1:],
                     impl.strides[:d] + impl.strides[d + 1:], impl.offset + index * impl.strides[d])


def slice(self, dim, start, end, step):  # noqa: A001 - the op's name
    impl = self._impl
    d = wrap_dim("slice", "dim", dim, len(impl.sizes))
    if step <= 0:
        # A typed error naming the argument (x[::-1] raises Python's ValueError in getitem).
        raise ArgumentError(f"slice(): argument 'step' must be greater than zero, but got "
                            f"{step}", op="slice", arg="step")
    size = impl.sizes[d]
    start, end, _ = builtins.slice(start, end, step).indices(size)
    length = max(0, (end - start + step - 1) // step)
    sizes = list(impl.sizes)
    strides = list(impl.strides)
    sizes[d] = length
    strides[d] = impl.strides[d] * step
    return make_view(self, sizes, strides, impl.offset + start * impl.strides[d])


def unbind(self, dim):
    n = self._impl.sizes[wrap_dim("unbind", "dim", dim, len(self._impl.sizes))] \
        if self._impl.sizes else 0
    return mark_multi_output_views(tuple(self.select(dim, i) for i in range(n)))


def contiguous(self, memory_format=None):
    """self if it already is laid out as `memory_format` asks (row-major by default, or
    tp.channels_last), else a copy that is."""
    if memory_format is None or memory_format is contiguous_format:
        return self if self._impl.is_contiguous else self.clone(memory_format=contiguous_format)
    impl = self._impl
    if is_in_format("contiguous", impl.sizes, impl.strides, memory_format):
        return self
    return self.clone(memory_format=memory_format)


def alias(self):
    """A view of all of self: its sizes, strides and offset (aten::alias; PyTorch's
    functionalization copies it as alias_copy)."""
    impl = self._impl
    return make_view(self, impl.sizes, impl.strides, impl.offset)


def detach(self):
    """A tensor sharing data (and version counter) with self, outside the graph. A tensor
    subclass stays of its class (its impl class carries the Python key)."""
    src = self._impl
    python = isinstance(src, PythonTensorImpl)
    impl = (PythonTensorImpl if python else TensorImpl)(
        src.storage, src.sizes, src.strides, src.offset, src.dtype, src.device,
        version=src.version, inference=src.inference, array=src._array)
    if python:
        return subclass.rebuild(type(self), getattr(self, "__dict__", {}), impl)
    return wrap(impl)


def detach_(self):
    impl = self._impl
    if impl.base is not None:
        # As in PyTorch: a view's history is tied to its base's (in-place ops on the view
        # rewrite the base's graph), so it cannot leave the graph on its own.
        raise ArgumentError("detach_(): can't detach views in-place (argument 'self' is a "
                            "view of another tensor); use detach() instead", op="detach_",
                            arg="self")
    impl.grad_fn = None
    impl.set_requires_grad(False)
    return self


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


def as_strided_(self, size, stride, storage_offset):
    """self takes the sizes, strides and storage offset of as_strided(...) of itself."""
    return _in_place(self, "as_strided_",
                     lambda t: _as_strided("as_strided_", t, size, stride, storage_offset))


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
    """Pieces between consecutive indices, each a Python slice `a:b` of the dim (a negative
    index counts from the end, one past the end is clamped, decreasing ones give empty
    pieces), as NumPy's array_split."""
    _dim_size("tensor_split", self, dim)
    bounds = [0] + list(indices) + [None]
    d = wrap_dim("tensor_split", "dim", dim, self.dim())
    return [self.slice(d, a, b, 1) for a, b in zip(bounds[:-1], bounds[1:])]


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
    # a tensor already of the broadcast shape is returned itself, not a view of it, as
    # PyTorch's expand_outplace does (an in-place resize or swapaxes_ of it shows in both)
    return [t if tuple(t.shape) == tuple(sizes) else t.expand(sizes) for t in tensors]


def ravel(self):
    """self as one contiguous dim: PyTorch's contiguous().view(-1), so a view only of a
    contiguous tensor (reshape would also view a uniformly strided one, which ravel
    copies: writing into the result must not change such a tensor)."""
    return self.contiguous().view([-1])


def unfold(self, dimension, size, step):
    """Windows of `size` elements every `step` along `dimension`, as a new last dim (a
    view): (..., n, ...) -> (..., (n - size) // step + 1, ..., size)."""
    op = "unfold"
    ndim = self.dim()
    d = wrap_dim(op, "dimension", dimension, max(ndim, 1))
    length = self.shape[d] if ndim else 1
    if size > length:
        raise ShapeError(f"unfold(): maximum size for tensor at dimension {d} is {length} but "
                         f"size is {size} (argument 'size')", op=op, arg="size")
    if step <= 0:
        raise ArgumentError(f"unfold(): step is {step} but must be > 0 (argument 'step')",
                            op=op, arg="step")
    sizes, strides = list(self.shape), list(self.stride())
    if ndim == 0:
        return self.as_strided([size], [1], self.storage_offset())
    sizes[d] = (length - size) // step + 1
    stride = strides[d]
    strides[d] = stride * step
    return self.as_strided(sizes + [size], strides + [stride], self.storage_offset())


# ---- more views: adjoint, split_with_sizes, numpy's hsplit / vsplit / dsplit --------------
def adjoint(self):
    """The conjugate transpose of the last two dims (for a real tensor, a transposed view)."""
    if self.dim() < 2:
        raise ShapeError(f"adjoint(): expected a matrix or a batch of matrices (argument "
                         f"'self'), but got a {self.dim()}-D tensor", op="adjoint", arg="self")
    return self.transpose(-2, -1).conj()


def split_with_sizes(self, split_sizes, dim):
    """split with a list of sizes, under PyTorch's other name for it (split.sizes calls it
    there)."""
    op = "split_with_sizes"
    n = _dim_size(op, self, dim)
    if sum(split_sizes) != n or any(s < 0 for s in split_sizes):
        raise ShapeError(f"split_with_sizes(): argument 'split_sizes' {list(split_sizes)} must "
                         f"be non-negative and sum exactly to {n} (the size of dim {dim})",
                         op=op, arg="split_sizes")
    return mark_multi_output_views(_pieces(self, dim, split_sizes, op))


def _numpy_split(op, self, least, dim, sections=None, indices=None):
    """NumPy's hsplit / vsplit / dsplit: tensor_split along `dim`, for a tensor of at least
    `least` dims; equal pieces only when a number of sections is given."""
    if self.dim() < least:
        raise DimError(f"{op}(): expected a tensor with at least {least} "
                       f"dimension{'s' if least > 1 else ''} (argument 'self'), but got a "
                       f"tensor with {self.dim()} dimensions", op=op, arg="self")
    if indices is not None:
        return self.tensor_split(list(indices), dim)
    size = self.shape[dim]
    if sections <= 0:
        raise ArgumentError(f"{op}(): argument 'sections' must be greater than 0, but got "
                            f"{sections}", op=op, arg="sections")
    if size % sections:
        raise ShapeError(f"{op}(): attempted to split along dimension {dim}, but the size of "
                         f"the dimension {size} is not divisible by argument 'sections' "
                         f"({sections})", op=op, arg="sections")
    return self.tensor_split(sections, dim)


def hsplit_int(self, sections):
    """Along dim 1 (dim 0 of a 1-D tensor), as np.hsplit."""
    return _numpy_split("hsplit", self, 1, 0 if self.dim() == 1 else 1, sections=sections)


def hsplit_array(self, indices):
    return _numpy_split("hsplit", self, 1, 0 if self.dim() == 1 else 1, indices=indices)


def vsplit_int(self, sections):
    return _numpy_split("vsplit", self, 2, 0, sections=sections)


def vsplit_array(self, indices):
    return _numpy_split("vsplit", self, 2, 0, indices=indices)


def dsplit_int(self, sections):
    return _numpy_split("dsplit", self, 3, 2, sections=sections)


def dsplit_array(self, indices):
    return _numpy_split("dsplit", self, 3, 2, indices=indices)


# ---- resize_: new sizes, contiguous strides, a larger storage when needed -----------------
def _grow_storage(impl, nbytes):
    """A new storage of `nbytes` for `impl` that starts with the bytes of its old one (the
    elements past them are uninitialised, as PyTorch's).

    NOTE: PyTorch grows the storage object itself, so other views of it see the new
    memory; here only the resized tensor moves to the new storage (the others keep the
    old one, which is still valid memory for what they address)."""
    from tensorplay import _cuda_state
    from tensorplay._storage import Storage
    old = impl.storage
    device = impl.device
    if device.type == "meta":
        new = Storage(None, nbytes, device)
    elif device.type == "cpu":
        data = np.empty(-(-nbytes // impl.dtype.itemsize), impl.dtype.np)
        if old.nbytes:
            old_bytes = np.ascontiguousarray(old.data).reshape(-1).view(np.uint8)
            data.view(np.uint8)[:old.nbytes] = old_bytes[:old.nbytes]
        new = Storage(data, nbytes, device)
    else:
        new = _cuda_state.allocate(nbytes, device)
        if old.nbytes:
            new.data[:old.nbytes].copy_(old.data[:old.nbytes])
    impl.storage = new


def resize_(self, size, memory_format=None):
    """self takes `size` (contiguous strides; the same sizes keep their strides), on a
    storage grown to hold them; the elements already there keep their values."""
    return _resize("resize_", self, size, memory_format)


def _resize(op, self, size, memory_format):
    if self.requires_grad:
        raise ArgumentError(f"{op}(): cannot resize a tensor that requires grad (argument "
                            f"'self')", op=op, arg="self")
    sizes = tuple(size)
    check_sizes(op, "size", sizes)
    impl = self._impl
    if memory_format is not None and memory_format is not contiguous_format \
            and memory_format is not channels_last:
        raise ArgumentError(f"{op}(): argument 'memory_format' must be contiguous_format or "
                            f"channels_last, but got {memory_format}", op=op,
                            arg="memory_format")
    if sizes == impl.sizes and (memory_format is None or is_in_format(
            op, sizes, impl.strides, memory_format)):
        return self   # nothing changes (and PyTorch's version counter stays)
    strides = contiguous_strides(sizes) if memory_format is not channels_last \
        else copy_strides(op, sizes, None, channels_last)
    n = numel_of(sizes)
    if n:
        check_bytes(op, "size", sizes, impl.offset + n, impl.dtype.itemsize, impl.device.type)
        nbytes = (impl.offset + n) * impl.dtype.itemsize
        if nbytes > impl.storage.nbytes:
            _grow_storage(impl, nbytes)
    impl.sizes = sizes
    impl.strides = strides
    impl.is_contiguous = is_row_major(sizes, strides)
    impl._array = None        # the cached NumPy view describes the old shape
    impl.version.value += 1   # a write, for autograd's saved tensors, as PyTorch counts it
    return self


def resize_as_(self, the_template, memory_format=None):
    """resize_ to the template's sizes."""
    return _resize("resize_as_", self, the_template.shape, memory_format)
