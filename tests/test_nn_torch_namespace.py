"""The nn functions PyTorch also serves as torch.* (tensorplay/nn/_torch_namespace.py):
the same function objects where PyTorch's are, and ATen's signatures where PyTorch's
differ from nn.functional's, with the same values (and seeded draws) as PyTorch's."""
import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.errors import ArgumentError
from tensorplay.nn import _torch_namespace

from opinfo.core import assert_close


@pytest.mark.parametrize("name", _torch_namespace.SAME_AS_FUNCTIONAL)
def test_the_same_function_as_nn_functional_where_pytorchs_is(name):
    assert getattr(torch, name) is getattr(torch.nn.functional, name)
    assert getattr(tp, name) is getattr(tp.nn.functional, name)


def _pair(*shape, seed=0, low=-2.0, high=2.0):
    data = np.random.default_rng(seed).uniform(low, high, shape).astype(np.float32)
    return tp.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)


@pytest.mark.parametrize("name", ["alpha_dropout", "feature_alpha_dropout", "feature_dropout"])
@pytest.mark.parametrize("train", [False, True])
def test_dropouts_take_a_required_train_flag_and_draw_as_pytorch(name, train):
    x, xt = _pair(2, 3, 4)
    tp.manual_seed(3)
    torch.manual_seed(3)
    got, expected = getattr(tp, name)(x, 0.4, train), getattr(torch, name)(xt, 0.4, train)
    assert_close(got, expected)
    got.sum().backward()
    expected.sum().backward()
    assert_close(x.grad, xt.grad)


def test_rrelu_draws_the_slopes_of_pytorch_and_takes_a_generator():
    x, xt = _pair(3, 5, seed=1)
    g, gt = tp.Generator().manual_seed(7), torch.Generator().manual_seed(7)
    got = tp.rrelu(x, 0.1, 0.3, True, g)
    expected = torch.rrelu(xt, 0.1, 0.3, True, gt)
    assert_close(got, expected)
    got.sum().backward()
    expected.sum().backward()
    assert_close(x.grad, xt.grad)
    assert_close(tp.rrelu(x.detach()), torch.rrelu(xt.detach()))     # eval: the mean slope


@pytest.mark.parametrize("reduction", [0, 1, 2, "sum"])
def test_losses_take_atens_reduction_enum(reduction):
    x, xt = _pair(4, 3)
    y = np.where(np.arange(12).reshape(4, 3) % 3 == 0, -1.0, 1.0).astype(np.float32)
    torch_reduction = reduction if isinstance(reduction, int) else 2
    checks = [
        (tp.hinge_embedding_loss(x, tp.tensor(y), 0.5, reduction),
         torch.hinge_embedding_loss(xt, torch.tensor(y), 0.5, torch_reduction)),
        (tp.poisson_nll_loss(x, tp.tensor(np.abs(y)), True, True, 1e-8, reduction),
         torch.poisson_nll_loss(xt, torch.tensor(np.abs(y)), True, True, 1e-8, torch_reduction)),
    ]
    p, pt = _pair(4, 3, seed=2)
    n, nt = _pair(4, 3, seed=3)
    checks.append((tp.triplet_margin_loss(x, p, n, 1.0, 2.0, 1e-6, True, reduction),
                   torch.triplet_margin_loss(xt, pt, nt, 1.0, 2.0, 1e-6, True, torch_reduction)))
    for got, expected in checks:
        assert_close(got, expected)
        got.sum().backward()
        expected.sum().backward()
    assert_close(x.grad, xt.grad)


def test_a_bad_reduction_names_the_op_and_the_argument():
    x = tp.ones(3)
    with pytest.raises(ArgumentError, match=r"hinge_embedding_loss\(\): argument "
                                            r"'reduction' must be 0 \(none\)") as e:
        tp.hinge_embedding_loss(x, x, 1.0, 3)
    assert e.value.op == "hinge_embedding_loss"


def test_native_channel_shuffle_is_channel_shuffle():
    x = tp.arange(24.0).reshape(1, 6, 2, 2)
    assert_close(tp.native_channel_shuffle(x, 3),
                 torch.native_channel_shuffle(torch.arange(24.0).reshape(1, 6, 2, 2), 3))


# ---- SyncBatchNorm's steps (torch.batch_norm_stats, ...: PyTorch serves them on GPUs
# only, so the oracle is BatchNorm itself; tests/test_distributed.py runs SyncBatchNorm
# on 2 and 3 ranks) -----------------------------------------------------------------------
def _batch(seed=0, shape=(6, 3, 4)):
    return np.random.default_rng(seed).standard_normal(shape)


def test_stats_gathered_from_slices_are_the_whole_batchs():
    x = _batch()
    slices = [x[:1], x[1:4], x[4:]]
    stats = [tp.batch_norm_stats(tp.tensor(s), 1e-5) for s in slices]
    counts = tp.tensor([float(s.shape[0] * s.shape[2]) for s in slices], dtype=tp.float64)
    running_mean, running_var = tp.zeros(3, dtype=tp.float64), tp.ones(3, dtype=tp.float64)
    mean, invstd = tp.batch_norm_gather_stats_with_counts(
        tp.tensor(x), tp.stack([m for m, _ in stats]), tp.stack([i for _, i in stats]),
        running_mean, running_var, 0.1, 1e-5, counts)
    xt = torch.tensor(x)
    expected_mean = xt.mean((0, 2))
    assert_close(mean, expected_mean)
    assert_close(invstd, (xt.var((0, 2), unbiased=False) + 1e-5).rsqrt())
    layer = torch.nn.BatchNorm1d(3, momentum=0.1).double()
    layer(xt)
    assert_close(running_mean, layer.running_mean)
    assert_close(running_var, layer.running_var)
    m2, i2 = tp.batch_norm_gather_stats(tp.tensor(x), tp.stack([mean, mean]),
                                        tp.stack([invstd, invstd]), None, None, 0.1, 1e-5, 12)
    np.testing.assert_allclose(m2.numpy(), mean.numpy())
    np.testing.assert_allclose(i2.numpy(), invstd.numpy())


def test_update_stats_gives_the_biased_variance_and_moves_the_running_stats():
    """As torch.batch_norm_update_stats (which PyTorch serves on the CPU too): the biased
    variance, while the running variance moves toward the unbiased one."""
    x = _batch(1)
    running_mean, running_var = tp.zeros(3, dtype=tp.float64), tp.ones(3, dtype=tp.float64)
    mean, var = tp.batch_norm_update_stats(tp.tensor(x), running_mean, running_var, 0.2)
    xt = torch.tensor(x)
    assert_close(mean, xt.mean((0, 2)))
    assert_close(var, xt.var((0, 2), unbiased=False))
    layer = torch.nn.BatchNorm1d(3, momentum=0.2).double()
    layer(xt)
    assert_close(running_mean, layer.running_mean)
    assert_close(running_var, layer.running_var)


def test_elemt_and_the_backward_steps_give_batch_norms_output_and_gradients():
    x, g = _batch(2), _batch(3)
    w, b = np.array([0.5, 1.0, 2.0]), np.array([0.1, -0.2, 0.3])
    mean, invstd = tp.batch_norm_stats(tp.tensor(x), 1e-5)
    y = tp.batch_norm_elemt(tp.tensor(x), tp.tensor(w), tp.tensor(b), mean, invstd, 1e-5)
    sum_dy, sum_dy_xmu, gw, gb = tp.batch_norm_backward_reduce(
        tp.tensor(g), tp.tensor(x), mean, invstd, tp.tensor(w), True, True, True)
    gx = tp.batch_norm_backward_elemt(tp.tensor(g), tp.tensor(x), mean, invstd, tp.tensor(w),
                                      sum_dy, sum_dy_xmu, tp.tensor([24], dtype=tp.int32))
    xt, wt, bt = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    yt = torch.nn.functional.batch_norm(xt, None, None, wt, bt, True, 0.1, 1e-5)
    (yt * torch.tensor(g)).sum().backward()
    assert_close(y, yt)
    assert_close(gx, xt.grad)
    assert_close(gw, wt.grad)
    assert_close(gb, bt.grad)
    none = tp.batch_norm_backward_reduce(tp.tensor(g), tp.tensor(x), mean, invstd, None,
                                         False, False, False)
    assert none == (None, None, None, None)


def test_sync_batch_norm_without_a_process_group_is_pytorchs():
    x = _batch(4, (5, 3, 2, 2)).astype(np.float32)
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
