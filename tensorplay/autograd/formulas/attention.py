"""Backward helper of flash attention (_scaled_dot_product_flash_attention): its
gradients come from its backward op, which recomputes the attention weights block by
block from the saved logsumexp (no L x S matrix is kept between the passes)."""
from __future__ import annotations

from tensorplay._generated import functional as F


def flash_attention_backward(grad, query, key, value, output, logsumexp, dropout_p, is_causal,
                             philox_seed, philox_offset, attn_mask, scale):
    """(grad_query, grad_key, grad_value) for the gradient `grad` of the output."""
    return F._scaled_dot_product_flash_attention_backward(
        grad, query, key, value, output, logsumexp, dropout_p, is_causal, philox_seed,
        philox_offset, attn_mask, scale=scale)
