"""Per-op overhead of `tp.add` on the CPU, against `torch.add` and `numpy.add` in the same run.

    python benchmarks/bench_add_overhead.py

Targets: 1M-element add within 1.2x NumPy; 1-element add within
4x PyTorch eager.
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import report, timeit  # noqa: E402

import tensorplay as tp  # noqa: E402


def main():
    try:
        import torch
        torch.set_num_threads(1)
    except ImportError:
        torch = None
    for n, label in ((1, "1-element"), (1_000_000, "1M-element")):
        a_np = np.random.rand(n).astype(np.float32)
        b_np = np.random.rand(n).astype(np.float32)
        a, b = tp.from_numpy(a_np), tp.from_numpy(b_np)
        rows = [("tp.add", timeit(lambda: tp.add(a, b)))]
        if torch is not None:
            at, bt = torch.from_numpy(a_np), torch.from_numpy(b_np)
            rows.append(("torch.add", timeit(lambda: torch.add(at, bt))))
        rows.append(("numpy.add", timeit(lambda: np.add(a_np, b_np))))
        with tp.no_grad():
            rows.insert(1, ("tp.add (no_grad)", timeit(lambda: tp.add(a, b))))
        targets = ["within 1.2x numpy"] if n > 1 else ["within 4x torch"]
        report(f"add, {label} float32", rows, targets)
    x = tp.ones(1)
    rows = [("x + x (operator)", timeit(lambda: x + x))]
    report("operator path, 1 element", rows)


if __name__ == "__main__":
    main()
