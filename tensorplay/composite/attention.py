"""scaled_dot_product_attention, composed from matmul, softmax and dropout as PyTorch's
reference ("math") implementation does:

    scores = (query * sqrt(scale)) @ (key^T * sqrt(scale))      (L x S per batch and head)
    scores + mask: a bool mask (or the causal one) becomes 0 where True, -inf where False
    weights = softmax(scores, -1), 0 for a row with every position masked (all -inf)
    out = dropout(weights, dropout_p) @ value

Following its steps also follows what its backward saves: the scaled copies of query
and key and the float mask, not the caller's tensors, so a write into query, key or a
mask after the call does not make backward raise (a write into value does). float16
and bfloat16 inputs are computed in float32, as there. An empty attention (an empty value
or query sequence) returns early, as PyTorch's does, saving none of the inputs.

A call a flash kernel takes (`flash_refusal` says which do) runs
_scaled_dot_product_flash_attention instead: one op with its own backward. On cuda that is
the Triton kernel (triton_kernels/attention.py, no L x S matrix); on the CPU, the calls
PyTorch gives its fused CPU kernel (4-D inputs, no dropout, ...) run the NumPy kernel
(cpu_kernels/attention.py): one node instead of the math path's dozen ops, and it saves
what PyTorch's fused kernel saves (query, key, value, a float mask, the output).
tp.backends.cuda.enable_flash_sdp(False) turns both off, as PyTorch's flag does, leaving
the math path. explain() shows an `sdpa` line naming the path taken.
"""
from __future__ import annotations

import math

from tensorplay import _creation, _dtype as dt
from tensorplay._frontdoor import wrap_number
from tensorplay._generated import functional as F
from tensorplay.autograd.grad_mode import grad_state
from tensorplay.backends import cuda as sdp_switches
from tensorplay.dispatch import trace
from tensorplay.errors import ArgumentError, DTypeError, ShapeError, fmt_shape
from tensorplay.func.batched import BatchedTensor


def _check_inputs(op, query, key, value, attn_mask):
    # PyTorch's validate_sdpa_input checks the dtypes first: query, key and value share
    # one (no promotion), and a mask is bool, float32 or query's dtype; then the ranks.
    if not query.dtype == key.dtype == value.dtype:
        bad = "key" if key.dtype != query.dtype else "value"
        raise DTypeError(f"{op}(): expected 'query', 'key' and 'value' to have the same dtype, "
                         f"but got {query.dtype.name}, {key.dtype.name} and {value.dtype.name} "
                         f"(argument '{bad}')", op=op, arg=bad)
    if attn_mask is not None and attn_mask.dtype not in (dt.bool, dt.float32, query.dtype):
        raise DTypeError(f"{op}(): argument 'attn_mask' must be bool, float32 or query's dtype "
                         f"({query.dtype.name}), but got {attn_mask.dtype.name}", op=op,
                         arg="attn_mask")
    for name, t in (("query", query), ("key", key), ("value", value)):
        if t.dim() < 2:
            raise ShapeError(f"{op}(): argument '{name}' must have at least 2 dimensions "
                             f"(..., L or S, E), but got shape {fmt_shape(t.shape)}", op=op,
                             arg=name)


def _check_shapes(op, query, key, value, attn_mask, is_causal, enable_gqa):
    # What PyTorch's math path refuses (its matmuls, its causal-mask and GQA checks):
    # an empty attention (`_is_empty`) returns before any of it.
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
    if enable_gqa and query.dim() >= 3:
        # (PyTorch checks value's heads too; it dies of a division by zero on 0 heads.)
        for name, t in (("key", key), ("value", value)):
            if not t.shape[-3] or query.shape[-3] % t.shape[-3]:
                raise ShapeError(f"{op}(): with enable_gqa, the query heads "
                                 f"({query.shape[-3]}) must be a multiple of the {name} heads "
                                 f"({t.shape[-3]}) (argument '{name}')", op=op, arg=name)


def _is_empty(query, value):
    """Whether PyTorch's scaled_dot_product_attention returns early (attention.cpp): an
    empty value (batch, heads, key sequence or value head dim 0) or an empty query
    sequence, checked right after validate_sdpa_input. No shape is checked against
    another there, and the mask, is_causal, dropout and enable_gqa are not read. An empty
    query batch with a non-empty value, or an empty query/key head dim (zero scores, a
    uniform softmax), go through the math path."""
    return value.numel() == 0 or query.shape[-2] == 0


def _empty_attention(query, key, value):
    """PyTorch's early return: zeros of shape (*query.shape[:-1], Ev) plus 0 * the sum of
    each input, so that every input gets a gradient (zeros; NaN where an input holds an
    inf or a NaN, and the output is NaN then, as there) and backward saves none of the
    inputs (a later in-place write into value does not make it raise)."""
    shape = tuple(query.shape[:-1]) + (value.shape[-1],)
    out = _creation.zeros(shape, dtype=query.dtype, device=query.device)
    return out + (query.sum() + key.sum() + value.sum()) * 0


def _repeat_heads(t, n):
    """(..., H, S, E) -> (..., H * n, S, E), each head repeated n times in place: PyTorch's
    repeat_interleave, a new tensor even where n is 0 (an expand of it would be a view
    whose save, in the matmul with value, a later write into value would trip)."""
    if n == 1:
        return t
    return F.repeat_interleave(t, n, -3)


def flash_refusal(query, key, value, attn_mask, dropout_p, enable_gqa):
    """Why the flash kernel (_scaled_dot_product_flash_attention) cannot run this call, or
    None when it can. On cuda: PyTorch's sdp_utils checks, adapted to what the Triton
    kernel takes. On the CPU: the calls PyTorch gives its fused CPU kernel
    (sdp_utils_cpp.cpp's use_flash_attention_cpp: 4-D non-empty inputs with one batch
    size, value's head size equal to query's, unit last strides, no dropout, no mask that
    requires grad). Both obey tp.backends.cuda.enable_flash_sdp, as PyTorch's CPU choice
    obeys torch.backends.cuda's flag; with it off the math path runs (the reference)."""
    tensors = (query, key, value)
    devices = {t.device.type for t in tensors}
    if not sdp_switches.flash_sdp_enabled():
        return "turned off by tp.backends.cuda.enable_flash_sdp(False)"
    if devices == {"cpu"}:
        return _cpu_flash_refusal(query, key, value, attn_mask, dropout_p, enable_gqa)
    if devices != {"cuda"}:
        return "not on cuda or the CPU"
    if query.dtype not in (dt.float16, dt.bfloat16, dt.float32):
        return f"dtype {query.dtype.name} (flash: float16, bfloat16, float32)"
    if not all(t.dim() == query.dim() and t.dim() in (3, 4) for t in tensors):
        return "inputs not all 3-D or all 4-D (batch, heads, sequence, head dim)"
    if query.shape[-1] > 256 or value.shape[-1] > 256:
        return "head dim over 256"
    if query.dim() == 4 and not query.shape[0] == key.shape[0] == value.shape[0]:
        return "batch sizes differ (broadcast batch)"
    return _heads_and_mask_refusal(query, key, attn_mask, enable_gqa)


def _cpu_flash_refusal(query, key, value, attn_mask, dropout_p, enable_gqa):
    tensors = (query, key, value)
    if _capturing():
        return "a graph capture (tp.export, tp.compile) records the math path's portable ops"
    if any(isinstance(t, BatchedTensor) for t in tensors):
        return "under tp.vmap (the flash op has no batching rule)"
    if dropout_p > 0:
        return "dropout (PyTorch's CPU flash kernel takes none)"
    if query.dtype not in (dt.float16, dt.bfloat16, dt.float32, dt.float64):
        return f"dtype {query.dtype.name} (flash: float16, bfloat16, float32, float64)"
    if not all(t.dim() == 4 for t in tensors):
        return "inputs not all 4-D (batch, heads, sequence, head dim)"
    if any(t.numel() == 0 for t in tensors):
        return "an empty input"
    if not query.shape[0] == key.shape[0] == value.shape[0]:
        return "batch sizes differ (broadcast batch)"
    if value.shape[-1] != query.shape[-1]:
        return "value's head dim differs from query's"
    if tuple(value.shape[:-1]) != tuple(key.shape[:-1]):
        return "key and value differ in heads or sequence"
    if any(t.stride(-1) != 1 for t in tensors):
        return "an input's last dim is strided"
    return _heads_and_mask_refusal(query, key, attn_mask, enable_gqa)


def _capturing():
    """Whether a capture mode (tp.export's, tp.compile's) records this call: the flash op
    is a NumPy kernel here and has no ONNX translation, so a captured graph takes the
    math path's ops (each of them exportable and lowerable)."""
    from tensorplay.dispatch.python_key import active_modes
    from tensorplay.export.capture import CaptureMode
    return any(isinstance(m, CaptureMode) for m in active_modes())


def _heads_and_mask_refusal(query, key, attn_mask, enable_gqa):
    heads, key_heads = query.shape[-3], key.shape[-3]
    if key_heads != heads and not (enable_gqa and key_heads and heads % key_heads == 0):
        return "key heads differ from query heads without enable_gqa"
    if attn_mask is not None and (attn_mask.dim() > 4 or attn_mask.requires_grad
                                  and grad_state.enabled):
        return "mask with more than 4 dims, or one that requires grad"
    return None


def _flash(query, key, value, attn_mask, dropout_p, is_causal, scale):
    """The flash op on 4-D inputs (a 3-D call gets a batch of one), its output only."""
    if query.dim() == 3:
        query, key, value = (t.unsqueeze(0) for t in (query, key, value))
        return _flash(query, key, value, attn_mask, dropout_p, is_causal, scale).squeeze(0)
    if attn_mask is not None and attn_mask.dtype is dt.bool and query.device.type == "cpu":
        # PyTorch hands its CPU kernel a float copy of a bool mask (0 kept, -inf hidden):
        # the copy, not the caller's mask, is what backward saves.
        zero = _creation.zeros((), dtype=query.dtype, device=query.device)
        attn_mask = F.where(attn_mask, zero, wrap_number(float("-inf"), zero))
    return F._scaled_dot_product_flash_attention(query, key, value, dropout_p, is_causal,
                                                 attn_mask, scale=scale)[0]


def scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, scale,
                                 enable_gqa):
    op = "scaled_dot_product_attention"
    _check_inputs(op, query, key, value, attn_mask)
    if _is_empty(query, value):
        if trace.state.active:
            trace.hop("sdpa", "empty attention: zeros, each input joined by sum() * 0")
        return _empty_attention(query, key, value)
    _check_shapes(op, query, key, value, attn_mask, is_causal, enable_gqa)
    refusal = flash_refusal(query, key, value, attn_mask, dropout_p, enable_gqa)
    if trace.state.active:
        trace.hop("sdpa", "flash attention (_scaled_dot_product_flash_attention)"
                  if refusal is None else f"math path: no flash kernel ({refusal})")
    if refusal is None:
        return _flash(query, key, value, attn_mask, dropout_p, is_causal, scale)
    return _math(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def _math(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa):
    if enable_gqa and query.dim() >= 3:
        key = _repeat_heads(key, query.shape[-3] // key.shape[-3])
        value = _repeat_heads(value, query.shape[-3] // value.shape[-3])
    out_dtype = query.dtype
    if out_dtype in (dt.float16, dt.bfloat16):
        query, key, value = (t.to(dt.float32) for t in (query, key, value))
    if scale is None:
        # (an empty head dim: PyTorch's 1 / sqrt(0) is inf, and the scores are zeros)
        scale = 1 / math.sqrt(query.shape[-1]) if query.shape[-1] else math.inf
    # sqrt(|scale|) on both sides (the sign goes with query), in double as there.
    root = math.sqrt(abs(scale))
    query = query * (-root if scale < 0 else root)
    if is_causal:
        length, source = query.shape[-2], key.shape[-2]
        rows = _creation.arange(length, device=query.device).view((length, 1))
        cols = _creation.arange(source, device=query.device).view((1, source))
        attn_mask = rows >= cols
    if attn_mask is not None and attn_mask.dtype is dt.bool:
        zero = _creation.zeros((), dtype=query.dtype, device=query.device)
        attn_mask = F.where(attn_mask, zero, wrap_number(float("-inf"), zero))
    scores = F.matmul(query, key.transpose(-2, -1) * root)
    if attn_mask is not None:
        scores = scores + attn_mask
    # A row with every position masked (all -inf) is all NaN after softmax: PyTorch's
    # `_safe_softmax` gives 0 there, and a 0 gradient (its backward reads the safe result).
    # Such rows go through softmax as zeros, so no NaN reaches backward either. Any other
    # NaN (an infinite query or key: inf - inf) stays NaN, as in PyTorch.
    masked_row = F.all(scores == float("-inf"), -1, keepdim=True)
    zero = wrap_number(0.0, scores)
    weights = F.where(masked_row, zero, F.softmax(F.where(masked_row, zero, scores), -1))
    if dropout_p > 0:
        weights = F.dropout(weights, dropout_p, True)
    return F.matmul(weights, value).to(out_dtype)
