"""Flash attention on the CPU: the reference the Triton kernels (triton_kernels/attention.py)
are checked against. It computes the same quantities plainly, the whole L x S score matrix
at once (a CPU has the memory; the point here is to be easy to check):

    scores = q @ k^T * scale + mask          (-inf where a bool mask, or causality, hides)
    lse    = logsumexp(scores, -1)           (saved for backward: -inf for a row with
                                              every position hidden)
    P      = exp(scores - lse)               (0 in such a row, as the Composite's
                                              safe softmax gives)
    out    = (P * keep / (1 - p)) @ v        (keep: the dropout mask)

and backward from the saved lse:

    dV = (P * keep')^T @ dO      dP = (dO @ v^T) * keep'      (keep' = keep / (1 - p))
    dS = P * (dP - rowsum(dO * out))          dQ = dS @ k * scale     dK = dS^T @ q * scale

Grouped-query attention: query head h reads key/value head h // (H / Hk); the gradients
of a key/value head sum over its query heads.
"""
from __future__ import annotations

import numpy as np

from tensorplay import _dtype as dt
from tensorplay._random import draw_seed
from tensorplay.kernel_support.ops import shape_rule
from cpu_kernels._common import out as as_tensor   # `out` is the backward's argument


def _acc(dtype):
    """float64 stays float64; the half types (and float32) compute in float32."""
    return np.float64 if dtype is dt.float64 else np.float32


def _scores(q, k, attn_mask, is_causal, scale):
    """q @ k^T * scale plus the mask (an additive bias, -inf where hidden), laid out key
    first: an (S, B, H, L) array, whose transpose(1, 2, 3, 0) is the (B, H, L, S) score
    tensor.

    NOTE: why key first. The softmax reduces over the keys, and NumPy's reductions over
    the last axis of short rows (S = 32) run a loop per row: a max over (16, 4, 32, 32)
    takes 40x as long as the same max down the first axis of (S, B * H * L), which is one
    vectorized pass per key. The product k @ q^T comes out (B, H, S, L), rows of L
    queries, and the scaling copies those rows into place (faster than BLAS writing
    through the strided view)."""
    B, H, L, _ = q.shape
    S = k.shape[2]
    buf = np.empty((S, B, H, L), q.dtype)
    np.multiply((k @ np.swapaxes(q, -1, -2)).transpose(2, 0, 1, 3),
                np.asarray(scale, q.dtype), out=buf)
    scores = buf.transpose(1, 2, 3, 0)
    if is_causal:
        np.copyto(scores, -np.inf, where=np.arange(L)[:, None] < np.arange(S)[None, :])
    if attn_mask is not None:
        m = attn_mask._impl.array()
        if m.dtype == np.bool_:
            np.copyto(scores, -np.inf, where=~m)
        else:
            scores += m.astype(q.dtype)
    return buf


def keep_mask(seed, offset, shape, dropout_p):
    """The dropout keep mask (True: kept, scaled by 1 / (1 - p)) as a float array, drawn
    from NumPy's Philox at (seed, offset): the same numbers in forward and backward."""
    if dropout_p == 0:
        return None
    draws = np.random.Generator(np.random.Philox(key=seed, counter=offset)).random(shape)
    scale = 0.0 if dropout_p == 1 else 1.0 / (1.0 - dropout_p)
    return (draws >= dropout_p) * scale


def _inputs(query, key, value):
    """query, key and value in the accumulate dtype (views where they already are: read,
    never written), key and value repeated over each group of query heads."""
    acc = _acc(query._impl.dtype)
    q, k, v = (t._impl.array().astype(acc, copy=False) for t in (query, key, value))
    group = q.shape[1] // k.shape[1] if k.shape[1] else 1
    if group == 1:
        return q, k, v, group
    return q, np.repeat(k, group, axis=1), np.repeat(v, group, axis=1), group


def _default_scale(scale, head_dim):
    return scale if scale is not None else 1.0 / np.sqrt(head_dim) if head_dim else 1.0


def flash_attention(query, key, value, dropout_p, is_causal, attn_mask, scale):
    op = "_scaled_dot_product_flash_attention"
    specs = shape_rule("attention.flash_attention")(
        op, (query, key, value, dropout_p, is_causal, attn_mask, scale))
    q, k, v, _ = _inputs(query, key, value)
    buf = _scores(q, k, attn_mask, is_causal, _default_scale(scale, q.shape[-1]))
    B, H, L, _ = q.shape
    keys = buf.reshape(buf.shape[0], -1)       # (S, B * H * L): one column per query row
    # In place on the scores (a fresh array); the fixes for fully hidden (or NaN) rows
    # run only where there is one. The division by the row sums is applied to the output
    # (L x D values a row) rather than to the weights (L x S), as flash attention does.
    with np.errstate(invalid="ignore", divide="ignore"):
        top = np.maximum.reduce(keys, axis=0, initial=-np.inf)
        if np.isneginf(top).any():
            top = np.where(top == -np.inf, 0, top)    # a fully hidden row: exp(-inf) = 0
        e = np.exp(np.subtract(keys, top, out=keys), out=keys)
        total = np.add.reduce(e, axis=0)
        weights = buf.transpose(1, 2, 3, 0)        # unnormalized: exp(scores - top)
        seed = draw_seed() % (2 ** 31 - 1) if dropout_p > 0 else 0
        keep = keep_mask(seed, 0, weights.shape, dropout_p)
        if keep is not None:
            weights = weights * keep
        result = weights @ v
        rows = (B, H, L)
        if (total > 0).all():
            lse = (top + np.log(total)).reshape(rows)
            result /= total.reshape(rows + (1,))
        else:
            ok = (total > 0).reshape(rows + (1,))
            lse = np.where(total > 0, top + np.log(total), -np.inf).reshape(rows)
            result = np.where(ok, result / total.reshape(rows + (1,)), 0)
    return (as_tensor(result, specs[0].dtype), as_tensor(lse, specs[1].dtype),
            as_tensor(np.asarray(seed), dt.int64), as_tensor(np.asarray(0), dt.int64))


def flash_attention_backward(grad_out, query, key, value, out, logsumexp, dropout_p,
                             is_causal, philox_seed, philox_offset, attn_mask, scale):
    op = "_scaled_dot_product_flash_attention_backward"
    shape_rule("attention.flash_attention_backward")(
        op, (grad_out, query, key, value, out, logsumexp, dropout_p, is_causal,
             philox_seed, philox_offset, attn_mask, scale))
    q, k, v, group = _inputs(query, key, value)
    acc = q.dtype
    scale = _default_scale(scale, q.shape[-1])
    g = grad_out._impl.array().astype(acc, copy=False)
    o = out._impl.array().astype(acc, copy=False)
    lse = logsumexp._impl.array().astype(acc, copy=False)[..., None]
    if np.isneginf(lse).any():
        lse = np.where(lse == -np.inf, np.inf, lse)     # a fully hidden row: weights 0
    buf = _scores(q, k, attn_mask, is_causal, scale)      # (S, B, H, L): see _scores
    keys = buf.reshape(buf.shape[0], -1)
    with np.errstate(invalid="ignore"):
        weights = np.exp(np.subtract(keys, lse.reshape(-1), out=keys), out=keys)
    weights_t = buf.transpose(1, 2, 0, 3)        # P^T, (B, H, S, L)
    S, B, H, L = buf.shape
    # (the rng state read from the arrays: .item() would dispatch four ops, and without
    # dropout there is no mask to draw)
    keep = None if dropout_p == 0 else keep_mask(
        int(philox_seed._impl.array()), int(philox_offset._impl.array()), (B, H, L, S),
        dropout_p)
    keep_t = None if keep is None else np.swapaxes(keep, -1, -2)
    grad_v = (weights_t if keep is None else weights_t * keep_t) @ g
    # dP^T = v @ dO^T, (B, H, S, L); dP - delta copied key first like the weights (as
    # _scores copies the scores), so that the products below are flat
    grad_weights_t = v @ np.swapaxes(g, -1, -2)
    if keep is not None:
        grad_weights_t *= keep_t
    delta = np.einsum("bhld,bhld->bhl", g, o)
    d_buf = np.subtract(grad_weights_t.transpose(2, 0, 1, 3), delta, out=np.empty_like(buf))
    grad_scores_t = d_buf.transpose(1, 2, 0, 3)    # (B, H, S, L)
    d_keys = d_buf.reshape(keys.shape)
    d_keys *= weights               # in place: grad_scores = weights * (dP - delta) * scale
    d_keys *= np.asarray(scale, acc)
    grad_q = np.swapaxes(grad_scores_t, -1, -2) @ k
    grad_k = grad_scores_t @ q

    def per_key_head(grad):   # the sum over each key head's group of query heads
        B, H, S, D = grad.shape
        return grad.reshape(B, H // group, group, S, D).sum(2) if group > 1 else grad

    return (as_tensor(grad_q, query._impl.dtype), as_tensor(per_key_head(grad_k), key._impl.dtype),
            as_tensor(per_key_head(grad_v), value._impl.dtype))
