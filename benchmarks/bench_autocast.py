"""What autocast costs: one small op, and an MLP training step with a GradScaler, under
`tp.autocast("cpu")` and without, against PyTorch's `torch.autocast("cpu")` in the same run.

    python benchmarks/bench_autocast.py

Autocast adds, per op, one more dispatch hop (the AutocastCPU slot: a wrapper for the ops
of the policy lists, a fall-through for the rest) plus the casts themselves; the ratio
"autocast / plain" is that price, printed for TensorPlay and for PyTorch.
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import report, timeit  # noqa: E402

import tensorplay as tp  # noqa: E402


def _under(mod, enabled, fn):
    def run():
        with mod.autocast("cpu", enabled=enabled):
            return fn()
    return run


def _train_step(mod, model, opt, scaler, x, y, enabled):
    def step():
        opt.zero_grad()
        with mod.autocast("cpu", enabled=enabled):
            loss = mod.nn.functional.mse_loss(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    return step


def _mlp(mod):
    nn = mod.nn
    return nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))


def main():
    import torch
    torch.set_num_threads(1)
    a_np = np.random.rand(32, 32).astype(np.float32)
    for name, tp_fn, torch_fn in (
        ("mm 32x32 (policy: lower)", lambda a: tp.mm(a, a), lambda a: torch.mm(a, a)),
        ("add 32x32 (no policy)", lambda a: a + a, lambda a: a + a),
    ):
        a, at = tp.from_numpy(a_np), torch.from_numpy(a_np)
        rows = [("tp autocast", timeit(_under(tp, True, lambda: tp_fn(a)))),
                ("tp plain", timeit(_under(tp, False, lambda: tp_fn(a)))),
                ("torch autocast", timeit(_under(torch, True, lambda: torch_fn(at)))),
                ("torch plain", timeit(_under(torch, False, lambda: torch_fn(at))))]
        report(f"{name}, float32 inputs", rows)
        print(f"  autocast / plain: tp {rows[0][1] / rows[1][1]:.2f}x, "
              f"torch {rows[2][1] / rows[3][1]:.2f}x")

    x_np = np.random.rand(128, 64).astype(np.float32)
    y_np = np.random.rand(128, 10).astype(np.float32)
    rows = []
    for mod, enabled in ((tp, True), (torch, True), (tp, False), (torch, False)):
        model = _mlp(mod)
        opt = mod.optim.SGD(model.parameters(), lr=0.01)
        scaler = mod.amp.GradScaler("cpu")
        step = _train_step(mod, model, opt, scaler, mod.tensor(x_np), mod.tensor(y_np), enabled)
        label = f"{mod.__name__} {'autocast' if enabled else 'float32'}"
        rows.append((label, timeit(step, min_time=1.0)))
    report("MLP 64-256-10 training step, batch 128, GradScaler, autocast(cpu, bfloat16) "
           "or float32", rows)


if __name__ == "__main__":
    main()
