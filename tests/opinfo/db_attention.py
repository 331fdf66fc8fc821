"""Database entries: scaled_dot_product_attention."""
from __future__ import annotations
import torch
import tensorplay as tp
from tensorplay.errors import ArgumentError, ShapeError
from opinfo.core import ErrorInput as E, FLOATING, make_tensor, OpInfo, rng_for, SampleInput as S
F = tp.nn.functional
TF = torch.nn.functional
from opinfo.samples import TOL, _grad, _t


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
    OpInfo("scaled_dot_product_attention", op=F.scaled_dot_product_attention,
           ref=TF.scaled_dot_product_attention, overloads=("scaled_dot_product_attention",),
           dtypes=FLOATING, sample_inputs_func=_sdpa_samples, error_inputs_func=errors_sdpa,
           tolerances=TOL),
]
