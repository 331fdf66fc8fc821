"""Memory overlap: when an in-place write is refused because its result would depend on
the order the elements are written in.

PyTorch's rules (aten/src/ATen/MemoryOverlap.cpp), written once here:

* `has_internal_overlap(t)` (torch's name): NO when `t` is non-overlapping and dense
  (every empty tensor is), YES when some dim of size > 1 has stride 0 (an expanded
  tensor: several elements are one memory location), TOO_HARD otherwise (a
  `as_strided` view whose elements may or may not coincide). Only YES is refused.
* `overlap_status(a, b)` (torch's `get_overlap_status`): FULL for the same tensor, NO
  when either is empty or they share no storage, TOO_HARD unless both are
  non-overlapping and dense; otherwise their memory ranges [begin, end) decide: equal
  ranges with equal strides are FULL, any other intersection PARTIAL.

Three assertions use them, with PyTorch's messages (naming the op and the argument):

    assert_no_internal_overlap(op, t)             refuses has_internal_overlap(t) == YES
    assert_no_partial_overlap(op, out, name, t)   refuses PARTIAL  (x[:3] += x[1:])
    assert_no_overlap(op, out, name, t)           refuses PARTIAL and FULL (x.index_add_(0, i, x))

and each op asks for the ones PyTorch's asks for (where the check is made):

    pointwise in-place ops          check_inplace_overlap: TensorIterator's compute_mem_overlaps,
      (cpu/cuda kernels)            self internal, each other tensor input partial
    copy_ (copy.py kernels)         the same, unless `is_same_data`: a copy onto its own data
                                    returns before any check (Copy.cpp copy_impl)
    cumsum_, cumprod_, addmm_,      internal (the TensorIterator or the copy their kernels
      random fills (meta rules)     write through); addmv_ and baddbmm_ check nothing
    scatter_*, index_add_,          internal, and no overlap with index and src/source
      index_copy_ (meta/indexing)
    masked_scatter_                 internal
    index_fill_                     no overlap with index: one value, so an expanded self is fine
    masked_fill_                    no partial overlap with mask
    index_put_ (x[idx] = v)         no overlap with values and indices, or, written as a
      (meta/indexing)             masked fill (x[mask] = one value), no partial with the mask
    fill_, zero_, tril_, triu_      nothing
    x[basic index] = v (_indexing)  as copy_ or fill_ with a tensor (copy_to): a number too
                                    refuses an expanded view (not on cuda)

A write PyTorch lets through into memory that overlaps itself (TOO_HARD, or an op that
checks nothing) gets values that depend on the order its loops write in: no contract.
Strides and offsets count elements: views of one storage all share its dtype.
"""
from __future__ import annotations

from tensorplay.errors import TensorPlayError

__all__ = ["NO", "YES", "TOO_HARD", "FULL", "PARTIAL", "has_internal_overlap",
           "overlap_status", "assert_no_internal_overlap", "assert_no_partial_overlap",
           "assert_no_overlap", "check_inplace_overlap", "is_same_data", "check_copy_overlap"]

# The answers (MemOverlap and MemOverlapStatus in PyTorch).
NO, YES, TOO_HARD = "no", "yes", "too hard"
FULL, PARTIAL = "full", "partial"


def _numel(sizes):
    n = 1
    for s in sizes:
        n *= s
    return n


def _non_overlapping_and_dense(impl):
    """Every element of a block of numel() slots is addressed exactly once, in some order
    of the dims. An empty tensor counts as dense (PyTorch: it is contiguous)."""
    sizes, strides = impl.sizes, impl.strides
    if _numel(sizes) == 0:
        return True
    expected = 1
    for d in sorted((d for d in range(len(sizes)) if sizes[d] >= 2), key=lambda d: strides[d]):
        if strides[d] != expected:
            return False
        expected *= sizes[d]
    return True


def has_internal_overlap(impl):
    if _non_overlapping_and_dense(impl):
        return NO
    if any(size > 1 and stride == 0 for size, stride in zip(impl.sizes, impl.strides)):
        return YES
    return TOO_HARD


def overlap_status(a, b):
    """How the memory of impls `a` and `b` overlaps (get_overlap_status). Two storages
    are NO at once, the common case (PyTorch answers TOO_HARD first if either is not
    dense: both answers let the write through)."""
    if a is b:
        return FULL
    if a.storage is not b.storage or _numel(a.sizes) == 0 or _numel(b.sizes) == 0:
        return NO
    if not (_non_overlapping_and_dense(a) and _non_overlapping_and_dense(b)):
        return TOO_HARD
    # dense: the elements fill [offset, offset + numel) exactly
    a_end, b_end = a.offset + _numel(a.sizes), b.offset + _numel(b.sizes)
    if a.offset == b.offset and a_end == b_end:
        return FULL if tuple(a.strides) == tuple(b.strides) else PARTIAL
    if a.offset < b_end and b.offset < a_end:
        return PARTIAL
    return NO


def assert_no_internal_overlap(op, t, arg="self"):
    """`t`: a tensor, or anything with its sizes and strides (an autograd Region)."""
    impl = getattr(t, "_impl", t)
    if 0 in impl.strides and has_internal_overlap(impl) is YES:   # YES needs a stride of 0
        raise TensorPlayError(
            f"{op}(): unsupported operation: more than one element of the written-to tensor "
            f"(argument '{arg}') refers to a single memory location. Please clone() the "
            f"tensor before performing the operation.", op=op, arg=arg)


def _refuse_shared(op, name, arg):
    raise TensorPlayError(
        f"{op}(): unsupported operation: some elements of the input tensor (argument "
        f"'{name}') and the written-to tensor (argument '{arg}') refer to a single memory "
        f"location. Please clone() the tensor before performing the operation.",
        op=op, arg=name)


def assert_no_partial_overlap(op, out, name, t, arg="self"):
    """`t` (argument `name`) may share `out`'s memory exactly, or not at all."""
    other = getattr(t, "_impl", None)
    if other is not None and overlap_status(out._impl, other) is PARTIAL:
        _refuse_shared(op, name, arg)


def assert_no_overlap(op, out, name, t, arg="self"):
    """`t` (argument `name`) may not share `out`'s memory, not even exactly."""
    other = getattr(t, "_impl", None)
    if other is not None and overlap_status(out._impl, other) in (PARTIAL, FULL):
        _refuse_shared(op, name, arg)


def check_inplace_overlap(op, self, *inputs):
    """The checks of a pointwise write into `self` (TensorIterator's compute_mem_overlaps):
    `self` has no internal overlap, and each input, given as (name, tensor), is either
    `self` itself or does not overlap it partially. `x *= x` is fine, `x[:3] *= x[1:]` not."""
    assert_no_internal_overlap(op, self)
    for name, t in inputs:
        if getattr(t, "_impl", None) is not self._impl:
            assert_no_partial_overlap(op, self, name, t)


def is_same_data(self, src):
    """Whether `src` is a view of exactly `self`'s elements, so a copy has nothing to do
    (Copy.cpp copy_impl returns before any check: `x.copy_(x)` works on an expanded x)."""
    a, b = self._impl, src._impl
    return a is b or (a.storage is b.storage and a.offset == b.offset and
                      tuple(a.sizes) == tuple(b.sizes) and tuple(a.strides) == tuple(b.strides)
                      and a.dtype is b.dtype)


def check_copy_overlap(op, self, *inputs):
    """copy_'s checks, with check_inplace_overlap's signature (op, self, ("src", src)):
    none when src is self's own data, else those of a pointwise write."""
    (_, src), = inputs
    if not is_same_data(self, src):
        check_inplace_overlap(op, self, *inputs)
