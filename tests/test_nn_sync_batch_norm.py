"""The SyncBatchNorm internals put together as nn.SyncBatchNorm uses them, with a batch
split between two pretend processes: the result, the running statistics and the input's
gradient must be batch norm's over the whole batch (PyTorch's F.batch_norm and its
autograd; PyTorch itself runs these ops on CUDA only); and nn.SyncBatchNorm without a
process group. tests/test_distributed.py runs it on 2 and 3 ranks."""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as TF

import tensorplay as tp
from opinfo.core import assert_close

RNG = np.random.default_rng(5)


def test_two_processes_compute_batch_norm_of_the_whole_batch():
    x = RNG.standard_normal((5, 3, 4))
    w, b, dy = RNG.standard_normal(3), RNG.standard_normal(3), RNG.standard_normal((5, 3, 4))
    parts = [tp.tensor(x[:2]), tp.tensor(x[2:])]
    stats = [tp.batch_norm_stats(p, 1e-5) for p in parts]
    counts = tp.tensor([2.0 * 4, 3.0 * 4], dtype=tp.float64)
    rm, rv = tp.zeros(3, dtype=tp.float64), tp.ones(3, dtype=tp.float64)
    mean, invstd = tp.batch_norm_gather_stats_with_counts(
        parts[0], tp.stack([s[0] for s in stats]), tp.stack([s[1] for s in stats]), rm, rv,
        0.1, 1e-5, counts)
    out = tp.cat([tp.batch_norm_elemt(p, tp.tensor(w), tp.tensor(b), mean, invstd, 1e-5)
                  for p in parts])

    tx = torch.tensor(x, requires_grad=True)
    trm, trv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    tout = TF.batch_norm(tx, trm, trv, torch.tensor(w), torch.tensor(b), True, 0.1, 1e-5)
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), atol=1e-10)
    np.testing.assert_allclose(rm.numpy(), trm.numpy(), atol=1e-12)
    np.testing.assert_allclose(rv.numpy(), trv.numpy(), atol=1e-12)

    dys = [tp.tensor(dy[:2]), tp.tensor(dy[2:])]
    reduced = [tp.batch_norm_backward_reduce(g, p, mean, invstd, tp.tensor(w), True, True,
                                             True) for g, p in zip(dys, parts)]
    sum_dy = reduced[0][0] + reduced[1][0]          # the all-reduce
    sum_dy_xmu = reduced[0][1] + reduced[1][1]
    grad = tp.cat([tp.batch_norm_backward_elemt(g, p, mean, invstd, tp.tensor(w), sum_dy,
                                                sum_dy_xmu, tp.tensor([8, 12], dtype=tp.int32))
                   for g, p in zip(dys, parts)])
    tout.backward(torch.tensor(dy))
    np.testing.assert_allclose(grad.numpy(), tx.grad.numpy(), atol=1e-10)
    grad_w = reduced[0][2] + reduced[1][2]
    grad_b = reduced[0][3] + reduced[1][3]
    np.testing.assert_allclose(grad_b.numpy(), dy.sum((0, 2)), atol=1e-10)
    xhat = tout.detach().numpy() - b[None, :, None]
    np.testing.assert_allclose(grad_w.numpy(), (dy * xhat / w[None, :, None]).sum((0, 2)),
                               atol=1e-10)


def test_sync_batch_norm_without_a_process_group_is_pytorchs():
    x = RNG.standard_normal((5, 3, 2, 2)).astype(np.float32)
    ours, theirs = tp.nn.SyncBatchNorm(3), torch.nn.SyncBatchNorm(3)
    xs, xt = tp.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    y, yt = ours(xs), theirs(xt)
    assert_close(y, yt)
    y.sum().backward()
    yt.sum().backward()
    assert_close(xs.grad, xt.grad)
    assert_close(ours.running_var, theirs.running_var)
    model = tp.nn.SyncBatchNorm.convert_sync_batchnorm(
        tp.nn.Sequential(tp.nn.Conv2d(3, 3, 1), tp.nn.BatchNorm2d(3)))
    assert type(model[1]) is tp.nn.SyncBatchNorm
