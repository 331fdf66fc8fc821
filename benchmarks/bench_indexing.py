"""Indexing ops on the CPU against PyTorch in the same run: gather, scatter_add,
index_select, index_add, a bool-mask read and an advanced-index write, forward and
(for the reads) forward + backward.

    python benchmarks/bench_indexing.py

No targets in the issue; the ratios show where the NumPy kernels (`ufunc.at` for
repeated indices, host-side range checks) cost most.
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import report, timeit  # noqa: E402

import tensorplay as tp  # noqa: E402


def _cases(m, rng):
    """(title, tensorplay call, torch call) on a 512x512 float32 input."""
    x_np = rng.standard_normal((512, 512)).astype(np.float32)
    idx_np = rng.integers(0, 512, (512, 512))
    rows_np = rng.integers(0, 512, 256)
    mask_np = x_np > 0

    def make(mod, grad=False):
        x = mod.tensor(x_np, requires_grad=grad)
        return x, mod.tensor(idx_np), mod.tensor(rows_np), mod.tensor(mask_np)

    def calls(mod):
        x, idx, rows, mask = make(mod)
        xg, *_ = make(mod, grad=True)
        src = x[:256]

        def backward(fn):
            def run():
                xg.grad = None
                fn(xg).sum().backward()
            return run
        return {
            "gather dim=1": lambda: x.gather(1, idx),
            "scatter_add dim=0 (repeats)": lambda: x.scatter_add(0, idx, x),
            "index_select 256 rows": lambda: x.index_select(0, rows),
            "index_add 256 rows (repeats)": lambda: x.index_add(0, rows, src),
            "x[mask]": lambda: x[mask],
            "x[rows] = 0": lambda: x.__setitem__(rows, 0.0),
            "gather fwd+bwd": backward(lambda t: t.gather(1, idx)),
            "x[rows] fwd+bwd": backward(lambda t: t[rows]),
        }
    return calls(tp), calls(m)


def main():
    import torch
    torch.set_num_threads(1)
    tp_calls, torch_calls = _cases(torch, np.random.default_rng(0))
    for title, fn in tp_calls.items():
        report(f"{title}, 512x512 float32",
               [("tensorplay", timeit(fn)), ("torch", timeit(torch_calls[title]))])


if __name__ == "__main__":
    main()
