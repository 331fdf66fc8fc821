# PyTorch's beginner tutorial "Tensors" (Learn the Basics): creating tensors from data,
# from NumPy arrays and from other tensors; their shape, dtype and device; indexing and
# slicing; joining with torch.cat; arithmetic (@, .T, matmul, mul, *); single-element
# tensors and .item(); in-place operations; and the NumPy bridge, whose tensor and array
# share memory.
#
# A plain torch program. tests/test_compat.py runs it as written and again with
# `import torch` rewritten to `import tensorplay as torch`, and compares the printed
# lines. The random tensors come from torch.rand after torch.manual_seed(0), so the two
# runs print the same numbers only where the two frameworks' generators agree. On a
# machine with a GPU the tensor moves to it, as in the tutorial; the test machine has
# none, so both runs stay on the CPU.
import numpy as np
import torch

torch.manual_seed(0)

# Directly from data
data = [[1, 2], [3, 4]]
x_data = torch.tensor(data)

# From a NumPy array
np_array = np.array(data)
x_np = torch.from_numpy(np_array)
print(f"From NumPy: \n {x_np} \n")

# From another tensor
x_ones = torch.ones_like(x_data)  # retains the properties of x_data
print(f"Ones Tensor: \n {x_ones} \n")

x_rand = torch.rand_like(x_data, dtype=torch.float)  # overrides the datatype of x_data
print(f"Random Tensor: \n {x_rand} \n")

# With random or constant values
shape = (2, 3,)
rand_tensor = torch.rand(shape)
ones_tensor = torch.ones(shape)
zeros_tensor = torch.zeros(shape)

print(f"Random Tensor: \n {rand_tensor} \n")
print(f"Ones Tensor: \n {ones_tensor} \n")
print(f"Zeros Tensor: \n {zeros_tensor}")

# Attributes of a tensor
tensor = torch.rand(3, 4)

print(f"Shape of tensor: {tensor.shape}")
print(f"Datatype of tensor: {tensor.dtype}")
print(f"Device tensor is stored on: {tensor.device}")

# We move our tensor to the current accelerator if available
if torch.accelerator.is_available():
    tensor = tensor.to(torch.accelerator.current_accelerator())

# Standard numpy-like indexing and slicing
tensor = torch.ones(4, 4)
print(f"First row: {tensor[0]}")
print(f"First column: {tensor[:, 0]}")
print(f"Last column: {tensor[..., -1]}")
tensor[:, 1] = 0
print(tensor)

# Joining tensors
t1 = torch.cat([tensor, tensor, tensor], dim=1)
print(t1)

# Arithmetic operations
# This computes the matrix multiplication between two tensors. y1, y2, y3 will have the
# same value. ``tensor.T`` returns the transpose of a tensor.
y1 = tensor @ tensor.T
y2 = tensor.matmul(tensor.T)

y3 = torch.rand_like(y1)
torch.matmul(tensor, tensor.T, out=y3)
print(y1)
print(torch.equal(y1, y2), torch.equal(y1, y3))

# This computes the element-wise product. z1, z2, z3 will have the same value
z1 = tensor * tensor
z2 = tensor.mul(tensor)

z3 = torch.rand_like(tensor)
torch.mul(tensor, tensor, out=z3)
print(z1)
print(torch.equal(z1, z2), torch.equal(z1, z3))

# Single-element tensors
agg = tensor.sum()
agg_item = agg.item()
print(agg_item, type(agg_item))

# In-place operations
print(f"{tensor} \n")
tensor.add_(5)
print(tensor)

# Bridge with NumPy: tensor to NumPy array
t = torch.ones(5)
print(f"t: {t}")
n = t.numpy()
print(f"n: {n}")

# A change in the tensor reflects in the NumPy array.
t.add_(1)
print(f"t: {t}")
print(f"n: {n}")

# NumPy array to tensor
n = np.ones(5)
t = torch.from_numpy(n)

# Changes in the NumPy array reflects in the tensor.
np.add(n, 1, out=n)
print(f"t: {t}")
print(f"n: {n}")

# A few more of the operations the tutorial points to: a random matrix product, a
# reduction with keepdim, and a view.
a = torch.rand(2, 3)
b = torch.rand(3, 2)
print(a @ b)
print((a * 10).round().long().sum(dim=1, keepdim=True))
print(a.view(3, 2).mean(0), a.argmax(), a.max().item())
