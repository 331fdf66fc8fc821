"""Normalization behaviour the operator database does not see: the running statistics
that batch_norm and instance_norm update in place, and batch_norm's input-only gradient."""
from __future__ import annotations

import numpy as np
import torch

import tensorplay as tp

F = tp.nn.functional
TF = torch.nn.functional


def _pair(shape, seed, low=-2.0, high=2.0):
    a = np.random.default_rng(seed).uniform(low, high, shape)
    return tp.tensor(a), torch.tensor(a)


def test_batch_norm_updates_running_stats_like_torch():
    x, tx = _pair((4, 3, 5), 0)
    rm, trm = _pair((3,), 1)
    rv, trv = _pair((3,), 2, 0.5, 2.0)
    version, t_version = rm._version, trm._version
    for _ in range(2):   # twice: the second update starts from the first one's result
        F.batch_norm(x, rm, rv, training=True, momentum=0.3)
        TF.batch_norm(tx, trm, trv, training=True, momentum=0.3)
    np.testing.assert_allclose(rm.numpy(), trm.numpy(), rtol=1e-12)
    # The running variance is unbiased (n / (n - 1)), the normalization's is not.
    np.testing.assert_allclose(rv.numpy(), trv.numpy(), rtol=1e-12)
    # PyTorch's kernel updates them without bumping the version (backward saves them).
    assert rm._version - version == trm._version - t_version


def test_batch_norm_eval_uses_running_stats_and_leaves_them():
    x, tx = _pair((4, 3), 3)
    rm, trm = _pair((3,), 4)
    rv, trv = _pair((3,), 5, 0.5, 2.0)
    before = rm.numpy().copy()
    y = F.batch_norm(x, rm, rv, training=False)
    np.testing.assert_allclose(y.numpy(), TF.batch_norm(tx, trm, trv).numpy(), rtol=1e-12)
    np.testing.assert_array_equal(rm.numpy(), before)


def test_batch_norm_input_gradient_alone_matches_torch_and_leaves_numpy_as_it_was():
    # 32 channels of 8 x 8: rows of 2048 elements, which the kernel's passes read with a
    # shorter NumPy buffer (cpu_kernels/_common.py, broadcast_rows); grad() for the input
    # alone asks the fused kernel for no weight and bias gradients (grad_input_mask)
    a = np.random.default_rng(7).standard_normal((2, 32, 8, 8)).astype(np.float32)
    g = np.random.default_rng(8).standard_normal((2, 32, 8, 8)).astype(np.float32)
    ours, theirs = tp.nn.BatchNorm2d(32), torch.nn.BatchNorm2d(32)
    x, tx = tp.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    bufsize = np.getbufsize()
    (dx,) = tp.autograd.grad(ours(x), x, tp.tensor(g))
    (tdx,) = torch.autograd.grad(theirs(tx), tx, torch.tensor(g))
    np.testing.assert_allclose(dx.numpy(), tdx.numpy(), rtol=1e-4, atol=1e-6)
    assert np.getbufsize() == bufsize


def test_instance_norm_averages_running_stats_over_the_batch():
    x, tx = _pair((2, 3, 4), 6)
    rm, trm = _pair((3,), 7)
    rv, trv = _pair((3,), 8, 0.5, 2.0)
    F.instance_norm(x, rm, rv, momentum=0.2)
    TF.instance_norm(tx, trm, trv, momentum=0.2)
    np.testing.assert_allclose(rm.numpy(), trm.numpy(), rtol=1e-12)
    np.testing.assert_allclose(rv.numpy(), trv.numpy(), rtol=1e-12)


def test_layer_norm_large_offset_is_stable():
    """A large common offset must not swamp the variance (two-pass moments)."""
    x, tx = _pair((2, 8), 9)
    y = F.layer_norm(x + 1e6, [8])
    np.testing.assert_allclose(y.numpy(), TF.layer_norm(tx + 1e6, [8]).numpy(), atol=1e-6)


def test_layer_norm_over_no_elements_matches_torch_without_a_warning():
    """A normalized shape with a 0 in it: mean 0 (PyTorch's Welford start) and rstd NaN
    for each row, as PyTorch; NumPy's 'Mean of empty slice' warning is not the user's."""
    import warnings
    for shape, normalized in (((3, 0), [0]), ((2, 3, 0), [3, 0]), ((0, 8), [8])):
        a = np.zeros(shape, np.float32)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            mine = tp.native_layer_norm(tp.tensor(a), normalized, None, None, 1e-5)
        theirs = torch.native_layer_norm(torch.tensor(a), normalized, None, None, 1e-5)
        for m, t in zip(mine, theirs):
            assert tuple(m.shape) == tuple(t.shape)
            np.testing.assert_array_equal(m.numpy(), t.numpy())
