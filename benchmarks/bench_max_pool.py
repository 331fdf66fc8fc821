"""max_pool2d forward and forward+backward, TensorPlay against PyTorch in the same run, on
the digits CNN's pooling (MaxPool2d(2) of a 32x32x8x8 float32 batch) and its neighbours:
2x2 and 3x3 (stride 2, padding 1) windows on 8x8 and 16x16 planes, dilated and ceil_mode
windows, float32 and float64.

    python benchmarks/bench_max_pool.py --cpu-time

Target: forward and forward+backward within ~1.3x PyTorch for the 2x2 and 3x3 cases.
Each pair is timed in alternation (benchmarks/common.py's paired_min, the fastest of many
rounds) on one thread: BENCH_THREADS (default 1) for PyTorch and OpenBLAS.
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
import tensorplay.nn.functional as F  # noqa: E402

# (label, input shape, max_pool2d keyword arguments, dtype)
CASES = (
    ("2x2 32x32x16x16", (32, 32, 16, 16), dict(kernel_size=2), "float32"),
    ("2x2 32x32x8x8", (32, 32, 8, 8), dict(kernel_size=2), "float32"),
    ("3x3 s2 p1 32x32x16x16", (32, 32, 16, 16), dict(kernel_size=3, stride=2, padding=1),
     "float32"),
    ("3x3 s2 p1 32x32x8x8", (32, 32, 8, 8), dict(kernel_size=3, stride=2, padding=1),
     "float32"),
    ("3x3 s1 p1 d2 32x32x16x16", (32, 32, 16, 16),
     dict(kernel_size=3, stride=1, padding=1, dilation=2), "float32"),
    ("3x3 s2 ceil 32x32x15x15", (32, 32, 15, 15),
     dict(kernel_size=3, stride=2, ceil_mode=True), "float32"),
    ("2x2 32x32x16x16 float64", (32, 32, 16, 16), dict(kernel_size=2), "float64"),
)

PAIRS = dict(batch=20, rounds=40)    # of each library, timed in alternation


def bench(label, shape, kwargs, dtype):
    import torch
    a = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    x, tx = tp.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    g_shape = tuple(torch.nn.functional.max_pool2d(tx, **kwargs).shape)
    g = np.random.default_rng(1).standard_normal(g_shape).astype(dtype)
    tg, ttg = tp.tensor(g), torch.tensor(g)
    forward = paired_min(lambda: F.max_pool2d(x.detach(), **kwargs),
                         lambda: torch.nn.functional.max_pool2d(tx.detach(), **kwargs),
                         **PAIRS)

    def tp_step():
        x.grad = None
        F.max_pool2d(x, **kwargs).backward(tg)

    def torch_step():
        tx.grad = None
        torch.nn.functional.max_pool2d(tx, **kwargs).backward(ttg)
    both = paired_min(tp_step, torch_step, **PAIRS)
    return forward, both


def main():
    import torch
    torch.set_num_threads(THREADS)
    print(f"max_pool2d, {THREADS} thread(s), "
          f"{'CPU' if '--cpu-time' in sys.argv[1:] else 'wall'} time, fastest of "
          f"{PAIRS['rounds']} batches of {PAIRS['batch']}")
    print(f"  {'case':<28}{'forward tp':>12}{'torch':>12}{'ratio':>8}"
          f"{'fwd+bwd tp':>14}{'torch':>12}{'ratio':>8}")
    for label, shape, kwargs, dtype in CASES:
        (f_tp, f_torch), (b_tp, b_torch) = bench(label, shape, kwargs, dtype)
        print(f"  {label:<28}{fmt_time(f_tp):>12}{fmt_time(f_torch):>12}"
              f"{f_tp / f_torch:7.2f}x{fmt_time(b_tp):>14}{fmt_time(b_torch):>12}"
              f"{b_tp / b_torch:7.2f}x")


if __name__ == "__main__":
    main()
