"""Per-call overhead of the dispatch path on the CPU, against PyTorch eager (one thread)
and NumPy, all measured in the same run.

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_add_overhead.py

Each row is the median time per call; the ratio is TensorPlay over PyTorch. Targets
(issue 13): 1-element `tp.add` and `a + b` within 2.0x torch, in-place add within
2.0x, `view` and `x[0]` within 2.5x, `tp.add` with requires_grad within 2.0x; a
1M-element add within 1.2x NumPy. The per-layer breakdown below the table says where
the time of one `tp.add` goes (each line is the cost of calling that layer directly,
so the differences between lines are what each layer adds); benchmarks/FASTPATH.md
has the profile behind it.
"""
from __future__ import annotations

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# The checkout this file is in, not whichever tensorplay the environment installed (an
# editable install points at one checkout; a worktree must measure its own code).
sys.path.insert(0, os.path.dirname(HERE))
from common import paired_min, report  # noqa: E402

import tensorplay as tp  # noqa: E402


def _cases(torch):
    """(label, tp callable, torch callable, target ratio) for the small ops of issue 13."""
    a_np = np.random.rand(1).astype(np.float32)
    b_np = np.random.rand(1).astype(np.float32)
    a, b = tp.from_numpy(a_np.copy()), tp.from_numpy(b_np.copy())
    at, bt = torch.from_numpy(a_np.copy()), torch.from_numpy(b_np.copy())
    ag = tp.from_numpy(a_np.copy()).requires_grad_()
    agt = torch.from_numpy(a_np.copy()).requires_grad_()
    x_np = np.random.rand(4, 4).astype(np.float32)
    x, xt = tp.from_numpy(x_np), torch.from_numpy(x_np.copy())
    return [
        ("tp.add(a, b)", lambda: tp.add(a, b), lambda: torch.add(at, bt), 2.0),
        ("a + b", lambda: a + b, lambda: at + bt, 2.0),
        ("a.add_(b)", lambda: a.add_(b), lambda: at.add_(bt), 2.0),
        ("tp.add(a, b), a requires_grad", lambda: tp.add(ag, b), lambda: torch.add(agt, bt),
         2.0),
        ("x.sum() (4x4)", lambda: x.sum(), lambda: xt.sum(), None),
        ("x.view(16) (4x4)", lambda: x.view(16), lambda: xt.view(16), 2.5),
        ("x[0] (4x4)", lambda: x[0], lambda: xt[0], 2.5),
    ]


def small_ops(torch):
    print("\nsmall ops, float32, 1 element unless given; tp and torch timed in alternation")
    print(f"  {'op':<34}{'tp':>11}{'torch':>11}{'ratio':>8}  target")
    for label, tp_fn, torch_fn, target in _cases(torch):
        best = paired_min(tp_fn, torch_fn)
        ratio = best[0] / best[1]
        goal = f"<= {target}x" if target else ""
        print(f"  {label:<34}{best[0] * 1e6:8.2f} us{best[1] * 1e6:8.2f} us{ratio:7.2f}x  {goal}")


def layers():
    """What one tp.add costs, layer by layer from the kernel up (1 element, no grad)."""
    from cpu_kernels import pointwise
    from tensorplay._generated import ops
    from tensorplay.dispatch.keys import REQUIRES_GRAD
    a, b = tp.ones(1), tp.ones(1)
    handle = ops.add_Tensor
    ks = a._impl.keys | b._impl.keys
    arr = a._impl.array()
    steps = [
        ("np.add on the arrays", lambda: np.add(arr, arr)),
        ("+ promotion, wrapping: the kernel", lambda: pointwise.add(a, b, 1)),
        # what the dispatch loop ends at for {CPU}: the CPU slot (here the kernel itself)
        ("+ the route memoized for {CPU}", lambda: handle.routes[1](a, b, 1)),
        ("+ the dispatcher's entry: call", lambda: handle.call(ks, a, b, 1)),
        ("+ front door: tp.add(a, b)", lambda: tp.add(a, b)),
    ]
    print("\none tp.add, layer by layer (each line includes the ones above it)")
    previous = 0.0
    for label, fn in steps:
        t = paired_min(fn, fn)[0]
        print(f"  {label:<40}{t * 1e6:8.2f} us   (+{(t - previous) * 1e6:5.2f} us)")
        previous = t
    # No tensor requires grad, so the key set has no REQUIRES_GRAD flag and the dispatch
    # loop skips the autograd wrapper; with the flag (a tensor that requires grad as a
    # non-differentiable argument would give it) the wrapper runs, finds nothing to
    # record and runs the op below autograd.
    t = paired_min(lambda: handle.call(ks | REQUIRES_GRAD, a, b, 1),
                   lambda: handle.call(ks, a, b, 1))
    print(f"  (the autograd hop it skips: {t[0] * 1e6:.2f} us with the wrapper, "
          f"+{(t[0] - t[1]) * 1e6:.2f} us)")


def large_add(torch):
    n = 1_000_000
    a_np = np.random.rand(n).astype(np.float32)
    b_np = np.random.rand(n).astype(np.float32)
    a, b = tp.from_numpy(a_np), tp.from_numpy(b_np)
    at, bt = torch.from_numpy(a_np), torch.from_numpy(b_np)
    t_tp, t_np = paired_min(lambda: tp.add(a, b), lambda: np.add(a_np, b_np), batch=5, rounds=20)
    t_torch = paired_min(lambda: torch.add(at, bt), lambda: None, batch=5, rounds=20)[0]
    report("add, 1M-element float32",
           [("tp.add", t_tp), ("torch.add", t_torch), ("numpy.add", t_np)],
           ["within 1.2x numpy"])


def main():
    import torch
    torch.set_num_threads(1)
    small_ops(torch)
    layers()
    large_add(torch)


if __name__ == "__main__":
    main()
