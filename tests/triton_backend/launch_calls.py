"""The calls whose launches the compile check compiles (triton_kernels/compile_check.py).

    TRITON_INTERPRET=1 TENSORPLAY_PLAN_AS_GPU=1 python tests/triton_backend/launch_calls.py \
        --out launches.json [--quick]

Runs in the interpreter with the launches planned as on a GPU (block sizes, autotune
configs, index widths: tensorplay/_cuda_state.py `plans_as_gpu`), and records every launch
with the specialisation a real launch gets (triton_kernels/_launch_record.py): which
pointers are 16-byte aligned, which ints are 1 or multiples of 16, and every autotune
config a choice could pick. Two sets of calls:

    GPU-shaped calls   a few calls per kernel family with the shapes a GPU runs: sizes
                       that are multiples of 16, contiguous rows, fp16/bf16/fp32
                       (`--quick`: an fp16 softmax and a small fp16 matmul only, what the
                       default test compiles)
    the samples        the operator database's samples on cuda (tests/opinfo), forward in
                       each float dtype the op takes (else its first dtype), and backward
                       of the float ones: every kernel an op reaches, with odd shapes
                       (the configs that run only: every config is the GPU-shaped calls')

A call that fails under the interpreter is counted and skipped: its launches up to the
failure are recorded, and whether a GPU could run it is not this script's question.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import time

TESTS = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS.parent))       # this checkout's tensorplay, run as a script


def _grad(outputs):
    """Backward of the float outputs that require grad (their sum), if any."""
    import tensorplay as tp
    flat = outputs if isinstance(outputs, (tuple, list)) else [outputs]
    parts = [o.float().sum() for o in flat if isinstance(o, tp.Tensor) and o.requires_grad
             and o.dtype.is_floating_point]
    if parts:
        sum(parts[1:], parts[0]).backward()


def _both(fn, *tensors):
    """fn(*tensors), then its backward with respect to the float tensors."""
    for t in tensors:
        if t.dtype.is_floating_point:
            t.requires_grad_(True)
    _grad(fn(*tensors))


def gpu_shaped_calls(quick):
    """(name, call) pairs: each call makes its inputs and runs forward (and backward)."""
    import tensorplay as tp
    F = tp.nn.functional

    def rand(*shape, dtype=tp.float32, **kw):
        return tp.randn(*shape, dtype=dtype, device="cuda", **kw)

    if quick:
        # The default test's: small compiles, and tp.empty (no fill kernels) for inputs.
        def empty(*shape):
            return tp.empty(*shape, dtype=tp.float16, device="cuda")
        return [("softmax float16", lambda: F.softmax(empty(16, 4096), -1)),
                ("matmul aligned float16 64^3", lambda: empty(64, 64) @ empty(64, 64))]
    halves = (tp.float16, tp.bfloat16)
    calls = []
    for dtype in halves + (tp.float32,):
        calls += [
            (f"matmul aligned {dtype}", lambda d=dtype: rand(256, 256, dtype=d) @
             rand(256, 256, dtype=d)),
            (f"softmax {dtype}", lambda d=dtype: _both(
                lambda x: F.softmax(x, -1), rand(16, 4096, dtype=d))),
            (f"matmul masked {dtype}", lambda d=dtype: _both(
                lambda a, b: a @ b, rand(200, 72, dtype=d), rand(72, 136, dtype=d))),
            (f"linear {dtype}", lambda d=dtype: _both(
                F.linear, rand(64, 256, dtype=d), rand(128, 256, dtype=d), rand(128, dtype=d))),
            (f"bmm {dtype}", lambda d=dtype: rand(4, 64, 128, dtype=d) @ rand(4, 128, 64, dtype=d)),
            (f"softmax long rows {dtype}", lambda d=dtype: _both(
                lambda x: F.log_softmax(x, -1), rand(4, 20000, dtype=d))),
            (f"softmax short rows {dtype}", lambda d=dtype: _both(
                lambda x: F.softmax(x, -1), rand(256, 64, dtype=d))),
            (f"layer_norm {dtype}", lambda d=dtype: _both(
                lambda x, w, b: F.layer_norm(x, (1024,), w, b), rand(32, 1024, dtype=d),
                rand(1024, dtype=d), rand(1024, dtype=d))),
            (f"rms_norm {dtype}", lambda d=dtype: _both(
                lambda x, w: F.rms_norm(x, (1024,), w), rand(32, 1024, dtype=d),
                rand(1024, dtype=d))),
            (f"cross_entropy {dtype}", lambda d=dtype: _both(
                lambda x: F.cross_entropy(x, tp.randint(0, 1000, (32,), device="cuda")),
                rand(32, 1000, dtype=d))),
            (f"row and column sums, var {dtype}", lambda d=dtype: [
                f(rand(64, 1024, dtype=d)) for f in (lambda x: x.sum(-1), lambda x: x.sum(0),
                                                     lambda x: x.var(-1), lambda x: x.amax(-1))]),
            (f"conv2d NCHW {dtype}", lambda d=dtype: _both(
                lambda x, w: F.conv2d(x, w, padding=1), rand(2, 16, 16, 16, dtype=d),
                rand(32, 16, 3, 3, dtype=d))),
            (f"conv2d NHWC {dtype}", lambda d=dtype: _both(
                lambda x, w: F.conv2d(x, w, padding=1),
                rand(2, 16, 16, 16, dtype=d).contiguous(memory_format=tp.channels_last),
                rand(32, 16, 3, 3, dtype=d).contiguous(memory_format=tp.channels_last))),
            (f"attention {dtype}", lambda d=dtype: _both(
                lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                rand(1, 2, 128, 64, dtype=d), rand(1, 2, 128, 64, dtype=d),
                rand(1, 2, 128, 64, dtype=d))),
            (f"pointwise {dtype}", lambda d=dtype: _both(
                lambda x, y: F.gelu(x * y + 1.0), rand(64, 1024, dtype=d),
                rand(64, 1024, dtype=d))),
            (f"sort and topk {dtype}", lambda d=dtype: [
                tp.sort(rand(4, 2048, dtype=d), -1), tp.topk(rand(4, 2048, dtype=d), 50, -1)]),
        ]
    calls += [
        ("multinomial", lambda: [tp.multinomial(rand(4, 64).abs(), 8, replacement=r)
                                 for r in (False, True)]),
        ("bessel", lambda: [tp.special.bessel_j0(rand(256)), tp.special.modified_bessel_k1(
            rand(256).abs() + 0.1), tp.special.chebyshev_polynomial_t(rand(256), 5)]),
    ]
    return calls


def sample_calls():
    """(name, call) pairs for the operator database's samples on cuda."""
    sys.path.insert(0, str(TESTS))
    import tensorplay as tp
    from opinfo import core, op_db
    core.CUDA_SAMPLES["limit"] = 2          # the first and the last sample of each op
    floats = (tp.float32, tp.float16, tp.bfloat16)
    calls = []
    for op in op_db:
        dtypes = [d for d in floats if d in op.dtypes] or list(op.dtypes[:1])
        if tp.complex64 in op.dtypes:
            dtypes.append(tp.complex64)
        for dtype in dtypes:
            grad = op.supports_autograd and dtype.is_floating_point

            def call(op=op, dtype=dtype, grad=grad):
                failures = 0
                for sample in op.sample_inputs("cuda", dtype, requires_grad=grad):
                    try:
                        out = op.call(sample)
                        if grad:
                            _grad(out)
                    except Exception:       # noqa: BLE001 - counted by the caller
                        failures += 1
                if failures:
                    raise RuntimeError(f"{failures} samples failed")
            calls.append((f"{op.full_name} {dtype}", call))
    return calls


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="the JSON file of launch signatures")
    parser.add_argument("--quick", action="store_true", help="a few GPU-shaped calls only")
    args = parser.parse_args(argv)
    if os.environ.get("TRITON_INTERPRET") != "1" or \
            os.environ.get("TENSORPLAY_PLAN_AS_GPU") != "1":
        print("launch_calls: run with TRITON_INTERPRET=1 TENSORPLAY_PLAN_AS_GPU=1",
              file=sys.stderr)
        return 2
    from triton_kernels import _launch_record
    phases = [("gpu-shaped", gpu_shaped_calls(args.quick))]
    if not args.quick:
        phases.append(("samples", sample_calls()))
    calls = [call for _, group in phases for call in group]
    failed = []
    start = time.perf_counter()
    with _launch_record.recording() as recorder:
        for phase, group in phases:
            recorder.phase = phase
            # Every config of each autotuned choice is recorded in the GPU-shaped calls; the
            # samples are there to reach every kernel (with odd shapes), and record the
            # configs that run (the defaults): a template kernel per expression times
            # every config would be thousands of compilations.
            recorder.all_configs = phase == "gpu-shaped"
            for i, (name, call) in enumerate(group):
                try:
                    call()
                except Exception as e:      # noqa: BLE001 - reported, the next call runs
                    failed.append(f"{name}: {type(e).__name__}: {str(e)[:200]}")
                if i % 100 == 99:
                    print(f"  {phase}: {i + 1} of {len(group)} calls, "
                          f"{len(recorder.records)} signatures, "
                          f"{time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    pathlib.Path(args.out).write_text(json.dumps({
        "calls": len(calls), "seconds": round(time.perf_counter() - start),
        "failed_calls": failed, "dry_run_errors": recorder.errors,
        "records": list(recorder.records.values())}, indent=1))
    print(f"recorded {len(recorder.records)} signatures from {len(calls)} calls "
          f"({len(failed)} failed) in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
