"""TensorPlay's Triton kernels against PyTorch CUDA, measured in the same run on the
same GPU, through the public API (`a @ b`, `x + y`, ...: dispatch included).

    python benchmarks/gpu/bench_gpu.py              # a real GPU: the full sizes
    python benchmarks/gpu/bench_gpu.py --markdown   # also print rows for benchmarks/RESULTS.md
    TENSORPLAY_TRITON_INTERPRET=1 python benchmarks/gpu/bench_gpu.py --smoke
                                                    # tiny sizes, any machine: checks the script

Each case prints TensorPlay's and PyTorch's time, the achieved TFLOP/s (matmul) or
GB/s (memory-bound kernels), and the ratio TensorPlay / PyTorch throughput against
the issue's target (matmul >= 0.70 of cuBLAS, elementwise and softmax >= 0.80 of
PyTorch's bandwidth). Ops that do not exist in this build are skipped, with the reason.

Timing: each measurement enqueues a batch of calls between two CUDA events and
divides, so the CPU-side cost of a call (Python dispatch, the Triton launch) is
hidden when the GPU work per call is larger, as it is in a real training step.
"""
from __future__ import annotations

import argparse
import datetime
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Callable, Optional

import tensorplay as tp


@dataclass
class Case:
    name: str
    build: Callable    # (smoke) -> (tp_fn, torch_fn, work) ; work = flops or bytes
    unit: str          # "TFLOP/s" or "GB/s"
    target: Optional[float]
    needs: tuple = ()  # tp functions the case calls; skipped when one is missing


def _torch():
    import torch
    return torch


def _function(name):
    """tp.<name>, or tp.nn.functional.<name>; None when this build has neither."""
    if hasattr(tp, name):
        return getattr(tp, name)
    nn = getattr(tp, "nn", None)
    return getattr(getattr(nn, "functional", None), name, None)


def _pair(shape, dtype, smoke, scale=1.0):
    """A TensorPlay cuda tensor with random values and a torch view of the same memory."""
    x = tp.empty(*shape, dtype=dtype, device="cuda")
    tx = tp.cuda.as_torch(x)
    tx.copy_(_torch().randn(*shape, dtype=tx.dtype, device=tx.device) * scale)
    return x, tx


# ---- the cases --------------------------------------------------------------------------
def matmul_case(dtype):
    def build(smoke):
        n = 64 if smoke else 4096
        a, ta = _pair((n, n), dtype, smoke)
        b, tb = _pair((n, n), dtype, smoke)
        return (lambda: a @ b), (lambda: ta @ tb), 2 * n ** 3
    return Case(f"matmul {dtype.name} 4096^3", build, "TFLOP/s", 0.70)


def add_case():
    def build(smoke):
        n = 4096 if smoke else 256 * 1024 * 1024
        x, tx = _pair((n,), tp.float32, smoke)
        y, ty = _pair((n,), tp.float32, smoke)
        return (lambda: x + y), (lambda: tx + ty), 3 * 4 * n
    return Case("add float32 256M elements", build, "GB/s", 0.80)


def softmax_case():
    def build(smoke):
        n = 64 if smoke else 8192
        x, tx = _pair((n, n), tp.float32, smoke)
        torch = _torch()
        softmax = _function("softmax")
        return (lambda: softmax(x, -1)), (lambda: torch.softmax(tx, -1)), 2 * 4 * n * n
    return Case("softmax float32 8192x8192", build, "GB/s", 0.80, needs=("softmax",))


def layer_norm_case():
    def build(smoke):
        rows, cols = (64, 64) if smoke else (8192, 8192)
        x, tx = _pair((rows, cols), tp.float32, smoke)
        w, tw = _pair((cols,), tp.float32, smoke)
        b, tb = _pair((cols,), tp.float32, smoke)
        torch = _torch()
        layer_norm = _function("layer_norm")
        return (lambda: layer_norm(x, [cols], w, b, 1e-5)), \
            (lambda: torch.nn.functional.layer_norm(tx, [cols], tw, tb, 1e-5)), \
            2 * 4 * rows * cols
    return Case("layer_norm float32 8192x8192", build, "GB/s", 0.80, needs=("layer_norm",))


def cross_entropy_case():
    def build(smoke):
        rows, classes = (64, 128) if smoke else (8192, 32768)
        x, tx = _pair((rows, classes), tp.float32, smoke)
        torch = _torch()
        target = torch.randint(0, classes, (rows,), device=tx.device)
        t_target = tp.from_dlpack(target) if tx.is_cuda else tp.tensor(target.numpy(),
                                                                       device="cuda")
        cross_entropy = _function("cross_entropy")
        return (lambda: cross_entropy(x, t_target)), \
            (lambda: torch.nn.functional.cross_entropy(tx, target)), 4 * rows * classes
    return Case("cross_entropy float32 8192x32768", build, "GB/s", 0.80,
                needs=("cross_entropy",))


def fft_case():
    """The radix-2 Stockham FFT (one launch per stage: log2(n) passes over the data)
    against cuFFT; GB/s counts the ideal traffic, one read and one write of the data."""
    def build(smoke):
        rows, n = (4, 64) if smoke else (64, 1 << 16)
        x, tx = _pair((rows, n), tp.complex64, smoke)
        torch = _torch()
        return (lambda: tp.fft.fft(x)), (lambda: torch.fft.fft(tx)), 2 * 8 * rows * n
    return Case("fft complex64 64 x 2^16", build, "GB/s", None)


CASES = [matmul_case(tp.float16), matmul_case(tp.bfloat16), add_case(), softmax_case(),
         layer_norm_case(), cross_entropy_case(), fft_case()]


# ---- timing -----------------------------------------------------------------------------
def time_gpu(fn, batch=20, repeats=5):
    """Seconds per call: median over `repeats` batches timed with CUDA events."""
    torch = _torch()
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(batch):
            fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / 1e3 / batch)
    return statistics.median(samples)


def time_cpu(fn, repeats=2):
    """The interpreter's stand-in (--smoke): wall-clock seconds per call."""
    fn()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - start) / repeats


def run_case(case, smoke, timer):
    missing = [name for name in case.needs if _function(name) is None]
    if missing:
        return dict(name=case.name, skipped=f"tp.{missing[0]} does not exist in this build")
    try:
        tp_fn, torch_fn, work = case.build(smoke)
        t_tp = timer(tp_fn)
        t_torch = timer(torch_fn)
    except Exception as e:  # a benchmark reports, it does not stop at the first failure
        return dict(name=case.name, skipped=f"{type(e).__name__}: {e}")
    scale = 1e12 if case.unit == "TFLOP/s" else 1e9
    ratio = t_torch / t_tp
    return dict(name=case.name, tp=t_tp, torch=t_torch, tp_rate=work / t_tp / scale,
                torch_rate=work / t_torch / scale, unit=case.unit, ratio=ratio,
                target=case.target, ok=case.target is None or ratio >= case.target)


def hardware():
    torch = _torch()
    if torch.cuda.is_available():
        return torch.cuda.get_device_name()
    return "no GPU (Triton interpreter)"


def report(results, markdown, smoke=False):
    print(f"\nTensorPlay Triton kernels vs PyTorch CUDA on {hardware()}")
    if smoke:
        print("(--smoke: tiny sizes, to check the script; the numbers mean nothing)")
    print(f"{'case':<36}{'TensorPlay':>14}{'PyTorch':>14}{'ratio':>8}  target")
    for r in results:
        if "skipped" in r:
            print(f"{r['name']:<36}  skipped: {r['skipped']}")
            continue
        verdict = "" if r["target"] is None else \
            f"  >= {r['target']:.2f} {'ok' if r['ok'] else 'MISSED'}"
        print(f"{r['name']:<36}{r['tp_rate']:>9.1f} {r['unit']:<4}"
              f"{r['torch_rate']:>9.1f} {r['unit']:<4}{r['ratio']:>8.2f}{verdict}")
    if markdown:
        print(f"\n### {datetime.date.today().isoformat()}, {hardware()}\n")
        print("| case | TensorPlay | PyTorch | ratio | target |")
        print("|---|---|---|---|---|")
        for r in results:
            if "skipped" in r:
                print(f"| {r['name']} | skipped: {r['skipped']} | | | |")
            else:
                print(f"| {r['name']} | {r['tp_rate']:.1f} {r['unit']} | "
                      f"{r['torch_rate']:.1f} {r['unit']} | {r['ratio']:.2f} | "
                      f"{r['target'] if r['target'] is not None else ''} |")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes; runs under the Triton interpreter too")
    parser.add_argument("--markdown", action="store_true",
                        help="also print a table for benchmarks/RESULTS.md")
    parser.add_argument("--only", default="", help="run the cases whose name contains this")
    args = parser.parse_args(argv)
    if not tp.cuda.is_available() and not (args.smoke and tp.cuda.is_interpreted()):
        print("no GPU available: nothing to measure (run with --smoke and "
              "TENSORPLAY_TRITON_INTERPRET=1 to check the script itself)")
        return 0
    timer = time_gpu if tp.cuda.is_available() else time_cpu
    results = [run_case(c, args.smoke, timer) for c in CASES if args.only in c.name]
    report(results, args.markdown, args.smoke)
    return 0


if __name__ == "__main__":
    sys.exit(main())
