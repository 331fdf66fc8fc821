"""tp.func transforms against torch.func, in the same run.

    PYTHONPATH=. python benchmarks/bench_func.py

What the numbers show: `grad` costs one forward and one backward, plus the walk over the
graph that tells whether the result belongs to an enclosing transform (grad_levels.py).
`jacrev` batches its vjps with vmap; `jacfwd` is forward mode with the identity's columns
as one batch of tangents, and `hessian` is forward over reverse (jacfwd of jacrev), as in
torch.func. Target: the Hessian of a 200-d scalar function within 1.5x torch.func's.
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import report, timeit  # noqa: E402

import tensorplay as tp  # noqa: E402


def mlp(lib, nn_lib):
    """A 784-128-10 MLP in either library, with the same weights."""
    rng = np.random.default_rng(0)
    model = nn_lib.Sequential(nn_lib.Linear(784, 128), nn_lib.ReLU(), nn_lib.Linear(128, 10))
    for layer, (o, i) in ((model[0], (128, 784)), (model[2], (10, 128))):
        layer.weight.data = lib.tensor(rng.standard_normal((o, i)).astype(np.float32) * 0.05)
        layer.bias.data = lib.tensor(np.zeros(o, np.float32))
    return model


def main():
    import torch
    import torch.func as tf
    torch.set_num_threads(1)
    rng = np.random.default_rng(1)

    x_np = rng.standard_normal((64, 784)).astype(np.float32)
    y_np = rng.integers(0, 10, 64)
    model, tmodel = mlp(tp, tp.nn), mlp(torch, torch.nn)
    params = {k: v.detach() for k, v in model.named_parameters()}
    tparams = {k: v.detach() for k, v in tmodel.named_parameters()}
    x, y = tp.tensor(x_np), tp.tensor(y_np)
    tx, ty = torch.tensor(x_np), torch.tensor(y_np)

    def loss(p):
        return tp.nn.functional.cross_entropy(tp.func.functional_call(model, p, (x,)), y)

    def tloss(p):
        return torch.nn.functional.cross_entropy(tf.functional_call(tmodel, p, (tx,)), ty)

    def plain_autograd():
        weights = list(model.parameters())
        tp.autograd.grad(tp.nn.functional.cross_entropy(model(x), y), weights)

    # the last row is the transform's own cost: the same loss by plain tp.autograd.grad
    report("grad of an MLP loss (784-128-10, batch 64) through functional_call",
           [("tp", timeit(lambda: tp.func.grad(loss)(params))),
            ("torch.func", timeit(lambda: tf.grad(tloss)(tparams))),
            ("tp.autograd.grad", timeit(plain_autograd))])

    for n in (8, 64, 200):
        v_np = rng.standard_normal(n)
        v, tv = tp.tensor(v_np), torch.tensor(v_np)
        f = lambda x: x.sin() * x.exp().sum()    # noqa: E731
        g = lambda x: (x.sin() * x.exp().sum()).sum()    # noqa: E731
        for name, ours, theirs, fn in (("jacrev", tp.func.jacrev, tf.jacrev, f),
                                       ("jacfwd", tp.func.jacfwd, tf.jacfwd, f),
                                       ("hessian", tp.func.hessian, tf.hessian, g)):
            report(f"{name} of a function of {n} float64 elements",
                   [("tp", timeit(lambda: ours(fn)(v))),
                    ("torch.func", timeit(lambda: theirs(fn)(tv)))])


if __name__ == "__main__":
    main()
