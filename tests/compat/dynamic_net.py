# Fit y = sin(x) on [-pi, pi] with a torch.nn.Module whose forward pass picks its depth
# at random on every call: a third-order polynomial plus 0 or 1 higher terms that reuse
# the same weight e, trained by SGD with momentum, as in PyTorch's tutorial "Learning
# PyTorch with Examples" (the dynamic-graph example).
#
# A plain torch program. tests/test_compat.py runs it as written and again with
# `import torch` rewritten to `import tensorplay as torch`, and compares the final
# losses. So that both runs make the same choices and start from the same numbers,
# Python's `random` is seeded (it picks the depth), the initial weights come from
# NumPy's seeded generator instead of torch.randn(()), and the iteration count is
# reduced (30000 -> 500) to keep the run short.
import math
import random

import numpy as np
import torch

random.seed(0)
rng = np.random.default_rng(0)


class DynamicNet(torch.nn.Module):
    def __init__(self):
        """Five scalar parameters: a, b, c, d and e."""
        super().__init__()
        # The tutorial's torch.randn(()), drawn from NumPy instead (see the note above).
        self.a = torch.nn.Parameter(torch.tensor(rng.standard_normal(), dtype=torch.float32))
        self.b = torch.nn.Parameter(torch.tensor(rng.standard_normal(), dtype=torch.float32))
        self.c = torch.nn.Parameter(torch.tensor(rng.standard_normal(), dtype=torch.float32))
        self.d = torch.nn.Parameter(torch.tensor(rng.standard_normal(), dtype=torch.float32))
        self.e = torch.nn.Parameter(torch.tensor(rng.standard_normal(), dtype=torch.float32))

    def forward(self, x):
        """A third, fourth or fifth order polynomial, chosen at random; the fourth and
        fifth order terms reuse the parameter e.

        Each forward pass builds a new graph, so ordinary Python control flow (a loop)
        and the reuse of a parameter several times in one graph are both fine.
        """
        y = self.a + self.b * x + self.c * x ** 2 + self.d * x ** 3
        for exp in range(4, random.randint(4, 6)):
            y = y + self.e * x ** exp
        return y

    def string(self):
        return (f"y = {self.a.item()} + {self.b.item()} x + {self.c.item()} x^2 + "
                f"{self.d.item()} x^3 + {self.e.item()} x^4 ? + {self.e.item()} x^5 ?")


x = torch.linspace(-math.pi, math.pi, 2000)
y = torch.sin(x)

model = DynamicNet()

# Plain SGD makes slow progress on this model; momentum helps.
criterion = torch.nn.MSELoss(reduction='sum')
optimizer = torch.optim.SGD(model.parameters(), lr=1e-8, momentum=0.9)
for t in range(500):
    y_pred = model(x)

    loss = criterion(y_pred, y)
    if t % 100 == 99:
        print(t, loss.item())

    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

print(f"Result: {model.string()}")
print(f"final loss {loss.item():.6f}")
