# Fit y = sin(x) on [-pi, pi] with a third-order polynomial, with raw tensors and
# gradients written by hand (no autograd), as in PyTorch's tutorial "Learning PyTorch
# with Examples".
#
# A plain torch program. tests/test_compat.py runs it as written and again with
# `import torch` rewritten to `import tensorplay as torch`, and compares the final
# losses. So that both runs start from the same numbers, the initial coefficients come
# from NumPy's seeded generator rather than torch.randn, and the iteration count is
# reduced (2000 -> 500) to keep the run short.
import math

import numpy as np
import torch

dtype = torch.float
device = torch.device("cpu")

# Input and output data.
x = torch.linspace(-math.pi, math.pi, 2000, device=device, dtype=dtype)
y = torch.sin(x)

# Random initial weights (from NumPy, see the note above).
rng = np.random.default_rng(0)
a, b, c, d = (torch.tensor(v, device=device, dtype=dtype) for v in rng.standard_normal(4))

learning_rate = 1e-6
for t in range(500):
    # Forward pass: the predicted y.
    y_pred = a + b * x + c * x ** 2 + d * x ** 3

    # The loss, as a Python number.
    loss = (y_pred - y).pow(2).sum().item()
    if t % 100 == 99:
        print(t, loss)

    # Backprop by hand: gradients of a, b, c, d with respect to the loss.
    grad_y_pred = 2.0 * (y_pred - y)
    grad_a = grad_y_pred.sum()
    grad_b = (grad_y_pred * x).sum()
    grad_c = (grad_y_pred * x ** 2).sum()
    grad_d = (grad_y_pred * x ** 3).sum()

    # Gradient descent step.
    a -= learning_rate * grad_a
    b -= learning_rate * grad_b
    c -= learning_rate * grad_c
    d -= learning_rate * grad_d

print(f"Result: y = {a.item()} + {b.item()} x + {c.item()} x^2 + {d.item()} x^3")
loss = (a + b * x + c * x ** 2 + d * x ** 3 - y).pow(2).sum()
print(f"final loss {loss.item():.6f}")
