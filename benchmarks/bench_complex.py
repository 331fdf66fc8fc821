"""Complex arithmetic against PyTorch and NumPy, in the same run: a complex64 512 x 512
matmul (BLAS's cgemm on all three sides: NumPy's matmul holds the CPU kernel), its forward
and backward, and elementwise complex multiplication.

    python benchmarks/bench_complex.py

Threads: BENCH_THREADS (default 1) for the three libraries, as in bench_reduction.py.
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
    n = 512
    a = (rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))).astype(np.complex64)
    b = (rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))).astype(np.complex64)
    ta, tb = tp.tensor(a), tp.tensor(b)
    xa, xb = torch.from_numpy(a), torch.from_numpy(b)
    report("matmul, complex64 512 x 512",
           [("tp.matmul", timeit(lambda: ta @ tb)),
            ("torch.matmul", timeit(lambda: xa @ xb)),
            ("numpy.matmul", timeit(lambda: a @ b))])

    ga, gb = ta.clone().requires_grad_(), tb.clone().requires_grad_()
    xga, xgb = xa.clone().requires_grad_(), xb.clone().requires_grad_()

    def tp_step():
        tp.view_as_real(ga @ gb).sum().backward()

    def torch_step():
        torch.view_as_real(xga @ xgb).sum().backward()

    report("matmul forward + backward, complex64 512 x 512",
           [("tp", timeit(tp_step)), ("torch", timeit(torch_step))])

    m = 1 << 20
    u = (rng.standard_normal(m) + 1j * rng.standard_normal(m)).astype(np.complex64)
    v = (rng.standard_normal(m) + 1j * rng.standard_normal(m)).astype(np.complex64)
    tu, tv, xu, xv = tp.tensor(u), tp.tensor(v), torch.from_numpy(u), torch.from_numpy(v)
    report("elementwise product, complex64, 2^20 elements",
           [("tp.mul", timeit(lambda: tu * tv)),
            ("torch.mul", timeit(lambda: xu * xv)),
            ("numpy.multiply", timeit(lambda: u * v))])


if __name__ == "__main__":
    main()
