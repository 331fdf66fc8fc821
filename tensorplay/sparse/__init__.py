"""`tp.sparse`: sparse COO tensors, as `torch.sparse`.

A sparse tensor (`tp.sparse_coo_tensor`, `x.to_sparse()`) keeps only its specified
entries: an int64 indices tensor [sparse_dim, nnz] and a values tensor [nnz, *dense].
Its key set holds `Sparse` and `AutogradSparse`, so every op routes to the kernels of
tensorplay/sparse/kernels.py ahead of the dense backends; an op without a sparse kernel
raises `NoKernelError` ("... not supported for sparse tensors"). How gradients reach the
values: see tensorplay/sparse/coo.py.

Example: a two-layer graph convolutional network (Kipf & Welling) on a random graph,
`A_hat = D^-1/2 (A + I) D^-1/2` stored sparse, trained with SGD::

    import numpy as np
    import tensorplay as tp

    def normalized_adjacency(edges, n):
        src, dst = edges
        rows = np.concatenate([src, dst, np.arange(n)])      # both directions + self loops
        cols = np.concatenate([dst, src, np.arange(n)])
        degree = np.bincount(rows, minlength=n).astype(np.float32)
        weight = 1.0 / np.sqrt(degree[rows] * degree[cols])
        return tp.sparse_coo_tensor(np.stack([rows, cols]).tolist(), weight.tolist(), (n, n))

    class GCN(tp.nn.Module):
        def __init__(self, features, hidden, classes):
            super().__init__()
            self.layer1 = tp.nn.Linear(features, hidden)
            self.layer2 = tp.nn.Linear(hidden, classes)

        def forward(self, adjacency, x):
            h = tp.sparse.mm(adjacency, self.layer1(x)).relu()
            return tp.sparse.mm(adjacency, self.layer2(h))

    rng = np.random.default_rng(0)
    n = 20
    adjacency = normalized_adjacency(rng.integers(0, n, size=(2, 40)), n)
    x = tp.tensor(rng.standard_normal((n, 8)).astype(np.float32))
    labels = tp.tensor(rng.integers(0, 3, size=n))
    model = GCN(8, 16, 3)
    optimizer = tp.optim.SGD(model.parameters(), lr=0.5)
    for step in range(5):
        optimizer.zero_grad()
        loss = tp.nn.functional.cross_entropy(model(adjacency, x), labels)
        loss.backward()
        optimizer.step()

tests/test_sparse.py runs this model against PyTorch's, step by step.
"""
from __future__ import annotations

from tensorplay._generated import functional as F
from tensorplay.sparse.coo import sparse_coo_tensor  # noqa: F401 (re-exported as tp.*)
from tensorplay.sparse.kernels import log_softmax, softmax

__all__ = ["mm", "addmm", "sum", "softmax", "log_softmax"]


def mm(mat1, mat2):
    """sparse @ dense -> dense (sparse @ sparse -> sparse). The gradient of a sparse `mat1`
    is sparse with mat1's pattern; the dense operand gets a dense gradient."""
    return F.mm(mat1, mat2)


def addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0):
    """beta * mat + alpha * (mat1 @ mat2), with a sparse `mat1`."""
    return F.addmm(mat, mat1, mat2, beta=beta, alpha=alpha)


def sum(input, dim=None, dtype=None):      # noqa: A001,A002 -- torch.sparse.sum's names
    """All entries (a dense scalar), or along `dim` (a sparse tensor while sparse dims
    remain, dense once every sparse dim is summed)."""
    if dim is None:
        return F.sum(input, dtype=dtype)
    return F.sum(input, dim, dtype=dtype)
