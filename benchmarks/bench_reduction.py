"""Matrix product and reductions against PyTorch and NumPy, in the same run.

    python benchmarks/bench_reduction.py

Targets: matmul 512x512 float32 within 1.2x PyTorch. Also timed: linear
(nn.Linear's op, one np.matmul), and sum / var over a 1024x1024 tensor.

Threads: both libraries get the same number, BENCH_THREADS (default 1): PyTorch through
set_num_threads, NumPy's OpenBLAS through OPENBLAS_NUM_THREADS, which must be set before
NumPy loads. One thread compares the kernels themselves and is steady on a busy machine;
with more threads than free cores, spinning BLAS threads make every timing noise.
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


def main():
    import torch
    torch.set_num_threads(THREADS)
    print(f"threads: {THREADS} (BENCH_THREADS)")
    rng = np.random.default_rng(0)

    a = rng.standard_normal((512, 512), dtype=np.float32)
    b = rng.standard_normal((512, 512), dtype=np.float32)
    ta, tb = tp.tensor(a), tp.tensor(b)
    xa, xb = torch.from_numpy(a), torch.from_numpy(b)
    report("matmul 512x512 @ 512x512, float32",
           [("tp.matmul", timeit(lambda: tp.matmul(ta, tb))),
            ("torch.matmul", timeit(lambda: torch.matmul(xa, xb))),
            ("numpy.matmul", timeit(lambda: np.matmul(a, b)))],
           ["within 1.2x torch"])

    x = rng.standard_normal((256, 512), dtype=np.float32)
    bias = rng.standard_normal(512, dtype=np.float32)
    tx, tbias = tp.tensor(x), tp.tensor(bias)
    xx, xbias = torch.from_numpy(x), torch.from_numpy(bias)
    report("linear [256, 512] x [512, 512]^T + bias, float32",
           [("tp.linear", timeit(lambda: tp.linear(tx, ta, tbias))),
            ("torch.nn.functional.linear",
             timeit(lambda: torch.nn.functional.linear(xx, xa, xbias))),
            ("numpy", timeit(lambda: np.matmul(x, a.T) + bias))])

    big = rng.standard_normal((1024, 1024), dtype=np.float32)
    tbig, xbig = tp.tensor(big), torch.from_numpy(big)
    report("sum over 1024x1024, float32",
           [("tp.sum", timeit(lambda: tp.sum(tbig))),
            ("torch.sum", timeit(lambda: torch.sum(xbig))),
            ("numpy.sum", timeit(lambda: np.sum(big)))])
    report("sum(dim=1) over 1024x1024, float32",
           [("tp.sum", timeit(lambda: tp.sum(tbig, 1))),
            ("torch.sum", timeit(lambda: torch.sum(xbig, 1))),
            ("numpy.sum", timeit(lambda: np.sum(big, 1)))])
    report("var(dim=1) over 1024x1024, float32",
           [("tp.var", timeit(lambda: tp.var(tbig, 1))),
            ("torch.var", timeit(lambda: torch.var(xbig, 1))),
            ("numpy.var", timeit(lambda: np.var(big, 1, ddof=1)))])


if __name__ == "__main__":
    main()
