"""One optimizer step over an MLP's parameters, TensorPlay against PyTorch (eager, CPU, one
thread): TensorPlay's default (foreach: flat buffers in cache-sized chunks) and its
per-parameter loop (foreach=False), PyTorch's loop (its CPU default) and its foreach.

    python benchmarks/bench_optim.py

Two sizes: a small MLP where per-op overhead dominates (784-64-64-10, 6 tensors) and a
wider one where the arithmetic does (784-512-512-10); and the digits CNN's 10 tensors.
NumPy's BLAS is limited to one thread as in bench_reduction.py (the step itself does no
matrix products, but a busy machine makes idle BLAS threads spin).
"""
from __future__ import annotations

import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import report, timeit  # noqa: E402

import tensorplay as tp  # noqa: E402


def _mlp_shapes(widths):
    shapes = []
    for fan_in, fan_out in zip(widths[:-1], widths[1:]):
        shapes += [(fan_out, fan_in), (fan_out,)]
    return shapes


def main():
    import torch
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    cnn = [(16, 1, 3, 3), (16,), (16,), (16,), (32, 16, 3, 3), (32,), (32,), (32,),
           (10, 512), (10,)]
    for widths, shapes in (("784-64-64-10", _mlp_shapes((784, 64, 64, 10))),
                           ("784-512-512-10", _mlp_shapes((784, 512, 512, 10))),
                           ("digits CNN", cnn)):
        values = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        grads = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        n = sum(v.size for v in values)
        for name, kwargs in (("SGD", dict(lr=0.01, momentum=0.9)), ("Adam", dict(lr=1e-3)),
                             ("AdamW", dict(lr=1e-3))):
            rows = []
            for label, lib, foreach in (("tp (foreach, default)", tp, None), ("tp-loop", tp, False),
                                        ("torch-loop", torch, False),
                                        ("torch-foreach", torch, True)):
                params = [lib.tensor(v.copy(), requires_grad=True) for v in values]
                for p, g in zip(params, grads):
                    p.grad = lib.tensor(g.copy())
                opt = getattr(lib.optim, name)(params, foreach=foreach, **kwargs)
                rows.append((label, timeit(opt.step)))
            report(f"{name} step, {widths} ({len(shapes)} tensors, {n} floats)", rows)


if __name__ == "__main__":
    main()
