"""Round 3 of the dispatch fast path (issue 13): the shortcuts of a recorded op and of the
engine, each against PyTorch and against the general path it stands in for.

- `wrap_number` (every `x * 2` makes one) builds a CPU int/float/bool directly
  (`_creation.wrapped_scalar`); other values and devices take `scalar_tensor`.
- `set_history` attaches a fresh floating output without calls; an output that already
  has history, or is not floating, takes the general path (and its errors).
- A leaf's `AccumulateGrad` is made without `Node.__init__`'s call: the same fields.
- The engine's `_discover` has no `seen` set; a single root's buffer is made directly.
"""
import numpy as np
import torch

import tensorplay as tp


# ---- the engine ---------------------------------------------------------------------------


def test_tiny_step_repeated_accumulates_like_pytorch():
    x = tp.tensor(np.linspace(-1, 1, 8), dtype=tp.float32, requires_grad=True)
    xt = torch.tensor(np.linspace(-1, 1, 8), dtype=torch.float32, requires_grad=True)
    for _ in range(3):
        (x * 2 + 1).sum().backward()
        (xt * 2 + 1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy())
