"""conv2d forward and forward+backward, TensorPlay (im2col + one matmul) against PyTorch
in the same run.

    python benchmarks/bench_nn_spatial.py

Target: conv2d forward and backward on a 32x3x32x32 batch within 3x PyTorch
CPU. Both libraries use their default thread counts (NumPy's BLAS and PyTorch's
intra-op pool), as a user would run them.
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import report, timeit  # noqa: E402

import tensorplay as tp  # noqa: E402
import tensorplay.nn.functional as F  # noqa: E402

# (what, input shape, weight shape)
LAYERS = (
    ("3 -> 16 channels, 3x3", (32, 3, 32, 32), (16, 3, 3, 3)),
    ("32 -> 64 channels, 3x3", (32, 32, 32, 32), (64, 32, 3, 3)),
)


def bench(what, x_shape, w_shape):
    import torch
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal(x_shape).astype(np.float32)
    w_np = rng.standard_normal(w_shape).astype(np.float32)
    b_np = rng.standard_normal(w_shape[0]).astype(np.float32)
    x, w, b = (tp.tensor(a, requires_grad=True) for a in (x_np, w_np, b_np))
    xt, wt, bt = (torch.tensor(a, requires_grad=True) for a in (x_np, w_np, b_np))

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
    report(f"conv2d forward, {shape}, {what}",
           [("tp", timeit(tp_forward)), ("torch", timeit(torch_forward))], ["within 3x torch"])
    report(f"conv2d forward + backward, {shape}, {what}",
           [("tp", timeit(tp_step)), ("torch", timeit(torch_step))], ["within 3x torch"])


def main():
    for layer in LAYERS:
        bench(*layer)


if __name__ == "__main__":
    main()
