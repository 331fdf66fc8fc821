"""Training a small MLP on `cuda` (the Triton interpreter in CI) gives the same losses as
on the CPU: forward, backward and SGD updates all run through the Triton kernels
(matmul, pointwise, reductions, in-place updates), written with tp ops and manual SGD."""
import numpy as np

from triton_util import CUDA

import tensorplay as tp


def train(device, steps=6, lr=0.1):
    rng = np.random.default_rng(0)
    x = tp.tensor(rng.standard_normal((24, 10)), dtype=tp.float32).to(device)
    y = tp.tensor(rng.standard_normal((24, 3)), dtype=tp.float32).to(device)
    shapes = [(10, 32), (32,), (32, 3), (3,)]
    params = [tp.tensor(rng.standard_normal(s) * 0.3, dtype=tp.float32).to(device)
              .requires_grad_() for s in shapes]
    w1, b1, w2, b2 = params
    losses = []
    for _ in range(steps):
        hidden = (x @ w1 + b1).relu()
        out = tp.tanh(hidden @ w2 + b2) * 2
        loss = ((out - y) ** 2).mean()
        loss.backward()
        with tp.no_grad():
            for p in params:
                p.sub_(p.grad, alpha=lr)
                p.grad = None
        losses.append(loss.item())
    return losses, [p.detach().cpu() for p in params]


def test_mlp_losses_match_the_cpu():
    cuda_losses, cuda_params = train(CUDA)
    cpu_losses, cpu_params = train("cpu")
    np.testing.assert_allclose(cuda_losses, cpu_losses, rtol=1e-5)
    assert cuda_losses[-1] < cuda_losses[0]
    for got, expected in zip(cuda_params, cpu_params):
        np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=1e-4, atol=1e-5)
