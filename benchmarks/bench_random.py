"""The random fills, TensorPlay against PyTorch and NumPy in the same run: randn (the normal
fill: its Box-Muller blocks are compiled loops, cpu_kernels/_box_muller.py), rand, and
dropout's bernoulli_, at 16, 1,000 and 100,000 elements, float32 and float64. TensorPlay
draws PyTorch's numbers bit for bit (tests/test_random_torch.py); NumPy's generator draws
other numbers by other algorithms, and is there as the floor of a NumPy program.

    python benchmarks/bench_random.py --cpu-time

Each triple is timed in alternation (benchmarks/common.py's paired_min, the fastest of
many rounds) on one thread: BENCH_THREADS (default 1) for PyTorch.
"""
from __future__ import annotations

import os
import sys

THREADS = int(os.environ.get("BENCH_THREADS", "1"))
os.environ.setdefault("OPENBLAS_NUM_THREADS", str(THREADS))
os.environ.setdefault("OMP_NUM_THREADS", str(THREADS))

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import fmt_time, paired_min  # noqa: E402

import tensorplay as tp  # noqa: E402

SIZES = (16, 1_000, 100_000)


def cases(torch, n, dtype):
    """(name, tp closure, torch closure, NumPy closure) for n elements of `dtype`."""
    rng = np.random.default_rng(0)
    tdt, pdt = getattr(tp, dtype), getattr(torch, dtype)
    a, at = tp.empty(n, dtype=tdt), torch.empty(n, dtype=pdt)
    return (
        ("randn", lambda: tp.randn(n, dtype=tdt), lambda: torch.randn(n, dtype=pdt),
         lambda: rng.standard_normal(n, dtype=dtype)),
        ("rand", lambda: tp.rand(n, dtype=tdt), lambda: torch.rand(n, dtype=pdt),
         lambda: rng.random(n, dtype=dtype)),
        ("bernoulli_(0.25)", lambda: a.bernoulli_(0.25), lambda: at.bernoulli_(0.25),
         lambda: rng.random(n) < 0.25),
    )


def main():
    import torch
    torch.set_num_threads(THREADS)
    print(f"threads: {THREADS} (BENCH_THREADS); tp/torch and tp/numpy, timed in alternation")
    print(f"  {'op':<18}{'dtype':<9}{'n':>8}{'tp':>12}{'tp/torch':>10}{'tp/numpy':>10}")
    for dtype in ("float32", "float64"):
        for n in SIZES:
            for name, mine, theirs, numpy_fn in cases(torch, n, dtype):
                batch = max(2, int(2e5 // (n + 2000)))
                t_tp, t_torch, t_np = paired_min(mine, theirs, numpy_fn, batch=batch,
                                                 rounds=15)
                print(f"  {name:<18}{dtype:<9}{n:>8}{fmt_time(t_tp):>12}"
                      f"{t_tp / t_torch:>9.2f}x{t_tp / t_np:>9.2f}x")


if __name__ == "__main__":
    main()
