"""Regressions of the fuzzer's saved-tensor cluster (out-of-place ops): after `y = op(x)`,
an in-place change of a tensor the backward saved makes backward raise, of one it did not
save does not. Each program runs in both libraries (`lib` is tensorplay or torch) and
must end alike, in the outcome named beside it.

One program per root cause: a formula read a tensor PyTorch's does not (or the other
way round), a composite saved through other nodes than PyTorch's formula, or the
codegen skipped saving where PyTorch's rule saves.
"""
from __future__ import annotations

import pytest
import torch

import tensorplay as tp

RAISES, FREE = "raises", "free"


def _outcome(lib, program):
    try:
        program(lib).backward()
    except RuntimeError as e:
        assert "modified by an inplace operation" in str(e), e
        return RAISES
    return FREE


def _t(lib, values, grad=False):
    return lib.tensor(values, dtype=lib.float64, requires_grad=grad)


# ---- the codegen's save rule: PyTorch skips a saved input only when a single formula,
# of a single input, reads it; tensor2 of addcdiv is read by two formulas.
def addcdiv_tensor2(lib):
    a, b, c = _t(lib, [1., 2.], True), _t(lib, [3., 4.]), _t(lib, [5., 6.])
    y = lib.addcdiv(a, b, c)
    with lib.no_grad():
        c.add_(1)
    return y.sum()


# ---- sizes-only formulas: topk/sort, cumsum, repeat_interleave keep no input.
def topk_self(lib):
    x = _t(lib, [1., 3., 2.], True)
    values, _ = lib.topk(x, 2)
    with lib.no_grad():
        x.add_(1.5)
    return values.sum()


def cumsum_self(lib):
    x = _t(lib, [1., 3., 2.], True)
    y = lib.cumsum(x, 0)
    with lib.no_grad():
        x.mul_(2)
    return y.sum()


def repeat_interleave_repeats(lib):
    x, r = _t(lib, [1., 3.], True), lib.tensor([2, 1])
    y = lib.repeat_interleave(x, r)
    r.add_(1)
    return y.sum()


# ---- formulas that read the tensor itself, as PyTorch's do.
def gather_self(lib):
    x = _t(lib, [[1., 3.], [2., 4.]], True)
    y = lib.gather(x, 1, lib.tensor([[0], [1]]))
    with lib.no_grad():
        x.add_(1)
    return y.sum()


def take_along_dim_indices(lib):
    x, i = _t(lib, [[1., 3.], [2., 4.]], True), lib.tensor([[0], [1]])
    y = lib.take_along_dim(x, i, dim=1)
    i.zero_()
    return y.sum()


# ---- ops that differentiate with a formula of their own over a composite forward.
def pow_scalar_result(lib):
    x = _t(lib, [1., 2.], True)
    y = x ** 2
    with lib.no_grad():
        y.add_(1)
    return y.sum()


def mse_loss_target(lib):
    x, target = _t(lib, [1., 2.], True), _t(lib, [0., 5.])
    loss = lib.nn.functional.mse_loss(x, target)
    target.add_(1)
    return loss


def smooth_l1_beta_0_target(lib):
    x, target = _t(lib, [1., 2.], True), _t(lib, [0., 5.])
    loss = lib.nn.functional.smooth_l1_loss(x, target, beta=0.0)
    target.add_(1)
    return loss


def std_mean_std(lib):
    x = lib.tensor([[1., 2., 4.], [0., 3., 3.]], requires_grad=True)
    std, mean = lib.std_mean(x, [1])
    with lib.no_grad():
        std.add_(1)
    return std.sum() + mean.sum()


def dist_other(lib):
    x, other = _t(lib, [1., 2.], True), _t(lib, [0., 5.])
    y = lib.dist(x, other, 3)
    other.add_(1)
    return y


def pairwise_distance_result(lib):
    x, other = _t(lib, [[1., 2.]], True), _t(lib, [[0., 5.]])
    y = lib.nn.functional.pairwise_distance(x, other, p=1.0)
    with lib.no_grad():
        y.neg_()
    return y.sum()


def sinc_self(lib):
    x = _t(lib, [0.5, 2.], True)
    y = lib.sinc(x)
    with lib.no_grad():
        x.add_(1)
    return y.sum()


def prelu_self(lib):
    x, w = _t(lib, [[-1., 2.]]), _t(lib, [0.25], True)
    y = lib.nn.functional.prelu(x, w)
    x.add_(1)
    return y.sum()


def linalg_vector_norm_self(lib):
    x = lib.tensor([[1., -2.]], requires_grad=True)
    y = lib.linalg.vector_norm(x, dtype=lib.float64)
    with lib.no_grad():
        x.add_(1)
    return y


def cov_fweights(lib):
    x, fw = lib.tensor([[1., 2., 4.]], requires_grad=True), lib.tensor([1, 2, 1])
    y = lib.cov(x, fweights=fw)
    fw.fill_(2)
    return y


# ---- batch norm saves the running stats (which its kernel updates without a version
# bump), group norm and nll_loss save a copy of a strided input.
def batch_norm_eval_running_var(lib):
    x = _t(lib, [[1., 2.], [3., 5.]], True)
    rm, rv = _t(lib, [0., 1.]), _t(lib, [1., 2.])
    y = lib.nn.functional.batch_norm(x, rm, rv, training=False)
    rv.add_(1)
    return y.sum()


def batch_norm_train_twice(lib):
    x = _t(lib, [[1., 2.], [3., 5.]], True)
    rm, rv = _t(lib, [0., 1.]), _t(lib, [1., 2.])
    y = lib.nn.functional.batch_norm(x, rm, rv, training=True)
    lib.nn.functional.batch_norm(x, rm, rv, training=True)
    return (y * y).sum()


def group_norm_strided_input(lib):
    x = lib.arange(16.).reshape(2, 2, 4)[..., ::2].detach().requires_grad_(True)
    y = lib.nn.functional.group_norm(x, 1)
    with lib.no_grad():
        x.mul_(2)
    return (y * y).sum()


def nll_loss_3d_strided_input(lib):
    x = lib.arange(24.).reshape(2, 3, 4)[..., ::2].detach().requires_grad_(True)
    y = lib.nn.functional.nll_loss(x, lib.tensor([[0, 1], [2, 0]]))
    with lib.no_grad():
        x.exp_()
    return y


PROGRAMS = [
    (addcdiv_tensor2, RAISES), (topk_self, FREE), (cumsum_self, FREE),
    (repeat_interleave_repeats, FREE), (gather_self, RAISES), (take_along_dim_indices, FREE),
    (pow_scalar_result, FREE), (mse_loss_target, RAISES), (smooth_l1_beta_0_target, FREE),
    (std_mean_std, RAISES), (dist_other, RAISES), (pairwise_distance_result, RAISES),
    (sinc_self, RAISES), (prelu_self, RAISES),
    (linalg_vector_norm_self, RAISES), (cov_fweights, RAISES), (batch_norm_eval_running_var, RAISES),
    (batch_norm_train_twice, FREE), (group_norm_strided_input, FREE),
    (nll_loss_3d_strided_input, FREE),
]


@pytest.mark.parametrize("program, expected", PROGRAMS, ids=[p.__name__ for p, _ in PROGRAMS])
def test_backward_raises_as_torch_after_an_inplace_change(program, expected):
    assert _outcome(torch, program) == expected, "the program no longer shows the case"
    assert _outcome(tp, program) == expected
