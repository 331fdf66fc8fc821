"""The indexing family's kernels on the `cuda` device, and what their launchers share.

Every indexing op is one of three loops over an *iteration shape* W (usually the
index's shape), with three operands walked at their own strides over W:

    index_kernel, MODE="gather":   out[o(w)]                = src[s(w) + idx[x(w)] * dim_stride]
    index_kernel, MODE="scatter":  out[o(w) + idx[x(w)] * dim_stride] = src[s(w)]
    index_kernel, MODE="add":      out[o(w) + idx[x(w)] * dim_stride] += src[s(w)]  (atomic)
    reduce_kernel:                 each program owns destination elements and scans
                                   the source along `dim` (prod/amax/amin/mean)
    compact_kernel:                out[pos[i] - 1] = src[i] (or i) where mask[i]

The operand that `idx` addresses has its stride along `dim` set to 0 in its walk; the
index's value times `dim_stride` takes its place. So gather, _gather_along, take,
index_select and embedding are one kernel (index_select views its index vector as
stride 0 outside `dim`; embedding walks [*indices.shape, D]), and so are scatter,
scatter_add, index_add, index_copy, index_fill and index_put (tensorplay's launchers
in indexing.py and embedding.py build the walks).

Negative indices wrap (`i + dim_size`) in the kernel; whether they are allowed is the
op's business, checked before any launch by `check_in_range` (the interpreter has no
bounds checks, and a GPU's out-of-bounds write corrupts memory silently).

Where this differs from PyTorch's CUDA kernels (and agrees with the CPU backend):
half-type sums accumulate in float32 and round once (PyTorch's fp16 atomics round
after every add); prod/amax/amin/mean are deterministic. As in PyTorch, repeated
indices in a plain scatter (scatter, index_copy, index_put) leave an unspecified one
of the writes on a GPU; the interpreter runs programs in order, so there the last wins.
"""
from __future__ import annotations

import triton
import triton.language as tl

from tensorplay import _dtype as dt
from tensorplay.kernel_support.checks import check_in_range as _check_in_range
from tensorplay.kernel_support.results import TensorImpl, factory, numel_of
from triton_kernels import _math
from triton_kernels._launch import (
    INTERPRETED, coalesce, compute_dtype, launch, needs_wide_index, new_tensor, pointer,
)
from triton_kernels.pointwise import run

BLOCK = 4096 if INTERPRETED else 1024


def block_for(n):
    """Elements per program for n elements. The interpreter pays for every lane of a
    block (it runs each operation on whole NumPy arrays), so small problems get a block
    just large enough; a GPU keeps one block size (one compiled kernel)."""
    if not INTERPRETED:
        return BLOCK
    return min(BLOCK, max(16, triton.next_power_of_2(n)))
# The walks take up to MAX_RANK (coalesced) dimensions; a higher rank is split on the
# host into one launch per leading coordinate (rare: coalescing merges most dims).
MAX_RANK = 4


# ---- kernels ---------------------------------------------------------------------------
@triton.jit
def _step(rest, size, a, sa, b, sb, c, sc):
    """One dimension of the flat-index -> offsets walk (innermost first)."""
    i = rest % size
    return rest // size, a + i * sa, b + i * sb, c + i * sc


@triton.jit
def _offsets(index, size1, size2, size3, a0, a1, a2, a3, b0, b1, b2, b3, c0, c1, c2, c3,
             RANK: tl.constexpr):
    """The offsets of three operands at row-major position `index` of a shape
    [size0, size1, size2, size3][:RANK] (size0 is implied by the element count)."""
    rest = index
    a = index * 0
    b = index * 0
    c = index * 0
    if RANK > 3:
        rest, a, b, c = _step(rest, size3, a, a3, b, b3, c, c3)
    if RANK > 2:
        rest, a, b, c = _step(rest, size2, a, a2, b, b2, c, c2)
    if RANK > 1:
        rest, a, b, c = _step(rest, size1, a, a1, b, b1, c, c1)
    return a + rest * a0, b + rest * b0, c + rest * c0


@triton.jit
def index_kernel(
    out_ptr,  # the result (gather) or the tensor written into (scatter, add)
    src_ptr,  # the tensor read from
    idx_ptr,  # the index, int64 or int32
    n,  # elements of the iteration shape
    dim_size,  # the indexed dimension's size (negative indices wrap by it)
    dim_stride,  # the indexed operand's stride along it
    size1, size2, size3,  # the iteration shape (its first size is implied by n)
    out_s0, out_s1, out_s2, out_s3,  # out's walk strides
    src_s0, src_s1, src_s2, src_s3,  # src's walk strides (0 where broadcast)
    idx_s0, idx_s1, idx_s2, idx_s3,  # idx's walk strides
    MODE: tl.constexpr,  # "gather", "scatter" or "add"
    RANK: tl.constexpr,  # dimensions of the iteration shape, at most 4
    BLOCK: tl.constexpr,  # elements per program
    WIDE_INDEX: tl.constexpr,  # int64 positions, for tensors past 2**31 elements
):
    # Memory traffic: one index read, one element read and one written per position.
    pid = tl.program_id(0)
    if WIDE_INDEX:
        pid = pid.to(tl.int64)
    index = pid * BLOCK + tl.arange(0, BLOCK)
    mask = index < n
    o, s, x = _offsets(index, size1, size2, size3, out_s0, out_s1, out_s2, out_s3,
                       src_s0, src_s1, src_s2, src_s3, idx_s0, idx_s1, idx_s2, idx_s3, RANK)
    i = tl.load(idx_ptr + x, mask=mask, other=0).to(tl.int64)
    i = tl.where(i < 0, i + dim_size, i)
    if MODE == "gather":
        v = tl.load(src_ptr + s + i * dim_stride, mask=mask)
        tl.store(out_ptr + o, _math.convert(v, out_ptr.dtype.element_ty), mask=mask)
    else:
        v = _math.convert(tl.load(src_ptr + s, mask=mask), out_ptr.dtype.element_ty)
        if MODE == "scatter":
            # Repeated indices: one of the writes wins, unspecified which on a GPU (as
            # PyTorch documents for scatter / index_copy / index_put on CUDA).
            tl.store(out_ptr + o + i * dim_stride, v, mask=mask)
        else:
            tl.atomic_add(out_ptr + o + i * dim_stride, v, mask=mask)


@triton.jit
def _combine(acc, v, REDUCE: tl.constexpr):
    if REDUCE == "prod":
        return acc * v
    elif REDUCE == "amax":
        return _math.maximum(acc, v)
    elif REDUCE == "amin":
        return _math.minimum(acc, v)
    else:
        return acc + v


@triton.jit
def reduce_kernel(
    out_ptr,  # the tensor reduced into, in place
    src_ptr,  # the values sent (a 0-dim tensor for scatter.value_reduce)
    idx_ptr,  # the index, int64
    n,  # destination elements walked: the index's shape with `dim` resized to K
    K,  # out's size along dim (the walk's last dimension)
    J,  # the index's size along dim (the scanned length)
    src_dim_stride, idx_dim_stride,  # strides along dim of src and idx
    size1, size2, size3,  # the walk's shape, `dim` last
    out_s0, out_s1, out_s2, out_s3,
    src_s0, src_s1, src_s2, src_s3,  # 0 along the last (dim) dimension
    idx_s0, idx_s1, idx_s2, idx_s3,  # 0 along the last (dim) dimension
    REDUCE: tl.constexpr,  # "prod", "amax", "amin" or "mean"
    INCLUDE_SELF: tl.constexpr,  # whether out's old value joins the reduction
    ACC: tl.constexpr,  # the dtype the reduction is computed in
    RANK: tl.constexpr,
    BLOCK: tl.constexpr,
    WIDE_INDEX: tl.constexpr,
):
    """Deterministic scatter-reduce without atomics (Triton has no atomic multiply, and
    half-type or NaN-propagating max/min do not map onto atomics):

        for each destination out[.., k, ..] this program owns:
            for j in range(J):  if idx[.., j, ..] == k:  acc = combine(acc, src[.., j, ..])

    Cost: every destination element reads its whole line of index and source, so
    K * J reads per line instead of J: fine for the short lines of the selection
    backwards and the database, quadratic for long ones (scatter_add's atomic path has
    no such cost)."""
    pid = tl.program_id(0)
    if WIDE_INDEX:
        pid = pid.to(tl.int64)
    index = pid * BLOCK + tl.arange(0, BLOCK)
    mask = index < n
    o, s, x = _offsets(index, size1, size2, size3, out_s0, out_s1, out_s2, out_s3,
                       src_s0, src_s1, src_s2, src_s3, idx_s0, idx_s1, idx_s2, idx_s3, RANK)
    k = index % K
    acc = tl.zeros([BLOCK], ACC)
    count = tl.zeros([BLOCK], tl.int32)
    for j in range(0, J):
        i = tl.load(idx_ptr + x + j * idx_dim_stride, mask=mask, other=-1).to(tl.int64)
        i = tl.where(i < 0, i + K, i)
        v = _math.convert(tl.load(src_ptr + s + j * src_dim_stride, mask=mask), ACC)
        hit = mask & (i == k)
        acc = tl.where(hit, tl.where(count == 0, v, _combine(acc, v, REDUCE)), acc)
        count += hit.to(tl.int32)
    touched = count > 0                 # untouched destinations keep their value
    old = _math.convert(tl.load(out_ptr + o, mask=mask), ACC)
    if INCLUDE_SELF:
        acc = _combine(old, acc, REDUCE)    # mean combines as a sum
        count += 1
    if REDUCE == "mean":
        divisor = tl.maximum(count, 1).to(ACC)
        if ACC.is_floating():
            acc = acc / divisor
        else:
            q = acc // divisor
            acc = q - (q * divisor > acc).to(ACC)    # floor division, as on the CPU
    result = tl.where(touched, acc, old)
    tl.store(out_ptr + o, _math.convert(result, out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def compact_kernel(
    out_ptr,  # the compacted result, 1-D
    src_ptr,  # the values, contiguous (unused when INDEX)
    keep_ptr,  # the mask, contiguous
    pos_ptr,  # the mask's inclusive running count (cumsum), int64
    n,  # elements of src / mask
    INDEX: tl.constexpr,  # write the element's flat position instead of its value
    BLOCK: tl.constexpr,
    WIDE_INDEX: tl.constexpr,
):
    """out[pos[i] - 1] = src[i] (or i) where keep[i]: the stable compaction after a scan."""
    pid = tl.program_id(0)
    if WIDE_INDEX:
        pid = pid.to(tl.int64)
    i = pid * BLOCK + tl.arange(0, BLOCK)
    inside = i < n
    keep = inside & (tl.load(keep_ptr + i, mask=inside, other=0) != 0)
    p = tl.load(pos_ptr + i, mask=keep, other=1) - 1
    if INDEX:
        v = i.to(tl.int64)
    else:
        v = tl.load(src_ptr + i, mask=keep)
    tl.store(out_ptr + p, _math.convert(v, out_ptr.dtype.element_ty), mask=keep)


@triton.jit
def bounds_kernel(
    idx_ptr,  # the index, contiguous
    n,  # its elements
    low, high,  # the valid range [low, high)
    flag_ptr,  # one int32, set to 1 if any index lies outside
    BLOCK: tl.constexpr,
):
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    inside = i < n
    v = tl.load(idx_ptr + i, mask=inside, other=0)
    bad = inside & ((v < low) | (v >= high))
    tl.atomic_max(flag_ptr, tl.max(bad.to(tl.int32), 0))


# ---- launchers ---------------------------------------------------------------------------
def wide_index(n, *tensors):
    """int64 positions past 2**31 elements; and always in the interpreter, which checks
    every 32-bit integer operation for overflow (NumPy work on each lane) but not 64-bit
    ones: there int64 index math is the faster kind, on a GPU the slower one."""
    return INTERPRETED or needs_wide_index(n, *tensors)


def _shifted(t, delta):
    """t's elements starting `delta` elements further on (a pointer offset, same strides)."""
    impl = t._impl
    return factory.wrap(TensorImpl(impl.storage, impl.sizes, impl.strides, impl.offset + delta,
                                   impl.dtype, impl.device, inference=impl.inference))


def _walk(name, kernel, sizes, tensors, strides, args, meta, keep_last=False):
    """Launch `kernel` over the iteration shape `sizes`, with the three `tensors`
    (out, src, idx) walked at `strides` (one list per tensor). Dimensions are coalesced
    (`keep_last`: the last one stays apart, reduce_kernel reads it as `k`); past MAX_RANK
    dims, one launch per leading coordinate."""
    n = numel_of(sizes)
    if n == 0:
        return
    if keep_last:
        shape, walk = coalesce(sizes[:-1], [st[:-1] for st in strides])
        shape = shape + [sizes[-1]]
        walk = [w + [st[-1]] for w, st in zip(walk, strides)]
    else:
        shape, walk = coalesce(sizes, strides)
    if len(shape) > MAX_RANK:
        for c in range(shape[0]):
            moved = [_shifted(t, c * st[0]) for t, st in zip(tensors, walk)]
            _walk(name, kernel, shape[1:], moved, [st[1:] for st in walk], args, meta,
                  keep_last)
        return
    rank = len(shape)
    pad = [1] * (MAX_RANK - rank)
    flat = [s for st in walk for s in st + [0] * (MAX_RANK - rank)]
    block = block_for(n)
    launch(name, kernel, (triton.cdiv(n, block),), *[pointer(t) for t in tensors], n, *args,
           *(shape + pad)[1:], *flat, RANK=rank, BLOCK=block,
           WIDE_INDEX=wide_index(n, *tensors), **meta)


def gather_walk(out, src, idx, sizes, out_strides, src_strides, idx_strides, dim_size,
                dim_stride, mode="gather"):
    """index_kernel over `sizes` (see the module docstring); `dim_stride` belongs to src
    for a gather and to out for a scatter / add."""
    _walk(f"index_{mode}", index_kernel, list(sizes), (out, src, idx),
          [list(out_strides), list(src_strides), list(idx_strides)], (dim_size, dim_stride),
          dict(MODE=mode))


def reduce_walk(out, src, idx, d, reduce, include_self):
    """reduce_kernel: out[.., idx[.., j, ..], ..] = reduce(src[.., j, ..]) along dim d.
    All three have the same rank; the walk is idx's shape with d resized to out's."""
    K = out._impl.sizes[d]
    J = idx._impl.sizes[d]
    if J == 0:
        return
    isizes = idx._impl.sizes
    order = [i for i in range(len(isizes)) if i != d] + [d]
    sizes = [isizes[i] for i in order[:-1]] + [K]
    strides = []
    for t in (out, src, idx):
        st = t._impl.strides or (0,) * len(isizes)
        strides.append([st[i] for i in order[:-1]] + [st[d] if t is out else 0])
    src_dim_stride = src._impl.strides[d] if src._impl.sizes else 0
    acc = compute_dtype(out._impl.dtype)
    _walk(f"scatter_reduce_{reduce}", reduce_kernel, sizes, (out, src, idx), strides,
          (K, J, src_dim_stride, idx._impl.strides[d]),
          dict(REDUCE=reduce, INCLUDE_SELF=include_self, ACC=acc), keep_last=True)


def compact(out, src, keep, pos, index=False):
    """compact_kernel over contiguous `keep` / `pos` (and `src`)."""
    n = keep._impl.numel()
    if n == 0:
        return out
    block = block_for(n)
    launch("compact", compact_kernel, (triton.cdiv(n, block),), pointer(out),
           pointer(src if src is not None else keep), pointer(keep), pointer(pos), n,
           INDEX=index, BLOCK=block, WIDE_INDEX=wide_index(n, out, keep))
    return out


# ---- what the launchers share ----------------------------------------------------------
def check_in_range(op, index, size, dim, arg="index", allow_negative=False, raise_from=None):
    """Every value of `index` lies in [0, size) ([-size, size) with allow_negative):
    reduced on the device, one host sync for the verdict. Only a failing check copies
    the index to the host, to raise the CPU kernel's own error (`raise_from(host
    array)`, by default kernel_support's check_in_range)."""
    n = index._impl.numel()
    if not n:
        return
    low = -size if allow_negative else 0
    idx = index if index.is_contiguous() else copy_of(index)
    flag = factory.scalar_tensor(0, dtype=dt.int32, device=index._impl.device)
    block = block_for(n)
    launch("bounds", bounds_kernel, (triton.cdiv(n, block),), pointer(idx), n, low, size,
           pointer(flag), BLOCK=block)
    if flag.item():         # host sync: no kernel may run with this index
        host = index.cpu().numpy()
        if raise_from is not None:
            raise_from(host)
        _check_in_range(op, host, size, dim, arg=arg, allow_negative=allow_negative)


def as_1d(t):
    """0-dim tensors are indexed as 1-D tensors of one element (PyTorch's rule)."""
    return t.reshape([1]) if not t._impl.sizes else t


def copy_of(t, dtype=None):
    """A new contiguous tensor with t's values (converted to `dtype`)."""
    out = new_tensor(t._impl.sizes, dtype or t._impl.dtype, t._impl.device)
    return run("copy", out, (t,), t._impl.dtype)


def value_tensor(value, dtype, device):
    """A Python number (or a 0-dim tensor) as a 0-dim `dtype` tensor on `device`, cast
    the way PyTorch casts (2.7 into an int tensor is 2)."""
    if getattr(value, "_impl", None) is not None:
        return value.to(device).to(dtype)
    return factory.scalar_tensor(value, dtype=dtype, device=device)


# Atomic adds exist for these element types; the others accumulate in a wider buffer:
# half types in float32 (one rounding at the end, and no fp16/bf16 atomics on older
# GPUs), small integers and bool in int32 (narrowed afterwards: the same wrap-around).
_ATOMIC = (dt.float32, dt.float64, dt.int32, dt.int64)


def atomic_dtype(dtype):
    if dtype in _ATOMIC:
        return dtype
    return dt.float32 if dtype.is_floating_point else dt.int32


def accumulator(target):
    """(buffer, finish): a tensor the atomic kernel can add into, holding target's values,
    and finish(result) copying it back into `result` when it is not `target` itself."""
    dtype = target._impl.dtype
    if atomic_dtype(dtype) is dtype and target.is_contiguous():
        return target, lambda result: result
    buffer = copy_of(target, atomic_dtype(dtype))

    def finish(result):
        return run("copy", result, (buffer,), buffer._impl.dtype)
    return buffer, finish


def zeroed(sizes, dtype, device):
    out = new_tensor(sizes, dtype, device)
    if out._impl.numel():
        out.fill_(0)
    return out
