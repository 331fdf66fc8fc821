# Fit y = sin(x) on [-pi, pi] with y = a + b * P3(c + d * x), where P3 is the Legendre
# polynomial of degree three, written as a torch.autograd.Function with its own
# backward, as in PyTorch's tutorial "Learning PyTorch with Examples".
#
# A plain torch program. tests/test_compat.py runs it as written and again with
# `import torch` rewritten to `import tensorplay as torch`, and compares the final
# losses. The initial values are the tutorial's constants; the iteration count is
# reduced (2000 -> 500) to keep the run short.
import math

import torch


class LegendrePolynomial3(torch.autograd.Function):
    """P3(x) = (5 x^3 - 3 x) / 2, with its derivative written by hand."""

    @staticmethod
    def forward(ctx, input):
        # ctx keeps what backward needs.
        ctx.save_for_backward(input)
        return 0.5 * (5 * input ** 3 - 3 * input)

    @staticmethod
    def backward(ctx, grad_output):
        # P3'(x) = 1.5 (5 x^2 - 1).
        input, = ctx.saved_tensors
        return grad_output * 1.5 * (5 * input ** 2 - 1)


dtype = torch.float
device = torch.device("cpu")

x = torch.linspace(-math.pi, math.pi, 2000, device=device, dtype=dtype)
y = torch.sin(x)

# The weights; they start near the answer so that the fit converges.
a = torch.full((), 0.0, device=device, dtype=dtype, requires_grad=True)
b = torch.full((), -1.0, device=device, dtype=dtype, requires_grad=True)
c = torch.full((), 0.0, device=device, dtype=dtype, requires_grad=True)
d = torch.full((), 0.3, device=device, dtype=dtype, requires_grad=True)

learning_rate = 5e-6
for t in range(500):
    # Custom Functions are called through their `apply` method.
    P3 = LegendrePolynomial3.apply

    y_pred = a + b * P3(c + d * x)

    loss = (y_pred - y).pow(2).sum()
    if t % 100 == 99:
        print(t, loss.item())

    loss.backward()

    with torch.no_grad():
        a -= learning_rate * a.grad
        b -= learning_rate * b.grad
        c -= learning_rate * c.grad
        d -= learning_rate * d.grad

        a.grad = None
        b.grad = None
        c.grad = None
        d.grad = None

print(f"Result: y = {a.item()} + {b.item()} * P3({c.item()} + {d.item()} x)")
print(f"final loss {loss.item():.6f}")
