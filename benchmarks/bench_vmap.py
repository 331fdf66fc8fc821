"""Per-example gradients of an MLP: tp.vmap against a Python loop and torch.func.

    python benchmarks/bench_vmap.py

The model is 784-128-10 (linear, relu, linear) with cross-entropy; a batch of 64
examples. Each way computes the gradient of every example's own loss w.r.t. the weights:

    tp vmap       tp.vmap(per_example_grads, in_dims=(None, 0, 0)): tp.autograd.grad inside
    tp func       tp.vmap(tp.func.grad(loss), in_dims=(None, 0, 0)), as torch.func is used
    tp loop       per_example_grads called 64 times and stacked
    torch.func    torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0, 0))

Targets: tp vmap at least 5x faster than the tp loop, and within 3x torch.func.
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import fmt_time, timeit  # noqa: E402

import tensorplay as tp  # noqa: E402
import tensorplay.nn.functional as F  # noqa: E402

BATCH, IN, HIDDEN, OUT = 64, 784, 128, 10


def make_data():
    rng = np.random.default_rng(0)
    params = [rng.standard_normal(s).astype(np.float32) * 0.05
              for s in ((HIDDEN, IN), (HIDDEN,), (OUT, HIDDEN), (OUT,))]
    x = rng.standard_normal((BATCH, IN)).astype(np.float32)
    y = rng.integers(0, OUT, BATCH)
    return params, x, y


def tp_per_example_grads(params, x, y):
    params = [p.detach().requires_grad_() for p in params]
    w1, b1, w2, b2 = params
    loss = F.cross_entropy(F.linear(F.relu(F.linear(x, w1, b1)), w2, b2), y)
    return tp.autograd.grad(loss, params)


def tp_loss(params, x, y):
    w1, b1, w2, b2 = params
    return F.cross_entropy(F.linear(F.relu(F.linear(x, w1, b1)), w2, b2), y)


def main():
    import torch
    import torch.func
    torch.set_num_threads(1)
    params, x, y = make_data()
    tparams = [tp.tensor(p) for p in params]
    tx, ty = tp.tensor(x), tp.tensor(y)

    batched = tp.vmap(tp_per_example_grads, in_dims=(None, 0, 0))

    def tp_vmap():
        return batched(tparams, tx, ty)

    def tp_loop():
        grads = [tp_per_example_grads(tparams, tx[i], ty[i]) for i in range(BATCH)]
        return [tp.stack([g[k] for g in grads]) for k in range(4)]

    func_batched = tp.vmap(tp.func.grad(tp_loss), in_dims=(None, 0, 0))

    def tp_func():
        return func_batched(tparams, tx, ty)

    for a, b, c in zip(tp_vmap(), tp_loop(), tp_func()):    # same numbers, every way
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(c.numpy(), b.numpy(), rtol=1e-4, atol=1e-6)

    def torch_loss(ps, xi, yi):
        w1, b1, w2, b2 = ps
        h = torch.nn.functional.relu(torch.nn.functional.linear(xi, w1, b1))
        return torch.nn.functional.cross_entropy(torch.nn.functional.linear(h, w2, b2), yi)

    torch_params = [torch.tensor(p) for p in params]
    torch_batched = torch.func.vmap(torch.func.grad(torch_loss), in_dims=(None, 0, 0))
    px, py = torch.tensor(x), torch.tensor(y)
    for a, b in zip(tp_vmap(), torch_batched(torch_params, px, py)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-6)

    t_vmap = timeit(tp_vmap, repeats=3)
    t_func = timeit(tp_func, repeats=3)
    t_loop = timeit(tp_loop, min_time=0.5, repeats=3)
    t_torch = timeit(lambda: torch_batched(torch_params, px, py), repeats=3)
    print(f"\nper-example gradients, MLP {IN}-{HIDDEN}-{OUT}, batch {BATCH} (1 thread)")
    print(f"  tp vmap                 {fmt_time(t_vmap)}")
    print(f"  tp vmap(tp.func.grad)   {fmt_time(t_func)}")
    print(f"  tp python loop          {fmt_time(t_loop)}  loop / vmap = {t_loop / t_vmap:6.2f}x"
          f"   (target >= 5x)")
    print(f"  torch.func vmap(grad)   {fmt_time(t_torch)}  vmap / torch = "
          f"{t_vmap / t_torch:6.2f}x   (target <= 3x)")


if __name__ == "__main__":
    main()
