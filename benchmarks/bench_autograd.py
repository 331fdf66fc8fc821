"""Forward + backward of a small graph, against PyTorch (one thread) in the same run.

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_autograd.py

Target (issue 13): the tiny `(x * 2 + 1).sum().backward()` within 1.6x PyTorch. The
breakdown below splits one step into its forward (three recorded ops) and its backward
(the engine walking four nodes), each against torch; the backward is measured twice: as
a step minus its forward (what a training step pays, noisy: a difference of two
minima), and alone, over graphs built beforehand.
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
# This checkout's tensorplay (a script's sys.path starts at its folder, and the venv may
# point at another checkout), and the shared timing helpers.
sys.path[:0] = [os.path.dirname(HERE), HERE]
from common import paired_min  # noqa: E402

import tensorplay as tp  # noqa: E402


def best_ratio(tp_fn, torch_fn):
    return paired_min(tp_fn, torch_fn, batch=20)


def backward_alone(make_tp, make_torch, graphs=50, rounds=40):
    """(seconds per backward of TensorPlay, of PyTorch): `graphs` losses are built
    untimed, then their backward calls are timed; the two sides alternate and each
    keeps its fastest round. Less noisy than a step minus its forward, but the graphs
    are colder in the caches than in a training step."""
    best = [float("inf"), float("inf")]
    for _ in range(rounds):
        for side, make in enumerate((make_tp, make_torch)):
            losses = [make() for _ in range(graphs)]
            start = time.perf_counter()
            for loss in losses:
                loss.backward()
            best[side] = min(best[side], (time.perf_counter() - start) / graphs)
    return tuple(best)


def forward_in_a_step(make_tp, make_torch, steps=50, rounds=40):
    """(seconds per forward of TensorPlay, of PyTorch) when each forward follows the
    previous step's backward, as in training: the forwards alone are timed. Both are
    slower here than measured forward after forward: the backward's working set pushes
    the forward's code and objects out of the CPU caches (benchmarks/FASTPATH.md, round
    4), and TensorPlay's working set is the larger."""
    best = [float("inf"), float("inf")]
    for _ in range(rounds):
        for side, make in enumerate((make_tp, make_torch)):
            total = 0.0
            for _ in range(steps):
                start = time.perf_counter()
                loss = make()
                total += time.perf_counter() - start
                loss.backward()
            best[side] = min(best[side], total / steps)
    return tuple(best)


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
            row("  backward of prebuilt graphs", backward_alone(tp_forward, torch_forward))
            row("  forward right after a backward", forward_in_a_step(tp_forward, torch_forward))


if __name__ == "__main__":
    main()
