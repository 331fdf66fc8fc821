"""Sparse COO against PyTorch's in the same run: sparse @ dense, coalesce, and a GCN layer's
forward + backward.

    python benchmarks/bench_sparse.py

A graph of N nodes and 10 N random edges (uncoalesced: duplicates kept), features of width
64. No target yet: TensorPlay's sparse kernels are NumPy decompositions (one index_add
per product), the point is to see how far they are from PyTorch's C++ kernels.
"""
from __future__ import annotations

import os
import sys

THREADS = int(os.environ.get("BENCH_THREADS", "1"))
os.environ.setdefault("OPENBLAS_NUM_THREADS", str(THREADS))
os.environ.setdefault("OMP_NUM_THREADS", str(THREADS))

import warnings  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import report, timeit  # noqa: E402

import tensorplay as tp  # noqa: E402


def graph(lib, rng, n, edges):
    indices = rng.integers(0, n, size=(2, edges))
    values = rng.random(edges).astype(np.float32)
    return lib.sparse_coo_tensor(lib.tensor(indices), lib.tensor(values), (n, n))


def main():
    try:
        import torch
        torch.set_num_threads(THREADS)
        warnings.filterwarnings("ignore", "Sparse invariant checks")
    except ImportError:
        torch = None
    libs = [tp] + ([torch] if torch is not None else [])
    for n in (1_000, 10_000):
        width = 64
        rows = {"mm": [], "coalesce": [], "gcn": []}
        for lib in libs:
            rng = np.random.default_rng(0)
            adjacency = graph(lib, rng, n, 10 * n)
            features = lib.tensor(rng.standard_normal((n, width)).astype(np.float32))
            weight = lib.tensor(rng.standard_normal((width, width)).astype(np.float32) * 0.1,
                                requires_grad=True)
            name = lib.__name__.split(".")[0]

            def gcn_step():
                out = lib.sparse.mm(adjacency, features @ weight).relu()
                out.sum().backward()

            rows["mm"].append((f"{name} sparse.mm", timeit(lambda: lib.sparse.mm(adjacency,
                                                                                  features))))
            rows["coalesce"].append((f"{name} coalesce", timeit(adjacency.coalesce)))
            rows["gcn"].append((f"{name} GCN layer fwd+bwd", timeit(gcn_step)))
        nnz = 10 * n
        report(f"sparse.mm, {n}x{n} with {nnz} entries @ {n}x{width}", rows["mm"])
        report(f"coalesce, {nnz} entries (uncoalesced)", rows["coalesce"])
        report(f"GCN layer relu(A @ (X W)) forward + backward, N={n}", rows["gcn"])


if __name__ == "__main__":
    main()
