"""Database entries: scaled_dot_product_attention."""
from __future__ import annotations
import math

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


# ---- flash attention: the fused op and its backward ------------------------------------------
# The reference is the math written with torch ops (PyTorch's own flash op is cuda-only,
# and its CPU twin takes no grouped heads): scores in float32 (float64 for float64), the
# logsumexp of each row (-inf for a row with every key hidden, whose weights are 0).
FLASH_TOL = {tp.float32: (1e-5, 1e-5), tp.float16: (5e-3, 5e-3), tp.bfloat16: (3e-2, 3e-2)}


def _flash_cases(op, device, dtype, requires_grad):
    """(query, key, value, kwargs, name): (B, H, L, E) query, (B, Hk, S, Ev) key/value."""
    rng = rng_for(op.full_name, dtype)
    grad = _grad(dtype, requires_grad)

    def qkv(q_shape, kv_shape, ev=None, layout="contiguous"):
        v_shape = kv_shape[:-1] + (ev or kv_shape[-1],)
        return (make_tensor(q_shape, dtype, device, rng=rng, layout=layout, requires_grad=grad),
                make_tensor(kv_shape, dtype, device, rng=rng, requires_grad=grad),
                make_tensor(v_shape, dtype, device, rng=rng, layout=layout,
                            requires_grad=grad))

    yield (*qkv((1, 2, 3, 4), (1, 2, 5, 4)), {}, "L < S")
    yield (*qkv((2, 1, 5, 4), (2, 1, 3, 4), layout="transposed"), {"is_causal": True},
           "causal L > S, transposed")
    q, k, v = qkv((1, 2, 3, 4), (1, 2, 4, 4), ev=2)
    mask = make_tensor((3, 4), tp.bool, device, rng=rng)
    mask[:, 0] = True
    yield q, k, v, {"attn_mask": mask, "scale": 0.4}, "bool mask, value head dim 2, scale"
    q, k, v = qkv((1, 2, 2, 4), (1, 2, 3, 4))
    yield (q, k, v, {"attn_mask": make_tensor((2, 1, 3), dtype, device, rng=rng)},
           "float mask broadcast over heads")
    q, k, v = qkv((1, 1, 2, 4), (1, 1, 2, 4))
    mask = tp.tensor([[True, False], [False, False]], device=device)
    yield q, k, v, {"attn_mask": mask}, "a fully masked row gives 0"
    yield (*qkv((1, 4, 2, 4), (1, 2, 3, 4)), {}, "grouped query heads")
    yield (*qkv((0, 2, 3, 4), (0, 2, 3, 4)), {}, "empty batch")


def _flash_samples(op, device, dtype, requires_grad):
    for q, k, v, kwargs, name in _flash_cases(op, device, dtype, requires_grad):
        yield S(q, (k, v), kwargs, name=name, grad=q.numel() > 0)


def _scores(q, k, v, is_causal, attn_mask, scale):
    """(k and v with their heads repeated for each query head, the masked scaled scores
    q k^T, the accumulation dtype), in float32 (float64 for float64)."""
    group = q.shape[1] // k.shape[1] if k.shape[1] else 1
    acc = torch.float64 if q.dtype is torch.float64 else torch.float32
    q32, k32, v32 = (t.to(acc) for t in (q, k, v))
    k32, v32 = k32.repeat_interleave(group, 1), v32.repeat_interleave(group, 1)
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q32 @ k32.transpose(-2, -1) * scale
    L, S_ = s.shape[-2:]
    if is_causal:
        attn_mask = torch.ones(L, S_, dtype=torch.bool).tril()
    if attn_mask is not None:
        s = s.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype is torch.bool \
            else s + attn_mask.to(acc)
    return q32, k32, v32, s, acc, scale


class _SavesLikeFlash(torch.autograd.Function):
    """The identity on (output, logsumexp) that saves what PyTorch's flash kernels save
    (derivatives.yaml's _scaled_dot_product_flash_attention_for_cpu: query, key, value,
    output, logsumexp, and the attn_mask its backward takes), so an in-place change of one of them after the call makes the
    backward raise as the real op's does. The math above saves copies (a float32 cast,
    the repeated heads) or nothing of them. The gradient and the tangent of the output
    pass through unchanged; the logsumexp has none."""

    @staticmethod
    def forward(ctx, out, lse, q, k, v, attn_mask):
        out, lse = out.clone(), lse.clone()
        # (and the mask, an argument of its backward too: seed 3028959)
        ctx.save_for_backward(q, k, v, out, lse, *(() if attn_mask is None else (attn_mask,)))
        ctx.mark_non_differentiable(lse)
        return out, lse

    @staticmethod
    def backward(ctx, grad_out, grad_lse):
        ctx.saved_tensors               # (the version check of each saved tensor)
        return grad_out, None, None, None, None, None

    @staticmethod
    def jvp(ctx, out_t, lse_t, q_t, k_t, v_t, mask_t):
        return out_t, None


def _ref_flash(q, k, v, dropout_p=0.0, is_causal=False, attn_mask=None, *, scale=None):
    _, _, v32, s, _, _ = _scores(q, k, v, is_causal, attn_mask, scale)
    lse = torch.logsumexp(s, -1)
    weights = torch.where(lse[..., None] == float("-inf"), 0, torch.exp(s - lse[..., None]))
    zero = torch.zeros((), dtype=torch.int64)
    # The logsumexp is not differentiable (the op's backward ignores its gradient).
    out, lse = _SavesLikeFlash.apply((weights @ v32).to(q.dtype), lse.detach(), q, k, v,
                                     attn_mask)
    return out, lse, zero, zero.clone()


def _ref_flash_backward(g, q, k, v, out, lse, dropout_p, is_causal, seed, offset,
                        attn_mask=None, *, scale=None):
    """The backward FlashAttention defines, from the given output and logsumexp (as
    PyTorch's flash kernels do), in float32 (float64 for float64): P = exp(s - lse),
    dP = dO V^T, dS = P (dP - rowsum(dO * O)), dQ = dS K scale, dK = dS^T Q scale,
    dV = P^T dO, dK and dV summed over the query heads of a key head. (Autograd through
    the forward's math would take rowsum(dO * O) from the unrounded output: in half types
    that differs from the kernels' by the output's rounding.)"""
    q32, k32, v32, s, acc, scale = _scores(q, k, v, is_causal, attn_mask, scale)
    g32, o32 = g.to(acc), out.to(acc)
    lse = lse.to(acc)[..., None]
    p = torch.where(lse == float("-inf"), 0, torch.exp(s - lse))
    ds = p * (g32 @ v32.transpose(-2, -1) - (g32 * o32).sum(-1, keepdim=True))
    dq = ds @ k32 * scale
    dk = ds.transpose(-2, -1) @ q32 * scale
    dv = p.transpose(-2, -1) @ g32
    group = q.shape[1] // k.shape[1] if k.shape[1] else 1

    def per_key_head(t):
        return t.reshape(t.shape[0], k.shape[1], group, *t.shape[2:]).sum(2)
    return dq.to(q.dtype), per_key_head(dk).to(k.dtype), per_key_head(dv).to(v.dtype)


def _flash_backward_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype, "grad")
    for q, k, v, kwargs, name in _flash_cases(op, device, dtype, False):
        out, lse, seed, offset = tp._scaled_dot_product_flash_attention(q, k, v, **kwargs)
        g = make_tensor(tuple(out.shape), dtype, device, rng=rng)
        yield S(g, (q, k, v, out, lse, 0.0, kwargs.get("is_causal", False), seed, offset,
                    kwargs.get("attn_mask")), {"scale": kwargs.get("scale")}, name=name)


def errors_flash(op, device):
    # (torch_raises=False: the reference is the math above, not a PyTorch op that checks.)
    q = _t((1, 2, 3, 4), device=device)
    yield E(S(q, (_t((1, 2, 3, 5), device=device), _t((1, 2, 3, 5), device=device))),
            ShapeError, r"_scaled_dot_product_flash_attention\(\): argument 'key' must have "
            r"shape", arg="key", torch_raises=False)
    yield E(S(_t((2, 3, 4), device=device), (q, q)), ShapeError,
            r"_scaled_dot_product_flash_attention\(\): argument 'query' must be 4-D",
            arg="query", torch_raises=False)
    yield E(S(q, (_t((1, 3, 3, 4), device=device), _t((1, 3, 3, 4), device=device))),
            ShapeError, r"argument 'key' must have shape \(batch 1, heads dividing 2",
            arg="key", torch_raises=False)
    yield E(S(q, (q, q), {"attn_mask": _t((3, 4), device=device), "is_causal": True}),
            ArgumentError, r"argument 'attn_mask' must be None when is_causal=True",
            arg="attn_mask", torch_raises=False)
    yield E(S(q, (q, q), {"dropout_p": 1.5}), ArgumentError,
            r"dropout probability has to be between 0 and 1, but got 1.5 \(argument "
            r"'dropout_p'\)", arg="dropout_p", torch_raises=False)


op_db += [
    OpInfo("_scaled_dot_product_flash_attention", ref=_ref_flash,
           overloads=("_scaled_dot_product_flash_attention",), dtypes=FLOATING,
           sample_inputs_func=_flash_samples, error_inputs_func=errors_flash,
           tolerances=FLASH_TOL,
           # Its logsumexp output is not differentiable: gradcheck (of the output alone)
           # is in tests/triton_backend/test_flash_attention.py.
           gradcheck=False),
    OpInfo("_scaled_dot_product_flash_attention_backward", ref=_ref_flash_backward,
           overloads=("_scaled_dot_product_flash_attention_backward",), dtypes=FLOATING,
           sample_inputs_func=_flash_backward_samples, tolerances=FLASH_TOL,
           # No double backward: its own derivative is not written (PyTorch has none).
           supports_autograd=False),
]
