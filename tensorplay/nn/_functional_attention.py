"""tp.nn.functional: scaled_dot_product_attention with PyTorch's signature."""
from __future__ import annotations

from tensorplay._generated import functional as _F

__all__ = ["scaled_dot_product_attention"]


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    return _F.scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal,
                                           scale=scale, enable_gqa=enable_gqa)
