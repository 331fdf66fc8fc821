"""tp.nn.functional: scaled_dot_product_attention with PyTorch's signature, and
multi_head_attention_forward, the function nn.MultiheadAttention calls (PyTorch's
parameter names, shapes and masks).

Shapes (L: target length, S: source length, N: batch, E: embed_dim, H: num_heads,
D = E / H: head size). Inputs are (L, N, E) ((N, L, E) with batch_first) or unbatched
(L, E). Inside, each head is a batch entry:

    q = query @ W_q.T + b_q            (L, N, E) -> (N * H, L, D)
    k, v likewise from key and value   (S, N, E) -> (N * H, S, D)
    weights = softmax(q @ k^T / sqrt(D) + mask)           (N * H, L, S)
    out = (weights @ v) heads side by side @ W_out.T + b_out          (L, N, E)

Masks follow PyTorch's convention, the opposite of scaled_dot_product_attention's: in a
bool `attn_mask` or `key_padding_mask`, True means "do not attend". Both are turned into
float masks (-inf where True, else 0) and added to the scores; a float mask is added as is.
"""
from __future__ import annotations

import math
import warnings

import tensorplay as tp
from tensorplay import _dtype as dt
from tensorplay._generated import functional as _F
from tensorplay.errors import DTypeError, ShapeError, fmt_shape
from tensorplay.nn._functional_dropout import dropout
from tensorplay.nn._functional_linalg import linear
from tensorplay.nn._functional_padding import pad
from tensorplay.nn._functional_softmax import softmax

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]

_OP = "multi_head_attention_forward"


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    return _F.scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal,
                                           scale=scale, enable_gqa=enable_gqa)


# ---- masks --------------------------------------------------------------------------
def _canonical_mask(mask, mask_name, other_type, other_name, target_type, op=_OP,
                    stacklevel=3):
    """A bool mask becomes a float one (-inf where True, 0 elsewhere) of `target_type`;
    a float mask passes through. Masks of two different dtypes still work (PyTorch warns
    that mixing them is deprecated, and so do we)."""
    if mask is None:
        return None
    if mask.dtype is not dt.bool and not mask.dtype.is_floating_point:
        raise DTypeError(f"{op}(): argument '{mask_name}' must be a bool or floating-point "
                         f"tensor, but got {mask.dtype}", op=op, arg=mask_name)
    if other_type is not None and mask.dtype is not other_type:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. "
                      f"Use same type for both instead.", stacklevel=stacklevel)
    if mask.dtype is dt.bool:
        return tp.zeros_like(mask, dtype=target_type).masked_fill(mask, float("-inf"))
    return mask


def _shape_check(query, key, value, key_padding_mask, attn_mask):
    """Whether the input is batched (3-D query) or not (2-D), with every mask's rank
    checked against it."""
    if query.dim() not in (2, 3):
        raise ShapeError(f"{_OP}(): argument 'query' must be 2-D (L, E) unbatched or 3-D "
                         f"batched, but got shape {fmt_shape(query.shape)}", op=_OP,
                         arg="query")
    batched = query.dim() == 3
    for name, t in (("key", key), ("value", value)):
        if t.dim() != query.dim():
            raise ShapeError(f"{_OP}(): for a {query.dim()}-D query, argument '{name}' must "
                             f"be {query.dim()}-D too, but got shape {fmt_shape(t.shape)}",
                             op=_OP, arg=name)
    if key_padding_mask is not None and key_padding_mask.dim() != query.dim() - 1:
        raise ShapeError(f"{_OP}(): for a {query.dim()}-D query, argument 'key_padding_mask' "
                         f"must be {query.dim() - 1}-D ({'(N, S)' if batched else '(S,)'}), "
                         f"but got shape {fmt_shape(key_padding_mask.shape)}", op=_OP,
                         arg="key_padding_mask")
    if attn_mask is not None and attn_mask.dim() not in (2, 3):
        raise ShapeError(f"{_OP}(): argument 'attn_mask' must be 2-D (L, S) or 3-D "
                         f"(N * num_heads, L, S), but got shape {fmt_shape(attn_mask.shape)}",
                         op=_OP, arg="attn_mask")
    return batched


# ---- projections --------------------------------------------------------------------
def _in_projection_packed(query, key, value, w, b):
    """q, k, v from one packed (3E, E) weight. Self-attention (query is key is value)
    runs one matmul for all three; key is value runs one for k and v together."""
    if key is value and query is key:
        return tuple(linear(query, w, b).chunk(3, -1))
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = b.chunk(3) if b is not None else (None, None, None)
    if key is value:
        w_kv = w[w_q.shape[0]:]
        b_kv = b[w_q.shape[0]:] if b is not None else None
        k, v = linear(key, w_kv, b_kv).chunk(2, -1)
        return linear(query, w_q, b_q), k, v
    return linear(query, w_q, b_q), linear(key, w_k, b_k), linear(value, w_v, b_v)


def _self_attention_heads(x, w, b, num_heads, batch_first):
    """q, k, v of self-attention (query is key is value) straight in the (N, H, L, D)
    layout scaled_dot_product_attention takes: the one packed projection (L, N, 3E) viewed
    as (L, N, 3, H, D) and permuted to (3, N, H, L, D), then unbound ((N, L, 3E) and
    (N, L, 3, H, D) with batch_first). Three views, no copy (the head dim keeps unit
    stride, which the fused kernel wants), and backward stacks the three gradients into
    the projection's in one op (chunk's backward pads each slice to full width and adds
    them)."""
    if batch_first:
        batch, length, embed = x.shape
        proj = linear(x, w, b).view(batch, length, 3, num_heads, embed // num_heads)
        return proj.permute(2, 0, 3, 1, 4).unbind(0)
    length, batch, embed = x.shape
    proj = linear(x, w, b).view(length, batch, 3, num_heads, embed // num_heads)
    return proj.permute(2, 1, 3, 0, 4).unbind(0)


def _sequence_first(query, key, value):
    """(N, L, E) inputs as (L, N, E) views, `key is value` (and `query is key`) still
    true after the transposes where it was: the packed projection takes its one-matmul
    path on it."""
    if key is value:
        if query is key:
            query = key = value = query.transpose(1, 0)
            return query, key, value
        query, key = (x.transpose(1, 0) for x in (query, key))
        return query, key, key
    return tuple(x.transpose(1, 0) for x in (query, key, value))


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads,
                                 in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn,
                                 dropout_p, out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False,
                                 *, batch_first=False):
    """PyTorch's `F.multi_head_attention_forward`: sequence-first inputs (L, N, E), or
    unbatched (L, E). Returns (attn_output, attn_weights); the weights are (N, L, S)
    averaged over heads, (N, H, L, S) per head, or None when need_weights is False.

    batch_first (keyword only, TensorPlay's, which MultiheadAttention(batch_first=True)
    passes): batched inputs and the output are (N, L, E). Self-attention then projects
    and reshapes in that layout (no transposes, nor the copies they cost around the
    products); every other path transposes to (L, N, E) and back, as PyTorch's module does.

    is_causal is a hint that attn_mask is the causal mask: it needs attn_mask, and it
    replaces the mask by scaled_dot_product_attention's own causal masking only where
    nothing else needs the mask (no key_padding_mask, need_weights=False)."""
    batched = _shape_check(query, key, value, key_padding_mask, attn_mask)
    # Self-attention straight to scaled_dot_product_attention: the heads come out of the
    # projection as views in its (N, H, L, D) layout (nothing below reshapes them).
    heads_direct = (batched and not use_separate_proj_weight and query is key is value
                    and not need_weights and bias_k is None and bias_v is None
                    and static_k is None and static_v is None and not add_zero_attn)
    batch_first = batch_first and batched
    transposed = batch_first and not heads_direct
    if transposed:
        query, key, value = _sequence_first(query, key, value)
        batch_first = False
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    if batch_first:
        bsz, tgt_len, embed_dim = query.shape
    else:
        tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[1 if batch_first else 0]

    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask",
                                       attn_mask.dtype if attn_mask is not None else None,
                                       "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise ValueError(f"{_OP}(): is_causal=True needs the causal mask as 'attn_mask' "
                         f"(Transformer.generate_square_subsequent_mask(L) makes one)")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None   # scaled_dot_product_attention applies the causal mask itself
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype)
        if key_padding_mask is not None:
            is_causal = False   # the mask (causal + padding) is added to the scores below

    if embed_dim != embed_dim_to_check:
        raise ShapeError(f"{_OP}(): expected the query's last dimension to be "
                         f"embed_dim={embed_dim_to_check}, but got shape "
                         f"{fmt_shape(query.shape)}", op=_OP, arg="query")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise ValueError(f"{_OP}(): embed_dim {embed_dim} is not divisible by "
                         f"num_heads {num_heads}")
    # Separate projections allow kdim != vdim: then only (S, N) must agree.
    agree = 2 if use_separate_proj_weight else 3
    if tuple(key.shape[:agree]) != tuple(value.shape[:agree]):
        what = " (sequence and batch)" if use_separate_proj_weight else ""
        raise ShapeError(f"{_OP}(): 'key' and 'value' must agree in shape{what}, but got "
                         f"{fmt_shape(key.shape)} and {fmt_shape(value.shape)}", op=_OP,
                         arg="value")

    if heads_direct:
        q, k, v = _self_attention_heads(query, in_proj_weight, in_proj_bias, num_heads,
                                        batch_first)
    elif not use_separate_proj_weight:
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    else:
        b_q, b_k, b_v = in_proj_bias.chunk(3) if in_proj_bias is not None else (None,) * 3
        q = linear(query, q_proj_weight, b_q)
        k = linear(key, k_proj_weight, b_k)
        v = linear(value, v_proj_weight, b_v)

    if attn_mask is not None:
        want = (tgt_len, src_len) if attn_mask.dim() == 2 else \
            (bsz * num_heads, tgt_len, src_len)
        if tuple(attn_mask.shape) != want:
            raise ShapeError(f"{_OP}(): the {attn_mask.dim()}-D attn_mask must have shape "
                             f"{fmt_shape(want)}, but got {fmt_shape(attn_mask.shape)}",
                             op=_OP, arg="attn_mask")
        if attn_mask.dim() == 2:
            attn_mask = attn_mask.unsqueeze(0)

    # bias_k / bias_v: one learned key and value appended to every sequence (S -> S + 1);
    # the masks grow a column of zeros so that it is always attended.
    if (bias_k is None) != (bias_v is None):
        raise ValueError(f"{_OP}(): bias_k and bias_v must be given together")
    if bias_k is not None:
        if static_k is not None or static_v is not None:
            raise ValueError(f"{_OP}(): bias_k/bias_v cannot be added to static_k/static_v")
        k = tp.cat([k, bias_k.repeat(1, bsz, 1)])
        v = tp.cat([v, bias_v.repeat(1, bsz, 1)])
        attn_mask = _pad_last(attn_mask)
        key_padding_mask = _pad_last(key_padding_mask)

    if not heads_direct:
        q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
        k = _heads(k, static_k, "static_k", bsz * num_heads, head_dim)
        v = _heads(v, static_v, "static_v", bsz * num_heads, head_dim)

    if add_zero_attn:   # one all-zero key and value after the rest
        zeros = tp.zeros((bsz * num_heads, 1, head_dim), dtype=k.dtype, device=k.device)
        k = tp.cat([k, zeros], dim=1)
        v = tp.cat([v, zeros], dim=1)
        attn_mask = _pad_last(attn_mask)
        key_padding_mask = _pad_last(key_padding_mask)
    src_len = k.shape[-2]

    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src_len):
            raise ShapeError(f"{_OP}(): argument 'key_padding_mask' must have shape "
                             f"(N, S) = {fmt_shape((bsz, src_len))}, but got "
                             f"{fmt_shape(key_padding_mask.shape)}", op=_OP,
                             arg="key_padding_mask")
        # (N, S) -> (N * H, 1, S): the same row for every head and every query
        key_padding_mask = key_padding_mask.view(bsz, 1, 1, src_len) \
            .expand(bsz, num_heads, 1, src_len).reshape(bsz * num_heads, 1, src_len)
        attn_mask = key_padding_mask if attn_mask is None else attn_mask + key_padding_mask

    if not training:
        dropout_p = 0.0

    if need_weights:
        # The weights are wanted, so they are computed here rather than inside
        # scaled_dot_product_attention (which does not return them).
        q_scaled = q * math.sqrt(1.0 / head_dim)
        if attn_mask is not None:
            scores = tp.baddbmm(attn_mask, q_scaled, k.transpose(-2, -1))
        else:
            scores = tp.bmm(q_scaled, k.transpose(-2, -1))
        weights = softmax(scores, dim=-1)
        if dropout_p > 0.0:
            weights = dropout(weights, p=dropout_p)
        out = tp.bmm(weights, v)                                         # (N * H, L, D)
        out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = linear(out, out_proj_weight, out_proj_bias).view(tgt_len, bsz, embed_dim)
        weights = weights.view(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(dim=1)
        if not batched:
            out = out.squeeze(1)
            weights = weights.squeeze(0)
        return (out.transpose(1, 0) if transposed else out), weights

    if attn_mask is not None:   # (1 or N * H, L, S) -> (1 or N, 1 or H, L, S)
        if attn_mask.shape[0] == 1:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.view(bsz, num_heads, -1, src_len)
    if not heads_direct:
        q = q.view(bsz, num_heads, tgt_len, head_dim)
        k = k.view(bsz, num_heads, src_len, head_dim)
        v = v.view(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    if batch_first:     # (N, H, L, D) -> (N, L, E), projected as it is (linear takes 3-D)
        out = out.permute(0, 2, 1, 3).reshape(bsz, tgt_len, embed_dim)
        return linear(out, out_proj_weight, out_proj_bias), None
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias).view(tgt_len, bsz, embed_dim)
    if not batched:
        out = out.squeeze(1)
    return (out.transpose(1, 0) if transposed else out), None


def _pad_last(mask):
    """One more (zero: attended) column at the end of a float mask, for an added key."""
    return None if mask is None else pad(mask, (0, 1))


def _heads(t, static, name, batch_heads, head_dim):
    """(S, N, E) -> (N * H, S, D), or the caller's precomputed (N * H, S, D) `static`."""
    if static is None:
        return t.reshape(t.shape[0], batch_heads, head_dim).transpose(0, 1)
    if static.shape[0] != batch_heads or static.shape[2] != head_dim:
        raise ShapeError(f"{_OP}(): argument '{name}' must have shape (N * num_heads, S, "
                         f"head_dim) = ({batch_heads}, S, {head_dim}), but got "
                         f"{fmt_shape(static.shape)}", op=_OP, arg=name)
    return static
