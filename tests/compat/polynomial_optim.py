# Fit y = sin(x) on [-pi, pi] with a third-order polynomial written as a torch.nn
# model, trained by torch.optim.RMSprop, as in PyTorch's tutorial "Learning PyTorch
# with Examples".
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

# The features (x, x^2, x^3).
p = torch.tensor([1, 2, 3])
xx = x.unsqueeze(-1).pow(p)

model = torch.nn.Sequential(
    torch.nn.Linear(3, 1),
    torch.nn.Flatten(0, 1)
)

# The same starting point in every framework (see the note above).
rng = np.random.default_rng(0)
with torch.no_grad():
    model[0].weight.copy_(torch.tensor(rng.standard_normal((1, 3)), dtype=torch.float32))
    model[0].bias.copy_(torch.tensor(rng.standard_normal(1), dtype=torch.float32))

loss_fn = torch.nn.MSELoss(reduction='sum')

# RMSprop updates the model's parameters for us.
# NOTE: RMSprop divides each gradient by its running RMS, so once a coefficient whose
# true value is 0 (a, c) oscillates about zero, a difference in the last float32 bit
# doubles every step. Two frameworks that sum in different orders agree to about 1e-7
# over these 500 steps at lr 1e-3; with lr 3e-3 they part by 1e-3 after step 480, and
# with lr 1e-2 torch alone ends at 14.0 or at 9.9 when one start value moves by one
# float32 ulp. In float64 the two frameworks agree to 1e-15 at lr 3e-3 (at lr 1e-2
# even float64 runs part, by 4e-4).
learning_rate = 1e-3
optimizer = torch.optim.RMSprop(model.parameters(), lr=learning_rate)
for t in range(500):
    y_pred = model(xx)

    loss = loss_fn(y_pred, y)
    if t % 100 == 99:
        print(t, loss.item())

    # The gradients accumulate in the parameters' .grad; clear them first.
    optimizer.zero_grad()

    loss.backward()

    # One step of the optimizer updates every parameter.
    optimizer.step()

linear_layer = model[0]
print(f"Result: y = {linear_layer.bias.item()} + {linear_layer.weight[:, 0].item()} x + "
      f"{linear_layer.weight[:, 1].item()} x^2 + {linear_layer.weight[:, 2].item()} x^3")
print(f"final loss {loss.item():.6f}")
