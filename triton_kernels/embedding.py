"""embedding (a gather of table rows, _indexing.py's walk), its backward (an
atomic-add scatter of the gradient rows) and one_hot on the `cuda` device."""
from __future__ import annotations

import triton
import triton.language as tl

from tensorplay import _dtype as dt
from tensorplay._device_transfer import to_host
from tensorplay.errors import DimError
from tensorplay.kernel_support.ops import call_below_autograd, shape_rule
from tensorplay.kernel_support.results import factory
from cpu_kernels import embedding as cpu_embedding   # its index check: the same error
from triton_kernels._indexing import (
    atomic_dtype, check_in_range, copy_of, gather_walk, value_tensor, zeroed,
)
from triton_kernels._launch import launch, new_tensor, operands, pointer
from triton_kernels.copy import fill_
from triton_kernels.indexing import _strides
from triton_kernels.pointwise import run


# ---- embedding -------------------------------------------------------------------------
def _check_embedding_indices(op, indices, num):
    check_in_range(op, indices, num, 0, arg="indices",
                   raise_from=lambda host: cpu_embedding._indices(op, indices.cpu(), num,
                                                                  "indices"))


def embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse):
    """out[..., :] = weight[indices[...], :]: a gather over [*indices.shape, D]."""
    spec = shape_rule("embedding.embedding")(
        "embedding", (weight, indices, padding_idx, scale_grad_by_freq, sparse))
    device, (w, idx) = operands("embedding", weight=weight, indices=indices)
    num = w._impl.sizes[0]
    _check_embedding_indices("embedding", idx, num)
    out = new_tensor(spec.sizes, spec.dtype, device)
    rank = len(idx._impl.sizes)
    gather_walk(out, w, idx, spec.sizes, _strides(out), [0] * rank + [w._impl.strides[1]],
                _strides(idx) + [0], num, w._impl.strides[0])
    return out


def embedding_dense_backward(grad_output, indices, num_weights, padding_idx,
                             scale_grad_by_freq):
    """grad_weight[indices[i]] += grad_output[i] (/ count[indices[i]]) by atomic adds into
    a float32 (float64) buffer; the padding row is zeroed afterwards."""
    op = "embedding_dense_backward"
    spec = shape_rule("embedding.embedding_dense_backward")(
        op, (grad_output, indices, num_weights, padding_idx, scale_grad_by_freq))
    device, (g, idx) = operands(op, grad_output=grad_output, indices=indices)
    _check_embedding_indices(op, idx, num_weights)
    acc = atomic_dtype(spec.dtype)
    width = g._impl.sizes[-1]
    rows = idx._impl.numel()
    g = g.reshape([rows, width])
    idx = idx.reshape([rows])
    if scale_grad_by_freq and rows:
        counts = zeroed((num_weights,), acc, device)
        one = value_tensor(1, acc, device)
        gather_walk(counts, one, idx, [rows], [0], [0], _strides(idx), num_weights, 1,
                    mode="add")
        per_row = new_tensor((rows, 1), acc, device)
        gather_walk(per_row, counts, idx, [rows], [1], [0], _strides(idx), num_weights, 1)
        g = call_below_autograd("div.Tensor", copy_of(g, acc), per_row)
    result = zeroed((num_weights, width), acc, device)
    gather_walk(result, g, idx, [rows, width], [0, 1], _strides(g), _strides(idx) + [0],
                num_weights, width, mode="add")
    if 0 <= padding_idx < num_weights:
        result.narrow(0, padding_idx, 1).fill_(0)
    return result if acc is spec.dtype else copy_of(result, spec.dtype)


# ---- one_hot / repeat_interleave ---------------------------------------------------------
def one_hot(self, num_classes):
    """out[..., c] = (self[...] == c) as int64: the pointwise `eq` kernel against
    arange(num_classes). The class range is checked on the device (one host sync, which
    num_classes=-1 needs anyway for the output's size)."""
    op = "one_hot"
    shape_rule("embedding.one_hot")(op, (self, num_classes))
    device, (x,) = operands(op, self=self)
    if x._impl.numel():
        bounds = [call_below_autograd("amin", x, (), False),
                  call_below_autograd("amax", x, (), False)]
        low, high = call_below_autograd("stack", bounds, 0).cpu().numpy()    # host sync
        if low < 0:
            raise DimError(f"{op}(): Class values must be non-negative (argument 'self' holds "
                           f"{low})", op=op, arg="self")
        if num_classes == -1:
            num_classes = int(high) + 1
        elif high >= num_classes:
            raise DimError(f"{op}(): Class values must be smaller than num_classes "
                           f"({num_classes}), but argument 'self' holds {high}", op=op,
                           arg="self")
    out = new_tensor(tuple(x._impl.sizes) + (num_classes,), dt.int64, device)
    classes = factory.arange(num_classes, dtype=dt.int64, device=device)
    return run("eq", out, (x.unsqueeze(-1), classes), dt.int64)


# ---- _embedding_bag ----------------------------------------------------------------------
# One program per (bag, block of columns): it walks the bag's indices in order, adding
# (psw *) weight rows, or keeping the running maximum and the row it came from (first on
# ties, as PyTorch's strict >), skipping padding_idx; it also counts the bag and, in its
# first column block, writes offset2bag. The bags' starts are the offsets (the last bag
# runs to the end of the indices, as on the CPU); they are checked on the host (one small
# copy), the indices' range on the device (one sync), before anything is launched.
@triton.jit
def embedding_bag_kernel(
    w_ptr,  # weight (V, D), row stride sw (columns contiguous)
    idx_ptr,  # indices (n,) contiguous
    start_ptr,  # the bags' start offsets (B,) contiguous
    psw_ptr,  # per-sample weights (n,) or a dummy
    out_ptr,  # output (B, D) contiguous, compute dtype
    bag_ptr,  # offset2bag (n,) int64 (written when WRITE_BAG)
    size_ptr,  # bag_size (B,) int64
    max_ptr,  # max_indices (B, D) int64 (max mode)
    n, B, D, sw, padding_idx,
    MODE: tl.constexpr, HAS_PSW: tl.constexpr, WRITE_BAG: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    b = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    cmask = cols < D
    start = tl.load(start_ptr + b).to(tl.int64)
    end = tl.where(b + 1 < B, tl.load(start_ptr + b + 1, mask=b + 1 < B, other=0), n)
    end = end.to(tl.int64)
    acc_dtype = out_ptr.dtype.element_ty
    if MODE == 2:
        acc = tl.full((BLOCK_D,), float("-inf"), acc_dtype)
    else:
        acc = tl.zeros((BLOCK_D,), acc_dtype)
    best = tl.zeros((BLOCK_D,), tl.int64)
    count = start * 0
    for i in range(start, end):
        row = tl.load(idx_ptr + i).to(tl.int64)
        if WRITE_BAG:
            if tl.program_id(1) == 0:
                tl.store(bag_ptr + i, b.to(tl.int64))
        if row != padding_idx:
            value = tl.load(w_ptr + row * sw + cols, mask=cmask, other=0).to(acc_dtype)
            if HAS_PSW:
                value = value * tl.load(psw_ptr + i).to(acc_dtype)
            if MODE == 2:
                better = (value > acc) | (count == 0)
                best = tl.where(better, row, best)
                acc = tl.where(better, value, acc)
            else:
                acc += value
            count += 1
    if MODE == 2:
        acc = tl.where(count > 0, acc, 0.0)
        tl.store(max_ptr + b * D + cols, best, mask=cmask)
    if MODE == 1:
        acc = acc / tl.maximum(count, 1).to(acc_dtype)
    tl.store(out_ptr + b * D + cols, acc, mask=cmask)
    if tl.program_id(1) == 0:
        if MODE == 0:
            count = count * 0       # bag_size is only filled for mean and max
        tl.store(size_ptr + b, count)


def _embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
                   per_sample_weights, include_last_offset, padding_idx):
    """Bags of rows of `weight` reduced by sum, mean or max (see the kernel)."""
    op = "_embedding_bag"
    specs = shape_rule("embedding.embedding_bag")(
        op, (weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
             include_last_offset, padding_idx))
    device, _ = operands(op, weight=weight, indices=indices, offsets=offsets)
    rows, dim = weight._impl.sizes
    n = indices._impl.sizes[0]
    host_offsets = to_host(copy_of(offsets, dt.int64))          # small: checked on the host
    cpu_embedding.bag_of_each_index(op, host_offsets, n, include_last_offset)
    _check_embedding_indices(op, indices, rows)
    bags = specs[0].sizes[0]
    acc = dt.float64 if weight._impl.dtype is dt.float64 else dt.float32
    w = weight if weight._impl.strides[1] == 1 else copy_of(weight)
    idx = copy_of(indices, dt.int64)
    starts = copy_of(offsets.narrow(0, 0, bags), dt.int64)
    psw = copy_of(per_sample_weights, acc) if per_sample_weights is not None else idx
    out = new_tensor((bags, dim), acc, device)
    bag = new_tensor((n,), dt.int64, device)
    size = new_tensor((bags,), dt.int64, device)
    best = zeroed((bags, dim) if mode == 2 else (bags,), dt.int64, device)
    if bags and dim:
        block = min(triton.next_power_of_2(dim), 256)
        launch(op, embedding_bag_kernel, (bags, triton.cdiv(dim, block)), pointer(w),
               pointer(idx), pointer(starts), pointer(psw), pointer(out), pointer(bag),
               pointer(size), pointer(best), n, bags, dim, w._impl.strides[0], padding_idx,
               MODE=mode, HAS_PSW=per_sample_weights is not None,
               WRITE_BAG=specs[1].sizes[0] > 0, BLOCK_D=block)
    elif bags:
        fill_(out, 0)
        fill_(size, 0)
    index = specs[1].dtype
    if mode == 1:
        best = size
    return (copy_of(out, weight._impl.dtype), copy_of(bag.narrow(0, 0, specs[1].sizes[0]),
                                                      index),
            copy_of(size, index), copy_of(best, index))
