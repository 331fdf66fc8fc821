"""Database entries: dropout (its deterministic cases: eval, p=0; the random ones are in
tests/test_nn_layers_dropout.py), embedding, one_hot, cosine_similarity,
pairwise_distance and scaled_dot_product_attention."""
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


# ---- dropout ----------------------------------------------------------------------------
def _dropout_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for shape, layout in (((3, 4), "contiguous"), ((2, 3, 4), "transposed"), ((), "contiguous"),
                          ((0, 2), "contiguous")):
        x = make_tensor(shape, dtype, device, rng=rng, layout=layout,
                        requires_grad=_grad(dtype, requires_grad))
        yield S(x, (), {"p": 0.5, "training": False}, name=f"{list(shape)} eval")
    yield S(make_tensor((3, 4), dtype, device, rng=rng, requires_grad=_grad(dtype, requires_grad)),
            (), {"p": 0.0, "training": True}, name="p=0 training")


def _native_dropout_samples(op, device, dtype, requires_grad):
    for s in _dropout_samples(op, device, dtype, requires_grad):
        if s.input.numel() == 0:
            continue   # PyTorch's mask for an empty input has the input's dtype, not bool
        yield S(s.input, (s.kwargs["p"], s.kwargs["training"]), name=s.name)


def errors_dropout(op, device):
    yield E(S(_t((3,), device=device), (), {"p": 1.5}), ArgumentError,
            r"dropout\(\): dropout probability has to be between 0 and 1, but got 1.5",
            arg="p")


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


# ---- distances --------------------------------------------------------------------------
def _distance_pairs(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = _grad(dtype, requires_grad)
    for a, b, la, lb in (((3, 5), (3, 5), "contiguous", "transposed"),
                         ((2, 3, 4), (3, 4), "strided", "contiguous"),
                         ((4,), (4,), "contiguous", "contiguous"),
                         ((3, 1), (1, 4), "contiguous", "contiguous")):
        yield (make_tensor(a, dtype, device, rng=rng, layout=la, requires_grad=grad),
               make_tensor(b, dtype, device, rng=rng, layout=lb, requires_grad=grad),
               f"{list(a)} and {list(b)}")


def _cosine_samples(op, device, dtype, requires_grad):
    for x1, x2, what in _distance_pairs(op, device, dtype, requires_grad):
        dim = -1 if x1.dim() < 2 or x1.shape[-1] == 4 else 1
        yield S(x1, (x2,), {"dim": dim}, name=f"{what} dim={dim}")
    z = tp.zeros(2, 3, dtype=dtype, device=device)
    yield S(z, (tp.ones(2, 3, dtype=dtype, device=device),), name="zero vector", grad=False)


def _pairwise_samples(op, device, dtype, requires_grad):
    for i, (x1, x2, what) in enumerate(_distance_pairs(op, device, dtype, requires_grad)):
        p, keepdim = ((2.0, False), (1.0, True), (3.0, False), (float("inf"), False))[i]
        yield S(x1, (x2,), {"p": p, "keepdim": keepdim}, name=f"{what} p={p} keepdim={keepdim}")
    x1, x2, what = next(_distance_pairs(op, device, dtype, False))
    yield S(x1, (x2,), {"p": 0.0}, name="p=0 (count)", grad=False)


def errors_pairwise(op, device):
    yield E(S(_t((3, 4), device=device), (_t((5, 4), device=device),)), ShapeError,
            r"pairwise_distance\(\): argument 'x2' \(shape \[5, 4\]\) is not broadcastable",
            arg="x2")


# ---- attention --------------------------------------------------------------------------
def _sdpa_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = _grad(dtype, requires_grad)

    def qkv(q_shape, kv_shape, layout="contiguous"):
        return (make_tensor(q_shape, dtype, device, rng=rng, layout=layout, requires_grad=grad),
                make_tensor(kv_shape, dtype, device, rng=rng, requires_grad=grad),
                make_tensor(kv_shape, dtype, device, rng=rng, requires_grad=grad))

    q, k, v = qkv((2, 3, 2), (2, 4, 2))
    yield S(q, (k, v), name="no mask")
    q, k, v = qkv((1, 2, 3, 2), (1, 2, 3, 2), "transposed")
    yield S(q, (k, v), {"is_causal": True}, name="causal")
    q, k, v = qkv((1, 3, 2), (1, 2, 2))
    yield S(q, (k, v), {"is_causal": True, "scale": 0.3}, name="causal L > S, scale")
    q, k, v = qkv((1, 3, 2), (1, 4, 2))
    mask = make_tensor((3, 4), tp.bool, device, rng=rng)
    mask[:, 0] = True
    yield S(q, (k, v), {"attn_mask": mask}, name="bool mask")
    q, k, v = qkv((2, 2, 3), (2, 3, 3))
    yield S(q, (k, v), {"attn_mask": make_tensor((2, 2, 3), dtype, device, rng=rng)},
            name="float mask")
    q, k, v = qkv((2, 3, 4), (2, 2, 4))
    mask = tp.tensor([[True, False], [False, False], [True, True]], device=device)
    yield S(q, (k, v), {"attn_mask": mask}, name="a fully masked row gives 0", grad=False)
    q = make_tensor((1, 4, 2, 2), dtype, device, rng=rng, requires_grad=grad)
    k = make_tensor((1, 2, 2, 2), dtype, device, rng=rng, requires_grad=grad)
    v = make_tensor((1, 2, 2, 2), dtype, device, rng=rng, requires_grad=grad)
    yield S(q, (k, v), {"enable_gqa": True}, name="grouped query heads")


def errors_sdpa(op, device):
    q = _t((2, 3, 4), device=device)
    yield E(S(q, (_t((2, 3, 5), device=device), _t((2, 3, 5), device=device))), ShapeError,
            r"scaled_dot_product_attention\(\): 'query' and 'key' must have the same embedding",
            arg="key", torch_raises=True)
    yield E(S(q, (q, q), {"attn_mask": tp.ones(3, 3, dtype=tp.bool), "is_causal": True}),
            ArgumentError, r"scaled_dot_product_attention\(\): argument 'attn_mask' must be "
            r"None when is_causal=True", arg="attn_mask")


op_db = [
    OpInfo("dropout", op=F.dropout, ref=TF.dropout, overloads=("dropout",),
           dtypes=FLOATING, sample_inputs_func=_dropout_samples,
           error_inputs_func=errors_dropout),
    OpInfo("native_dropout", overloads=("native_dropout",), dtypes=FLOATING,
           sample_inputs_func=_native_dropout_samples),
    OpInfo("embedding", op=F.embedding, ref=TF.embedding,
           overloads=("embedding",), dtypes=FLOATING, sample_inputs_func=_embedding_samples,
           error_inputs_func=errors_embedding, tolerances=TOL),
    OpInfo("embedding_dense_backward", ref=torch.ops.aten.embedding_dense_backward,
           overloads=("embedding_dense_backward",), dtypes=FLOATING,
           sample_inputs_func=_embedding_backward_samples),
    OpInfo("one_hot", op=F.one_hot, ref=TF.one_hot, overloads=("one_hot",),
           dtypes=(tp.int64,), supports_autograd=False, sample_inputs_func=_one_hot_samples,
           error_inputs_func=errors_one_hot),
    OpInfo("cosine_similarity", op=F.cosine_similarity, ref=TF.cosine_similarity,
           overloads=("cosine_similarity",), dtypes=FLOATING, sample_inputs_func=_cosine_samples,
           tolerances=TOL),
    OpInfo("pairwise_distance", op=F.pairwise_distance, ref=TF.pairwise_distance,
           overloads=("pairwise_distance",), dtypes=FLOATING,
           sample_inputs_func=_pairwise_samples, error_inputs_func=errors_pairwise,
           tolerances=TOL),
    OpInfo("scaled_dot_product_attention", op=F.scaled_dot_product_attention,
           ref=TF.scaled_dot_product_attention, overloads=("scaled_dot_product_attention",),
           dtypes=FLOATING, sample_inputs_func=_sdpa_samples, error_inputs_func=errors_sdpa,
           tolerances=TOL),
]
