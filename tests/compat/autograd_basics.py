# PyTorch's beginner tutorial "Automatic Differentiation with torch.autograd" (Learn the
# Basics): a one-layer network with parameters w and b that require gradients, the
# binary cross-entropy of its logits, backward(), the grad_fn of each result, switching
# tracking off with torch.no_grad() and detach(), and the vector-Jacobian product that
# backward(gradient) computes for a non-scalar output, accumulated over calls that keep
# the graph with retain_graph=True. The last part is the earlier edition's example of a
# vector-Jacobian product (y = x * 2 doubled until its norm passes 1000).
#
# A plain torch program. tests/test_compat.py runs it as written and again with
# `import torch` rewritten to `import tensorplay as torch`, and compares the printed
# lines. w, b and the last example's x come from torch.randn after torch.manual_seed(0),
# so the two runs print the same numbers only where the two frameworks' generators
# agree. A grad_fn prints its address (`<AddBackward0 object at 0x...>`); the runner
# compares it without the address.
import torch

torch.manual_seed(0)

x = torch.ones(5)  # input tensor
y = torch.zeros(3)  # expected output
w = torch.randn(5, 3, requires_grad=True)
b = torch.randn(3, requires_grad=True)
z = torch.matmul(x, w) + b
loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y)
print(f"loss = {loss.item()}")

print(f"Gradient function for z = {z.grad_fn}")
print(f"Gradient function for loss = {loss.grad_fn}")

# Computing gradients
loss.backward()
print(w.grad)
print(b.grad)

# Disabling gradient tracking
z = torch.matmul(x, w) + b
print(z.requires_grad)

with torch.no_grad():
    z = torch.matmul(x, w) + b
print(z.requires_grad)

z = torch.matmul(x, w) + b
z_det = z.detach()
print(z_det.requires_grad)

# Tensor gradients and Jacobian products
inp = torch.eye(4, 5, requires_grad=True)
out = (inp + 1).pow(2).t()
out.backward(torch.ones_like(out), retain_graph=True)
print(f"First call\n{inp.grad}")
out.backward(torch.ones_like(out), retain_graph=True)
print(f"\nSecond call\n{inp.grad}")
inp.grad.zero_()
out.backward(torch.ones_like(out), retain_graph=True)
print(f"\nCall after zeroing gradients\n{inp.grad}")

# A vector-Jacobian product: y is not a scalar, so backward needs the vector v.
x = torch.randn(3, requires_grad=True)

y = x * 2
while y.data.norm() < 1000:
    y = y * 2

print(y)
print(y.grad_fn, y.grad_fn.next_functions[0][0])

v = torch.tensor([0.1, 1.0, 0.0001], dtype=torch.float)
y.backward(v)

print(x.grad)

print(x.requires_grad)
print((x ** 2).requires_grad)

with torch.no_grad():
    print((x ** 2).requires_grad)

print(x.requires_grad)
y = x.detach()
print(y.requires_grad)
print(x.eq(y).all())
