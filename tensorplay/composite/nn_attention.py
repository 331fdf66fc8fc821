"""scaled_dot_product_attention, composed from matmul, where, softmax and dropout as
PyTorch's reference ("math") implementation does:

    scores = query @ key^T * scale          (L x S per batch and head)
    scores masked: -inf where a bool mask (or the causal mask) is False; + a float mask
    weights = softmax(scores, -1), 0 for a row with every position masked (all -inf)
    out = dropout(weights, dropout_p) @ value
"""
from __future__ import annotations

import math

from tensorplay import _creation
from tensorplay import _dtype as dt
from tensorplay._frontdoor import wrap_number
from tensorplay._generated import functional as F
from tensorplay.errors import ArgumentError, ShapeError, fmt_shape


def _check(op, query, key, value, attn_mask, is_causal, enable_gqa):
    for name, t in (("query", query), ("key", key), ("value", value)):
        if t.dim() < 2:
            raise ShapeError(f"{op}(): argument '{name}' must have at least 2 dimensions "
                             f"(..., L or S, E), but got shape {fmt_shape(t.shape)}", op=op,
                             arg=name)
    if key.shape[-1] != query.shape[-1]:
        raise ShapeError(f"{op}(): 'query' and 'key' must have the same embedding size, but "
                         f"got {query.shape[-1]} and {key.shape[-1]} (argument 'key')", op=op,
                         arg="key")
    if value.shape[-2] != key.shape[-2]:
        raise ShapeError(f"{op}(): 'key' and 'value' must have the same sequence length, but "
                         f"got {key.shape[-2]} and {value.shape[-2]} (argument 'value')",
                         op=op, arg="value")
    if is_causal and attn_mask is not None:
        raise ArgumentError(f"{op}(): argument 'attn_mask' must be None when is_causal=True",
                            op=op, arg="attn_mask")
    if enable_gqa and query.dim() >= 3 and query.shape[-3] % key.shape[-3]:
        raise ShapeError(f"{op}(): with enable_gqa, the query heads ({query.shape[-3]}) must "
                         f"be a multiple of the key heads ({key.shape[-3]}) (argument 'key')",
                         op=op, arg="key")


def _repeat_heads(t, n):
    """(..., H, S, E) -> (..., H * n, S, E), each head repeated n times in place."""
    if n == 1:
        return t
    shape = tuple(t.shape)
    expanded = t.unsqueeze(-3).expand(shape[:-2] + (n,) + shape[-2:])
    return expanded.reshape(shape[:-3] + (shape[-3] * n,) + shape[-2:])


def scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, scale,
                                 enable_gqa):
    op = "scaled_dot_product_attention"
    _check(op, query, key, value, attn_mask, is_causal, enable_gqa)
    if enable_gqa and query.dim() >= 3:
        key = _repeat_heads(key, query.shape[-3] // key.shape[-3])
        value = _repeat_heads(value, query.shape[-3] // value.shape[-3])
    if scale is None:
        scale = 1 / math.sqrt(query.shape[-1])
    origin = query.dtype
    if origin in (dt.float16, dt.bfloat16):
        # As PyTorch's math path: half types are computed in float32 (the result cast back).
        query, key, value = query.to(dt.float32), key.to(dt.float32), value.to(dt.float32)
    # NOTE: as PyTorch's math path: query and key are each scaled by sqrt(|scale|) before
    # the matmul, and a boolean mask is converted first. So the tensors the graph saves
    # are new ones, never query, key or the mask: an in-place change of one of them after
    # the call does not make backward raise.
    factor = math.sqrt(abs(scale))
    scores = F.matmul(query * (-factor if scale < 0 else factor),
                      key.transpose(-2, -1) * factor)
    neg_inf = wrap_number(float("-inf"), scores)
    if is_causal:
        length, source = query.shape[-2], key.shape[-2]
        rows = _creation.arange(length, device=query.device).view((length, 1))
        cols = _creation.arange(source, device=query.device).view((1, source))
        scores = F.where(rows >= cols, scores, neg_inf)
    if attn_mask is not None:
        if attn_mask.dtype is dt.bool:
            # (a copy: the where's saved condition is then a new tensor, as PyTorch's
            # additive mask made from a boolean one is)
            scores = F.where(attn_mask.clone(), scores, neg_inf)
        else:
            scores = scores + attn_mask
    weights = F.softmax(scores, -1)
    # A row with every position masked (all -inf) is all NaN after softmax: PyTorch's
    # `_safe_softmax` gives 0 there. Any other NaN (an infinite query or key: inf - inf)
    # stays NaN, as in PyTorch.
    masked_row = F.all(scores == float("-inf"), -1, keepdim=True)
    weights = F.where(masked_row, wrap_number(0.0, weights), weights)
    if dropout_p > 0:
        weights = F.dropout(weights, dropout_p, True)
    return F.matmul(weights, value).to(origin)
