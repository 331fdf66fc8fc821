"""Forward + backward of a small graph, against PyTorch (one thread) in the same run.

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_autograd.py

Target (issue 13): the tiny `(x * 2 + 1).sum().backward()` within 1.6x PyTorch. The
breakdown below splits one step into its forward (three recorded ops) and its backward
(the engine walking four nodes), each against torch.
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import paired_min  # noqa: E402

import tensorplay as tp  # noqa: E402


def best_ratio(tp_fn, torch_fn):
    return paired_min(tp_fn, torch_fn, batch=20)


def row(label, times, target=None):
    t_tp, t_torch = times
    goal = f"<= {target}x" if target else ""
    print(f"  {label:<34}{t_tp * 1e6:8.2f} us{t_torch * 1e6:8.2f} us"
          f"{t_tp / t_torch:7.2f}x  {goal}")


def main():
    import torch
    torch.set_num_threads(1)
    print(f"\n  {'(x * 2 + 1).sum().backward()':<34}{'tp':>11}{'torch':>11}{'ratio':>8}  target")
    for n in (8, 10_000):
        data = np.random.rand(n).astype(np.float32)
        x = tp.tensor(data, requires_grad=True)
        xt = torch.tensor(data, requires_grad=True)

        def tp_step():
            (x * 2 + 1).sum().backward()

        def torch_step():
            (xt * 2 + 1).sum().backward()

        def tp_forward():
            return (x * 2 + 1).sum()

        def torch_forward():
            return (xt * 2 + 1).sum()
        row(f"forward+backward, {n} elements", best_ratio(tp_step, torch_step),
            1.6 if n == 8 else None)
        if n == 8:
            row("  forward only (3 recorded ops)", best_ratio(tp_forward, torch_forward))
            # backward alone: a step needs a fresh graph, so it is the step minus the forward
            t_full, tt_full = best_ratio(tp_step, torch_step)
            t_fwd, tt_fwd = best_ratio(tp_forward, torch_forward)
            row("  backward only (step - forward)", (t_full - t_fwd, tt_full - tt_fwd))


if __name__ == "__main__":
    main()
