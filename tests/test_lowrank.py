"""svd_lowrank and pca_lowrank: their gradients by finite differences.

Their columns come from a random draw, so PyTorch's gradients (another draw) are not a
reference; with the generator seeded before each call the op is a fixed smooth function
of A, and gradcheck compares its backward with finite differences of that function.
(The OpInfo entries in tests/opinfo/db_eigen.py compare the values with PyTorch.)
"""
import numpy as np
import pytest

import tensorplay as tp
from tensorplay.autograd import gradcheck


def _seeded(lowrank, **kwargs):
    def run(A):
        tp.manual_seed(0)
        U, S, V = lowrank(A, **kwargs)
        return (U * S.unsqueeze(-2)) @ V.mT, S
    return run


@pytest.mark.parametrize("lowrank, shape, kwargs", [
    (tp.svd_lowrank, (5, 4), {"q": 2}),
    (tp.svd_lowrank, (3, 5), {"q": 2, "niter": 1}),
    (tp.pca_lowrank, (5, 3), {"q": 2}),
])
def test_lowrank_gradcheck(lowrank, shape, kwargs):
    rng = np.random.default_rng(0)
    A = tp.tensor(rng.standard_normal(shape), dtype=tp.float64, requires_grad=True)
    assert gradcheck(_seeded(lowrank, **kwargs), (A,))


def test_svd_lowrank_recovers_a_low_rank_matrix():
    rng = np.random.default_rng(1)
    A = tp.tensor(rng.standard_normal((8, 3)) @ rng.standard_normal((3, 6)))
    U, S, V = tp.svd_lowrank(A, q=3)
    assert U.shape == (8, 3) and S.shape == (3,) and V.shape == (6, 3)
    np.testing.assert_allclose(((U * S) @ V.mT).numpy(), A.numpy(), atol=1e-4)
    np.testing.assert_allclose((U.mT @ U).numpy(), np.eye(3), atol=1e-5)


@pytest.mark.parametrize("largest", [True, False])
def test_lobpcg_from_a_random_start(largest):
    """lobpcg draws its starting vectors when X is not given; the eigenpairs it converges
    to are the matrix's, whatever the draw (the OpInfo entry gives X)."""
    import torch
    rng = np.random.default_rng(2)
    q, _ = np.linalg.qr(rng.standard_normal((15, 15)))
    A = (q * np.arange(1.0, 16.0)) @ q.T
    E, X = tp.lobpcg(tp.tensor(A), k=2, largest=largest)
    expected = torch.lobpcg(torch.tensor(A), k=2, largest=largest)[0].numpy()
    np.testing.assert_allclose(E.numpy(), expected, rtol=1e-8)
    np.testing.assert_allclose((tp.tensor(A) @ X).numpy(), (X * E).numpy(), atol=1e-6)
