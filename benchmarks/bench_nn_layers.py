"""softmax and cross_entropy, against PyTorch in the same run.

    python benchmarks/bench_nn_layers.py

Targets: softmax on 1024x1024 within 2x PyTorch; cross_entropy forward +
backward (batch 512, 1000 classes) within 2x. PyTorch runs on one thread, like the
NumPy kernels.
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import report, timeit  # noqa: E402

import tensorplay as tp  # noqa: E402


def bench_softmax(torch):
    data = np.random.default_rng(0).standard_normal((1024, 1024)).astype(np.float32)
    x, xt = tp.tensor(data), torch.tensor(data)
    report("softmax(x, -1), 1024x1024 float32",
           [("tp", timeit(lambda: tp.softmax(x, -1))),
            ("torch", timeit(lambda: torch.softmax(xt, -1)))],
           ["within 2x torch"])

    xg, xtg = tp.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    g = np.random.default_rng(1).standard_normal((1024, 1024)).astype(np.float32)
    gt, gtt = tp.tensor(g), torch.tensor(g)

    def tp_step():
        tp.softmax(xg, -1).backward(gt)

    def torch_step():
        torch.softmax(xtg, -1).backward(gtt)
    report("softmax forward + backward, 1024x1024 float32",
           [("tp", timeit(tp_step)), ("torch", timeit(torch_step))])


def bench_cross_entropy(torch):
    rng = np.random.default_rng(2)
    logits = rng.standard_normal((512, 1000)).astype(np.float32)
    labels = rng.integers(0, 1000, 512)
    x, t = tp.tensor(logits, requires_grad=True), tp.tensor(labels)
    xt, tt = torch.tensor(logits, requires_grad=True), torch.tensor(labels)

    def tp_step():
        tp.nn.functional.cross_entropy(x, t).backward()

    def torch_step():
        torch.nn.functional.cross_entropy(xt, tt).backward()
    report("cross_entropy forward + backward, batch 512, 1000 classes",
           [("tp", timeit(tp_step)), ("torch", timeit(torch_step))],
           ["within 2x torch"])


def main():
    import torch
    torch.set_num_threads(1)
    bench_softmax(torch)
    bench_cross_entropy(torch)


if __name__ == "__main__":
    main()
