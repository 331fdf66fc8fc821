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


def _upcast(t):
    """The half types compute in float32 (as the Composite path and the kernels do)."""
    return t.float() if t is not None and t.dtype.itemsize < 4 else t


def _grouped(t, group):
    """Key/value heads repeated over the query heads that read them (grouped heads)."""
    return t if t is None or group == 1 else t.repeat_interleave(group, 1)


def _weights(q, k, attn_mask, is_causal, scale):
    """The attention weights softmax(q @ k^T * scale + mask), in full, from differentiable
    ops: 0 in a row with every key hidden (the Composite path's safe softmax)."""
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
    empty_row = F.all(scores == float("-inf"), -1, keepdim=True)
    zero = wrap_number(0.0, scores)
    return F.where(empty_row, zero, F.softmax(F.where(empty_row, zero, scores), -1))


def _scale(scale, head_dim):
    if scale is not None:
        return scale
    return 1 / math.sqrt(head_dim) if head_dim else 1.0


def _composed_backward(grad, query, key, value, attn_mask, is_causal, scale):
    """The same gradients from differentiable ops:

        P = softmax(q @ k^T * scale + mask)
        dV = P^T @ dO     dS = P * (dP - rowsum(P * dP)), dP = dO @ v^T
        dQ = dS @ k * scale     dK = dS^T @ q * scale
    Grouped heads: the gradients of a key/value head summed over its query heads."""
    dtypes = (query.dtype, key.dtype, value.dtype)
    key_heads = key.shape[1]
    group = query.shape[1] // key_heads if key_heads else 1
    q, g = _upcast(query), _upcast(grad)
    k, v = _grouped(_upcast(key), group), _grouped(_upcast(value), group)
    scale = _scale(scale, q.shape[-1])
    weights = _weights(q, k, attn_mask, is_causal, scale)
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


def flash_attention_jvp(query_p, query_t, key_p, key_t, value_p, value_t, dropout_p, is_causal,
                        attn_mask, scale):
    """The output's tangent (None tangents: inputs without one):

        dS = (dq @ k^T + q @ dk^T) * scale     dP = P * (dS - rowsum(P * dS))
        d out = dP @ v + P @ dv
    The weights are formed in full here (forward mode is not the kernel's path)."""
    if dropout_p > 0:
        not_implemented("forward-mode AD of _scaled_dot_product_flash_attention with "
                        "dropout_p > 0")
    key_heads = key_p.shape[1]
    group = query_p.shape[1] // key_heads if key_heads else 1
    q, k, v = _upcast(query_p), _grouped(_upcast(key_p), group), _grouped(_upcast(value_p), group)
    dq, dk, dv = _upcast(query_t), _grouped(_upcast(key_t), group), _grouped(_upcast(value_t), group)
    scale = _scale(scale, q.shape[-1])
    weights = _weights(q, k, attn_mask, is_causal, scale)
    tangent = None
    if dq is not None or dk is not None:
        d_scores = None
        if dq is not None:
            d_scores = F.matmul(dq, k.transpose(-2, -1)) * scale
        if dk is not None:
            term = F.matmul(q, dk.transpose(-2, -1)) * scale
            d_scores = term if d_scores is None else d_scores + term
        d_weights = weights * (d_scores - (weights * d_scores).sum(-1, keepdim=True))
        tangent = F.matmul(d_weights, v)
    if dv is not None:
        term = F.matmul(weights, dv)
        tangent = term if tangent is None else tangent + term
    return None if tangent is None else tangent.to(query_p.dtype)
