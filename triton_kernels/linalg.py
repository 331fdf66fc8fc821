"""mm and bmm on the `cuda` device: one blocked `tl.dot` kernel (Triton tutorial 03,
with pointers computed from strides, no block pointers), fp32 accumulation.

Two candidates per op sit in the CUDA kernel registry, the second level of dispatch:

    mm_aligned   priority 10   M, N, K multiples of the block sizes: no masks
    mm           priority 0    any shape: every load and store masked (ops.yaml names it)

A call whose shape meets the rule goes to the aligned one; it still hands over
(KernelConstraintError) when no tuned block size divides the shape. Both are
autotuned over block sizes per (M, N, K, dtypes); in the interpreter there is no
GPU timer, so configs are timed on the CPU clock.

Transposed inputs need no copy: a kernel reads any strides. fp16/bf16 inputs go to
the tensor cores as they are; fp32 and fp64 use IEEE precision (PyTorch's default,
no TF32).

inv, slogdet, solve and cholesky have no Triton kernel yet: their `_on_host` kernels (at
the end) run LAPACK on a host copy, a fallback that logs itself and that explain() names.
"""
from __future__ import annotations

import logging
import time

import numpy as np
import triton
import triton.language as tl

from tensorplay import _dtype as dt
from tensorplay._device_transfer import from_host, to_host
from tensorplay.errors import KernelConstraintError
from tensorplay.kernel_support import lapack
from tensorplay.kernel_support.results import TensorImpl, contiguous_strides, factory
from tensorplay.kernel_support.ops import call_below_autograd, shape_rule
from tensorplay.library import Library, ShapeRule, kernel
from triton_kernels._launch import INTERPRETED, launch, new_tensor, operands, pointer
from triton_kernels.copy import fill_
from triton_kernels.pointwise import run, run_expression

# The aligned candidate's ShapeRule is a cheap filter that becomes part of the kernel
# cache key: M, N and K multiples of 16, tl.dot's smallest tile. The kernel itself then
# needs a tuned config whose blocks divide the shape exactly, and hands the call over
# to the masked kernel (KernelConstraintError) when there is none (e.g. 48 x 48 x 48).
ALIGN_M, ALIGN_N, ALIGN_K = 16, 16, 16


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
    pid = tl.program_id(0)
    batch = tl.program_id(1)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + batch * stride_ab + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + batch * stride_bb + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
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
    c = acc.to(c_ptr.dtype.element_ty)
    c_ptrs = c_ptr + batch * stride_cb + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    if MASKED:
        tl.store(c_ptrs, c, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
    else:
        tl.store(c_ptrs, c)


def _config(bm, bn, bk, stages, warps):
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8},
                         num_stages=stages, num_warps=warps)


if INTERPRETED:
    # Two small configs: autotuning still chooses, and each program stays cheap.
    CONFIGS = [_config(32, 32, 32, 1, 4), _config(64, 64, 32, 1, 4)]
else:
    CONFIGS = [
        _config(128, 256, 64, 3, 8), _config(256, 128, 64, 3, 8),
        _config(128, 128, 64, 4, 8), _config(128, 128, 32, 4, 4),
        _config(128, 64, 32, 4, 4), _config(64, 128, 32, 4, 4),
        _config(64, 64, 32, 5, 4), _config(32, 64, 32, 5, 2),
    ]


def cpu_bench(kernel_call, quantiles):
    """Autotuning's timer in the interpreter (triton.testing.do_bench needs a GPU):
    one run on the CPU clock, in milliseconds, for every quantile asked."""
    start = time.perf_counter()
    kernel_call()
    ms = (time.perf_counter() - start) * 1e3
    return [ms] * len(quantiles) if quantiles else ms


def _dividing(configs, named_args, **kwargs):
    """The aligned kernel runs unmasked: keep the configs whose blocks divide the shape."""
    m, n, k = named_args["M"], named_args["N"], named_args["K"]
    return [c for c in configs if m % c.kwargs["BLOCK_M"] == 0
            and n % c.kwargs["BLOCK_N"] == 0 and k % c.kwargs["BLOCK_K"] == 0]


_tuning = dict(configs=CONFIGS, key=["M", "N", "K"])
if INTERPRETED:
    _tuning["do_bench"] = cpu_bench
matmul_generic = triton.autotune(**_tuning)(matmul_kernel)
matmul_aligned = triton.autotune(prune_configs_by={"early_config_prune": _dividing},
                                 **_tuning)(matmul_kernel)


def _dot_options(dtype):
    half = dtype in (dt.float16, dt.bfloat16)
    return dict(UPCAST=half and INTERPRETED, PRECISION="tf32" if half else "ieee",
                ACC=tl.float64 if dtype is dt.float64 else tl.float32)


# Integers run the kernel without autotuning, in blocks small enough for the
# [BLOCK_M, BLOCK_K, BLOCK_N] products to stay in registers.
INTEGER_BLOCKS = dict(BLOCK_M=32, BLOCK_N=32, BLOCK_K=8, GROUP_M=8)


def _launch(name, kernel, a, b, c, batch, masked):
    """a: [B?, M, K], b: [B?, K, N] -> c: [B?, M, N] (the batch dim only when batch>0)."""
    sa, sb, sc = a._impl.strides, b._impl.strides, c._impl.strides
    if len(sa) == 2:
        sa, sb, sc = (0,) + sa, (0,) + sb, (0,) + sc
    M, K = a._impl.sizes[-2:]
    N = b._impl.sizes[-1]
    if c._impl.numel() == 0:          # nothing to write (an empty batch, M or N)
        return c
    if K == 0:
        from triton_kernels.copy import fill_
        return fill_(c, 0)
    dtype = a._impl.dtype
    if dtype.is_floating_point:
        options = dict(USE_DOT=True, **_dot_options(dtype))
    else:
        name, kernel = "matmul (integer, masked)", matmul_kernel
        options = dict(USE_DOT=False, UPCAST=False, PRECISION="ieee", ACC=tl.int64,
                       **INTEGER_BLOCKS)

    def grid(meta):
        return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]), max(batch, 1))

    launch(name, kernel, grid, pointer(a), pointer(b), pointer(c), M, N, K, *sa, *sb, *sc,
           MASKED=masked, **options)
    return c


def product(a, b, dtype):
    """a @ b (2-D or 3-D, any strides) into a new tensor of `dtype`: the aligned kernel
    when its rule holds, the masked one otherwise. the products below build addmm, mv,
    linear... on it, with a float32 `dtype` for half inputs so that the sum with a bias
    rounds once."""
    sizes = tuple(a._impl.sizes[:-1]) + (b._impl.sizes[-1],)
    c = new_tensor(sizes, dtype, a._impl.device)
    batch = a._impl.sizes[0] if len(sizes) == 3 else 0
    aligned = a._impl.dtype in _MATMUL_DTYPES and _aligned(a, b) and \
        _dividing(CONFIGS, dict(M=sizes[-2], N=sizes[-1], K=a._impl.sizes[-1]))
    if aligned:
        return _launch("matmul (aligned, unmasked)", matmul_aligned, a, b, c, batch, False)
    return _launch("matmul (masked)", matmul_generic, a, b, c, batch, masked=True)


def _mm_prepare(self, mat2):
    spec = shape_rule("mm")("mm", (self, mat2))
    device, (a, b) = operands("mm", self=self, mat2=mat2)
    return a, b, new_tensor(spec.sizes, spec.dtype, device)


def _bmm_prepare(self, mat2):
    spec = shape_rule("bmm")("bmm", (self, mat2))
    device, (a, b) = operands("bmm", self=self, mat2=mat2)
    return a, b, new_tensor(spec.sizes, spec.dtype, device)


# ---- the generic candidates (ops.yaml names them): any dtype, any shape -------------------
def mm(self, mat2):
    a, b, c = _mm_prepare(self, mat2)
    return _launch("matmul (masked)", matmul_generic, a, b, c, 0, masked=True)


def bmm(self, mat2):
    a, b, c = _bmm_prepare(self, mat2)
    return _launch("matmul (masked)", matmul_generic, a, b, c, a._impl.sizes[0], masked=True)


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
    return _launch("matmul (aligned, unmasked)", matmul_aligned, a, b, c, 0, masked=False)


def bmm_aligned(self, mat2):
    a, b, c = _bmm_prepare(self, mat2)
    _require_dividing_config(a, b)
    return _launch("matmul (aligned, unmasked)", matmul_aligned, a, b, c, a._impl.sizes[0],
                   masked=False)


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
    multiplies as a one-column matrix."""
    a, b, beta, alpha = params
    name = op.rstrip("_")
    spec = shape_rule(_RULES[name])(op, (self,) + params)
    first, second = _OPERANDS[name]
    device, (s, a, b) = operands(op, self=self, **{first: a, second: b})
    if name == "addmv":
        prod = product(a, b.unsqueeze(1), _acc(a._impl.dtype)).squeeze(1)
    else:
        prod = product(a, b, _acc(a._impl.dtype))
    out = self if op.endswith("_") else new_tensor(spec.sizes, spec.dtype, device)
    return _scaled_sum("addmv" if name == "addmv" else "addmm", s, prod, beta, alpha, out)


def _rounded(prod, dtype):
    """The product in the op's dtype (one rounding for half types)."""
    if prod._impl.dtype is dtype:
        return prod
    out = new_tensor(prod._impl.sizes, dtype, prod._impl.device)
    return run("copy", out, (prod,), prod._impl.dtype)


def mv(self, vec):
    spec = shape_rule("linalg.mv")("mv", (self, vec))
    _, (m, v) = operands("mv", self=self, vec=vec)
    prod = product(m, v.unsqueeze(1), _acc(spec.dtype))
    return _rounded(prod, spec.dtype).view(spec.sizes)


def dot(self, tensor):
    spec = shape_rule("linalg.dot")("dot", (self, tensor))
    _, (a, b) = operands("dot", self=self, tensor=tensor)
    prod = product(a.unsqueeze(0), b.unsqueeze(1), _acc(spec.dtype))
    return _rounded(prod, spec.dtype).view(())


def linear(input, weight, bias):  # noqa: A002 - the schema's name
    """input @ weight.T + bias for input [..., in_features]:
        out[..., o] = sum_i input[..., i] * weight[o, i] + bias[o]"""
    spec = shape_rule("linalg.linear")("linear", (input, weight, bias))
    device, (x, w, b) = operands("linear", input=input, weight=weight, bias=bias)
    features = x._impl.sizes[-1] if x._impl.sizes else 1
    rows = x.reshape([-1, features])
    prod = product(rows, w.t(), _acc(spec.dtype))
    if b is None:
        return _rounded(prod, spec.dtype).view(spec.sizes)
    out = new_tensor(prod._impl.sizes, spec.dtype, device)
    run_expression("linear_bias", "x + y", out, (prod, b), prod._impl.dtype, {})
    return out.view(spec.sizes)


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


# ---- inverses, determinants, solves, factorizations: on a host copy ----------------------
# No Triton kernel yet: these copy the matrices to the host, run the CPU's LAPACK routines
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
    LAPACK's column-major matrices, PyTorch's layout). The transposed matrices, copied
    row-major, are that layout."""
    if spec.strides is None or spec.strides == contiguous_strides(array.shape):
        return from_host(array, spec.dtype, device)
    impl = from_host(np.swapaxes(array, -1, -2), spec.dtype, device)._impl
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
