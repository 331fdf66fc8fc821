"""conv2d forward and forward+backward, TensorPlay (im2col + one matmul per group; stride 1
reads the columns as runs of the flat padded planes, see cpu_kernels/conv.py) against
PyTorch in the same run.

    python benchmarks/bench_nn_spatial.py

Target: conv2d forward and backward on a 32x3x32x32 batch within 3x PyTorch
CPU. Also timed: the two layers of the digits CNN that `tensorplay train` runs (target:
its epoch within 2x PyTorch), where the first layer's input needs no gradient, and its
second layer at batch 1, 8, 32 and 64 (target: forward and forward + backward within
1.3x PyTorch at each).

Threads: both libraries get BENCH_THREADS (default 1): PyTorch through set_num_threads,
NumPy's OpenBLAS through OPENBLAS_NUM_THREADS, set before NumPy loads (as in
bench_reduction.py); spinning BLAS threads on a busy machine make every timing noise.
"""
from __future__ import annotations

import os
import sys

THREADS = int(os.environ.get("BENCH_THREADS", "1"))
os.environ.setdefault("OPENBLAS_NUM_THREADS", str(THREADS))
os.environ.setdefault("OMP_NUM_THREADS", str(THREADS))

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import report, timeit  # noqa: E402

import tensorplay as tp  # noqa: E402
import tensorplay.nn.functional as F  # noqa: E402

# (what, input shape, weight shape, does the input need a gradient, target)
LAYERS = (
    ("3 -> 16 channels, 3x3", (32, 3, 32, 32), (16, 3, 3, 3), True, "within 3x torch"),
    ("32 -> 64 channels, 3x3", (32, 32, 32, 32), (64, 32, 3, 3), True, "within 3x torch"),
    ("digits CNN layer 1, 1 -> 16, 3x3", (32, 1, 8, 8), (16, 1, 3, 3), False, None),
) + tuple((f"digits CNN layer 2, 16 -> 32, 3x3, batch {n}", (n, 16, 8, 8), (32, 16, 3, 3),
            True, "within 1.3x torch") for n in (1, 8, 32, 64))


def bench(what, x_shape, w_shape, input_grad, target):
    import torch
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal(x_shape).astype(np.float32)
    w_np = rng.standard_normal(w_shape).astype(np.float32)
    b_np = rng.standard_normal(w_shape[0]).astype(np.float32)
    x, w, b = (tp.tensor(a, requires_grad=True) for a in (x_np, w_np, b_np))
    xt, wt, bt = (torch.tensor(a, requires_grad=True) for a in (x_np, w_np, b_np))
    x.requires_grad_(input_grad)
    xt.requires_grad_(input_grad)

    def tp_forward():
        with tp.no_grad():
            F.conv2d(x, w, b, padding=1)

    def torch_forward():
        with torch.no_grad():
            torch.nn.functional.conv2d(xt, wt, bt, padding=1)

    def tp_step():
        F.conv2d(x, w, b, padding=1).sum().backward()

    def torch_step():
        torch.nn.functional.conv2d(xt, wt, bt, padding=1).sum().backward()

    shape = "x".join(map(str, x_shape))
    targets = [target] if target else None
    report(f"conv2d forward, {shape}, {what}",
           [("tp", timeit(tp_forward)), ("torch", timeit(torch_forward))], targets)
    report(f"conv2d forward + backward, {shape}, {what}",
           [("tp", timeit(tp_step)), ("torch", timeit(torch_step))], targets)


def main():
    import torch
    torch.set_num_threads(THREADS)
    print(f"threads: {THREADS} (BENCH_THREADS)")
    for layer in LAYERS:
        bench(*layer)


if __name__ == "__main__":
    main()
