"""embedding (a gather of table rows, _indexing.py's walk), its backward (an
atomic-add scatter of the gradient rows) and one_hot on the `cuda` device."""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay.errors import DimError
from tensorplay.kernel_support.ops import call_below_autograd, shape_rule
from tensorplay.kernel_support.results import factory
from cpu_kernels import embedding as cpu_embedding   # its index check: the same error
from triton_kernels._indexing import (
    atomic_dtype, check_in_range, copy_of, gather_walk, value_tensor, zeroed,
)
from triton_kernels._launch import new_tensor, operands
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


# ---- _embedding_bag: on a host copy ------------------------------------------------------
# No Triton kernel yet: the operands go to the host, cpu_kernels/embedding.py's NumPy
# routine runs there, the four results come back. The `tensorplay.dispatch` logger says it
# each call; explain() names this `_on_host` kernel.
def _embedding_bag_on_host(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
                           per_sample_weights, include_last_offset, padding_idx):
    import numpy as np

    from tensorplay._device_transfer import from_host
    from triton_kernels.linalg import _on_host

    op = "_embedding_bag"
    specs = shape_rule("embedding.embedding_bag")(
        op, (weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
             include_last_offset, padding_idx))
    tensors = [weight, indices, offsets] + ([per_sample_weights]
                                            if per_sample_weights is not None else [])
    arrays = _on_host(op, *tensors)
    acc = np.float32 if arrays[0].dtype.itemsize == 2 else arrays[0].dtype
    psw = arrays[3].astype(acc) if per_sample_weights is not None else None
    result, bag, bag_size, max_indices = cpu_embedding.embedding_bag_arrays(
        op, arrays[0].astype(acc), arrays[1].astype(np.int64), arrays[2].astype(np.int64),
        mode, psw, include_last_offset, padding_idx)
    device, index = weight._impl.device, indices._impl.dtype
    return (from_host(result, weight._impl.dtype, device),
            from_host(bag[:specs[1].sizes[0]], index, device),
            from_host(bag_size, index, device), from_host(max_indices, index, device))
