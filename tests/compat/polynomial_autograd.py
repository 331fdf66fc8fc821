# Fit y = sin(x) on [-pi, pi] with a third-order polynomial, letting autograd compute
# the gradients (requires_grad, backward(), the update under torch.no_grad()), as in
# PyTorch's tutorial "Learning PyTorch with Examples".
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

# Input and output data; they need no gradients.
x = torch.linspace(-math.pi, math.pi, 2000, dtype=dtype, device=device)
y = torch.sin(x)

# The weights: autograd records every operation on them.
rng = np.random.default_rng(0)
a, b, c, d = (torch.tensor(v, dtype=dtype, device=device, requires_grad=True)
              for v in rng.standard_normal(4))

learning_rate = 1e-6
for t in range(500):
    y_pred = a + b * x + c * x ** 2 + d * x ** 3

    # The loss is a tensor of shape (); loss.item() is its value.
    loss = (y_pred - y).pow(2).sum()
    if t % 100 == 99:
        print(t, loss.item())

    # a.grad, b.grad, c.grad and d.grad now hold the gradients of the loss.
    loss.backward()

    # The update is not to be recorded by autograd.
    with torch.no_grad():
        a -= learning_rate * a.grad
        b -= learning_rate * b.grad
        c -= learning_rate * c.grad
        d -= learning_rate * d.grad

        # Clear the gradients for the next step.
        a.grad = None
        b.grad = None
        c.grad = None
        d.grad = None

print(f"Result: y = {a.item()} + {b.item()} x + {c.item()} x^2 + {d.item()} x^3")
print(f"final loss {loss.item():.6f}")
