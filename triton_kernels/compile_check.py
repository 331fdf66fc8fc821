"""Compile the backend's kernels for an NVIDIA GPU on a machine without one.

The interpreter runs a kernel's Python, but it does not type-check the way the
compiler does (loop-carried types, constexpr branches, tl.dot operand types).
`triton.compile` with an explicit target runs the real pipeline (Triton IR -> PTX ->
cubin with the ptxas that ships with Triton) and needs no GPU, so this catches what
would only fail on the first real launch.

    python -m triton_kernels.compile_check            # sm_90 (H100/H200), every kernel
    python -m triton_kernels.compile_check --quick    # a representative subset

Must run without TRITON_INTERPRET (interpreted functions cannot be compiled).
"""
from __future__ import annotations

import os
import sys
import time

import argparse


def _signature(fn, types, constexprs):
    return {name: "constexpr" if name in constexprs else types.get(name, "i32")
            for name in fn.arg_names}


# Sample values for the non-tensor arguments an expression depends on.
_SAMPLE_ARGS = {"rounding_mode": "floor", "approximate": "tanh", "equal_nan": True, "eps": 0.1,
                "decimals": 2, "generator": None, "min": 0.5, "max": 1.5, "nan": None,
                "posinf": None, "neginf": None, "from_": -3, "to": 10}


class _FakeTensor:
    """What an expression builder reads of a tensor argument."""
    dtype = None

    def __init__(self, dtype):
        self.dtype = dtype

    def numel(self):
        return 8


def _scalar_type(value):
    if isinstance(value, bool):
        return "i1"
    return "i32" if isinstance(value, int) else "fp32"


def _pointwise_table_cases(quick):
    """The OPS table of pointwise_expressions.py: each expression (with sample arguments when it depends
    on the call), float32 inputs, a rank-2 result."""
    import triton.language as tl
    from tensorplay import _dtype as dt
    from tensorplay.kernel_support.ops import schema_of
    from triton_kernels import _template, pointwise
    from triton_kernels.pointwise_expressions import OPS
    for kernel, entry in sorted(OPS.items()):
        if kernel.endswith("_") and kernel[:-1] in OPS:
            continue                     # the in-place form compiles the same expression
        schema = schema_of(entry.op)
        tensors = [schema.arg_names[i] for i in schema.tensor_positions]
        integral = kernel.startswith(("bitwise", "gcd", "lcm"))
        dtype, ptr, compute = (dt.int32, "*i32", tl.int32) if integral else \
            (dt.float32, "*fp32", tl.float32)
        a = {n: _FakeTensor(dtype) if n in tensors else _SAMPLE_ARGS.get(n, 0.5)
             for n in schema.arg_names}
        expr, scalars = entry.expr(a) if callable(entry.expr) else (entry.expr, {})
        name = pointwise._variant(kernel, expr)
        fn = _template.kernel(name, expr, len(tensors), 2, tuple(scalars))
        types = {f"{v}_ptr": ptr for v in ("out", "x", "y", "z")}
        types.update({k: _scalar_type(v) for k, v in scalars.items()})
        yield kernel, fn, types, dict(COMPUTE=compute, BLOCK=1024, WIDE_INDEX=False), {}
        if quick and kernel > "c":
            return


def _complex_table_cases(quick):
    """The complex forms of the pointwise template (COMPLEX_EXPRESSIONS): each over the
    float pairs of complex64 and complex128 inputs, a binary one also with a real operand."""
    import triton.language as tl
    from triton_kernels import _template
    from triton_kernels.pointwise_expressions import COMPLEX_EXPRESSIONS
    names = ["add", "div", "log", "tanh", "abs"] if quick else sorted(COMPLEX_EXPRESSIONS)
    for name in names:
        arity, result, expr, *scalar_names = COMPLEX_EXPRESSIONS[name]
        scalars = tuple(f"{s}_{part}" for s in (scalar_names[0] if scalar_names else ())
                        for part in ("re", "im"))
        patterns = [(True,) * arity] + ([(True, False)] if arity == 2 else []) \
            if name != "where" else [(False, True, True), (False, False, True)]
        for pattern in patterns:
            variant = f"{name}_complex_{''.join('c' if c else 'r' for c in pattern)}"
            fn = _template.kernel(variant, expr, arity, 2, scalars,
                                  parts=(pattern, result == "complex"))
            for ptr, compute in (("*fp32", tl.float32), ("*fp64", tl.float64)):
                types = {"out_ptr": ptr, "x_ptr": ptr if pattern[0] else "*i1",
                         "y_ptr": ptr if pattern[1 % arity] else "*i64", "z_ptr": ptr}
                types.update({s: "fp32" for s in scalars})
                yield (f"{variant} {ptr[1:]}", fn, types,
                       dict(COMPUTE=compute, BLOCK=1024, WIDE_INDEX=False), {})


# Kernel modules that list their own cases: each defines `compile_cases(quick)` yielding
# the same (label, kernel, argument types, constexprs, options) tuples as `cases` below,
# so a new kernel module adds its kernels here by one name.
MODULES_WITH_CASES = ("normalization", "_indexing", "sorting", "random", "conv", "fold", "pooling",
                      "resample", "padding", "triangular", "bessel", "special", "embedding")


def cases(quick):
    """(label, kernel, argument types, constexprs, options) for each compilation."""
    import importlib

    import triton.language as tl
    from triton_kernels import _template, linalg, pointwise, reduction
    for name in MODULES_WITH_CASES:
        yield from importlib.import_module(f"triton_kernels.{name}").compile_cases(quick)
    yield from _pointwise_table_cases(quick)
    yield from _complex_table_cases(quick)
    names = ["add", "div", "pow", "where", "eq", "tanh", "copy", "sign"] if quick \
        else list(pointwise.EXPRESSIONS)
    for name in names:
        arity, expr, scalars = pointwise._entry(name)
        for rank in ((3,) if quick else (1, 2, 4)):
            fn = _template.kernel(name, expr, arity, rank, scalars)
            types = {"out_ptr": "*bf16", "x_ptr": "*fp16", "y_ptr": "*fp32", "z_ptr": "*i64"}
            if name == "where":
                types["x_ptr"] = "*i1"
            for compute in (tl.float32, tl.int64):
                if compute is tl.int64 and name in ("div", "tanh", "xlogy", "exp", "log",
                                                     "sqrt", "sin", "cos", "sigmoid"):
                    continue
                yield (f"{name} rank {rank} {compute}", fn, types,
                       dict(COMPUTE=compute, BLOCK=1024, WIDE_INDEX=rank > 2), {})
    from triton_kernels import losses, scan, softmax
    for log in (False, True):
        for one_pass, block in ((True, 8192), (False, 2048)):
            yield (f"softmax log={log} one_pass={one_pass}", softmax.softmax_kernel,
                   {"in_ptr": "*bf16", "out_ptr": "*fp32"},
                   dict(LOG=log, ONE_PASS=one_pass, ACC=tl.float32, BLOCK=block), {})
        yield (f"softmax backward log={log}", softmax.softmax_backward_kernel,
               {"grad_ptr": "*fp32", "out_ptr": "*fp32", "result_ptr": "*fp16"},
               dict(LOG=log, ACC=tl.float32, BLOCK=2048), {})
    yield ("cross_entropy", losses.cross_entropy_kernel,
           {"x_ptr": "*fp32", "target_ptr": "*i64", "weight_ptr": "*fp32", "loss_ptr": "*fp32",
            "probs_ptr": "*fp32", "row_weight_ptr": "*fp32"},
           dict(HAS_W=True, ACC=tl.float32, BLOCK=2048), {})
    yield ("cross_entropy backward", losses.cross_entropy_backward_kernel,
           {"probs_ptr": "*fp32", "target_ptr": "*i64", "weight_ptr": "*fp32",
            "grad_ptr": "*fp32", "total_ptr": "*fp32", "out_ptr": "*fp32"},
           dict(HAS_PROBS=True, HAS_W=False, MEAN=True, ACC=tl.float32, BLOCK=2048), {})
    yield ("nll", losses.nll_kernel,
           {"x_ptr": "*fp32", "target_ptr": "*u8", "weight_ptr": "*fp32", "loss_ptr": "*fp32",
            "row_weight_ptr": "*fp32"}, dict(HAS_W=True, ACC=tl.float32, BLOCK=1024), {})
    mask = _template.kernel("dropout_mask", "tl.rand(seed, index + offset) >= p", 0, 1,
                            ("seed", "offset", "p"))
    yield ("dropout mask", mask, {"out_ptr": "*i1", "seed": "i32", "offset": "i32",
                                  "p": "fp32"},
           dict(COMPUTE=tl.float32, BLOCK=1024, WIDE_INDEX=False), {})
    for kind in ("sum", "prod"):
        for acc, ptr in ((tl.float32, "*bf16"), (tl.int64, "*i64")):
            yield (f"scan {kind} {acc}", scan.scan_kernel, {"in_ptr": ptr, "out_ptr": ptr},
                   dict(OP=kind, ACC=acc, BLOCK_M=4, BLOCK_N=256), {})
    yield ("scan logsumexp", scan.scan_kernel, {"in_ptr": "*bf16", "out_ptr": "*bf16"},
           dict(OP="logsumexp", ACC=tl.float32, BLOCK_M=4, BLOCK_N=256), {})
    tril = _template.kernel("tril", "tl.where(col - row <= diagonal, x, 0)", 1, 3,
                            ("diagonal",), matrix=True)
    yield ("tril rank 3", tril, {"out_ptr": "*fp32", "x_ptr": "*fp32"},
           dict(COMPUTE=tl.float32, BLOCK=1024, WIDE_INDEX=False), {})
    for op in ("sum", "prod", "max", "min"):
        for acc, ptr in ((tl.float32, "*bf16"), (tl.int64, "*i32"), (tl.int8, "*i1"),
                         (tl.float64, "*fp64")):
            types = {"in_ptr": ptr, "idx_in_ptr": "*i64", "out_ptr": ptr, "idx_out_ptr": "*i64",
                     "init": "fp32" if acc.is_floating() else "i32"}
            const = dict(OP=op, MEAN=op == "sum" and acc.is_floating(),
                         WITH_INDEX=op in ("max", "min"), INDEXED_INPUT=op in ("max", "min"),
                         ACC=acc,
                         BLOCK_M=4, BLOCK_N=1024)
            yield f"reduce {op} {acc}", reduction.reduce_kernel, types, const, {}
            if quick:
                break
    matmul_dtypes = (("*fp16", tl.float32), ("*bf16", tl.float32), ("*fp32", tl.float32),
                     ("*fp64", tl.float64))
    for ptr, acc in matmul_dtypes[:2] if quick else matmul_dtypes:
        for masked in (True, False):
            const = dict(MASKED=masked, USE_DOT=True, UPCAST=False,
                         PRECISION="ieee" if ptr in ("*fp32", "*fp64") else "tf32", ACC=acc,
                         BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, GROUP_M=8)
            yield (f"matmul {ptr[1:]} masked={masked}", linalg.matmul_kernel,
                   {"a_ptr": ptr, "b_ptr": ptr, "c_ptr": ptr}, const,
                   dict(num_warps=4, num_stages=3))
    for ptr in ("*i64", "*u8"):
        const = dict(MASKED=True, USE_DOT=False, UPCAST=False, PRECISION="ieee", ACC=tl.int64,
                     **linalg.INTEGER_BLOCKS)
        yield (f"matmul {ptr[1:]} (integer)", linalg.matmul_kernel,
               {"a_ptr": ptr, "b_ptr": ptr, "c_ptr": ptr}, const, {})
    yield from linalg.compile_cases(quick)     # Cholesky and LU, a matrix in registers
    yield from _autotuned_cases(quick)
    from triton_kernels import fft
    for ptr in ("*fp32", "*fp64"):
        for last in (False, True):
            yield (f"fft stockham stage {ptr[1:]} last={last}", fft.stockham_stage_kernel,
                   {"x_ptr": ptr, "y_ptr": ptr, "tw_ptr": ptr, "scale_ptr": ptr},
                   dict(LAST=last, BLOCK=512), {})


def _autotuned_cases(quick):
    """The configurations autotuning chooses from (tensorplay/dispatch/autotune.py): each
    must compile, with its block sizes, num_warps and num_stages. Not in the quick subset
    (30 compilations, about a minute: the matmul's big tiles take seconds each)."""
    if quick:
        return
    import triton.language as tl
    from triton_kernels import _template, linalg, pointwise, softmax
    arity, expr, scalars = pointwise._entry("add")
    fn = _template.kernel("add", expr, arity, 1, scalars)
    for config in pointwise.CONFIGS:
        yield (f"add, autotuned {config}", fn, {"out_ptr": "*fp32", "x_ptr": "*fp32",
                                                 "y_ptr": "*fp32"},
               dict(COMPUTE=tl.float32, WIDE_INDEX=False, **config.kwargs),
               dict(num_warps=config.num_warps, num_stages=config.num_stages))
    for config in softmax.CONFIGS:
        # a row that fills MAX_BLOCK (one pass), and one twice as long (two passes)
        longer, _ = softmax.row_block(config.kwargs["MAX_BLOCK"] * 2, config.kwargs["MAX_BLOCK"])
        for one_pass, block in ((True, config.kwargs["MAX_BLOCK"]), (False, longer)):
            yield (f"softmax one_pass={one_pass}, autotuned {config}", softmax.softmax_kernel,
                   {"in_ptr": "*fp16", "out_ptr": "*fp16"},
                   dict(LOG=False, ONE_PASS=one_pass, ACC=tl.float32, BLOCK=block),
                   dict(num_warps=config.num_warps, num_stages=config.num_stages))
    for config in linalg.CONFIGS:
        for masked in (True, False):
            yield (f"matmul fp16 masked={masked}, autotuned {config}", linalg.matmul_kernel,
                   {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16"},
                   dict(MASKED=masked, USE_DOT=True, UPCAST=False, PRECISION="tf32",
                        ACC=tl.float32, **config.kwargs),
                   dict(num_warps=config.num_warps, num_stages=config.num_stages))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", type=int, default=90, help="compute capability, e.g. 80, 90")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    if os.environ.get("TRITON_INTERPRET") == "1":
        print("compile_check: unset TRITON_INTERPRET first", file=sys.stderr)
        return 2
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    target = GPUTarget("cuda", args.arch, 32)
    count = 0
    start = time.perf_counter()
    for label, fn, types, const, options in cases(args.quick):
        source = ASTSource(fn, _signature(fn, types, const), const)
        try:
            triton.compile(source, target=target, options=options)
        except Exception as e:
            print(f"FAILED {label}: {type(e).__name__}: {e}", file=sys.stderr)
            return 1
        count += 1
    print(f"compiled {count} kernels for sm_{args.arch} in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
