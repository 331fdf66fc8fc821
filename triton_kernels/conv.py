"""Convolution (1-D, 2-D, 3-D; strided, padded, dilated, grouped, transposed) and its
backward on the `cuda` device, as implicit GEMMs: a convolution is a matrix product whose
left matrix (the image's windows, im2col's matrix) is never built. Its tile is gathered
from the image in the GEMM's K loop, each address computed on the fly (padding masked to
0), so the image is read once per output-channel tile, not copied KD*KH*KW times.

Two kernels, each one GEMM per group (program axis 1), any strides in and out (so NCHW
and channels_last, contiguous or not, take the same path):

    conv_kernel         out[m, o] = bias[o] + sum over k of A[m, k] * W[k, o]
                            m = (batch, output position), k = (channel in group, kernel
                            offset), A[m, k] = the image pixel window m reads at offset k
                        TRANSPOSED=False: window m reads pixel  m * stride - pad + k * dil
                        TRANSPOSED=True:  pixel m meets output  (m + pad - k * dil) / stride
                            when that divides exactly (the adjoint's addressing: a gather,
                            no col2im buffer, no atomics)
    weight_grad_kernel  dW[o, (c, k)] = sum over r = (batch, position) of
                            G[r, o] * X[r's window at offset k, c]    (K loop over N*P)

The four convolutions of the op and its backward are these two addressing modes:

                              regular conv                 transposed conv
    forward                   conv_kernel, regular         conv_kernel, transposed
    grad_input                conv_kernel, transposed      conv_kernel, regular
    grad_weight               rows: grad, windows: input   rows: input, windows: grad
    grad_bias                 grad summed over batch and space (both)

and in each the weight (A, B/G, *K) is read in place: the GEMM's output channels are its
dim 0 in regular addressing and its dim 1 in transposed addressing (conv_transpose's
weight is (C_in, C_out/G, *K)).

Precision: fp16/bf16 operands go to `tl.dot` as they are (tensor cores), summed in
float32 and rounded once after the bias; float32 in full IEEE precision unless
tp.backends.cuda.matmul.allow_tf32, the switch of every Triton dot product here (PyTorch's
cuDNN convolutions follow cudnn.allow_tf32, True by default; TensorPlay holds that flag
without effect, tensorplay/backends/cudnn.py); float64 in float64;
integers (no tl.dot for them) as a broadcast multiply-sum in int64, small fixed tiles.
Under the interpreter half operands are upcast to float32 first (its bf16 tl.dot is
wrong). Tiles, num_warps and num_stages are autotuned per bucket of the GEMM sizes
(tensorplay/dispatch/autotune.py), as the matmul's.

The K loop takes one of two shapes. When BLOCK_K divides the channels per group (64,
128, ...: CHANNEL_BLOCKS) it walks the kernel offsets and, for each, the channels a tile
at a time: which pixel a row reads, and whether that is padding, is worked out once per
offset for the BLOCK_M rows. Otherwise (3 channels, depthwise) K is flattened and each
A element gets its own position and padding test; its (channel, kernel offset) order has
the kernel offset fastest for NCHW images and the channel fastest for channels_last ones
(CHANNELS_INNER), so that a K tile reads memory-adjacent elements. The weight gradient
does the same with its columns, and cuts its long sum (N * positions) into splits
(split-K) when the weight alone gives too few tiles to fill the GPU. Every spatial rank
runs as 3-D: a 1-D or 2-D problem gets leading spatial dims of size 1 (kernel 1,
stride 1, no padding).

Results are laid out as PyTorch's: channels_last when a 4-D argument is (the rule of
kernel selection's `call_layout`), else contiguous; grad_weight in the weight's layout.
"""
from __future__ import annotations

import triton
import triton.language as tl

from tensorplay import _cuda_state
from tensorplay import _dtype as dt
from tensorplay._memory_format import is_channels_last
from tensorplay.dispatch.autotune import Config, bucket, choose
from tensorplay.errors import ShapeError
from tensorplay.kernel_support.ops import call_below_autograd, shape_rule
from tensorplay.kernel_support.results import factory, numel_of
from triton_kernels._launch import INTERPRETED, launch, needs_wide_index, operands, pointer

MAX_SPATIAL = 3


@triton.jit
def _split_k(k, KD, KH, KW, CG, CHANNELS_INNER: tl.constexpr):
    """GEMM column k -> (channel in group, kd, kh, kw); see CHANNELS_INNER above."""
    if CHANNELS_INNER:
        c = k % CG
        t = k // CG
        kw = t % KW
        t = t // KW
        kh = t % KH
        kd = t // KH
    else:
        kw = k % KW
        t = k // KW
        kh = t % KH
        t = t // KH
        kd = t % KD
        c = t // KD
    return c, kd, kh, kw


@triton.jit
def _multiply_add(acc, a, b, USE_DOT: tl.constexpr, UPCAST: tl.constexpr,
                  PRECISION: tl.constexpr, ACC: tl.constexpr):
    """acc + a @ b: tl.dot (tensor cores for half types), or for integers a broadcast
    multiply-sum over K (tl.dot has no int64 inputs)."""
    if UPCAST:
        a = a.to(tl.float32)
        b = b.to(tl.float32)
    if USE_DOT:
        # out_dtype: triton 3.6 takes float32 for a float64 dot unless told.
        return tl.dot(a, b, acc, input_precision=PRECISION, out_dtype=ACC)
    return acc + tl.sum(a.to(ACC)[:, :, None] * b.to(ACC)[None, :, :], axis=1)


@triton.jit
def _tile_ids(M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """This program's (row tile, column tile), GROUP_M row tiles side by side (the matmul's
    grouped ordering: programs running together share column tiles while they are in L2)."""
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    first_pid_m = (pid // num_pid_in_group) * GROUP_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.jit
def conv_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr,  # image (N, G*CG, XD, XH, XW); weight; bias; result
    XD, XH, XW,  # image spatial sizes
    OD, OH, OW,  # result spatial sizes
    sx_n, sx_c, sx_d, sx_h, sx_w,  # image strides
    sw_g, sw_o, sw_c, sw_d, sw_h, sw_w,  # weight: per group, output channel, channel, offset
    so_n, so_c, so_d, so_h, so_w,  # result strides
    KD, KH, KW, st_d, st_h, st_w, pad_d, pad_h, pad_w, dil_d, dil_h, dil_w,
    CG, OG,  # image channels and result channels per group
    M, K,  # GEMM rows N * OD*OH*OW, GEMM depth CG * KD*KH*KW
    TRANSPOSED: tl.constexpr,  # the adjoint addressing (see the module doc)
    CHANNELS_INNER: tl.constexpr,  # K order: channel fastest (channels_last images)
    CHANNEL_BLOCKS: tl.constexpr,  # K as kernel offsets x channel tiles (BLOCK_K | CG)
    HAS_BIAS: tl.constexpr,
    USE_DOT: tl.constexpr,  # tl.dot (floating types) or a multiply-sum (integers)
    UPCAST: tl.constexpr,  # interpreter: half operands to float32 before tl.dot
    PRECISION: tl.constexpr,  # "ieee" or "tf32" for float32 operands
    ACC: tl.constexpr,  # accumulator dtype
    WIDE: tl.constexpr,  # int64 index arithmetic
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    pid_m, pid_n = _tile_ids(M, OG, BLOCK_M, BLOCK_N, GROUP_M)
    g = tl.program_id(1)
    m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    o = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    if WIDE:
        m = m.to(tl.int64)
        g = g.to(tl.int64)
    m_ok = m < M
    o_ok = o < OG
    # Row m: batch n, result position (od, oh, ow).
    n = m // (OD * OH * OW)
    od = (m // (OH * OW)) % OD
    oh = (m // OW) % OH
    ow = m % OW
    if TRANSPOSED:
        # (t_d, t_h, t_w) - k * dilation must land on a stride multiple inside the image.
        t_d = od + pad_d
        t_h = oh + pad_h
        t_w = ow + pad_w
    else:
        # The window's corner: the image position it reads at kernel offset 0.
        t_d = od * st_d - pad_d
        t_h = oh * st_h - pad_h
        t_w = ow * st_w - pad_w
    x_rows = x_ptr + n * sx_n + g * CG * sx_c
    w_cols = w_ptr + g * sw_g + o * sw_o
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC)
    if CHANNEL_BLOCKS:
        # K walks the kernel offsets, and for each the channels a tile at a time: which
        # pixel a row reads (and whether it is padding) is worked out once per offset
        # for the BLOCK_M rows, not per element of every A tile.
        for kk in range(0, KD * KH * KW):
            kd = kk // (KH * KW)
            kh = (kk // KW) % KH
            kw = kk % KW
            if TRANSPOSED:
                p_d = t_d - kd * dil_d
                p_h = t_h - kh * dil_h
                p_w = t_w - kw * dil_w
                i_d = p_d // st_d
                i_h = p_h // st_h
                i_w = p_w // st_w
                inside = m_ok & (p_d >= 0) & (p_d % st_d == 0) & (i_d < XD) & \
                    (p_h >= 0) & (p_h % st_h == 0) & (i_h < XH) & \
                    (p_w >= 0) & (p_w % st_w == 0) & (i_w < XW)
            else:
                i_d = t_d + kd * dil_d
                i_h = t_h + kh * dil_h
                i_w = t_w + kw * dil_w
                inside = m_ok & (i_d >= 0) & (i_d < XD) & (i_h >= 0) & (i_h < XH) & \
                    (i_w >= 0) & (i_w < XW)
            a_rows = x_rows + i_d * sx_d + i_h * sx_h + i_w * sx_w
            b_cols = w_cols + kd * sw_d + kh * sw_h + kw * sw_w
            for c0 in range(0, CG, BLOCK_K):
                c = c0 + tl.arange(0, BLOCK_K)
                if WIDE:
                    c = c.to(tl.int64)
                a = tl.load(a_rows[:, None] + (c * sx_c)[None, :], mask=inside[:, None],
                            other=0)
                b = tl.load(b_cols[None, :] + (c * sw_c)[:, None], mask=o_ok[None, :],
                            other=0)
                acc = _multiply_add(acc, a, b, USE_DOT, UPCAST, PRECISION, ACC)
    else:
        if TRANSPOSED:
            q_d = t_d // st_d
            q_h = t_h // st_h
            q_w = t_w // st_w
            r_d = t_d % st_d
            r_h = t_h % st_h
            r_w = t_w % st_w
        for k0 in range(0, K, BLOCK_K):
            # K flattened: any channel count (depthwise, 3 input channels) fills the tiles.
            k = k0 + tl.arange(0, BLOCK_K)
            if WIDE:
                k = k.to(tl.int64)
            k_ok = k < K
            c, kd, kh, kw = _split_k(k, KD, KH, KW, CG, CHANNELS_INNER)
            if TRANSPOSED:
                # t - e (e = k * dilation) divided by the stride without a 2-D division:
                # with t = q * stride + r and e = qk * stride + rk (r, rk < stride), t - e
                # is a multiple of the stride exactly when r == rk, and then the pixel
                # is q - qk. Row and column halves are 1-D: this keeps the per-element
                # work to subtractions and compares (registers: the tile's indexes).
                e_d = kd * dil_d
                e_h = kh * dil_h
                e_w = kw * dil_w
                i_d = q_d[:, None] - (e_d // st_d)[None, :]
                i_h = q_h[:, None] - (e_h // st_h)[None, :]
                i_w = q_w[:, None] - (e_w // st_w)[None, :]
                inside = (r_d[:, None] == (e_d % st_d)[None, :]) & (i_d >= 0) & (i_d < XD) & \
                    (r_h[:, None] == (e_h % st_h)[None, :]) & (i_h >= 0) & (i_h < XH) & \
                    (r_w[:, None] == (e_w % st_w)[None, :]) & (i_w >= 0) & (i_w < XW)
                a_ptrs = x_rows[:, None] + c[None, :] * sx_c + i_d * sx_d + i_h * sx_h + \
                    i_w * sx_w
            else:
                i_d = t_d[:, None] + (kd * dil_d)[None, :]
                i_h = t_h[:, None] + (kh * dil_h)[None, :]
                i_w = t_w[:, None] + (kw * dil_w)[None, :]
                inside = (i_d >= 0) & (i_d < XD) & (i_h >= 0) & (i_h < XH) & \
                    (i_w >= 0) & (i_w < XW)
                # The address splits into a row part and a column part (padding is masked).
                corner = x_rows + t_d * sx_d + t_h * sx_h + t_w * sx_w
                offset = c * sx_c + kd * dil_d * sx_d + kh * dil_h * sx_h + kw * dil_w * sx_w
                a_ptrs = corner[:, None] + offset[None, :]
            a = tl.load(a_ptrs, mask=inside & m_ok[:, None] & k_ok[None, :], other=0)
            w_offset = c * sw_c + kd * sw_d + kh * sw_h + kw * sw_w
            b = tl.load(w_cols[None, :] + w_offset[:, None], mask=k_ok[:, None] & o_ok[None, :],
                        other=0)
            acc = _multiply_add(acc, a, b, USE_DOT, UPCAST, PRECISION, ACC)
    channel = g * OG + o
    if HAS_BIAS:
        acc += tl.load(b_ptr + channel, mask=o_ok, other=0).to(ACC)[None, :]
    out_rows = n * so_n + od * so_d + oh * so_h + ow * so_w
    tl.store(out_ptr + out_rows[:, None] + (channel * so_c)[None, :],
             acc.to(out_ptr.dtype.element_ty), mask=m_ok[:, None] & o_ok[None, :])


@triton.jit
def weight_grad_kernel(
    g_ptr, x_ptr, out_ptr,  # rows (N, G*MG, PD, PH, PW); windows (N, G*CG, XD, XH, XW)
    PD, PH, PW,  # the rows' spatial sizes (the window positions summed over)
    XD, XH, XW,  # the windowed image's spatial sizes
    sg_n, sg_c, sg_d, sg_h, sg_w,
    sx_n, sx_c, sx_d, sx_h, sx_w,
    so_s, so_g, so_m, so_c, so_d, so_h, so_w,  # result: per split, group, row, channel, offset
    KD, KH, KW, st_d, st_h, st_w, pad_d, pad_h, pad_w, dil_d, dil_h, dil_w,
    MG, CG,  # row channels and windowed channels per group
    NCOLS, R, R_SPLIT,  # GEMM columns CG * KD*KH*KW; sum length N * P; its part per split
    CHANNELS_INNER: tl.constexpr,
    CHANNEL_BLOCKS: tl.constexpr,  # channels inner and BLOCK_N | CG: one offset per tile
    USE_DOT: tl.constexpr, UPCAST: tl.constexpr, PRECISION: tl.constexpr, ACC: tl.constexpr,
    WIDE: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    # Program axis 1 is the group, axis 2 the split: a split sums R_SPLIT of the R
    # positions into its own slice of the result (split-K: a small weight gets enough
    # programs to fill the GPU; the host adds the slices, in a fixed order).
    pid_m, pid_n = _tile_ids(MG, NCOLS, BLOCK_M, BLOCK_N, GROUP_M)
    g = tl.program_id(1)
    split = tl.program_id(2)
    m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    j = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    if WIDE:
        g = g.to(tl.int64)
        split = split.to(tl.int64)
    m_ok = m < MG
    j_ok = j < NCOLS
    if CHANNEL_BLOCKS:
        # The tile's columns are channels of one kernel offset: whether a position's
        # window reads padding there is one test per position, not per element.
        kk = (pid_n * BLOCK_N) // CG
        c = (pid_n * BLOCK_N) % CG + tl.arange(0, BLOCK_N)
        kd = kk // (KH * KW)
        kh = (kk // KW) % KH
        kw = kk % KW
    else:
        c, kd, kh, kw = _split_k(j, KD, KH, KW, CG, CHANNELS_INNER)
    g_rows = g_ptr + (g * MG + m) * sg_c
    x_cols = x_ptr + g * CG * sx_c + c * sx_c + kd * dil_d * sx_d + kh * dil_h * sx_h + \
        kw * dil_w * sx_w
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC)
    r_end = tl.minimum(R, (split + 1) * R_SPLIT)
    for r0 in range(split * R_SPLIT, r_end, BLOCK_K):
        r = r0 + tl.arange(0, BLOCK_K)
        if WIDE:
            r = r.to(tl.int64)
        r_ok = r < r_end
        n = r // (PD * PH * PW)
        pd = (r // (PH * PW)) % PD
        ph = (r // PW) % PH
        pw = r % PW
        a = tl.load(g_rows[:, None] + (n * sg_n + pd * sg_d + ph * sg_h + pw * sg_w)[None, :],
                    mask=m_ok[:, None] & r_ok[None, :], other=0)
        corner_d = pd * st_d - pad_d
        corner_h = ph * st_h - pad_h
        corner_w = pw * st_w - pad_w
        b_rows = n * sx_n + corner_d * sx_d + corner_h * sx_h + corner_w * sx_w
        if CHANNEL_BLOCKS:
            i_d = corner_d + kd * dil_d
            i_h = corner_h + kh * dil_h
            i_w = corner_w + kw * dil_w
            inside = r_ok & (i_d >= 0) & (i_d < XD) & (i_h >= 0) & (i_h < XH) & \
                (i_w >= 0) & (i_w < XW)
            b = tl.load(x_cols[None, :] + b_rows[:, None], mask=inside[:, None], other=0)
        else:
            i_d = corner_d[:, None] + (kd * dil_d)[None, :]
            i_h = corner_h[:, None] + (kh * dil_h)[None, :]
            i_w = corner_w[:, None] + (kw * dil_w)[None, :]
            inside = (i_d >= 0) & (i_d < XD) & (i_h >= 0) & (i_h < XH) & \
                (i_w >= 0) & (i_w < XW)
            b = tl.load(x_cols[None, :] + b_rows[:, None],
                        mask=inside & r_ok[:, None] & j_ok[None, :], other=0)
        acc = _multiply_add(acc, a, b, USE_DOT, UPCAST, PRECISION, ACC)
    dst = out_ptr + split * so_s + g * so_g + (m * so_m)[:, None] + \
        (c * so_c + kd * so_d + kh * so_h + kw * so_w)[None, :]
    tl.store(dst, acc.to(out_ptr.dtype.element_ty), mask=m_ok[:, None] & j_ok[None, :])


# ---- launch configurations ---------------------------------------------------------------
def _config(bm, bn, bk, stages, warps):
    return Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8},
                  num_stages=stages, num_warps=warps)


if INTERPRETED:
    # Two small configs: each program stays cheap, and autotuning (when asked for) has two
    # to choose from.
    CONFIGS = [_config(32, 32, 32, 1, 4), _config(64, 32, 16, 1, 4)]
else:
    # The matmul's shapes (Triton tutorial 03) minus its largest tiles, and 4 warps at
    # least: the address and mask arithmetic of an implicit GEMM takes registers a plain
    # matmul spends on tiles (at sm_90, 128 x 128 x 32 over 8 warps and the 2-warp tiles
    # spilled in fp16; triton_kernels/COMPILE_REPORT.md).
    CONFIGS = [
        _config(128, 64, 32, 4, 4), _config(64, 128, 32, 4, 4),
        _config(128, 128, 64, 3, 8), _config(64, 64, 32, 4, 4),
        _config(128, 32, 32, 4, 4), _config(64, 32, 32, 5, 4),
        _config(32, 64, 32, 5, 4),
    ]
# Windows gathered one element at a time (NCHW memory, or transposed addressing) keep an
# address and a mask per A element besides the tile: at sm_90 in fp16 every tile above
# 32 x 32 spilled in one of them (the transposed gather with strides: 20 bytes at 32 x 64,
# up to 1.1 KB at 128 x 128; triton_kernels/COMPILE_REPORT.md), so those kernels take
# 32 x 32 tiles, autotuned over the pipeline's depth. Windows of contiguous channels
# (channels_last) take CONFIGS.
GATHER_CONFIGS = CONFIGS if INTERPRETED else [_config(32, 32, 32, 4, 4),
                                              _config(32, 32, 32, 3, 4)]
# Integers run unmeasured, in blocks small enough for the [BLOCK_M, BLOCK_K, BLOCK_N]
# products to stay in registers.
INTEGER_BLOCKS = dict(BLOCK_M=32, BLOCK_N=32, BLOCK_K=8, GROUP_M=8)

# Split-K of the weight gradient: enough programs to keep every SM of an H100 (132)
# busy twice, but no split shorter than MIN_SPLIT_R positions (each split's slice is
# written and summed once more).
TARGET_PROGRAMS = 264
MIN_SPLIT_R = 1024


def _dot_options(dtype):
    """Constexprs of the multiply-add: tl.dot for floating types (fp32 in TF32 only when
    tp.backends.cuda.matmul.allow_tf32 says so), a multiply-sum in int64 for integers."""
    if not dtype.is_floating_point:
        return dict(USE_DOT=False, UPCAST=False, PRECISION="ieee", ACC=tl.int64)
    half = dtype in (dt.float16, dt.bfloat16)
    tf32 = half or (dtype is dt.float32 and _cuda_state.matmul_allow_tf32)
    return dict(USE_DOT=True, UPCAST=half and INTERPRETED, PRECISION="tf32" if tf32 else "ieee",
                ACC=tl.float64 if dtype is dt.float64 else tl.float32)


def _run_tuned(name, dtype, key, run_config, gather):
    """Launch through `run_config(config)`: the config autotuning chooses for `key` and
    the dtype among CONFIGS (GATHER_CONFIGS for the element-wise `gather`s), or the
    integer blocks."""
    if not dtype.is_floating_point:
        run_config(Config(INTEGER_BLOCKS))
        return
    # Unmeasured, float64 on a GPU takes the smallest tiles, as the matmul: 8-byte tiles of
    # the big configs need more shared memory than a program gets. Measured, a config
    # that cannot launch is left out.
    configs = GATHER_CONFIGS if gather else CONFIGS
    default = len(configs) - 1 if not INTERPRETED and dtype.itemsize >= 8 else 0
    run_config(choose(name, configs, key + (dtype.name,), run_config, default=default))


# ---- geometry ----------------------------------------------------------------------------
def _lead(values, fill):
    """A per-spatial-dim list widened to 3 dims with leading `fill`s."""
    return [fill] * (MAX_SPATIAL - len(values)) + list(values)


def _spatial_strides(t):
    """(batch, channel, d, h, w) strides of an (N, C, *S) tensor, widened to 3-D."""
    st = t._impl.strides
    return (st[0], st[1], *_lead(st[2:], 0))


def _window_args(kernel, stride, padding, dilation):
    return (*_lead(kernel, 1), *_lead(stride, 1), *_lead(padding, 0), *_lead(dilation, 1))


def _channels_inner(t):
    """K order for image t: channel fastest when its channels are adjacent in memory."""
    return t._impl.strides[1] == 1 and t._impl.sizes[1] > 1


def _channels_last_call(*tensors):
    """PyTorch's layout rule for conv results (kernel selection's `call_layout`): NHWC when
    a 4-D argument is channels_last (and not also row-major)."""
    return any(t is not None and len(t._impl.sizes) == 4 and not t._impl.is_contiguous
               and is_channels_last(t._impl.sizes, t._impl.strides) for t in tensors)


def _result(sizes, dtype, device, channels_last):
    """An empty result, NHWC-strided when `channels_last` (4-D only), else contiguous."""
    if channels_last and len(sizes) == 4:
        n, c, h, w = sizes
        return factory.empty_strided(sizes, (h * w * c, 1, w * c, c), dtype=dtype,
                                     device=device)
    return factory.empty(sizes, dtype=dtype, device=device)


# ---- the two GEMMs -----------------------------------------------------------------------
def _conv_into(out, image, weight, bias, geometry, groups, transposed):
    """out (N, G*OG, *S') = conv_kernel over image (N, G*CG, *S) and weight, in regular or
    transposed addressing (see the module doc)."""
    n, c = image._impl.sizes[:2]
    channels = out._impl.sizes[1]
    cg, og = c // groups, channels // groups
    kernel = geometry[0]
    m, k = n * numel_of(out._impl.sizes[2:]), cg * numel_of(kernel)
    if m == 0 or og == 0:
        return out
    ws = weight._impl.strides
    # The GEMM's output channels: the weight's dim 0 (regular) or dim 1 (transposed).
    sw_o, sw_c = (ws[1], ws[0]) if transposed else (ws[0], ws[1])
    sw_g = (cg if transposed else og) * ws[0]
    dtype = image._impl.dtype
    inner = _channels_inner(image)
    args = (pointer(image), pointer(weight), pointer(bias if bias is not None else weight),
            pointer(out), *_lead(image._impl.sizes[2:], 1), *_lead(out._impl.sizes[2:], 1),
            *_spatial_strides(image), sw_g, sw_o, sw_c, *_lead(ws[2:], 0),
            *_spatial_strides(out), *_window_args(*geometry), cg, og, m, k)
    options = dict(TRANSPOSED=transposed, CHANNELS_INNER=inner, HAS_BIAS=bias is not None,
                   WIDE=needs_wide_index(m * max(k, og), image, weight, out),
                   **_dot_options(dtype))
    name = "conv (implicit GEMM" + (", transposed addressing)" if transposed else ")")

    def run_config(config):
        b = config.kwargs
        grid = (triton.cdiv(m, b["BLOCK_M"]) * triton.cdiv(og, b["BLOCK_N"]), groups)
        # Channel tiles when they divide the channels exactly (64, 128...: no tile is
        # part padding); the flattened K otherwise (3 channels, depthwise, 20...).
        launch(name, conv_kernel, grid, *args, CHANNEL_BLOCKS=cg % b["BLOCK_K"] == 0,
               **options, **config.launch_options())

    _run_tuned("conv", dtype, (bucket(m, og, k), transposed, inner), run_config,
               gather=transposed or not inner)
    return out


def _splits(r, tiles):
    """How many parts the weight gradient's sum of r positions is cut into."""
    if tiles >= TARGET_PROGRAMS or r < 2 * MIN_SPLIT_R:
        return 1
    return max(1, min(triton.cdiv(TARGET_PROGRAMS, tiles), r // MIN_SPLIT_R))


def _weight_grad(rows_of, windows_of, geometry, groups, weight_like, channels_last):
    """The weight gradient (A, B/G, *K) of either convolution: rows_of's pixels (N, A, *P)
    times windows_of's windows (N, B, *X) at those positions, summed over N * P."""
    kernel = geometry[0]
    sizes = tuple(weight_like._impl.sizes)
    dtype = rows_of._impl.dtype
    device = rows_of._impl.device
    out = _result(sizes, dtype, device, channels_last)
    n = rows_of._impl.sizes[0]
    mg = rows_of._impl.sizes[1] // groups
    cg = windows_of._impl.sizes[1] // groups
    ncols, r = cg * numel_of(kernel), n * numel_of(rows_of._impl.sizes[2:])
    if mg == 0 or ncols == 0:
        return out
    inner = _channels_inner(windows_of)
    acc = dt.float32 if dtype in (dt.float16, dt.bfloat16) else dtype
    common = (*_lead(rows_of._impl.sizes[2:], 1), *_lead(windows_of._impl.sizes[2:], 1),
              *_spatial_strides(rows_of), *_spatial_strides(windows_of))
    options = dict(WIDE=needs_wide_index(r * max(mg, ncols), rows_of,
                                                                windows_of, out),
                   **_dot_options(dtype))
    name = "conv weight grad (implicit GEMM)"
    parts = {}

    def run_config(config):
        b = config.kwargs
        tiles = triton.cdiv(mg, b["BLOCK_M"]) * triton.cdiv(ncols, b["BLOCK_N"])
        splits = _splits(r, tiles * groups)
        r_split = triton.cdiv(max(r, 1), splits)
        splits = triton.cdiv(max(r, 1), r_split)
        # One split writes the result itself; several write float32 (accumulator) slices.
        dst = out if splits == 1 else factory.empty((splits,) + sizes, dtype=acc,
                                                    device=device)
        ds = dst._impl.strides
        lead = (0,) if splits == 1 else (ds[0],)
        ws = ds[-len(sizes):]
        # Column tiles of one kernel offset when BLOCK_N divides the channels (so the
        # channels come first in the columns' order, whatever the layout).
        blocks = cg % b["BLOCK_N"] == 0
        launch(name, weight_grad_kernel, (tiles, groups, splits), pointer(rows_of),
               pointer(windows_of), pointer(dst), *common, *lead, mg * ws[0], ws[0], ws[1],
               *_lead(ws[2:], 0), *_window_args(*geometry), mg, cg, ncols, r, r_split,
               CHANNELS_INNER=inner or blocks, CHANNEL_BLOCKS=blocks, **options,
               **config.launch_options())
        parts["slices"] = None if splits == 1 else dst

    _run_tuned("conv weight grad", dtype, (bucket(mg, ncols, r), inner), run_config,
               gather=not inner)
    if parts["slices"] is not None:
        total = call_below_autograd("sum.dim_IntList", parts["slices"], (0,), False, acc)
        call_below_autograd("copy_", out, total, False)
    return out


def _check_rank(op, input):
    k = len(input._impl.sizes) - 2
    if k > MAX_SPATIAL:
        raise ShapeError(f"{op}(): the cuda kernels handle 1 to {MAX_SPATIAL} spatial dims, "
                         f"but argument 'input' has {k} (shape {list(input._impl.sizes)})",
                         op=op, arg="input")


# ---- the ops -------------------------------------------------------------------------------
def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                groups):
    """out = conv(input, weight) + bias, or its transposed form (see the module doc)."""
    op = "convolution"
    spec = shape_rule("conv.convolution")(
        op, (input, weight, bias, stride, padding, dilation, transposed, output_padding, groups))
    device, (x, w, b) = operands(op, input=input, weight=weight, bias=bias)
    _check_rank(op, x)
    out = _result(tuple(spec.sizes), spec.dtype, device, _channels_last_call(x, w))
    geometry = (tuple(w._impl.sizes[2:]), stride, padding, dilation)
    return _conv_into(out, x, w, b, geometry, groups, transposed)


def convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
                         transposed, output_padding, groups, output_mask):
    """(grad_input, grad_weight, grad_bias), each None where output_mask says so."""
    op = "convolution_backward"
    shape_rule("conv.convolution_backward")(
        op, (grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
             output_padding, groups, output_mask))
    device, (g, x, w) = operands(op, grad_output=grad_output, input=input, weight=weight)
    _check_rank(op, x)
    geometry = (tuple(w._impl.sizes[2:]), stride, padding, dilation)
    nhwc = _channels_last_call(g, x, w)
    dtype = g._impl.dtype
    gi = gw = gb = None
    if output_mask[0]:
        gi = _result(tuple(x._impl.sizes), dtype, device, nhwc)
        gi = _conv_into(gi, g, w, None, geometry, groups, not transposed)
    if output_mask[1]:
        # The weight's own layout (a channels_last weight gets a channels_last gradient).
        w_nhwc = len(w._impl.sizes) == 4 and not w._impl.is_contiguous and \
            is_channels_last(w._impl.sizes, w._impl.strides)
        if transposed:
            gw = _weight_grad(x, g, geometry, groups, w, w_nhwc)
        else:
            gw = _weight_grad(g, x, geometry, groups, w, w_nhwc)
    if output_mask[2]:
        dims = [0] + list(range(2, len(g._impl.sizes)))
        acc = dt.float32 if dtype in (dt.float16, dt.bfloat16) else \
            (dtype if dtype.is_floating_point else dt.int64)
        gb = call_below_autograd("sum.dim_IntList", g, tuple(dims), False, acc).to(dtype)
    return gi, gw, gb
