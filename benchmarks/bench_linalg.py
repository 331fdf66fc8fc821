"""Batched linear algebra against PyTorch and NumPy, in the same run: 64 matrices of
64 x 64, float64 (LAPACK's routines on both sides).

    python benchmarks/bench_linalg.py

Targets: batched solve and cholesky within 2x PyTorch. Also timed: inv, slogdet, a
solve's forward + backward, and the spectral routines: svd (gesdd) and eigh (syevd) of a
batch of 64 x 64 matrices (eigh of their symmetric part), svd's forward + backward.

Threads: BENCH_THREADS (default 1) for both libraries, as in bench_reduction.py.
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
    n = 64
    a = rng.standard_normal((64, n, n)) + n * np.eye(n)
    spd = a @ a.transpose(0, 2, 1) + n * np.eye(n)
    b = rng.standard_normal((64, n, 8))
    ta, tspd, tb = tp.tensor(a), tp.tensor(spd), tp.tensor(b)
    xa, xspd, xb = torch.from_numpy(a), torch.from_numpy(spd), torch.from_numpy(b)

    report("linalg.solve, 64 x (64x64) with 8 right-hand sides, float64",
           [("tp.linalg.solve", timeit(lambda: tp.linalg.solve(ta, tb))),
            ("torch.linalg.solve", timeit(lambda: torch.linalg.solve(xa, xb))),
            ("numpy.linalg.solve", timeit(lambda: np.linalg.solve(a, b)))],
           ["within 2x torch"])
    report("linalg.cholesky, 64 x (64x64), float64",
           [("tp.linalg.cholesky", timeit(lambda: tp.linalg.cholesky(tspd))),
            ("torch.linalg.cholesky", timeit(lambda: torch.linalg.cholesky(xspd))),
            ("numpy.linalg.cholesky", timeit(lambda: np.linalg.cholesky(spd)))],
           ["within 2x torch"])
    report("linalg.inv, 64 x (64x64), float64",
           [("tp.linalg.inv", timeit(lambda: tp.linalg.inv(ta))),
            ("torch.linalg.inv", timeit(lambda: torch.linalg.inv(xa))),
            ("numpy.linalg.inv", timeit(lambda: np.linalg.inv(a)))])
    report("linalg.slogdet, 64 x (64x64), float64",
           [("tp.linalg.slogdet", timeit(lambda: tp.linalg.slogdet(ta))),
            ("torch.linalg.slogdet", timeit(lambda: torch.linalg.slogdet(xa))),
            ("numpy.linalg.slogdet", timeit(lambda: np.linalg.slogdet(a)))])

    ga, gb = ta.clone().requires_grad_(), tb.clone().requires_grad_()
    ya, yb = xa.clone().requires_grad_(), xb.clone().requires_grad_()

    def tp_step():
        tp.linalg.solve(ga, gb).sum().backward()

    def torch_step():
        torch.linalg.solve(ya, yb).sum().backward()

    report("linalg.solve forward + backward, 64 x (64x64), float64",
           [("tp", timeit(tp_step)), ("torch", timeit(torch_step))])

    # The spectral routines: (64, 64, 64), LAPACK's gesdd and syevd on both sides.
    g = rng.standard_normal((64, n, n))
    sym = (g + g.transpose(0, 2, 1)) / 2
    tg, tsym, xg, xsym = tp.tensor(g), tp.tensor(sym), torch.from_numpy(g), torch.from_numpy(sym)
    report("linalg.svd, 64 x (64x64), float64",
           [("tp.linalg.svd", timeit(lambda: tp.linalg.svd(tg))),
            ("torch.linalg.svd", timeit(lambda: torch.linalg.svd(xg))),
            ("numpy.linalg.svd", timeit(lambda: np.linalg.svd(g)))])
    report("linalg.eigh, 64 x (64x64), float64",
           [("tp.linalg.eigh", timeit(lambda: tp.linalg.eigh(tsym))),
            ("torch.linalg.eigh", timeit(lambda: torch.linalg.eigh(xsym))),
            ("numpy.linalg.eigh", timeit(lambda: np.linalg.eigh(sym)))])

    sg, yg = tg.clone().requires_grad_(), xg.clone().requires_grad_()

    def tp_svd_step():
        U, S, Vh = tp.linalg.svd(sg, full_matrices=False)
        ((U @ Vh).sum() + S.sum()).backward()

    def torch_svd_step():
        U, S, Vh = torch.linalg.svd(yg, full_matrices=False)
        ((U @ Vh).sum() + S.sum()).backward()

    report("linalg.svd forward + backward, 64 x (64x64), float64",
           [("tp", timeit(tp_svd_step)), ("torch", timeit(torch_svd_step))])


if __name__ == "__main__":
    main()
