# Fit y = sin(x) on [-pi, pi] with a third-order polynomial as a least-squares problem
# in matrix form: the features X = [1, x, x^2, x^3], the coefficients w, and the
# gradient of |X w - y|^2 written by hand as 2 X^T (X w - y). A variation on the first
# program of PyTorch's tutorial "Learning PyTorch with Examples".
#
# A plain torch program. tests/test_compat.py runs it as written and again with
# `import torch` rewritten to `import tensorplay as torch`, and compares the final
# losses. Nothing in it is random: the coefficients start at zero.
import math

import torch

x = torch.linspace(-math.pi, math.pi, 2000, dtype=torch.float64)
y = torch.sin(x)

# One row per point, one column per power: shape (2000, 4).
X = x.unsqueeze(-1).pow(torch.arange(4))

# The coefficients start at zero, with X's dtype and device.
w = X.new_zeros(4)

# Gradient descent with a step of 1 / L, L = the largest eigenvalue of 2 X^T X (the
# Lipschitz constant of the gradient), estimated by power iteration.
gram = X.T @ X
v = X.new_ones(4)
for _ in range(50):
    v = gram @ v
    v = v / v.norm()
step = 1.0 / (2.0 * (v @ gram @ v).item())

for t in range(500):
    residual = X @ w - y
    grad = 2.0 * X.T @ residual
    w -= step * grad
    if t % 100 == 99:
        print(t, residual.pow(2).sum().item())

print("Result: y = " + " + ".join(f"{c:.6f} x^{k}" for k, c in enumerate(w.tolist())))
loss = (X @ w - y).pow(2).sum()
print(f"final loss {loss.item():.6f}")
