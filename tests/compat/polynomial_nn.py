# Fit y = sin(x) on [-pi, pi] with a third-order polynomial written as a torch.nn
# model (a Linear layer over the features x, x^2, x^3), with MSELoss and a hand-written
# update over model.parameters(), as in PyTorch's tutorial "Learning PyTorch with
# Examples".
#
# A plain torch program. tests/test_compat.py runs it as written and again with
# `import torch` rewritten to `import tensorplay as torch`, and compares the final
# losses. So that both runs start from the same numbers, the Linear layer's default
# initialisation is overwritten (under torch.no_grad()) with values from NumPy's seeded
# generator, and the iteration count is reduced (2000 -> 500) to keep the run short.
import math

import numpy as np
import torch

x = torch.linspace(-math.pi, math.pi, 2000)
y = torch.sin(x)

# The output is a linear function of (x, x^2, x^3): x.unsqueeze(-1) has shape
# (2000, 1) and p has shape (3,), so broadcasting gives xx the shape (2000, 3).
p = torch.tensor([1, 2, 3])
xx = x.unsqueeze(-1).pow(p)

# Linear computes the output from its input with a weight and a bias; Flatten(0, 1)
# flattens the (2000, 1) output to (2000,), the shape of y.
model = torch.nn.Sequential(
    torch.nn.Linear(3, 1),
    torch.nn.Flatten(0, 1)
)

# The same starting point in every framework (see the note above).
rng = np.random.default_rng(0)
with torch.no_grad():
    model[0].weight.copy_(torch.tensor(rng.standard_normal((1, 3)), dtype=torch.float32))
    model[0].bias.copy_(torch.tensor(rng.standard_normal(1), dtype=torch.float32))

# Mean squared error, summed rather than averaged.
loss_fn = torch.nn.MSELoss(reduction='sum')

learning_rate = 1e-6
for t in range(500):
    y_pred = model(xx)

    loss = loss_fn(y_pred, y)
    if t % 100 == 99:
        print(t, loss.item())

    # Zero the gradients before the backward pass.
    model.zero_grad()

    # The gradient of the loss with respect to every learnable parameter of the model.
    loss.backward()

    # Each parameter is a Tensor, so it is updated like one.
    with torch.no_grad():
        for param in model.parameters():
            param -= learning_rate * param.grad

# The first layer of the model holds the coefficients.
linear_layer = model[0]
print(f"Result: y = {linear_layer.bias.item()} + {linear_layer.weight[:, 0].item()} x + "
      f"{linear_layer.weight[:, 1].item()} x^2 + {linear_layer.weight[:, 2].item()} x^3")
print(f"final loss {loss.item():.6f}")
