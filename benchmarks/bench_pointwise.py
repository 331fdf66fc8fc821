"""Pointwise ops beyond arithmetic on a 1M-element float32 tensor, forward and forward+backward,
against PyTorch CPU (one thread) in the same run.

    python benchmarks/bench_pointwise.py

No targets for these; the ratios show where a NumPy formulation costs
(erf goes through math.erf element by element, so gelu is the slow one).
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import report, timeit  # noqa: E402

import tensorplay as tp  # noqa: E402

N = 1_000_000
CASES = [
    ("expm1", lambda m, x: m.expm1(x)),
    ("clamp", lambda m, x: m.clamp(x, -0.5, 0.5)),
    ("remainder", lambda m, x: m.remainder(x, 0.3)),
    ("silu", lambda m, x: m.nn.functional.silu(x)),
    ("softplus", lambda m, x: m.nn.functional.softplus(x)),
    ("gelu tanh", lambda m, x: m.nn.functional.gelu(x, approximate="tanh")),
    ("gelu (erf)", lambda m, x: m.nn.functional.gelu(x)),
]


def main():
    import torch
    torch.set_num_threads(1)
    data = np.random.default_rng(0).standard_normal(N).astype(np.float32)
    for name, fn in CASES:
        x = tp.from_numpy(data.copy())
        xt = torch.from_numpy(data.copy())
        rows = [(f"tp {name}", timeit(lambda: fn(tp, x), min_time=0.5, repeats=3)),
                (f"torch {name}", timeit(lambda: fn(torch, xt), min_time=0.5, repeats=3))]
        report(f"{name}, 1M float32, forward", rows)
        xg = tp.from_numpy(data.copy()).requires_grad_(True)
        xtg = torch.from_numpy(data.copy()).requires_grad_(True)
        rows = [(f"tp {name}", timeit(lambda: fn(tp, xg).sum().backward(), min_time=0.5,
                                      repeats=3)),
                (f"torch {name}", timeit(lambda: fn(torch, xtg).sum().backward(), min_time=0.5,
                                         repeats=3))]
        report(f"{name}, 1M float32, forward + backward", rows)


if __name__ == "__main__":
    main()
