"""Shape and dtype rules of flash attention (_scaled_dot_product_flash_attention and its
backward): 4-D (batch, heads, sequence, head dim) query, key and value, the key/value
heads dividing the query heads (grouped-query attention), a mask that broadcasts to
(batch, heads, L, S)."""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay.errors import ArgumentError, DTypeError, ShapeError, fmt_shape
from tensorplay.kernel_support.checks import OutSpec, broadcast
from tensorplay.meta.dropout import check_probability

# The dtypes the kernels compute (PyTorch's flash kernel takes fp16/bf16 only; fp32 and
# fp64 run the same code with fp32/fp64 dots).
FLASH_DTYPES = (dt.float16, dt.bfloat16, dt.float32, dt.float64)


def lse_dtype(query):
    """The logsumexp is kept in float32 (float64 for float64 inputs): the half types'
    precision would make backward's recomputed weights exp(s - lse) visibly wrong."""
    return dt.float64 if query._impl.dtype is dt.float64 else dt.float32


def _sizes(t):
    return t._impl.sizes


def check_flash_inputs(op, query, key, value, attn_mask, is_causal):
    """The checks both ops share; returns (B, H, L, S, E, Ev)."""
    for name, t in (("query", query), ("key", key), ("value", value)):
        if len(_sizes(t)) != 4:
            raise ShapeError(f"{op}(): argument '{name}' must be 4-D (batch, heads, sequence, "
                             f"head dim), but got shape {fmt_shape(_sizes(t))}", op=op, arg=name)
    if query._impl.dtype not in FLASH_DTYPES:
        raise DTypeError(f"{op}(): argument 'query' must be float16, bfloat16, float32 or "
                         f"float64, but got {query._impl.dtype.name}", op=op, arg="query")
    for name, t in (("key", key), ("value", value)):
        if t._impl.dtype is not query._impl.dtype:
            raise DTypeError(f"{op}(): argument '{name}' must have query's dtype "
                             f"({query._impl.dtype.name}), but got {t._impl.dtype.name}",
                             op=op, arg=name)
    B, H, L, E = _sizes(query)
    Bk, Hk, S, Ek = _sizes(key)
    Bv, Hv, Sv, Ev = _sizes(value)
    if Bk != B or Ek != E or (H % Hk if Hk else H):     # Hk heads must divide H
        raise ShapeError(f"{op}(): argument 'key' must have shape (batch {B}, heads dividing "
                         f"{H}, S, head dim {E}), but got {fmt_shape(_sizes(key))}", op=op,
                         arg="key")
    if (Bv, Hv, Sv) != (B, Hk, S):
        raise ShapeError(f"{op}(): argument 'value' must have shape ({B}, {Hk}, {S}, Ev) like "
                         f"key's, but got {fmt_shape(_sizes(value))}", op=op, arg="value")
    if attn_mask is not None:
        if is_causal:
            raise ArgumentError(f"{op}(): argument 'attn_mask' must be None when "
                                f"is_causal=True", op=op, arg="attn_mask")
        if attn_mask._impl.dtype not in (dt.bool, dt.float32, query._impl.dtype):
            raise DTypeError(f"{op}(): argument 'attn_mask' must be bool, float32 or query's "
                             f"dtype ({query._impl.dtype.name}), but got "
                             f"{attn_mask._impl.dtype.name}", op=op, arg="attn_mask")
        if len(_sizes(attn_mask)) > 4 or broadcast(
                op, [("attn_mask", _sizes(attn_mask)), ("scores", (B, H, L, S))]) \
                != (B, H, L, S):
            raise ShapeError(f"{op}(): argument 'attn_mask' (shape "
                             f"{fmt_shape(_sizes(attn_mask))}) must broadcast to the scores' "
                             f"shape {fmt_shape((B, H, L, S))}", op=op, arg="attn_mask")
    return B, H, L, S, E, Ev


def flash_attention(op, args):
    query, key, value, dropout_p, is_causal, attn_mask, scale = args
    check_probability(op, dropout_p, "dropout_p")
    B, H, L, S, E, Ev = check_flash_inputs(op, query, key, value, attn_mask, is_causal)
    return (OutSpec((B, H, L, Ev), query._impl.dtype), OutSpec((B, H, L), lse_dtype(query)),
            OutSpec((), dt.int64), OutSpec((), dt.int64))


def flash_attention_backward(op, args):
    (grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, philox_seed,
     philox_offset, attn_mask, scale) = args
    check_probability(op, dropout_p, "dropout_p")
    B, H, L, S, E, Ev = check_flash_inputs(op, query, key, value, attn_mask, is_causal)
    for name, t, sizes in (("grad_out", grad_out, (B, H, L, Ev)), ("out", out, (B, H, L, Ev)),
                           ("logsumexp", logsumexp, (B, H, L))):
        if tuple(_sizes(t)) != sizes:
            raise ShapeError(f"{op}(): argument '{name}' must have shape {fmt_shape(sizes)}, "
                             f"but got {fmt_shape(_sizes(t))}", op=op, arg=name)
    return (OutSpec(_sizes(query), query._impl.dtype), OutSpec(_sizes(key), key._impl.dtype),
            OutSpec(_sizes(value), value._impl.dtype))
