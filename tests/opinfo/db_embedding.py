"""Database entries: dropout (its deterministic cases: eval, p=0; the random ones are in
tests/test_nn_layers_dropout.py), embedding, one_hot, cosine_similarity,
pairwise_distance and scaled_dot_product_attention; embedding_bag."""
from __future__ import annotations

import torch

import tensorplay as tp
from tensorplay.errors import ArgumentError, DimError, DTypeError, ShapeError
from opinfo.core import FLOATING, ErrorInput, OpInfo, SampleInput, make_tensor, rng_for

E = ErrorInput
S = SampleInput
TF = torch.nn.functional
F = tp.nn.functional
TOL = {tp.float32: (1e-5, 1e-5), tp.float16: (2e-3, 2e-3), tp.bfloat16: (1.6e-2, 1e-2)}


def _grad(dtype, requires_grad):
    return requires_grad and dtype.is_floating_point


def _t(shape, dtype=tp.float32, device="cpu"):
    return make_tensor(shape, dtype, device, rng=rng_for("misc errors", shape, dtype))


# ---- embedding and one_hot --------------------------------------------------------------
def _embedding_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = _grad(dtype, requires_grad)
    cases = (((2, 3), None, False, "2-D indices, repeats"), ((4,), 1, False, "padding_idx=1"),
             ((), None, False, "0-dim index"), ((3, 2), -2, True, "padding_idx=-2, by freq"),
             ((3, 2), None, True, "scale_grad_by_freq"),
             ((0,), None, False, "no indices"))
    for shape, padding, freq, what in cases:
        w = make_tensor((5, 3), dtype, device, rng=rng, layout="transposed", requires_grad=grad)
        idx = make_tensor(shape, tp.int64, device, rng=rng, low=0, high=5)
        if idx.numel() > 2:
            idx.view(-1)[1] = idx.view(-1)[0].item()   # a repeated index accumulates
        if padding is not None and idx.numel():
            idx.view(-1)[0] = padding % 5
        # The padding row is used but gets no gradient, and scale_grad_by_freq scales the
        # gradient on purpose: finite differences disagree with both.
        yield S(idx, (w,), {"padding_idx": padding, "scale_grad_by_freq": freq}, name=what,
                grad=padding is None and not freq)


def errors_embedding(op, device):
    w = _t((5, 3), device=device)
    yield E(S(tp.tensor([1, 5], device=device), (w,)), DimError,
            r"embedding\(\): index 5 is out of range in argument 'indices'", arg="indices",
            meta=False)
    yield E(S(_t((2,), device=device), (w,)), DTypeError,
            r"embedding\(\): argument 'indices' must be an int64 or int32 tensor",
            arg="indices")
    yield E(S(tp.tensor([1, 2], device=device), (w,), {"sparse": True}), ArgumentError,
            r"embedding\(\): argument 'sparse' must be False", arg="sparse", torch_raises=False)


def _embedding_backward_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    # (No scale_grad_by_freq here: PyTorch's double backward ignores it, ours does not; the
    # embedding entry's gradgradcheck checks ours.)
    for shape, padding, freq in (((2, 3), -1, False), ((4,), 1, False), ((3, 2), 2, False)):
        idx = make_tensor(shape, tp.int64, device, rng=rng, low=0, high=5)
        idx.view(-1)[1] = idx.view(-1)[0].item()
        g = make_tensor(shape + (3,), dtype, device, rng=rng,
                        requires_grad=_grad(dtype, requires_grad))
        yield S(g, (idx, 5, padding, freq), name=f"{list(shape)} padding={padding} freq={freq}")


def _one_hot_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    yield S(make_tensor((2, 3), tp.int64, device, rng=rng, low=0, high=4), (5,), name="2-D")
    yield S(tp.tensor([0, 3, 1], device=device), (), name="inferred", meta=False)
    yield S(tp.tensor(2, device=device), (3,), name="0-dim")
    yield S(tp.zeros(0, dtype=tp.int64, device=device), (4,), name="empty")


def errors_one_hot(op, device):
    yield E(S(tp.tensor([0, -1], device=device), (3,)), DimError,
            r"one_hot\(\): Class values must be non-negative", arg="self", meta=False)
    yield E(S(tp.tensor([0, 3], device=device), (3,)), DimError,
            r"one_hot\(\): Class values must be smaller than num_classes", arg="self",
            meta=False)
    yield E(S(tp.tensor([0.0, 1.0], device=device), (3,)), DTypeError,
            r"one_hot\(\): argument 'self' must be an int64 tensor", arg="self")
    yield E(S(tp.zeros(0, dtype=tp.int64, device=device), ()), ArgumentError,
            r"one_hot\(\): can not infer the total number of classes from an empty tensor",
            arg="num_classes")



# ---- embedding_bag ---------------------------------------------------------------------
# (weight shape, layout, indices, offsets, scale_grad_by_freq, mode, per-sample weights,
# include_last_offset, padding_idx, index dtype): every mode; a float32 sum without padding
# is PyTorch's fast path (offset2bag comes back empty); an empty bag, an empty input.
# NOTE: no scale_grad_by_freq for sum and mean: PyTorch's CPU backward there divides row r
# by the count of the r-th smallest index rather than r's own count; TensorPlay divides by
# r's count, as embedding does (tests/test_nn_embedding_bag.py checks it against that).
BAG_CASES = (
    ((6, 3), "contiguous", [1, 2, 4, 5, 4], [0, 2, 2], False, 0, False, False, -1, tp.int64),
    ((5, 2), "strided", [0, 3, 3, 1, 4, 3], [0, 3, 4], False, 0, True, False, 3, tp.int64),
    ((5, 3), "contiguous", [4, 0, 1, 1, 2, 0], [0, 1, 4, 6], False, 1, False, True, -1,
     tp.int32),
    ((6, 2), "transposed", [1, 2, 5, 1, 0, 3, 3], [0, 4, 4, 5], True, 2, False, False, 1,
     tp.int64),
    ((4, 3), "contiguous", [], [0, 0], False, 1, False, False, -1, tp.int64),
)


def _bag_samples(op, device, dtype, requires_grad, cases=BAG_CASES):
    rng = rng_for(op.full_name, dtype)
    grad = _grad(dtype, requires_grad)
    for shape, layout, idx, off, freq, mode, weighted, last, pad, index in cases:
        w = make_tensor(shape, dtype, device, rng=rng, layout=layout, requires_grad=grad)
        psw = make_tensor((len(idx),), dtype, device, rng=rng, requires_grad=grad) \
            if weighted else None
        args = (tp.tensor(idx, dtype=index, device=device),
                tp.tensor(off, dtype=index, device=device), freq, mode, False, psw, last)
        if op.name == "_embedding_bag" or op.variant == "padding_idx":
            args += (pad,)
        elif pad != -1:
            continue
        yield S(w, args, name=f"{list(shape)} {layout} mode={mode} offsets={off} "
                              f"weighted={weighted} include_last_offset={last} padding={pad}")


def errors_embedding_bag(op, device):
    name = op.name
    w = _t((5, 2), device=device)
    idx, off = tp.tensor([0, 1, 4], device=device), tp.tensor([0, 2], device=device)
    pad = (-1,)
    yield E(S(w, (idx, off, False, 3, False, None, False) + pad), ArgumentError,
            rf"{name}\(\): argument 'mode' must be 0 \(sum\), 1 \(mean\) or 2 \(max\)",
            arg="mode")
    yield E(S(w, (idx, off, False, 1, False, _t((3,), device=device), False) + pad), ArgumentError,
            rf"{name}\(\): argument 'per_sample_weights' is only supported with mode='sum'",
            arg="per_sample_weights")
    yield E(S(w, (idx, off, False, 0, False, _t((2,), device=device), False) + pad), ShapeError,
            rf"{name}\(\): argument 'per_sample_weights' must have the shape of 'indices'",
            arg="per_sample_weights")
    yield E(S(w, (idx, tp.tensor([1, 2], device=device), False, 0, False, None, False) + pad), DimError,
            rf"{name}\(\): offsets\[0\] has to be 0", arg="offsets", meta=False)
    yield E(S(w, (tp.tensor([0, 5], device=device), off[:1], False, 1, False, None, False) + pad), DimError,
            rf"{name}\(\): index 5 is out of range in argument 'indices'", arg="indices",
            meta=False)

def errors_embedding_bag_padding(op, device):
    w = _t((5, 2), device=device)
    idx, off = tp.tensor([0, 1, 4], device=device), tp.tensor([0, 2], device=device)
    yield E(S(w, (idx, off, False, 0, False, None, False, 5)), ArgumentError,
            r"embedding_bag\(\): argument 'padding_idx' must be within the number of "
            r"embeddings, -5 through 4, but got 5", arg="padding_idx", meta=False)


op_db = [
    OpInfo("embedding", op=F.embedding, ref=TF.embedding,
           overloads=("embedding",), dtypes=FLOATING, sample_inputs_func=_embedding_samples,
           error_inputs_func=errors_embedding, tolerances=TOL),
    OpInfo("embedding_dense_backward", ref=torch.ops.aten.embedding_dense_backward,
           overloads=("embedding_dense_backward",), dtypes=FLOATING,
           sample_inputs_func=_embedding_backward_samples),
    OpInfo("one_hot", op=F.one_hot, ref=TF.one_hot, overloads=("one_hot",),
           dtypes=(tp.int64,), supports_autograd=False, sample_inputs_func=_one_hot_samples,
           error_inputs_func=errors_one_hot),
    OpInfo("_embedding_bag", ref=torch._embedding_bag, overloads=("_embedding_bag",),
           dtypes=FLOATING, sample_inputs_func=_bag_samples,
           error_inputs_func=errors_embedding_bag, tolerances=TOL),
    OpInfo("embedding_bag", ref=torch.embedding_bag, overloads=("embedding_bag",),
           dtypes=FLOATING, sample_inputs_func=_bag_samples, tolerances=TOL),
    OpInfo("embedding_bag", variant="padding_idx", ref=torch.embedding_bag,
           overloads=("embedding_bag.padding_idx",), dtypes=FLOATING,
           sample_inputs_func=_bag_samples, error_inputs_func=errors_embedding_bag_padding,
           tolerances=TOL),
]
