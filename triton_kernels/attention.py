"""Flash attention on the `cuda` device (Triton tutorial 06, "fused attention", with
pointers computed from strides: no block pointers, no TMA, so it runs on triton 3.6-3.9).

Forward, one program per block of BLOCK_M query rows of one (batch, head):

    m = -inf, l = 0, acc = 0                       (per row: running max, sum, output)
    for each block of BLOCK_N keys (causal: only up to the diagonal, later blocks skipped)
        s     = q @ k^T * scale + mask             (BLOCK_M x BLOCK_N, never more)
        m_new = max(m, rowmax(s))
        p     = exp(s - m_new);  alpha = exp(m - m_new)
        l     = l * alpha + rowsum(p)
        acc   = acc * alpha + dropout(p) @ v       (the online softmax: earlier blocks
        m     = m_new                               rescaled to the new max)
    out = acc / l,  lse = m + log(l)               (lse saved for backward)

so memory is O(L + S) per head, not the L x S of the Composite path. Backward recomputes
p = exp(s - lse) block by block, in two kernels after a preprocess:

    delta = rowsum(dO * out)                      flash_delta_kernel
    dK, dV for a block of keys, over all queries  flash_backward_kv_kernel
    dQ for a block of queries, over all keys      flash_backward_q_kernel

(dS = P * (dP - delta), dP = dO @ v^T; each gradient has one program that owns it, so no
atomics). fp16/bf16 operands go to `tl.dot` as they are (tensor cores), fp32 accumulates;
under the interpreter, which gets bf16 dots wrong, they are upcast first (linalg.py's
`_dot_options`, the matmul kernel's rule). Dropout draws Philox numbers (tl.rand) at
(seed, offset + index of the score), the seed and offset read from the two tensors the
forward returns, so backward draws the same mask. Grouped-query attention: query head h
reads key/value head h // GROUP; the dK/dV program of a key head sums over its GROUP query
heads.

A row with every key hidden (a mask of all False) has l = 0: its output is 0 and its lse
-inf, and backward reads that lse as +inf so that p = 0 there, as the Composite path's
safe softmax gives.
"""
from __future__ import annotations

import numpy as np
import triton
import triton.language as tl

from tensorplay import _dtype as dt
from tensorplay._device_transfer import from_host
from tensorplay._random import philox_inputs
from tensorplay.kernel_support.ops import shape_rule
from triton_kernels import _math
from triton_kernels._launch import INTERPRETED, broadcast_strides, launch, new_tensor, \
    operands, pointer
from triton_kernels.linalg import _dot_options

NO_MASK, BOOL_MASK, FLOAT_MASK = 0, 1, 2


@triton.jit
def _scores(q, kT, rows, cols, mask_ptr, stride_ml, stride_ms, L, S, scale_hi, scale_lo,
            CAUSAL: tl.constexpr, MASK: tl.constexpr, PRECISION: tl.constexpr,
            ACC: tl.constexpr):
    """q @ k^T * scale plus the mask, -inf where a key is hidden (past S, above the
    diagonal, False in a bool mask). The scale comes as float32 hi + lo parts: Triton
    passes a Python float as float32, which would round a float64 computation's scale."""
    s = tl.dot(q, kT, input_precision=PRECISION, out_dtype=ACC)
    s = s * scale_hi + s * scale_lo
    inside = (rows[:, None] < L) & (cols[None, :] < S)
    visible = cols[None, :] < S
    if CAUSAL:
        visible = visible & (rows[:, None] >= cols[None, :])
    if MASK == 1:
        keep = tl.load(mask_ptr + rows[:, None] * stride_ml + cols[None, :] * stride_ms,
                       mask=inside, other=0)
        visible = visible & (keep != 0)
    if MASK == 2:
        bias = tl.load(mask_ptr + rows[:, None] * stride_ml + cols[None, :] * stride_ms,
                       mask=inside, other=0.0)
        s = s + bias.to(ACC)
    return tl.where(visible, s, float("-inf"))


@triton.jit
def _dropout_keep(seed, offset, bh, rows, cols, L, S, dropout_p):
    """True where the score (bh, row, col) is kept: its Philox uniform >= p (as
    native_dropout's mask), at the counter offset + its index in (B * H, L, S)."""
    index = (bh * L + rows.to(tl.int64))[:, None] * S + cols.to(tl.int64)[None, :]
    return tl.rand(seed, offset + index) >= dropout_p


@triton.jit
def flash_forward_kernel(
    q_ptr, k_ptr, v_ptr, mask_ptr, out_ptr, lse_ptr, seed_ptr, offset_ptr,
    stride_qb, stride_qh, stride_ql, stride_qd,  # any strides, in elements
    stride_kb, stride_kh, stride_ks, stride_kd,
    stride_vb, stride_vh, stride_vs, stride_vd,
    stride_mb, stride_mh, stride_ml, stride_ms,  # 0 where the mask broadcasts
    H, L, S, E, EV, GROUP,  # out: contiguous (B, H, L, EV); lse: (B, H, L), float32 or 64
    scale_hi, scale_lo, dropout_p, keep_scale,
    CAUSAL: tl.constexpr, MASK: tl.constexpr, DROPOUT: tl.constexpr,
    UPCAST: tl.constexpr, PRECISION: tl.constexpr, ACC: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr,
):
    pid_m = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)
    b = bh // H
    h = bh % H
    kh = h // GROUP
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    d = tl.arange(0, BLOCK_D)
    dv = tl.arange(0, BLOCK_DV)
    k_base = k_ptr + b * stride_kb + kh * stride_kh
    v_base = v_ptr + b * stride_vb + kh * stride_vh
    mask_base = mask_ptr + b * stride_mb + h * stride_mh
    q = tl.load(q_ptr + b * stride_qb + h * stride_qh + rows[:, None] * stride_ql
                + d[None, :] * stride_qd, mask=(rows[:, None] < L) & (d[None, :] < E),
                other=0.0)
    if UPCAST:
        q = q.to(tl.float32)
    m_i = tl.full([BLOCK_M], float("-inf"), ACC)
    l_i = tl.zeros([BLOCK_M], ACC)
    acc = tl.zeros([BLOCK_M, BLOCK_DV], ACC)
    seed = 0
    offset = 0
    if DROPOUT:
        seed = tl.load(seed_ptr)
        offset = tl.load(offset_ptr)
    hi = S
    if CAUSAL:   # keys past the block's last row are hidden from every row: skipped
        hi = tl.minimum(S, (pid_m + 1) * BLOCK_M)
    for start in range(0, hi, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        kT = tl.load(k_base + cols[None, :] * stride_ks + d[:, None] * stride_kd,
                     mask=(cols[None, :] < S) & (d[:, None] < E), other=0.0)
        v = tl.load(v_base + cols[:, None] * stride_vs + dv[None, :] * stride_vd,
                    mask=(cols[:, None] < S) & (dv[None, :] < EV), other=0.0)
        if UPCAST:
            kT = kT.to(tl.float32)
            v = v.to(tl.float32)
        s = _scores(q, kT, rows, cols, mask_base, stride_ml, stride_ms, L, S, scale_hi,
                    scale_lo, CAUSAL, MASK, PRECISION, ACC)
        m_new = tl.maximum(m_i, tl.max(s, 1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)   # all hidden so far
        p = tl.exp(s - m_safe[:, None])
        alpha = tl.exp(m_i - m_safe)
        l_i = l_i * alpha + tl.sum(p, 1)
        if DROPOUT:   # the sum l is of the weights before dropout, as in softmax-then-drop
            keep = _dropout_keep(seed, offset, bh, rows, cols, L, S, dropout_p)
            p = tl.where(keep, p * keep_scale, 0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PRECISION,
                                            out_dtype=ACC)
        m_i = m_new
    seen = l_i > 0
    out = tl.where(seen[:, None], acc / tl.where(seen, l_i, 1.0)[:, None], 0.0)
    lse = tl.where(seen, m_i + tl.log(tl.where(seen, l_i, 1.0)), float("-inf"))
    row_ok = rows < L
    tl.store(out_ptr + (bh * L + rows[:, None]) * EV + dv[None, :],
             _math.convert(out, out_ptr.dtype.element_ty),
             mask=row_ok[:, None] & (dv[None, :] < EV))
    tl.store(lse_ptr + bh * L + rows, lse.to(lse_ptr.dtype.element_ty), mask=row_ok)


@triton.jit
def flash_delta_kernel(
    out_ptr, grad_ptr, delta_ptr,  # delta[bh, row] = sum over the head dim of out * grad
    stride_ob, stride_oh, stride_ol, stride_od,
    stride_gb, stride_gh, stride_gl, stride_gd,
    H, L, EV,
    BLOCK_M: tl.constexpr, BLOCK_DV: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    bh = tl.program_id(1).to(tl.int64)
    b = bh // H
    h = bh % H
    dv = tl.arange(0, BLOCK_DV)
    inside = (rows[:, None] < L) & (dv[None, :] < EV)
    o = tl.load(out_ptr + b * stride_ob + h * stride_oh + rows[:, None] * stride_ol
                + dv[None, :] * stride_od, mask=inside, other=0.0)
    g = tl.load(grad_ptr + b * stride_gb + h * stride_gh + rows[:, None] * stride_gl
                + dv[None, :] * stride_gd, mask=inside, other=0.0)
    acc = delta_ptr.dtype.element_ty
    tl.store(delta_ptr + bh * L + rows, tl.sum(_math.convert(o, acc) * _math.convert(g, acc), 1),
             mask=rows < L)


@triton.jit
def _weights(q, kT, rows, cols, mask_ptr, stride_ml, stride_ms, lse, L, S, scale_hi,
             scale_lo, CAUSAL: tl.constexpr, MASK: tl.constexpr, PRECISION: tl.constexpr,
             ACC: tl.constexpr):
    """The softmax weights p = exp(s - lse) of a block, recomputed (0 in a fully hidden
    row, whose lse is -inf)."""
    s = _scores(q, kT, rows, cols, mask_ptr, stride_ml, stride_ms, L, S, scale_hi,
                scale_lo, CAUSAL, MASK, PRECISION, ACC)
    lse = tl.where(lse == float("-inf"), float("inf"), lse)
    return tl.exp(s - lse[:, None])


@triton.jit
def flash_backward_kv_kernel(
    q_ptr, k_ptr, v_ptr, mask_ptr, grad_ptr, lse_ptr, delta_ptr, seed_ptr, offset_ptr,
    dk_ptr, dv_ptr,  # contiguous (B, HK, S, E) and (B, HK, S, EV)
    stride_qb, stride_qh, stride_ql, stride_qd,
    stride_kb, stride_kh, stride_ks, stride_kd,
    stride_vb, stride_vh, stride_vs, stride_vd,
    stride_mb, stride_mh, stride_ml, stride_ms,
    stride_gb, stride_gh, stride_gl, stride_gd,
    H, HK, L, S, E, EV, GROUP,
    scale_hi, scale_lo, dropout_p, keep_scale,
    CAUSAL: tl.constexpr, MASK: tl.constexpr, DROPOUT: tl.constexpr,
    UPCAST: tl.constexpr, PRECISION: tl.constexpr, ACC: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr,
):
    # One block of BLOCK_N keys of key head kh: dV = sum P^T dO, dK = sum dS^T q * scale,
    # over the query rows of the GROUP query heads that read it.
    pid_n = tl.program_id(0)
    bkh = tl.program_id(1).to(tl.int64)
    b = bkh // HK
    kh = bkh % HK
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    d = tl.arange(0, BLOCK_D)
    dv = tl.arange(0, BLOCK_DV)
    kT = tl.load(k_ptr + b * stride_kb + kh * stride_kh + cols[None, :] * stride_ks
                 + d[:, None] * stride_kd, mask=(cols[None, :] < S) & (d[:, None] < E),
                 other=0.0)
    vT = tl.load(v_ptr + b * stride_vb + kh * stride_vh + cols[None, :] * stride_vs
                 + dv[:, None] * stride_vd, mask=(cols[None, :] < S) & (dv[:, None] < EV),
                 other=0.0)
    if UPCAST:
        kT = kT.to(tl.float32)
        vT = vT.to(tl.float32)
    dk = tl.zeros([BLOCK_N, BLOCK_D], ACC)
    dvv = tl.zeros([BLOCK_N, BLOCK_DV], ACC)
    seed = 0
    offset = 0
    if DROPOUT:
        seed = tl.load(seed_ptr)
        offset = tl.load(offset_ptr)
    lo = 0
    if CAUSAL:   # rows above the block's first key see none of it: skipped
        lo = (pid_n * BLOCK_N // BLOCK_M) * BLOCK_M
    for g in range(0, GROUP):
        h = kh * GROUP + g
        bh = b * H + h
        q_base = q_ptr + b * stride_qb + h * stride_qh
        grad_base = grad_ptr + b * stride_gb + h * stride_gh
        mask_base = mask_ptr + b * stride_mb + h * stride_mh
        for start in range(lo, L, BLOCK_M):
            rows = start + tl.arange(0, BLOCK_M)
            row_ok = rows < L
            q = tl.load(q_base + rows[:, None] * stride_ql + d[None, :] * stride_qd,
                        mask=row_ok[:, None] & (d[None, :] < E), other=0.0)
            do = tl.load(grad_base + rows[:, None] * stride_gl + dv[None, :] * stride_gd,
                         mask=row_ok[:, None] & (dv[None, :] < EV), other=0.0)
            if UPCAST:
                q = q.to(tl.float32)
                do = do.to(tl.float32)
            lse = tl.load(lse_ptr + bh * L + rows, mask=row_ok, other=0.0).to(ACC)
            delta = tl.load(delta_ptr + bh * L + rows, mask=row_ok, other=0.0).to(ACC)
            p = _weights(q, kT, rows, cols, mask_base, stride_ml, stride_ms, lse, L, S,
                         scale_hi, scale_lo, CAUSAL, MASK, PRECISION, ACC)
            dp = tl.dot(do, vT, input_precision=PRECISION, out_dtype=ACC)
            dropped = p
            if DROPOUT:
                keep = _dropout_keep(seed, offset, bh, rows, cols, L, S, dropout_p)
                dropped = tl.where(keep, p * keep_scale, 0.0)
                dp = tl.where(keep, dp * keep_scale, 0.0)
            dvv += tl.dot(tl.trans(dropped.to(do.dtype)), do, input_precision=PRECISION,
                          out_dtype=ACC)
            ds = p * (dp - delta[:, None])
            dk += tl.dot(tl.trans(ds.to(q.dtype)), q, input_precision=PRECISION,
                         out_dtype=ACC)
    dk = dk * scale_hi + dk * scale_lo
    col_ok = cols < S
    tl.store(dk_ptr + (bkh * S + cols[:, None]) * E + d[None, :],
             _math.convert(dk, dk_ptr.dtype.element_ty),
             mask=col_ok[:, None] & (d[None, :] < E))
    tl.store(dv_ptr + (bkh * S + cols[:, None]) * EV + dv[None, :],
             _math.convert(dvv, dv_ptr.dtype.element_ty),
             mask=col_ok[:, None] & (dv[None, :] < EV))


@triton.jit
def flash_backward_q_kernel(
    q_ptr, k_ptr, v_ptr, mask_ptr, grad_ptr, lse_ptr, delta_ptr, seed_ptr, offset_ptr,
    dq_ptr,  # contiguous (B, H, L, E)
    stride_qb, stride_qh, stride_ql, stride_qd,
    stride_kb, stride_kh, stride_ks, stride_kd,
    stride_vb, stride_vh, stride_vs, stride_vd,
    stride_mb, stride_mh, stride_ml, stride_ms,
    stride_gb, stride_gh, stride_gl, stride_gd,
    H, L, S, E, EV, GROUP,
    scale_hi, scale_lo, dropout_p, keep_scale,
    CAUSAL: tl.constexpr, MASK: tl.constexpr, DROPOUT: tl.constexpr,
    UPCAST: tl.constexpr, PRECISION: tl.constexpr, ACC: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr,
):
    # One block of BLOCK_M query rows: dQ = sum dS k * scale over the key blocks.
    pid_m = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)
    b = bh // H
    h = bh % H
    kh = h // GROUP
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < L
    d = tl.arange(0, BLOCK_D)
    dv = tl.arange(0, BLOCK_DV)
    q = tl.load(q_ptr + b * stride_qb + h * stride_qh + rows[:, None] * stride_ql
                + d[None, :] * stride_qd, mask=row_ok[:, None] & (d[None, :] < E), other=0.0)
    do = tl.load(grad_ptr + b * stride_gb + h * stride_gh + rows[:, None] * stride_gl
                 + dv[None, :] * stride_gd, mask=row_ok[:, None] & (dv[None, :] < EV),
                 other=0.0)
    if UPCAST:
        q = q.to(tl.float32)
        do = do.to(tl.float32)
    lse = tl.load(lse_ptr + bh * L + rows, mask=row_ok, other=0.0).to(ACC)
    delta = tl.load(delta_ptr + bh * L + rows, mask=row_ok, other=0.0).to(ACC)
    k_base = k_ptr + b * stride_kb + kh * stride_kh
    v_base = v_ptr + b * stride_vb + kh * stride_vh
    mask_base = mask_ptr + b * stride_mb + h * stride_mh
    dq = tl.zeros([BLOCK_M, BLOCK_D], ACC)
    seed = 0
    offset = 0
    if DROPOUT:
        seed = tl.load(seed_ptr)
        offset = tl.load(offset_ptr)
    hi = S
    if CAUSAL:
        hi = tl.minimum(S, (pid_m + 1) * BLOCK_M)
    for start in range(0, hi, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        kT = tl.load(k_base + cols[None, :] * stride_ks + d[:, None] * stride_kd,
                     mask=(cols[None, :] < S) & (d[:, None] < E), other=0.0)
        vT = tl.load(v_base + cols[None, :] * stride_vs + dv[:, None] * stride_vd,
                     mask=(cols[None, :] < S) & (dv[:, None] < EV), other=0.0)
        if UPCAST:
            kT = kT.to(tl.float32)
            vT = vT.to(tl.float32)
        p = _weights(q, kT, rows, cols, mask_base, stride_ml, stride_ms, lse, L, S,
                     scale_hi, scale_lo, CAUSAL, MASK, PRECISION, ACC)
        dp = tl.dot(do, vT, input_precision=PRECISION, out_dtype=ACC)
        if DROPOUT:
            keep = _dropout_keep(seed, offset, bh, rows, cols, L, S, dropout_p)
            dp = tl.where(keep, dp * keep_scale, 0.0)
        ds = p * (dp - delta[:, None])
        dq += tl.dot(ds.to(kT.dtype), tl.trans(kT), input_precision=PRECISION,
                     out_dtype=ACC)
    dq = dq * scale_hi + dq * scale_lo
    tl.store(dq_ptr + (bh * L + rows[:, None]) * E + d[None, :],
             _math.convert(dq, dq_ptr.dtype.element_ty),
             mask=row_ok[:, None] & (d[None, :] < E))


# ---- launchers ------------------------------------------------------------------------------
def _head_block(n):
    """The head dim padded to a power of two, at least 16 (tl.dot's smallest tile); the
    padding is masked off on every load and store."""
    return max(16, triton.next_power_of_2(max(n, 1)))


def _seq_block(n, dtype, head_block):
    """Rows (keys) per block. On a GPU 64 (tutorial 06's tiles) while a row of the head
    dim is at most 256 bytes (fp16/bf16 up to 128, fp32 up to 64), else 32: the dK/dV
    kernel's tiles must fit in shared memory (fp32 at head dim 64 and 64 x 64 tiles takes
    145 KiB of an H100's 227). In the interpreter, which pays per program and per element,
    no more than the sequence needs."""
    if INTERPRETED:
        return min(64, _head_block(n))
    return 64 if dtype.itemsize * head_block <= 256 else 32


def _split_scale(scale, head_dim):
    """scale (default 1 / sqrt(E)) as float32 hi + lo: see `_scores`."""
    if scale is None:
        scale = 1.0 / np.sqrt(head_dim) if head_dim else 1.0
    hi = float(np.float32(scale))
    return hi, float(np.float32(scale - hi))


def _mask_args(mask, sizes):
    """(kind, strides over (B, H, L, S)) of the attention mask: 0 where it broadcasts."""
    if mask is None:
        return NO_MASK, [0, 0, 0, 0]
    kind = BOOL_MASK if mask._impl.dtype is dt.bool else FLOAT_MASK
    return kind, broadcast_strides(mask, sizes)


def _options(dtype, causal, mask_kind, dropout_p, E, EV, L, S):
    dot = _dot_options(dtype)
    head = max(_head_block(E), _head_block(EV))
    block_n = _seq_block(S, dtype, head)
    if mask_kind != NO_MASK and not INTERPRETED:
        # A mask's [BLOCK_M, BLOCK_N] addresses, when its strides are not multiples of 16
        # (odd lengths), fill the registers: 64 x 64 spilled about 200 bytes at sm_90 in
        # fp16 (triton_kernels/COMPILE_REPORT.md); 32 keys a block do not spill.
        block_n = min(block_n, 32)
    return dict(CAUSAL=bool(causal), MASK=mask_kind, DROPOUT=dropout_p > 0, **dot,
                BLOCK_M=_seq_block(L, dtype, head), BLOCK_N=block_n,
                BLOCK_D=_head_block(E), BLOCK_DV=_head_block(EV), num_warps=4)


def _keep_scale(dropout_p):
    return 0.0 if dropout_p == 1 else 1.0 / (1.0 - dropout_p)


def _int64_scalar(value, device):
    return from_host(np.array(value, dtype=np.int64), dt.int64, device)


def flash_attention(query, key, value, dropout_p, is_causal, attn_mask, scale):
    """(out, logsumexp, philox_seed, philox_offset): see the module's docstring."""
    op = "_scaled_dot_product_flash_attention"
    specs = shape_rule("attention.flash_attention")(
        op, (query, key, value, dropout_p, is_causal, attn_mask, scale))
    device, (q, k, v, mask) = operands(op, query=query, key=key, value=value,
                                       attn_mask=attn_mask)
    B, H, L, E = q._impl.sizes
    HK, S, EV = k._impl.sizes[1], k._impl.sizes[2], v._impl.sizes[3]
    out = new_tensor(specs[0].sizes, specs[0].dtype, device)
    lse = new_tensor(specs[1].sizes, specs[1].dtype, device)
    seed, offset = philox_inputs(None, B * H * L * S) if dropout_p > 0 else (0, 0)
    seed_t, offset_t = _int64_scalar(seed, device), _int64_scalar(offset, device)
    if out._impl.numel() == 0 and lse._impl.numel() == 0:
        return out, lse, seed_t, offset_t
    kind, mask_strides = _mask_args(mask, (B, H, L, S))
    options = _options(q._impl.dtype, is_causal, kind, dropout_p, E, EV, L, S)
    grid = (triton.cdiv(L, options["BLOCK_M"]), B * H)
    launch("flash attention forward", flash_forward_kernel, grid, pointer(q), pointer(k),
           pointer(v), pointer(mask if mask is not None else q), pointer(out), pointer(lse),
           pointer(seed_t), pointer(offset_t), *q._impl.strides, *k._impl.strides,
           *v._impl.strides, *mask_strides, H, L, S, E, EV, H // HK if HK else 1,
           *_split_scale(scale, E), float(dropout_p), _keep_scale(dropout_p), **options)
    return out, lse, seed_t, offset_t


def flash_attention_backward(grad_out, query, key, value, out, logsumexp, dropout_p,
                             is_causal, philox_seed, philox_offset, attn_mask, scale):
    """(grad_query, grad_key, grad_value): delta, then dK/dV, then dQ."""
    op = "_scaled_dot_product_flash_attention_backward"
    shape_rule("attention.flash_attention_backward")(
        op, (grad_out, query, key, value, out, logsumexp, dropout_p, is_causal,
             philox_seed, philox_offset, attn_mask, scale))
    device, (g, q, k, v, o, lse, seed_t, offset_t, mask) = operands(
        op, grad_out=grad_out, query=query, key=key, value=value, out=out,
        logsumexp=logsumexp, philox_seed=philox_seed, philox_offset=philox_offset,
        attn_mask=attn_mask)
    B, H, L, E = q._impl.sizes
    HK, S, EV = k._impl.sizes[1], k._impl.sizes[2], v._impl.sizes[3]
    dtype = q._impl.dtype
    grad_q = new_tensor((B, H, L, E), dtype, device)
    grad_k = new_tensor((B, HK, S, E), dtype, device)
    grad_v = new_tensor((B, HK, S, EV), dtype, device)
    kind, mask_strides = _mask_args(mask, (B, H, L, S))
    options = _options(dtype, is_causal, kind, dropout_p, E, EV, L, S)
    block_m, block_n = options["BLOCK_M"], options["BLOCK_N"]
    delta = new_tensor((B, H, L), lse._impl.dtype, device)
    if delta._impl.numel():
        launch("flash attention backward (delta)", flash_delta_kernel,
               (triton.cdiv(L, block_m), B * H), pointer(o), pointer(g), pointer(delta),
               *o._impl.strides, *g._impl.strides, H, L, EV, BLOCK_M=block_m,
               BLOCK_DV=options["BLOCK_DV"])
    group = H // HK if HK else 1
    common = (pointer(q), pointer(k), pointer(v), pointer(mask if mask is not None else q),
              pointer(g), pointer(lse), pointer(delta), pointer(seed_t), pointer(offset_t))
    strides = (*q._impl.strides, *k._impl.strides, *v._impl.strides, *mask_strides,
               *g._impl.strides)
    scalars = (*_split_scale(scale, E), float(dropout_p), _keep_scale(dropout_p))
    if grad_k._impl.numel() or grad_v._impl.numel():
        launch("flash attention backward (dK, dV)", flash_backward_kv_kernel,
               (triton.cdiv(S, block_n), B * HK), *common, pointer(grad_k), pointer(grad_v),
               *strides, H, HK, L, S, E, EV, group, *scalars, **options)
    if grad_q._impl.numel():
        launch("flash attention backward (dQ)", flash_backward_q_kernel,
               (triton.cdiv(L, block_m), B * H), *common, pointer(grad_q), *strides,
               H, L, S, E, EV, group, *scalars, **options)
    return grad_q, grad_k, grad_v
