"""Running sums, products and logsumexps on the `cuda` device: cumsum, cumprod, their
in-place forms and logcumsumexp. The scanned dim is moved last and the input read as
[M rows, N elements] (a copy only when the rows do not lie at one stride); each program
scans BLOCK_M rows, BLOCK_N elements at a time with tl.cumsum/tl.cumprod (logcumsumexp:
tl.associative_scan with logaddexp), carrying each row's total from one block to the
next.
"""
from __future__ import annotations

import triton
import triton.language as tl

from tensorplay.kernel_support.arguments import integral_to_long
from tensorplay.kernel_support.checks import wrap_dim
from tensorplay.kernel_support.ops import shape_rule
from tensorplay.library import kernel
from triton_kernels import _math
from triton_kernels._launch import (
    INTERPRETED, compute_dtype, launch, new_tensor, operands, pointer,
)
from triton_kernels.pointwise import run

MAX_BLOCK_N = 4096 if INTERPRETED else 1024


@triton.jit
def logaddexp(a, b):
    """log(exp(a) + exp(b)) = max + log1p(exp(-|a - b|)): no exponential overflows
    (log1p inline, Kahan's form). Equal infinities give themselves (their difference is
    NaN); a NaN gives NaN."""
    m = tl.maximum(a, b)
    e = tl.exp(-tl.abs(a - b))
    u = 1.0 + e
    r = m + tl.where(u == 1.0, e, tl.log(u) * e / (u - 1.0))
    return tl.where((a == b) & (tl.abs(a) == float("inf")), a, r)


@triton.jit
def scan_kernel(
    in_ptr,  # the input, read as [M, N]
    out_ptr,  # the result, [M, N] contiguous
    M, N,
    stride_m, stride_n,  # the input's strides in elements
    OP: tl.constexpr,  # "sum", "prod" or "logsumexp" (logcumsumexp)
    ACC: tl.constexpr,  # accumulator dtype (float32 for half types, int64 for integers)
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    # Memory traffic: each element read once and written once.
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < M
    cols = tl.arange(0, BLOCK_N)
    if OP == "sum":
        carry = tl.zeros([BLOCK_M], ACC)
    elif OP == "prod":
        carry = tl.zeros([BLOCK_M], ACC) + 1
    else:
        carry = tl.zeros([BLOCK_M], ACC) - float("inf")
    for n0 in range(0, N, BLOCK_N):
        n = n0 + cols
        mask = row_mask[:, None] & (n[None, :] < N)
        offsets = rows[:, None].to(tl.int64) * stride_m + n[None, :] * stride_n
        # ACC is never bfloat16 (half types accumulate in float32), so a plain cast is
        # _math.convert here; inline, because the interpreter re-patches
        # triton.language on every nested @triton.jit call, each loop iteration.
        x = tl.load(in_ptr + offsets, mask=mask).to(ACC)
        if OP == "sum":
            x = tl.where(mask, x, 0)
            running = tl.cumsum(x, axis=1) + carry[:, None]
            carry = carry + tl.sum(x, axis=1)
        elif OP == "prod":
            x = tl.where(mask, x, 1)
            running = tl.cumprod(x, axis=1) * carry[:, None]
            carry = carry * tl.reduce(x, 1, _math.multiply)
        else:
            # -inf (exp(-inf) = 0) is the identity of logaddexp, as 0 is of +
            x = tl.where(mask, x, float("-inf"))
            running = logaddexp(tl.associative_scan(x, 1, logaddexp), carry[:, None])
            carry = logaddexp(carry, tl.reduce(x, 1, logaddexp))
        out_offsets = rows[:, None].to(tl.int64) * N + n[None, :]
        tl.store(out_ptr + out_offsets, _math.convert(running, out_ptr.dtype.element_ty),
                 mask=mask)


def _scan(op, kind, self, dim, dtype, out=None):
    device, _ = operands(op, self=self)
    sizes = self._impl.sizes
    out_dtype = integral_to_long(self, dtype) if out is None else out._impl.dtype
    result = new_tensor(sizes, out_dtype, device)
    if not sizes:
        run("copy", result, (self,), self._impl.dtype)
    elif result._impl.numel():
        d = wrap_dim(op, dim, len(sizes))
        order = [i for i in range(len(sizes)) if i != d] + [d]
        moved = self.permute(order)
        if not moved.is_contiguous():
            moved = moved.contiguous()
        N = sizes[d]
        M = result._impl.numel() // N
        block_n = min(triton.next_power_of_2(N), MAX_BLOCK_N)
        block_m = max(1, min(triton.next_power_of_2(M), 4 * MAX_BLOCK_N // block_n))
        scanned = new_tensor([sizes[i] for i in order], out_dtype, device)
        launch(f"scan_{kind}", scan_kernel, (triton.cdiv(M, block_m),), pointer(moved),
               pointer(scanned), M, N, N, 1, OP=kind, ACC=compute_dtype(out_dtype),
               BLOCK_M=block_m, BLOCK_N=block_n)
        inverse = [order.index(i) for i in range(len(sizes))]
        run("copy", result, (scanned.permute(inverse),), out_dtype)
    if out is not None:
        run("copy", out, (result,), out_dtype)
        return out
    return result


@kernel(family=True)
def cumsum_cumprod(op, self, dim, dtype):
    """cumsum and cumprod, out of place (in `dtype` when given) or in place."""
    kind = "sum" if op.startswith("cumsum") else "prod"
    if op.endswith("_"):
        shape_rule("scan.cumsum_")(op, (self, dim, dtype))
        return _scan(op, kind, self, dim, None, out=self)
    shape_rule("scan.cumsum")(op, (self, dim, dtype))
    return _scan(op, kind, self, dim, dtype)


def logcumsumexp(self, dim):
    """The running logaddexp: scan_kernel with logaddexp as its combine function (in
    float32 for the half types)."""
    spec = shape_rule("scan.logcumsumexp")("logcumsumexp", (self, dim))
    return _scan("logcumsumexp", "logsumexp", self, dim, spec.dtype)
