"""Backward helper of flash attention (_scaled_dot_product_flash_attention).

Without create_graph its gradients come from its backward op, which recomputes the
attention weights block by block from the saved logsumexp (no L x S matrix is kept). With
create_graph=True (grad mode on during backward) the gradient must itself be recorded, so
it is composed from differentiable ops instead, as the norm formulas do: the weights
recomputed in full, then softmax's and matmul's backward. That path keeps the L x S
weights, as the Composite path does; dropout's mask cannot be recomputed there (it lives in
the kernel's random stream), so a double backward through dropout is not implemented.
"""
from __future__ import annotations

import math

from tensorplay import _creation
from tensorplay._frontdoor import wrap_number
from tensorplay._generated import functional as F
from tensorplay.autograd.formulas.core import not_implemented
from tensorplay.autograd.grad_mode import grad_state


def flash_attention_backward(grad, query, key, value, output, logsumexp, dropout_p, is_causal,
                             philox_seed, philox_offset, attn_mask, scale):
    """(grad_query, grad_key, grad_value) for the gradient `grad` of the output."""
    if not grad_state.enabled:
        return F._scaled_dot_product_flash_attention_backward(
            grad, query, key, value, output, logsumexp, dropout_p, is_causal, philox_seed,
            philox_offset, attn_mask, scale=scale)
    if dropout_p > 0:
        not_implemented("_scaled_dot_product_flash_attention with dropout_p > 0 under "
                        "create_graph=True")
    return _composed_backward(grad, query, key, value, attn_mask, is_causal, scale)


def _composed_backward(grad, query, key, value, attn_mask, is_causal, scale):
    """The same gradients from differentiable ops (float32 for the half types):

        P = softmax(q @ k^T * scale + mask)        (0 in a row with every key hidden)
        dV = P^T @ dO     dS = P * (dP - rowsum(P * dP)), dP = dO @ v^T
        dQ = dS @ k * scale     dK = dS^T @ q * scale
    Grouped heads: key/value repeated over their query heads, the gradients summed back."""
    dtypes = (query.dtype, key.dtype, value.dtype)
    heads, key_heads = query.shape[1], key.shape[1]
    group = heads // key_heads if key_heads else 1
    q, k, v, g = (t.float() if t.dtype.itemsize < 4 else t for t in (query, key, value, grad))
    if group > 1:
        k, v = (t.repeat_interleave(group, 1) for t in (k, v))
    if scale is None:
        scale = 1 / math.sqrt(q.shape[-1]) if q.shape[-1] else 1.0
    scores = F.matmul(q, k.transpose(-2, -1)) * scale
    hidden = None
    if is_causal:
        L, S = scores.shape[-2:]
        rows = _creation.arange(L, device=q.device).view((L, 1))
        cols = _creation.arange(S, device=q.device).view((1, S))
        hidden = rows < cols
    elif attn_mask is not None and attn_mask.dtype.is_floating_point:
        scores = scores + attn_mask
    elif attn_mask is not None:
        hidden = F.logical_not(attn_mask)
    if hidden is not None:
        scores = F.where(hidden, wrap_number(float("-inf"), scores), scores)
    # Safe softmax, as the Composite path's: a fully hidden row gives weights of 0.
    empty_row = F.all(scores == float("-inf"), -1, keepdim=True)
    zero = wrap_number(0.0, scores)
    weights = F.where(empty_row, zero, F.softmax(F.where(empty_row, zero, scores), -1))
    grad_v = F.matmul(weights.transpose(-2, -1), g)
    grad_weights = F.matmul(g, v.transpose(-2, -1))
    grad_scores = weights * (grad_weights - (weights * grad_weights).sum(-1, keepdim=True))
    grad_q = F.matmul(grad_scores, k) * scale
    grad_k = F.matmul(grad_scores.transpose(-2, -1), q) * scale
    if group > 1:
        B, _, S, _ = grad_k.shape
        grad_k = grad_k.reshape((B, key_heads, group, S, grad_k.shape[-1])).sum(2)
        grad_v = grad_v.reshape((B, key_heads, group, S, grad_v.shape[-1])).sum(2)
    return tuple(t.to(d) for t, d in zip((grad_q, grad_k, grad_v), dtypes))
