"""One optimizer step over an MLP's parameters, TensorPlay against PyTorch (eager, CPU, one
thread; PyTorch's CPU default is its single-tensor loop too).

    python benchmarks/bench_optim.py

Two sizes: a small MLP where per-op overhead dominates (784-64-64-10, 6 tensors) and a
wider one where the arithmetic does (784-512-512-10).
"""
from __future__ import annotations

import os
import sys

import numpy as np

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
    for widths in ((784, 64, 64, 10), (784, 512, 512, 10)):
        shapes = _mlp_shapes(widths)
        values = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        grads = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        n = sum(v.size for v in values)
        for name, kwargs in (("SGD", dict(lr=0.01, momentum=0.9)), ("Adam", dict(lr=1e-3)),
                             ("AdamW", dict(lr=1e-3))):
            tparams = [torch.tensor(v, requires_grad=True) for v in values]
            pparams = [tp.tensor(v.copy(), requires_grad=True) for v in values]
            for t, p, g in zip(tparams, pparams, grads):
                t.grad = torch.tensor(g)
                p.grad = tp.tensor(g.copy())
            topt = getattr(torch.optim, name)(tparams, foreach=False, **kwargs)
            popt = getattr(tp.optim, name)(pparams, **kwargs)
            rows = [("tensorplay", timeit(popt.step)), ("torch", timeit(topt.step))]
            report(f"{name} step, MLP {widths} ({len(shapes)} tensors, {n} floats)", rows)


if __name__ == "__main__":
    main()
