"""Forward + backward of a small graph, against PyTorch in the same run.

    python benchmarks/bench_autograd.py

Target: `(x * 2 + 1).sum().backward()` on small tensors within 4x
PyTorch.
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import report, timeit  # noqa: E402

import tensorplay as tp  # noqa: E402


def main():
    import torch
    torch.set_num_threads(1)
    for n in (8, 10_000):
        data = np.random.rand(n).astype(np.float32)
        x = tp.tensor(data, requires_grad=True)
        xt = torch.tensor(data, requires_grad=True)

        def tp_step():
            (x * 2 + 1).sum().backward()

        def torch_step():
            (xt * 2 + 1).sum().backward()
        report(f"(x * 2 + 1).sum().backward(), {n} elements",
               [("tp", timeit(tp_step)), ("torch", timeit(torch_step))],
               ["within 4x torch"])


if __name__ == "__main__":
    main()
