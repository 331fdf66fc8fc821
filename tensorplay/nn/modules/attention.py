"""Multi-head attention: `tp.nn.MultiheadAttention`, with PyTorch's parameter names,
shapes and masks. The computation is `F.multi_head_attention_forward`
(tensorplay/nn/_functional_attention.py, whose docstring draws its shapes and masks)."""
from __future__ import annotations

import tensorplay as tp
from tensorplay.nn import init
from tensorplay.nn._functional_attention import _canonical_mask, multi_head_attention_forward
from tensorplay.nn.modules.linear import NonDynamicallyQuantizableLinear
from tensorplay.nn.modules.module import Module
from tensorplay.nn.parameter import Parameter

__all__ = ["MultiheadAttention", "multi_head_attention_forward"]


# ---- the module ---------------------------------------------------------------------
class MultiheadAttention(Module):
    """Attention over `num_heads` heads of size embed_dim / num_heads (see the module
    docstring for the shapes and the math).

    Parameters, as PyTorch names them: `in_proj_weight` (3E, E) packs W_q, W_k, W_v when
    kdim == vdim == embed_dim; otherwise `q_proj_weight` (E, E), `k_proj_weight` (E, kdim)
    and `v_proj_weight` (E, vdim). `in_proj_bias` (3E) and `out_proj` (a Linear(E, E)),
    and with add_bias_kv, `bias_k` and `bias_v` (1, 1, E).
    """

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"MultiheadAttention(): embed_dim and num_heads must be greater "
                             f"than 0, but got embed_dim={embed_dim} and "
                             f"num_heads={num_heads}")
        if embed_dim % num_heads:
            raise ValueError(f"MultiheadAttention(): embed_dim must be divisible by "
                             f"num_heads, but got embed_dim={embed_dim} and "
                             f"num_heads={num_heads}")
        if not 0.0 <= dropout <= 1.0:
            raise ValueError(f"MultiheadAttention(): dropout must be in [0, 1], but got "
                             f"{dropout}")
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(tp.empty((3 * embed_dim, embed_dim), **factory))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        else:
            self.q_proj_weight = Parameter(tp.empty((embed_dim, embed_dim), **factory))
            self.k_proj_weight = Parameter(tp.empty((embed_dim, self.kdim), **factory))
            self.v_proj_weight = Parameter(tp.empty((embed_dim, self.vdim), **factory))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(tp.empty(3 * embed_dim, **factory))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias,
                                                        **factory)
        if add_bias_kv:
            self.bias_k = Parameter(tp.empty((1, 1, embed_dim), **factory))
            self.bias_v = Parameter(tp.empty((1, 1, embed_dim), **factory))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self):
        """PyTorch's init: xavier_uniform_ projections, zero biases (out_proj's weight
        keeps Linear's own init), xavier_normal_ bias_k / bias_v."""
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            for w in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(w)
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        """(attn_output, attn_weights): see multi_head_attention_forward. With
        batch_first, batched inputs and the output are (N, L, E)."""
        key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask",
                                           attn_mask.dtype if attn_mask is not None
                                           else None, "attn_mask", query.dtype,
                                           op="MultiheadAttention.forward", stacklevel=4)
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype,
                                    op="MultiheadAttention.forward")
        separate = not self._qkv_same_embed_dim
        out, weights = multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight,
            self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn, self.dropout,
            self.out_proj.weight, self.out_proj.bias, training=self.training,
            key_padding_mask=key_padding_mask, need_weights=need_weights,
            attn_mask=attn_mask, use_separate_proj_weight=separate,
            q_proj_weight=self.q_proj_weight, k_proj_weight=self.k_proj_weight,
            v_proj_weight=self.v_proj_weight, average_attn_weights=average_attn_weights,
            is_causal=is_causal, batch_first=self.batch_first)
        return out, weights

    def extra_repr(self):
        return ""   # PyTorch prints only the out_proj child
