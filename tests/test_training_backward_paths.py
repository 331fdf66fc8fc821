"""The short paths of the training layers' backward kernels (benchmarks/bench_training.py
--layers) against PyTorch: each is taken only for the common case, and the cases next
to it (a condition just missed) go the general way; both must give PyTorch's numbers."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay._generated import functional as ops

F = tp.nn.functional
TF = torch.nn.functional


def _grads(fn, tfn, arrays, grad_seed=1):
    """Gradients of fn(*tensors) and tfn(*torch tensors) for the same incoming gradient."""
    xs = [tp.tensor(a, requires_grad=True) for a in arrays]
    txs = [torch.tensor(a, requires_grad=True) for a in arrays]
    y, ty = fn(*xs), tfn(*txs)
    g = np.random.default_rng(grad_seed).standard_normal(tuple(ty.shape)).astype(
        arrays[0].dtype)
    ours = tp.autograd.grad(y, xs, tp.tensor(g))
    theirs = torch.autograd.grad(ty, txs, torch.tensor(g))
    return [o.numpy() for o in ours], [t.numpy() for t in theirs]


# offset 0.5 and 10 std (a sum that would cancel if taken uncentered); the infinite
# weight: its order of operations keeps +-inf, not NaN.
@pytest.mark.parametrize("offset, inf_weight", [(0.5, False), (10.0, False), (0.5, True)])
def test_batch_norm_training_backward_matches_torch(offset, inf_weight):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((4, 3, 5, 5)) + offset).astype(np.float32)
    w = rng.uniform(0.5, 2, 3).astype(np.float32)
    if inf_weight:
        w[1] = np.inf
    b = rng.standard_normal(3).astype(np.float32)
    ours, theirs = _grads(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
                          lambda x, w, b: TF.batch_norm(x, None, None, w, b, training=True),
                          [x, w, b])
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o, t, rtol=2e-4, atol=2e-5)


def test_relu_backward_keeps_nan_inputs_and_infinite_gradients_exactly():
    x = np.array([[-1.0, 0.0, np.nan, 2.0], [3.0, -0.0, -np.inf, np.inf]], np.float32)
    g = np.array([[np.inf, -np.inf, 5.0, -2.0], [np.nan, 7.0, np.inf, 1.5]], np.float32)
    expect = torch.ops.aten.threshold_backward(torch.tensor(g), torch.tensor(x), 0).numpy()
    result = ops.threshold_backward(tp.tensor(g), tp.tensor(x), 0).numpy()
    # bit for bit: +0.0 where dropped (not NaN from inf * 0), the gradient elsewhere
    np.testing.assert_array_equal(result.view(np.int32), expect.view(np.int32))
    # other shapes and dtypes take the general path: broadcast, promotion
    wide = ops.threshold_backward(tp.tensor(g[0].astype(np.float64)), tp.tensor(x), 0)
    expect = torch.ops.aten.threshold_backward(torch.tensor(g[0].astype(np.float64)),
                                               torch.tensor(x), 0)
    assert wide.dtype == tp.float64
    np.testing.assert_array_equal(wide.numpy(), expect.numpy())


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("ignore_index", [-100, 2])
def test_cross_entropy_backward_matches_torch(reduction, ignore_index):
    # ignore_index=2 is a class some targets hold: the general path (rows of weight 0)
    logits = np.random.default_rng(0).standard_normal((6, 4)).astype(np.float32)
    target = np.array([0, 2, 3, 1, 2, 0])
    ours, theirs = _grads(
        lambda x: F.cross_entropy(x, tp.tensor(target), reduction=reduction,
                                  ignore_index=ignore_index),
        lambda x: TF.cross_entropy(x, torch.tensor(target), reduction=reduction,
                                   ignore_index=ignore_index),
        [logits])
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5, atol=1e-7)


def test_cross_entropy_backward_rejects_a_target_out_of_range():
    probs = tp.softmax(tp.randn(3, 4), 1)
    with pytest.raises(tp.errors.DimError, match="_cross_entropy_backward.*'target'"):
        ops._cross_entropy_backward(tp.tensor(1.0), probs, tp.tensor([0, 4, 1]), None,
                                    "mean", -100, tp.tensor(3.0))


def test_max_pool_backward_matches_torch_and_checks_its_indices():
    x = np.random.default_rng(0).standard_normal((2, 3, 6, 6)).astype(np.float32)
    for kwargs in ({"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1}):
        ours, theirs = _grads(lambda x: F.max_pool2d(x, **kwargs),
                              lambda x: TF.max_pool2d(x, **kwargs), [x])
        # (overlapping windows sum in another order: equal up to rounding)
        np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6, atol=1e-7)
    # ties (values repeat in fours along the rows): the gradient goes to the first max
    # of a window only, as in PyTorch
    tied = np.repeat(np.arange(2 * 3 * 3 * 3, dtype=np.float32), 4).reshape(2, 3, 6, 6)
    ours, theirs = _grads(lambda x: F.max_pool2d(x, 2), lambda x: TF.max_pool2d(x, 2), [tied])
    np.testing.assert_array_equal(ours[0], theirs[0])
    grad = tp.ones(2, 3, 3, 3)
    bad = tp.full((2, 3, 3, 3), -1, dtype=tp.int64)
    with pytest.raises(tp.errors.DimError, match="'indices'"):
        ops.max_pool2d_with_indices_backward(grad, tp.tensor(x), [2, 2], [2, 2], [0, 0],
                                             [1, 1], False, bad)
    # the kernel checks a geometry's shapes once (cpu_kernels/pooling.py): one that failed
    # is not remembered, so it raises on every call
    for _ in range(2):
        with pytest.raises(tp.errors.ShapeError, match="'grad_output'"):
            ops.max_pool2d_with_indices_backward(tp.ones(2, 3, 2, 2), tp.tensor(x), [2, 2],
                                                 [2, 2], [0, 0], [1, 1], False, bad)


@pytest.mark.parametrize("transposed", [False, True])
def test_matmul_of_a_batch_and_a_matrix_folds_and_matches_torch(transposed):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4, 5)).astype(np.float64)
    b = rng.standard_normal((5, 2)).astype(np.float64)

    def fn(lib):
        # transposed: a self that is not row-major (the bmm path, unless b requires grad)
        return lambda a, b: (a.transpose(0, 1) if transposed else a).matmul(b)
    ours, theirs = _grads(fn(tp), fn(torch), [a, b])
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o, t, rtol=1e-12)


def test_nodes_make_zeros_only_for_the_gradients_their_formulas_read():
    x = tp.randn(4, 3, 2, 2, requires_grad=True)
    out = tp.native_batch_norm(x, None, None, None, None, True, 0.1, 1e-5)[0]
    # its formula reads `grad` alone: no zeros for the saved mean's and invstd's
    assert type(out.grad_fn).materialize_outputs == (0,)
    # a formula reading every output's gradient: zeros for any missing one (None: all)
    assert type(tp.var_mean(tp.randn(3, 4, requires_grad=True), 0)[0].grad_fn) \
        .materialize_outputs is None
    # unbind's formula makes its own zeros (one per missing output, stacked with the rest)
    assert type(tp.randn(3, 4, requires_grad=True).unbind(0)[0].grad_fn).materialize_grads \
        is False


def test_unbind_backward_is_one_node_and_fills_missing_gradients_with_zeros():
    """unbind records one UnbindBackward0 (PyTorch's node) whose gradient stacks the
    outputs' gradients; outputs that got none contribute zeros."""
    data = np.random.default_rng(0).standard_normal((3, 4, 2))
    grads = []
    for m in (tp, torch):
        x = m.tensor(data, requires_grad=True)
        a, _, c = x.unbind(0)
        assert type(a.grad_fn).__name__ == "UnbindBackward0"
        (a * 2 + c.sin()).sum().backward()
        grads.append(np.asarray(x.grad.detach().numpy()))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weighted", [False, True], ids=["short path", "general path"])
def test_cross_entropy_backward_with_a_non_finite_gradient(device, reduction, weighted):
    """PyTorch's order, log_softmax's backward of nll_loss's gradient: p * s - s at the
    target (NaN for an infinite s), p * s elsewhere, 0 on an ignored row whatever s is."""
    import torch
    x = np.random.default_rng(0).standard_normal((4, 3))
    target = np.array([2, 0, 1, 1])
    weight = np.array([0.5, 2.0, 1.0]) if weighted else None
    g = np.array([np.inf, -np.inf, np.nan, 2.0]) if reduction == "none" else np.array(np.inf)
    kw = {"reduction": reduction, "ignore_index": 1 if weighted else -100}
    ours = tp.tensor(x, device=device, requires_grad=True)
    tp.nn.functional.cross_entropy(ours, tp.tensor(target, device=device), weight=None if
                                   weight is None else tp.tensor(weight, device=device),
                                   **kw).backward(tp.tensor(g, device=device))
    theirs = torch.tensor(x, requires_grad=True)
    torch.nn.functional.cross_entropy(theirs, torch.tensor(target), weight=None if weight
                                      is None else torch.tensor(weight), **kw
                                      ).backward(torch.tensor(g))
    np.testing.assert_allclose(ours.grad.cpu().numpy(), theirs.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("weighted", [False, True], ids=["short path", "general path"])
def test_cross_entropy_backward_of_an_ignored_row_holding_nan(device, weighted):
    """An ignored row whose logits hold a NaN: PyTorch's log_softmax backward gives it
    p * 0 = NaN (nll_loss's gradient there is 0, but the row's probabilities are NaN);
    the other rows are untouched by it (fuzz seed 840684)."""
    import torch
    x = np.random.default_rng(1).standard_normal((4, 5)).astype(np.float32)
    x[0, 2] = np.nan
    target = np.array([-100, 0, 1, 2])
    weight = np.array([0.5, 2.0, 1.0, 1.5, 3.0], np.float32) if weighted else None
    grads = []
    for lib, dev in ((tp, device), (torch, "cpu")):
        xs = lib.tensor(x, device=dev, requires_grad=True)
        w = None if weight is None else lib.tensor(weight, device=dev)
        loss = lib.nn.functional.cross_entropy(xs, lib.tensor(target, device=dev), weight=w)
        (loss * 0.7 + loss.unsqueeze(-1).sum() * 0.3).backward()
        grads.append(xs.grad.cpu().numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_cross_entropy_of_a_row_holding_nan(device):
    """A row whose logits hold a NaN has a NaN loss and NaN probabilities (Triton's default
    maximum drops a NaN, which left the row's loss finite on cuda)."""
    import torch
    x = np.random.default_rng(2).standard_normal((3, 5)).astype(np.float32)
    x[1, 3] = np.nan
    target = np.array([0, 1, 2])
    got = tp.nn.functional.cross_entropy(tp.tensor(x, device=device),
                                         tp.tensor(target, device=device), reduction="none")
    want = torch.nn.functional.cross_entropy(torch.tensor(x), torch.tensor(target),
                                             reduction="none")
    np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-6)
