# A fully connected ReLU network with one hidden layer, trained to map random inputs to
# random targets, written as a custom nn.Module, in the style of the older edition of
# PyTorch's tutorial "Learning PyTorch with Examples" (TwoLayerNet). Unlike the other
# programs here it imports submodules by name (torch.nn as nn, torch.nn.functional as F,
# a scheduler from torch.optim.lr_scheduler), and it clips the gradient norm.
#
# A plain torch program. tests/test_compat.py runs it as written and again with its
# torch imports rewritten to tensorplay's, and compares the final losses. So that both
# runs see the same numbers, the data and the initial weights come from NumPy's seeded
# generator (the layers' default initialisation is overwritten under torch.no_grad()),
# and the iteration count is reduced (500 -> 200) to keep the run short.
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.lr_scheduler import StepLR


class TwoLayerNet(nn.Module):
    def __init__(self, D_in, H, D_out):
        super().__init__()
        self.linear1 = nn.Linear(D_in, H)
        self.linear2 = nn.Linear(H, D_out)

    def forward(self, x):
        h_relu = F.relu(self.linear1(x))
        return self.linear2(h_relu)


rng = np.random.default_rng(0)

# N is the batch size; D_in the input dimension; H the hidden dimension; D_out the
# output dimension.
N, D_in, H, D_out = 256, 100, 32, 10
x = torch.from_numpy(rng.standard_normal((N, D_in)).astype(np.float32))
y = torch.from_numpy(rng.standard_normal((N, D_out)).astype(np.float32))

model = TwoLayerNet(D_in, H, D_out)
with torch.no_grad():
    for name, param in model.named_parameters():
        fan_in = param.shape[-1] if name.endswith("weight") else 1
        values = rng.uniform(-1, 1, tuple(param.shape)) / np.sqrt(fan_in)
        param.copy_(torch.tensor(values, dtype=param.dtype))

criterion = nn.MSELoss(reduction="sum")
optimizer = torch.optim.SGD(model.parameters(), lr=1e-4, momentum=0.9, weight_decay=1e-4)
scheduler = StepLR(optimizer, step_size=50, gamma=0.5)
for t in range(200):
    y_pred = model(x)

    loss = criterion(y_pred, y)
    if t % 50 == 49:
        print(t, loss.item(), scheduler.get_last_lr())

    optimizer.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), max_norm=100.0)
    optimizer.step()
    scheduler.step()

print(f"final loss {loss.item():.6f}")
