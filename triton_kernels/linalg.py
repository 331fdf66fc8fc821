"""mm and bmm on the `cuda` device: one blocked `tl.dot` kernel (Triton tutorial 03,
with pointers computed from strides, no block pointers), fp32 accumulation.

Two candidates per op sit in the CUDA kernel registry, the second level of dispatch:

    mm_aligned   priority 10   M, N, K multiples of the block sizes: no masks
    mm           priority 0    any shape: every load and store masked (ops.yaml names it)

A call whose shape meets the rule goes to the aligned one; it still hands over
(KernelConstraintError) when no tuned block size divides the shape. Both are
autotuned over block sizes, num_warps and num_stages per bucket of (M, N, K) and dtype
(tensorplay/dispatch/autotune.py; the aligned kernel over the configs whose blocks divide
the shape); under the interpreter autotuning is off unless asked for, and the first
config that fits runs.

Transposed inputs need no copy: a kernel reads any strides. fp16/bf16 inputs go to
the tensor cores as they are; fp32 and fp64 use IEEE precision (PyTorch's default,
no TF32).

inv_ex, slogdet, solve and cholesky_ex of batched small matrices (n <= SMALL_N = 32) run
one program per matrix with the whole matrix in registers: a right-looking Cholesky, and
Gauss-Jordan elimination with partial pivoting (getrf's pivots and info) for the inverse,
the solve and the determinant's sign and log. Again two candidates per op:

    linalg_inv_ex           priority 0     float32/float64, ShapeRule n <= SMALL_N
    linalg_inv_ex_on_host   priority -10   anything else: LAPACK on a host copy

(the same for the other three). ops.yaml names the Triton kernel; the `_on_host` kernels (at
the end) are registered below it here, and log themselves each call; explain() shows
which one ran.
"""
from __future__ import annotations

import logging

import numpy as np
import triton
import triton.language as tl

from tensorplay import _cuda_state
from tensorplay import _dtype as dt
from tensorplay._device_transfer import from_host, to_host
from tensorplay.dispatch.autotune import Config, bucket, choose
from tensorplay.errors import KernelConstraintError
from tensorplay.kernel_support import lapack
from tensorplay.kernel_support.layout import storage_span
from tensorplay.kernel_support.results import TensorImpl, contiguous_strides, factory, \
    numel_of
from tensorplay.kernel_support.ops import call_below_autograd, shape_rule
from tensorplay.library import Library, ShapeRule, kernel
from triton_kernels._launch import INTERPRETED, broadcast_strides, launch, new_tensor, \
    operands, pointer
from triton_kernels import _math
from triton_kernels._complex import part
from triton_kernels.copy import fill_
from triton_kernels.pointwise import run, run_expression

# The aligned candidate's ShapeRule is a cheap filter that becomes part of the kernel
# cache key: M, N and K multiples of 16, tl.dot's smallest tile. The kernel itself then
# needs a tuned config whose blocks divide the shape exactly, and hands the call over
# to the masked kernel (KernelConstraintError) when there is none (e.g. 48 x 48 x 48).
ALIGN_M, ALIGN_N, ALIGN_K = 16, 16, 16


@triton.jit
def grouped_tile(M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """(pid_m, pid_n) of this program: GROUP_M row blocks in a row share each column block
    of B while it is in L2 (tutorial 03's grouped ordering)."""
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.jit
def dot_tile(
    a_ptr, b_ptr, M, N, K, stride_ak, stride_bk,  # a_ptr, b_ptr: this tile's first row/col
    offs_m, offs_n,
    stride_am, stride_bn,
    MASKED: tl.constexpr, USE_DOT: tl.constexpr, UPCAST: tl.constexpr,
    PRECISION: tl.constexpr, ACC: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    """The [BLOCK_M, BLOCK_N] tile of A @ B in ACC: K / BLOCK_K steps of tl.dot."""
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        if MASKED:
            k_left = K - k * BLOCK_K
            a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left),
                        other=0.0)
            b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N),
                        other=0.0)
        else:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        if UPCAST:
            a = a.to(tl.float32)
            b = b.to(tl.float32)
        if USE_DOT:
            # out_dtype: triton 3.6 takes float32 for a float64 dot unless told.
            acc = tl.dot(a, b, acc, input_precision=PRECISION, out_dtype=ACC)
        else:
            # Integers: tl.dot has no int64 (or int16/int32) inputs, so multiply a
            # [BLOCK_M, BLOCK_K, BLOCK_N] block of products and sum over K. Wrapping
            # modulo 2**bits commutes with + and *, so int64 accumulation then the
            # narrowing store gives what an int8 (or uint8...) accumulator would.
            acc += tl.sum(a.to(ACC)[:, :, None] * b.to(ACC)[None, :, :], axis=1)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    return acc


@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr,  # C[batch] = A[batch] @ B[batch]
    M, N, K,  # A is M x K, B is K x N
    stride_ab, stride_am, stride_ak,  # strides in elements (batch stride 0 for mm)
    stride_bb, stride_bk, stride_bn,
    stride_cb, stride_cm, stride_cn,
    MASKED: tl.constexpr,  # False only when the blocks divide M, N and K exactly
    USE_DOT: tl.constexpr,  # tl.dot (floating inputs) or a broadcast multiply-sum (integers)
    UPCAST: tl.constexpr,  # interpreter: do half-precision dots in float32
    PRECISION: tl.constexpr,  # "ieee" for fp32/fp64 inputs (no TF32)
    ACC: tl.constexpr,  # accumulator dtype: float32 (float64 for fp64 inputs)
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,  # row blocks that share columns of B while it is in L2
):
    # Memory traffic per program: K/BLOCK_K tiles of A (BLOCK_M x BLOCK_K) and of B
    # (BLOCK_K x BLOCK_N) read, one BLOCK_M x BLOCK_N tile of C written.
    batch = tl.program_id(1)
    pid_m, pid_n = grouped_tile(M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = dot_tile(a_ptr + batch * stride_ab, b_ptr + batch * stride_bb, M, N, K, stride_ak,
                   stride_bk, offs_m, offs_n, stride_am, stride_bn, MASKED, USE_DOT, UPCAST,
                   PRECISION, ACC, BLOCK_M, BLOCK_N, BLOCK_K)
    c = _math.convert(acc, c_ptr.dtype.element_ty)
    c_ptrs = c_ptr + batch * stride_cb + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    if MASKED:
        tl.store(c_ptrs, c, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
    else:
        tl.store(c_ptrs, c)


@triton.jit
def matmul_epilogue_kernel(
    a_ptr, b_ptr, c_ptr,  # C[batch] = alpha * A[batch] @ B[batch] + beta * S[batch]
    s_ptr,  # S (addmm's self, linear's bias), broadcast through its strides (0: repeated)
    M, N, K,
    stride_ab, stride_am, stride_ak,
    stride_bb, stride_bk, stride_bn,
    stride_cb, stride_cm, stride_cn,
    stride_sb, stride_sm, stride_sn,
    alpha, beta,
    HAS_S: tl.constexpr,  # False: no bias, or beta == 0 (S is then not read: NaN in it too)
    S_ROW: tl.constexpr,  # S is one row repeated (stride_sm == 0: linear's bias): a vector
    MASKED: tl.constexpr, USE_DOT: tl.constexpr, UPCAST: tl.constexpr,
    PRECISION: tl.constexpr, ACC: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    # The fused epilogue: the bias is added to the accumulator in registers and C is
    # written once, in its own dtype (one rounding of half types). Unfused, the fp32
    # product went to memory and a second kernel read it back with the bias.
    batch = tl.program_id(1)
    pid_m, pid_n = grouped_tile(M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = dot_tile(a_ptr + batch * stride_ab, b_ptr + batch * stride_bb, M, N, K, stride_ak,
                   stride_bk, offs_m, offs_n, stride_am, stride_bn, MASKED, USE_DOT, UPCAST,
                   PRECISION, ACC, BLOCK_M, BLOCK_N, BLOCK_K)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    acc = acc * alpha
    if HAS_S and S_ROW:
        # one [BLOCK_N] load broadcast down the tile: no second [BLOCK_M, BLOCK_N] block of
        # registers next to the accumulator (which spilled the large configs)
        s_ptrs = s_ptr + batch * stride_sb + offs_n * stride_sn
        if MASKED:
            s = tl.load(s_ptrs, mask=offs_n < N, other=0.0)
        else:
            s = tl.load(s_ptrs)
        acc = (_math.convert(s, ACC) * beta)[None, :] + acc
    elif HAS_S:
        s_ptrs = s_ptr + batch * stride_sb + offs_m[:, None] * stride_sm + \
            offs_n[None, :] * stride_sn
        if MASKED:
            s = tl.load(s_ptrs, mask=mask, other=0.0)
        else:
            s = tl.load(s_ptrs)
        acc = _math.convert(s, ACC) * beta + acc
    c = _math.convert(acc, c_ptr.dtype.element_ty)
    c_ptrs = c_ptr + batch * stride_cb + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    if MASKED:
        tl.store(c_ptrs, c, mask=mask)
    else:
        tl.store(c_ptrs, c)


def _config(bm, bn, bk, stages, warps):
    return Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8},
                  num_stages=stages, num_warps=warps)


if INTERPRETED:
    # Two small configs: each program stays cheap, and autotuning (when asked for) has two
    # to choose from.
    CONFIGS = [_config(32, 32, 32, 1, 4), _config(64, 64, 32, 1, 4)]
else:
    CONFIGS = [
        _config(128, 256, 64, 3, 8), _config(256, 128, 64, 3, 8),
        _config(128, 128, 64, 4, 8), _config(128, 128, 32, 4, 4),
        _config(128, 64, 32, 4, 4), _config(64, 128, 32, 4, 4),
        _config(64, 64, 32, 5, 4), _config(32, 64, 32, 5, 2),
    ]


def _accumulator_per_thread(config):
    """fp32 accumulator elements each thread holds: the tile over the program's threads."""
    return config.kwargs["BLOCK_M"] * config.kwargs["BLOCK_N"] // (32 * config.num_warps)


# The masked kernel (any shape) holds bounds masks and clamped offsets per tile besides the
# accumulator: with 128 accumulator values a thread (128x256 and 256x128 over 8 warps,
# 128x128 over 4) ptxas spills registers, fp16 and bf16 too (0.5 to 2.7 KB a thread;
# triton_kernels/COMPILE_REPORT.md), so the masked kernel chooses among the configs that
# hold at most 64. The aligned kernel keeps them all: unmasked, they fit.
# The masked epilogue also reads an s tile and keeps its masks: at 64 accumulator values
# a thread (128 x 128 x 64 over 8 warps, 128 x 64 over 4) it spilled 16-280 bytes in fp16
# there, so it keeps to 32.
def masked_configs(epilogue=False):
    return [c for c in CONFIGS if _accumulator_per_thread(c) <= (32 if epilogue else 64)]


def _dividing(configs, named_args, **kwargs):
    """The aligned kernel runs unmasked: keep the configs whose blocks divide the shape."""
    m, n, k = named_args["M"], named_args["N"], named_args["K"]
    return [c for c in configs if m % c.kwargs["BLOCK_M"] == 0
            and n % c.kwargs["BLOCK_N"] == 0 and k % c.kwargs["BLOCK_K"] == 0]


def _dot_options(dtype):
    half = dtype in (dt.float16, dt.bfloat16)
    # float32 in TF32 only when tp.backends.cuda.matmul.allow_tf32 says so (PyTorch's
    # default is full float32 precision); float64 always in full precision.
    tf32 = half or (dtype is dt.float32 and _cuda_state.matmul_allow_tf32)
    return dict(UPCAST=half and INTERPRETED, PRECISION="tf32" if tf32 else "ieee",
                ACC=tl.float64 if dtype is dt.float64 else tl.float32)


# Integers run the kernel without autotuning, in blocks small enough for the
# [BLOCK_M, BLOCK_K, BLOCK_N] products to stay in registers.
INTEGER_BLOCKS = dict(BLOCK_M=32, BLOCK_N=32, BLOCK_K=8, GROUP_M=8)


def _launch(name, a, b, c, batch, masked, epilogue=None):
    """a: [B?, M, K], b: [B?, K, N] -> c: [B?, M, N] (the batch dim only when batch>0).
    Floating inputs run an autotuned config: of masked_configs() (masked), or of those whose
    blocks divide M, N and K (unmasked). `epilogue` = (s, alpha, beta): c = alpha * a @ b
    + beta * s in the same kernel (s broadcast to c's shape, or None)."""
    sa, sb, sc = a._impl.strides, b._impl.strides, c._impl.strides
    if len(sa) == 2:
        sa, sb, sc = (0,) + sa, (0,) + sb, (0,) + sc
    M, K = a._impl.sizes[-2:]
    N = b._impl.sizes[-1]
    if c._impl.numel() == 0:          # nothing to write (an empty batch, M or N)
        return c
    if K == 0 and epilogue is None:
        return fill_(c, 0)
    dtype = a._impl.dtype
    args = (pointer(a), pointer(b), pointer(c), M, N, K, *sa, *sb, *sc)
    kernel = matmul_kernel
    extra = {}
    if epilogue is not None:
        s, alpha, beta = epilogue
        kernel = matmul_epilogue_kernel
        has_s = s is not None and beta != 0
        ss = broadcast_strides(s, c._impl.sizes) if has_s else [0, 0, 0]
        if len(ss) == 2:
            ss = [0] + ss
        args = args[:3] + (pointer(s if has_s else c),) + args[3:] + (*ss, float(alpha),
                                                                      float(beta))
        extra = dict(HAS_S=has_s, S_ROW=has_s and ss[1] == 0)
        name = f"{name} + epilogue"

    def run_config(config):
        # c is only written: a measured run may write it again.
        blocks = config.kwargs
        grid = (triton.cdiv(M, blocks["BLOCK_M"]) * triton.cdiv(N, blocks["BLOCK_N"]),
                max(batch, 1))
        launch(name, kernel, grid, *args, MASKED=masked, **options, **extra,
               **config.launch_options())

    if not dtype.is_floating_point:
        name = "matmul (integer, masked)"
        options = dict(USE_DOT=False, UPCAST=False, PRECISION="ieee", ACC=tl.int64)
        run_config(Config(INTEGER_BLOCKS))
        return c
    options = dict(USE_DOT=True, **_dot_options(dtype))
    configs = masked_configs(epilogue is not None) if masked else \
        _dividing(CONFIGS, dict(M=M, N=N, K=K))
    # The unmasked kernel's list depends on the exact shape: which configs divide it.
    key = (bucket(M, N, K), dtype.name, masked,
           None if masked else tuple(CONFIGS.index(cf) for cf in configs))
    if epilogue is not None:
        key += ("epilogue",)
    # Unmeasured (autotuning off), float64 on a GPU takes the smallest tiles: the three
    # biggest need 384 KiB of shared memory at 8 bytes an element (an H100 gives a
    # program 227 KiB), and cannot launch. Measured, such configs are left out.
    default = len(configs) - 1 if not INTERPRETED and dtype.itemsize >= 8 else 0
    run_config(choose("matmul", configs, key, run_config, default=default))
    return c


def product(a, b, dtype, epilogue=None):
    """a @ b (2-D or 3-D, any strides) into a new tensor of `dtype`: the aligned kernel
    when its rule holds, the masked one otherwise. `epilogue` = (s, alpha, beta) adds
    beta * s to alpha * (a @ b) before the one store (addmm, linear's bias: see
    matmul_epilogue_kernel); the accumulator is float32 for half inputs whatever `dtype`,
    so the result is rounded once."""
    sizes = tuple(a._impl.sizes[:-1]) + (b._impl.sizes[-1],)
    c = new_tensor(sizes, dtype, a._impl.device)
    batch = a._impl.sizes[0] if len(sizes) == 3 else 0
    aligned = a._impl.dtype in _MATMUL_DTYPES and _aligned(a, b) and \
        _dividing(CONFIGS, dict(M=sizes[-2], N=sizes[-1], K=a._impl.sizes[-1]))
    if aligned:
        return _launch("matmul (aligned, unmasked)", a, b, c, batch, False, epilogue)
    return _launch("matmul (masked)", a, b, c, batch, True, epilogue)


def _mm_prepare(self, mat2):
    spec = shape_rule("mm")("mm", (self, mat2))
    device, (a, b) = operands("mm", self=self, mat2=mat2)
    return a, b, new_tensor(spec.sizes, spec.dtype, device)


def _bmm_prepare(self, mat2):
    spec = shape_rule("bmm")("bmm", (self, mat2))
    device, (a, b) = operands("bmm", self=self, mat2=mat2)
    return a, b, new_tensor(spec.sizes, spec.dtype, device)


# ---- the generic candidates (ops.yaml names them): any dtype, any shape -------------------
@kernel(takes_complex=True)
def mm(self, mat2):
    a, b, c = _mm_prepare(self, mat2)
    if c._impl.dtype.is_complex:
        return _complex_product(a, b, c, 0)
    return _launch("matmul (masked)", a, b, c, 0, masked=True)


@kernel(takes_complex=True)
def bmm(self, mat2):
    a, b, c = _bmm_prepare(self, mat2)
    if c._impl.dtype.is_complex:
        return _complex_product(a, b, c, a._impl.sizes[0])
    return _launch("matmul (masked)", a, b, c, a._impl.sizes[0], masked=True)


def _complex_product(a, b, c, batch):
    """c = a @ b of complex matrices as four real products of their parts, each the
    masked kernel on strided float views (triton_kernels/_complex.py: `part`):

        (A + iB)(C + iD) = (AC - BD) + i(AD + BC)
    """
    ar, ai, br, bi = part(a, 0), part(a, 1), part(b, 0), part(b, 1)
    real, imag = part(c, 0), part(c, 1)
    dtype = real._impl.dtype
    scratch = new_tensor(real._impl.sizes, dtype, c._impl.device)

    def product(x, y, into):
        _launch("matmul (masked)", x, y, into, batch, masked=True)
    product(ar, br, real)
    product(ai, bi, scratch)
    run("sub", real, (real, scratch), dtype)
    product(ar, bi, imag)
    product(ai, br, scratch)
    run("add", imag, (imag, scratch), dtype)
    return c


# ---- the specialised candidates ---------------------------------------------------------
def _aligned(*mats):
    """ShapeRule check: M, N multiples of ALIGN_M, ALIGN_N and K of ALIGN_K."""
    a, b = mats[0]._impl.sizes, mats[1]._impl.sizes
    if len(a) < 2 or len(b) < 2:
        return False
    M, K, N = a[-2], a[-1], b[-1]
    return M > 0 and N > 0 and K > 0 and M % ALIGN_M == 0 and N % ALIGN_N == 0 \
        and K % ALIGN_K == 0


ALIGNED = ShapeRule(f"M, N, K multiples of {ALIGN_M}, {ALIGN_N}, {ALIGN_K}", _aligned)


def _require_dividing_config(a, b):
    M, K = a._impl.sizes[-2:]
    N = b._impl.sizes[-1]
    if not _dividing(CONFIGS, dict(M=M, N=N, K=K)):
        raise KernelConstraintError(f"no tuned block size divides M={M}, N={N}, K={K}")


def mm_aligned(self, mat2):
    a, b, c = _mm_prepare(self, mat2)
    _require_dividing_config(a, b)
    return _launch("matmul (aligned, unmasked)", a, b, c, 0, masked=False)


def bmm_aligned(self, mat2):
    a, b, c = _bmm_prepare(self, mat2)
    _require_dividing_config(a, b)
    return _launch("matmul (aligned, unmasked)", a, b, c, a._impl.sizes[0], masked=False)


# Registered here, next to the kernels: the aligned candidates outrank the generic ones
# that tensorplay/_backend_loading.py registers from ops.yaml.
_MATMUL_DTYPES = {dt.float16, dt.bfloat16, dt.float32}
specialised = Library("CUDA", "triton_kernels.linalg (specialised)")
specialised.impl("mm", mm_aligned, priority=10, dtypes=_MATMUL_DTYPES, shape=ALIGNED)
specialised.impl("bmm", bmm_aligned, priority=10, dtypes=_MATMUL_DTYPES, shape=ALIGNED)


def _acc(dtype):
    """Products of half types accumulate (and stay until the last rounding) in float32."""
    return dt.float32 if dtype in (dt.float16, dt.bfloat16) else dtype


def _scaled_sum(name, self, prod, beta, alpha, out):
    """out = beta * self + alpha * prod; beta == 0 ignores self (nan and inf in it too)."""
    if beta == 0:
        return run_expression(f"{name}_beta0", "y * alpha", out, (self, prod), prod.dtype,
                              {"alpha": alpha})
    return run_expression(name, "x * beta + y * alpha", out, (self, prod), prod.dtype,
                          {"beta": beta, "alpha": alpha})


# The shape rules of the three, by the names ops.yaml gives them.
_RULES = {"addmm": "linalg.addmm", "addmv": "linalg.addmv", "baddbmm": "linalg.baddbmm"}
_OPERANDS = {"addmm": ("mat1", "mat2"), "addmv": ("mat", "vec"), "baddbmm": ("batch1", "batch2")}


@kernel(family=True)
def addmm_addmv_baddbmm(op, self, *params):
    """addmm, addmv and baddbmm, out of place or in place: beta * self + alpha * (a @ b)
    with (a, b) = (mat1, mat2), (mat, vec) or (batch1, batch2), batch by batch. A vector
    multiplies as a one-column matrix. Floating out-of-place calls run the matmul with
    the sum in its epilogue (one kernel, the result written once in its dtype); in place
    (self is read and written, and an autotuned launch runs more than once) and integer
    calls, the product then the scaled sum."""
    a, b, beta, alpha = params
    name = op.rstrip("_")
    spec = shape_rule(_RULES[name])(op, (self,) + params)
    first, second = _OPERANDS[name]
    device, (s, a, b) = operands(op, self=self, **{first: a, second: b})
    if not op.endswith("_") and spec.dtype.is_floating_point:
        if name == "addmv":
            s = s.unsqueeze(1) if len(s._impl.sizes) == 1 else s
            out = product(a, b.unsqueeze(1), spec.dtype, epilogue=(s, alpha, beta))
            return out.squeeze(1)
        return product(a, b, spec.dtype, epilogue=(s, alpha, beta))
    if name == "addmv":
        prod = product(a, b.unsqueeze(1), _acc(a._impl.dtype)).squeeze(1)
    else:
        prod = product(a, b, _acc(a._impl.dtype))
    out = self if op.endswith("_") else new_tensor(spec.sizes, spec.dtype, device)
    return _scaled_sum("addmv" if name == "addmv" else "addmm", s, prod, beta, alpha, out)


def mv(self, vec):
    spec = shape_rule("linalg.mv")("mv", (self, vec))
    _, (m, v) = operands("mv", self=self, vec=vec)
    return product(m, v.unsqueeze(1), spec.dtype).view(spec.sizes)


def dot(self, tensor):
    spec = shape_rule("linalg.dot")("dot", (self, tensor))
    _, (a, b) = operands("dot", self=self, tensor=tensor)
    return product(a.unsqueeze(0), b.unsqueeze(1), spec.dtype).view(())


def linear(input, weight, bias):  # noqa: A002 - the schema's name
    """input @ weight.T + bias for input [..., in_features], the bias added in the
    matmul's epilogue (one kernel):
        out[..., o] = sum_i input[..., i] * weight[o, i] + bias[o]"""
    spec = shape_rule("linalg.linear")("linear", (input, weight, bias))
    device, (x, w, b) = operands("linear", input=input, weight=weight, bias=bias)
    features = x._impl.sizes[-1] if x._impl.sizes else 1
    rows = x.reshape([-1, features])
    if b is None or not spec.dtype.is_floating_point:
        if b is None:
            return product(rows, w.t(), spec.dtype).view(spec.sizes)
        prod = product(rows, w.t(), _acc(spec.dtype))
        out = new_tensor(prod._impl.sizes, spec.dtype, device)
        run_expression("linear_bias", "x + y", out, (prod, b), prod._impl.dtype, {})
        return out.view(spec.sizes)
    return product(rows, w.t(), spec.dtype, epilogue=(b, 1, 1)).view(spec.sizes)


# ---- triangles and diagonals -------------------------------------------------------------
@kernel(family=True)
def triangle(op, self, diagonal):
    """tril and triu, out of place or in place (tril_, triu_): one generated kernel each,
    keeping the elements on the chosen side of the diagonal."""
    shape_rule("linalg.tril")(op, (self, diagonal))
    device, _ = operands(op, self=self)
    keep = "col - row <= diagonal" if op.startswith("tril") else "col - row >= diagonal"
    inplace = op.endswith("_")
    out = self if inplace else new_tensor(self._impl.sizes, self._impl.dtype, device)
    return run_expression(op.rstrip("_"), f"tl.where({keep}, x, 0)", out, (self,),
                          self._impl.dtype, {"diagonal": diagonal}, matrix=True)


def diag(self, diagonal):
    """A vector becomes a square matrix with it on diagonal `diagonal`; a matrix gives a
    copy of that diagonal. Both are a copy through a strided view of the diagonal."""
    spec = shape_rule("linalg.diag")("diag", (self, diagonal))
    device, _ = operands("diag", self=self)
    out = new_tensor(spec.sizes, spec.dtype, device)
    if len(self._impl.sizes) == 2:
        if spec.sizes[0] == 0:
            return out
        on_diagonal = call_below_autograd("diagonal", self, diagonal, 0, 1)
        return run("copy", out, (on_diagonal,), self._impl.dtype)
    fill_(out, 0)
    n = spec.sizes[0]
    start = diagonal if diagonal >= 0 else -diagonal * n
    on_diagonal = out.as_strided([self._impl.sizes[0]], [n + 1], start)
    run("copy", on_diagonal, (self,), self._impl.dtype)
    return out


# ---- small matrices in registers: Cholesky, and LU for inv, solve, slogdet ---------------
# One program per matrix of the stack keeps the whole n x n matrix in registers, a
# BLOCK x BLOCK tile (BLOCK the next power of two >= n; the padding loads as zeros and is
# never stored), and runs the textbook elimination one column at a time. A tile has no
# scalar indexing, so "column j" is a masked sum, tl.sum(tl.where(cols == j, a, 0), axis=1),
# and "write row j" a tl.where over the tile. Each of the n steps touches the whole tile:
# O(n * BLOCK^2) work and one read and one write of memory per matrix, every matrix of the
# stack in parallel. That suits many small matrices; one large matrix would be one program
# on one SM of the GPU, its registers spilling. Above SMALL_N (a ShapeRule, so the
# registry decides before the call) the host fallback, LAPACK on a host copy, takes over.
#
# SMALL_N = 32: a 32 x 32 tile is 1024 elements, 8 per thread of the 4 warps it runs on.
# Registers per thread (sm_90, cuobjdump --dump-resource-usage on the compiled kernels):
#                      BLOCK 16 (2 warps)   32 (4 warps)   64 (8 warps)
#     cholesky fp64            68             103            128
#     LU [A | I] fp64          88             142            240
#     LU [A | I] fp32          60             103            126
# None spills, but at 64 the float64 LU takes 240 of the 255 registers a thread may have,
# no headroom for any change of the kernel, and 240 x 256 threads fill an SM's 65536
# registers: one program per SM, whose 64 serial steps each synchronise 8 warps. At 32 the
# worst (float64 LU, 142 x 128 threads) leaves room for three programs per SM.
SMALL_N = 32
FLOATS = {dt.float32, dt.float64}


def _small(A, *rest):
    """ShapeRule check: square matrices of order n <= SMALL_N."""
    sizes = A._impl.sizes
    return len(sizes) >= 2 and sizes[-1] <= SMALL_N


SMALL = ShapeRule(f"n <= {SMALL_N} (the matrix in registers)", _small)


@triton.jit
def _divide(x, y, FP32: tl.constexpr):
    """x / y rounded as IEEE says (float32 `/` in Triton is an approximate division)."""
    if FP32:
        q = tl.div_rn(x, y)
    else:
        q = x / y
    return q


@triton.jit
def _sqrt(x, FP32: tl.constexpr):
    if FP32:
        r = tl.sqrt_rn(x)
    else:
        r = tl.sqrt(x)
    return r


@triton.jit
def cholesky_kernel(
    a_ptr, l_ptr, info_ptr, n,
    stride_ab, stride_ar, stride_ac,  # A[batch, row, col], any strides
    stride_lb, stride_lr, stride_lc,  # the factor, in PyTorch's (column-major) layout
    UPPER: tl.constexpr,  # A = U^T U from A's upper triangle, instead of A = L L^T
    FP32: tl.constexpr, ACC: tl.constexpr, BLOCK: tl.constexpr,
):
    # Right-looking Cholesky (LAPACK's potf2 for the lower triangle): for each column j,
    #     L[j, j] = sqrt(A[j, j]),  L[i, j] = A[i, j] / L[j, j]          (i > j)
    #     A[i, k] -= L[i, j] * L[k, j]                                  (i >= k > j)
    # The upper factor of A is the lower one of A^T, whose lower triangle is A's upper
    # one: UPPER reads A transposed and writes the factor transposed, same loop.
    batch = tl.program_id(0).to(tl.int64)
    i = tl.arange(0, BLOCK)
    rows = i[:, None]
    cols = i[None, :]
    if UPPER:
        a_ptrs = a_ptr + batch * stride_ab + cols * stride_ar + rows * stride_ac
        l_ptrs = l_ptr + batch * stride_lb + cols * stride_lr + rows * stride_lc
    else:
        a_ptrs = a_ptr + batch * stride_ab + rows * stride_ar + cols * stride_ac
        l_ptrs = l_ptr + batch * stride_lb + rows * stride_lr + cols * stride_lc
    inside = (rows < n) & (cols < n)
    lower = rows >= cols
    a = tl.load(a_ptrs, mask=inside & lower, other=0).to(ACC)   # one triangle, as LAPACK
    info = tl.full([], 0, tl.int32)
    for j in range(n):
        column = tl.sum(tl.where(cols == j, a, 0), axis=1)
        d = tl.sum(tl.where(i == j, column, 0), axis=0)
        # LAPACK's info: the order of the first leading minor that is not positive-definite
        # (d <= 0, or nan). From there on the matrix is left as it is.
        info = tl.where(info == 0, tl.where(d > 0, 0, j + 1), info)
        going = info == 0
        root = _sqrt(tl.where(going, d, 1), FP32)
        below = tl.where(i > j, _divide(column, root, FP32), 0)
        l_j = tl.where(i == j, root, below)
        updated = a - tl.where(lower, below[:, None] * below[None, :], 0)
        a = tl.where(going, tl.where(cols == j, l_j[:, None], updated), a)
    tl.store(l_ptrs, a.to(l_ptr.dtype.element_ty), mask=inside)   # zeros above the diagonal
    tl.store(info_ptr + batch, info)


@triton.jit
def lu_kernel(
    a_ptr, b_ptr, x_ptr, info_ptr, sign_ptr, logabsdet_ptr, n, k,
    stride_ab, stride_ar, stride_ac,  # A[batch, row, col], n x n
    stride_bb, stride_br, stride_bc,  # B[batch, row, col], n x k (RHS == "B")
    stride_xb, stride_xr, stride_xc,  # X = A^-1 B, n x k
    RHS: tl.constexpr,  # "B": solve A X = B; "identity": X = A^-1; "none": slogdet only
    FP32: tl.constexpr, ACC: tl.constexpr, BLOCK: tl.constexpr, BLOCK_K: tl.constexpr,
):
    # Gauss-Jordan elimination with partial pivoting on [A | B]: for each column j, swap
    # into row j the row p >= j with the largest |A[p, j]| (the first of equals, as
    # LAPACK's idamax), then subtract multiples of row j from every other row, above it
    # too, so that A ends diagonal and X = B / diag. The pivots are those of LAPACK's
    # getrf (rows below j see the same operations as in LU), hence getrf's info (the first
    # exactly-zero pivot; the elimination goes on past it, as getrf does) and the
    # determinant: the product of the pivots, negated for each swap.
    batch = tl.program_id(0).to(tl.int64)
    first = tl.program_id(1) * BLOCK_K     # this program's columns of B: a grid of chunks
    i = tl.arange(0, BLOCK)
    rows = i[:, None]
    cols = i[None, :]
    a = tl.load(a_ptr + batch * stride_ab + rows * stride_ar + cols * stride_ac,
                mask=(rows < n) & (cols < n), other=0).to(ACC)
    c = first + tl.arange(0, BLOCK_K)[None, :]
    if RHS == "B":
        b = tl.load(b_ptr + batch * stride_bb + rows * stride_br + c * stride_bc,
                    mask=(rows < n) & (c < k), other=0).to(ACC)
    elif RHS == "identity":
        b = tl.where((rows == c) & (rows < n), 1, 0).to(ACC)
    info = tl.full([], 0, tl.int32)
    sign = tl.full([], 1, ACC)
    logabsdet = tl.full([], 0, ACC)
    pivots = tl.full([BLOCK], 1, ACC)
    for j in range(n):
        column = tl.sum(tl.where(cols == j, a, 0), axis=1)
        size = tl.where((i >= j) & (i < n), tl.abs(column), -1)
        p = tl.min(tl.where(size == tl.max(size, axis=0), i, BLOCK), axis=0)
        p = tl.where(p < n, p, j)      # a nan column matches no row: no swap
        pivot = tl.sum(tl.where(i == p, column, 0), axis=0)
        diagonal = tl.sum(tl.where(i == j, column, 0), axis=0)
        column = tl.where(i == j, pivot, tl.where(i == p, diagonal, column))
        row_j = tl.sum(tl.where(rows == j, a, 0), axis=0)
        row_p = tl.sum(tl.where(rows == p, a, 0), axis=0)
        a = tl.where(rows == j, row_p[None, :], tl.where(rows == p, row_j[None, :], a))
        zero = pivot == 0
        info = tl.where(info == 0, tl.where(zero, j + 1, 0), info)
        # The multipliers of every row but j (none for a zero pivot: getrf skips it).
        # (Scalar conditions go through tl.where, not `&`: the interpreter cannot `&` a
        # scalar comparison with a tensor.)
        multiplier = tl.where((i != j) & (i < n),
                              _divide(column, tl.where(zero, 1, pivot), FP32), 0)
        multiplier = tl.where(zero, 0, multiplier)
        a = a - multiplier[:, None] * row_p[None, :]
        if RHS != "none":
            b_j = tl.sum(tl.where(rows == j, b, 0), axis=0)
            b_p = tl.sum(tl.where(rows == p, b, 0), axis=0)
            b = tl.where(rows == j, b_p[None, :], tl.where(rows == p, b_j[None, :], b))
            b = b - multiplier[:, None] * b_p[None, :]
        pivots = tl.where(i == j, pivot, pivots)
        sign = sign * tl.where(p != j, -1, 1) * tl.where(pivot < 0, -1, 1)
        logabsdet += tl.log(tl.abs(pivot))
    tl.store(info_ptr + batch, info, mask=tl.program_id(1) == 0)
    if RHS == "none":
        # A singular matrix: sign 0 and log|det| -inf, as LAPACK-based slogdet says.
        tl.store(sign_ptr + batch, tl.where(info > 0, 0, sign).to(sign_ptr.dtype.element_ty))
        tl.store(logabsdet_ptr + batch, tl.where(info > 0, -float("inf"), logabsdet)
                 .to(logabsdet_ptr.dtype.element_ty))
    else:
        x = _divide(b, pivots[:, None], FP32)
        tl.store(x_ptr + batch * stride_xb + rows * stride_xr + c * stride_xc,
                 x.to(x_ptr.dtype.element_ty), mask=(rows < n) & (c < k))


def _block(n):
    """The tile's side: a power of two (tl.arange's rule) >= n, at least 4."""
    return max(triton.next_power_of_2(n), 4)


def _warps(block):
    """Warps per program: enough threads that a tile is a few registers each, no more
    (each reduction of the loop synchronises them all)."""
    return 1 if block <= 8 else 2 if block <= 16 else 4 if block <= 32 else 8


def _options(dtype, n):
    block = _block(n)
    return dict(FP32=dtype is dt.float32, ACC=tl.float64 if dtype is dt.float64 else tl.float32,
                BLOCK=block, num_warps=_warps(block))


def _require_small(op, n):
    """The host's guard (Triton checks no bounds): the tile must hold the matrix."""
    if n > SMALL_N:
        raise KernelConstraintError(f"{op}: n = {n} > {SMALL_N}, more than a tile of registers")


def _merged_stride(sizes, strides):
    """The one stride that walks dims `sizes` (the batch dims) as a flat index, or None
    when they do not merge (a broadcast or permuted batch dim between others)."""
    stride, expected = 0, None
    for size, st in zip(reversed(sizes), reversed(strides)):
        if size == 1:
            continue
        if expected is not None and st != expected:
            return None
        if expected is None:
            stride = st
        expected = st * size
    return stride


def _matrices(t, batch, transpose=False):
    """An operand as (tensor, batch stride, row stride, col stride): `t` broadcast to the
    batch dims `batch`, its matrices transposed when `transpose` (strides swapped, no
    copy). Batch dims that merge into no single stride are first copied densely."""
    full = tuple(batch) + tuple(t._impl.sizes[-2:])
    strides = broadcast_strides(t, full)
    stride = _merged_stride(full[:-2], strides[:-2])
    if stride is None:
        dense = new_tensor(full, t._impl.dtype, t._impl.device)
        run("copy", dense, (t,), t._impl.dtype)
        t, strides = dense, dense._impl.strides
        stride = _merged_stride(full[:-2], strides[:-2])
    rows, cols = strides[-2:]
    return (t, stride, cols, rows) if transpose else (t, stride, rows, cols)


def _result_matrices(out, batch):
    """A result's matrices as `_matrices` gives an operand's, and one more item:
    (tensor the kernel writes, batch stride, row stride, col stride, dense or None).
    When out's batch dims merge into no single stride (a batch of solved vectors, laid out
    as PyTorch lays it), the kernel writes `dense`, which is then copied into `out`."""
    stride = _merged_stride(tuple(batch), out._impl.strides[:len(batch)])
    if stride is not None:
        return (out, stride) + tuple(out._impl.strides[-2:]) + (None,)
    dense = new_tensor(out._impl.sizes, out._impl.dtype, out._impl.device)
    return (dense, _merged_stride(tuple(batch), dense._impl.strides[:len(batch)])) + \
        tuple(dense._impl.strides[-2:]) + (dense,)


def _info_checked(op, info, what):
    """check_errors=True: LAPACK's info read on the host (a synchronisation, as in PyTorch),
    the first failed matrix named in a LinAlgError."""
    lapack.check_info(op, to_host(info), what)


@kernel(dtypes=FLOATS, shape=SMALL)
def linalg_cholesky_ex(A, upper, check_errors):
    """(L, info) with A = L L^T (upper: (U, info), A = U^T U), one program per matrix."""
    spec, info_spec = shape_rule("linalg.square_factorization")(
        "linalg_cholesky_ex", (A, upper, check_errors))
    device, (A,) = operands("linalg_cholesky_ex", A=A)
    n = spec.sizes[-1]
    _require_small("linalg_cholesky_ex", n)
    factor = factory.empty_strided(spec.sizes, spec.strides, dtype=spec.dtype, device=device)
    info = new_tensor(info_spec.sizes, dt.int32, device)
    batch = spec.sizes[:-2]
    count = numel_of(batch)
    if count:
        a, sab, sar, sac = _matrices(A, batch)
        l, slb, slr, slc, _ = _result_matrices(factor, batch)
        launch("cholesky (registers)", cholesky_kernel, (count,), pointer(a), pointer(l),
               pointer(info), n, sab, sar, sac, slb, slr, slc, UPPER=bool(upper),
               **_options(spec.dtype, n))
    if check_errors:
        _info_checked("linalg_cholesky_ex", info, lapack.CHOLESKY_FAILED)
    return factor, info


def _lu(A, batch, n, rhs, b=None, x=None, k=0, transpose=False, sign=None,
        logabsdet=None):
    """Launch lu_kernel over the stack: A (and B, X) broadcast to `batch`, `transpose`
    solving with A^T, B^T and X^T (X A = B). Returns LAPACK's info per matrix."""
    device = A._impl.device
    info = new_tensor(batch, dt.int32, device)
    count = numel_of(batch)
    if count == 0:
        return info
    a, *sa = _matrices(A, batch, transpose)
    b_operand, sb = a, [0, 0, 0]           # (unused pointers: any tensor of the dtype)
    if b is not None:
        b_operand, *sb = _matrices(b, batch, transpose)
    x_operand, sx, dense = a, [0, 0, 0], None
    if x is not None:
        x_operand, sxb, sxr, sxc, dense = _result_matrices(x, batch)
        sx = [sxb, sxc, sxr] if transpose else [sxb, sxr, sxc]
    options = _options(A._impl.dtype, n)
    block_k = options["BLOCK"] if rhs == "identity" else \
        min(max(triton.next_power_of_2(k), 4), options["BLOCK"])
    chunks = max(triton.cdiv(k, block_k), 1)   # one chunk at least: info for k == 0 too
    launch(f"lu (registers, {rhs})", lu_kernel, (count, chunks), pointer(a),
           pointer(b_operand), pointer(x_operand), pointer(info),
           pointer(sign if sign is not None else a),
           pointer(logabsdet if logabsdet is not None else a), n, k, *sa, *sb, *sx,
           RHS=rhs, BLOCK_K=block_k, **options)
    if dense is not None:
        run("copy", x, (dense,), x._impl.dtype)
    return info


@kernel(dtypes=FLOATS, shape=SMALL)
def linalg_inv_ex(A, check_errors):
    """(A^-1, info): Gauss-Jordan on [A | I], one program per matrix."""
    spec, info_spec = shape_rule("linalg.square_factorization")("linalg_inv_ex",
                                                                (A, check_errors))
    device, (A,) = operands("linalg_inv_ex", A=A)
    n = spec.sizes[-1]
    _require_small("linalg_inv_ex", n)
    inverse = factory.empty_strided(spec.sizes, spec.strides, dtype=spec.dtype, device=device)
    info = _lu(A, spec.sizes[:-2], n, "identity", x=inverse, k=n)
    if check_errors:
        _info_checked("linalg_inv_ex", info, lapack.INV_FAILED)
    return inverse, info


@kernel(dtypes=FLOATS, shape=SMALL)
def linalg_slogdet(A):
    """(sign, log|det|) from the pivots of the LU factorization, one program per matrix."""
    sign_spec, _ = shape_rule("linalg.slogdet")("linalg_slogdet", (A,))
    device, (A,) = operands("linalg_slogdet", A=A)
    n = A._impl.sizes[-1]
    _require_small("linalg_slogdet", n)
    sign = new_tensor(sign_spec.sizes, sign_spec.dtype, device)
    logabsdet = new_tensor(sign_spec.sizes, sign_spec.dtype, device)
    _lu(A, sign_spec.sizes, n, "none", sign=sign, logabsdet=logabsdet)
    return sign, logabsdet


@kernel(dtypes=FLOATS, shape=SMALL)
def linalg_solve(A, B, left):
    """X with A X = B (left=False: X A = B, solved as A^T X^T = B^T, as on the CPU);
    B's columns in chunks of registers (the grid's second dim), A's and B's batch dims
    broadcast. A singular A raises LinAlgError naming the batch element."""
    spec = shape_rule("linalg.solve")("linalg_solve", (A, B, left))
    device, (A, B) = operands("linalg_solve", A=A, B=B)
    n = A._impl.sizes[-1]
    _require_small("linalg_solve", n)
    if spec.strides is None:
        x = new_tensor(spec.sizes, spec.dtype, device)
    else:
        x = factory.empty_strided(spec.sizes, spec.strides, dtype=spec.dtype, device=device)
    if lapack.solve_is_vector(A._impl.sizes, B._impl.sizes):   # (left=True only: the rule)
        B = call_below_autograd("unsqueeze", B, -1)
        x_matrices = call_below_autograd("unsqueeze", x, -1)
    else:
        x_matrices = x
    batch = x_matrices._impl.sizes[:-2]
    k = x_matrices._impl.sizes[-1] if left else x_matrices._impl.sizes[-2]
    info = _lu(A, batch, n, "B", b=B, x=x_matrices, k=k, transpose=not left)
    lapack.check_info("linalg_solve", to_host(info), "The solver failed because the input "
                      "matrix is singular.")
    return x


# ---- inverses, determinants, solves, factorizations: on a host copy ----------------------
# The fallback (for inv, slogdet, solve and cholesky: of matrices too large for the
# registers, above): these copy the matrices to the host, run the CPU's LAPACK routines
# (kernel_support/lapack.py) and copy the results back. explain() shows the `_on_host`
# kernel; the `tensorplay.dispatch` logger says it each call.
log = logging.getLogger("tensorplay.dispatch")


def _on_host(op, *tensors):
    """The tensors' elements as host arrays (strided ones copied row-major first)."""
    log.info("%s on cuda: no Triton kernel, LAPACK on a host copy", op)
    arrays = []
    for t in tensors:
        if not t._impl.is_contiguous:
            dense = new_tensor(t._impl.sizes, t._impl.dtype, t._impl.device)
            run("copy", dense, (t,), t._impl.dtype)
            t = dense
        arrays.append(to_host(t))
    return arrays


def _on_device(array, spec, device):
    """A host result back on the device, laid out as its shape rule says (`spec.strides`:
    LAPACK's column-major matrices, PyTorch's layout, or a window of a larger buffer, as
    lstsq's solution): the host buffer is built in that layout, then copied over."""
    if spec.strides is None or spec.strides == contiguous_strides(array.shape):
        return from_host(array, spec.dtype, device)
    np_dtype = np.dtype(spec.dtype.np)
    flat = np.zeros(max(storage_span(array.shape, spec.strides), 1), np_dtype)
    np.ndarray(array.shape, np_dtype, buffer=flat,
               strides=tuple(s * np_dtype.itemsize for s in spec.strides))[...] = array
    impl = from_host(flat, spec.dtype, device)._impl
    return factory.wrap(TensorImpl(impl.storage, array.shape, spec.strides, 0, spec.dtype,
                                   device))


def linalg_inv_ex_on_host(A, check_errors):
    spec, _ = shape_rule("linalg.square_factorization")("linalg_inv_ex", (A, check_errors))
    a, = _on_host("linalg_inv_ex", A)
    inverse, info = lapack.inv_ex(a)
    if check_errors:
        lapack.check_info("linalg_inv_ex", info, lapack.INV_FAILED)
    device = A._impl.device
    return _on_device(inverse, spec, device), from_host(info, dt.int32, device)


def linalg_slogdet_on_host(A):
    shape_rule("linalg.slogdet")("linalg_slogdet", (A,))
    a, = _on_host("linalg_slogdet", A)
    sign, logabsdet = lapack.slogdet(a)
    device = A._impl.device
    return from_host(sign, A._impl.dtype, device), from_host(logabsdet, A._impl.dtype, device)


def linalg_solve_on_host(A, B, left):
    spec = shape_rule("linalg.solve")("linalg_solve", (A, B, left))
    a, b = _on_host("linalg_solve", A, B)
    vector = lapack.solve_is_vector(A._impl.sizes, B._impl.sizes)
    x = lapack.solve_arrays(a, b, left, vector).reshape(spec.sizes)
    return _on_device(x, spec, A._impl.device)


def linalg_cholesky_ex_on_host(A, upper, check_errors):
    spec, _ = shape_rule("linalg.square_factorization")("linalg_cholesky_ex",
                                                        (A, upper, check_errors))
    a, = _on_host("linalg_cholesky_ex", A)
    factor, info = lapack.cholesky_ex(a, upper)
    if check_errors:
        lapack.check_info("linalg_cholesky_ex", info, lapack.CHOLESKY_FAILED)
    device = A._impl.device
    return _on_device(factor, spec, device), from_host(info, dt.int32, device)


# ---- the matrix exponential: on a host copy ------------------------------------------------
def linalg_matrix_exp_on_host(self):
    """SciPy's expm on a host copy (cpu_kernels/linalg.py's routine, so the same values)."""
    from cpu_kernels.linalg import expm_arrays

    spec = shape_rule("linalg.matrix_exp")("linalg_matrix_exp", (self,))
    a, = _on_host("linalg_matrix_exp", self)
    return from_host(expm_arrays(a), spec.dtype, self._impl.device)


# The Triton kernels of the small matrices are the ones ops.yaml names, for float32/float64
# and n <= SMALL_N; everything else (larger n, and the dtype errors) goes to these host
# fallbacks, registered below them.
host_fallback = Library("CUDA", "triton_kernels.linalg (host fallback)")
host_fallback.impl("linalg_inv_ex", linalg_inv_ex_on_host, priority=-10)
host_fallback.impl("linalg_slogdet", linalg_slogdet_on_host, priority=-10)
host_fallback.impl("linalg_solve", linalg_solve_on_host, priority=-10)
host_fallback.impl("linalg_cholesky_ex", linalg_cholesky_ex_on_host, priority=-10)
