"""Round 4 of the dispatch fast path (issue 13), the recorded op: each shortcut against
PyTorch and against the general path it stands in for.

- The generated autograd wrapper calls the backend kernel below autograd itself when
  the dispatcher's second pass could only pick that kernel (backend keys only, nobody
  watching); a Python key or mode, explain() and the profiler take `redispatch`.
- A fresh single output is attached inline (set_history's first branch, written out in
  the wrapper template); anything else calls set_history.
- A leaf's `AccumulateGrad` holds the leaf's impl and wraps it as `variable` on first use.
- A wrapped number is wrapped without `wrap`'s call; `wrap_number` reads `_device`.
"""
import gc
import weakref

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.autograd.node import AccumulateGrad


def _np(t):
    return t.detach().numpy()


@pytest.fixture
def leaves():
    data = np.linspace(-1.0, 2.0, 6, dtype=np.float32).reshape(2, 3)
    other = np.linspace(0.5, 1.5, 3, dtype=np.float32)
    x, xt = tp.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    w, wt = tp.tensor(other), torch.tensor(other)
    return x, xt, w, wt


# ---- AccumulateGrad: the leaf, hooks, memory ----------------------------------------------------
def test_accumulator_graph_structure_and_variable(leaves):
    x, xt, w, wt = leaves
    y, yt = x * w, xt * wt
    acc, acc_t = y.grad_fn.next_functions[0][0], yt.grad_fn.next_functions[0][0]
    assert type(acc).__name__ == type(acc_t).__name__ == "AccumulateGrad"
    assert y.grad_fn.next_functions[1] == (None, 0) and yt.grad_fn.next_functions[1] == (None, 0)
    assert acc.leaf is x._impl and acc._variable is None      # not wrapped until asked for
    assert acc.variable._impl is x._impl and acc.variable is acc.variable
    assert (x * 3).grad_fn.next_functions[0][0] is acc       # alive: one per leaf


def test_leaf_hooks_and_post_accumulate_hooks_run_like_pytorch(leaves):
    x, xt, w, wt = leaves
    seen, seen_t = [], []
    x.register_hook(lambda g: g * 2)
    xt.register_hook(lambda g: g * 2)
    x.register_post_accumulate_grad_hook(lambda t: seen.append((t._impl is x._impl, _np(t.grad))))
    xt.register_post_accumulate_grad_hook(lambda t: seen_t.append((t is xt, t.grad.numpy())))
    (x * w).sum().backward()
    (xt * wt).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy())
    assert [s[0] for s in seen] == [s[0] for s in seen_t] == [True]
    np.testing.assert_allclose(seen[0][1], seen_t[0][1])


def test_retain_grad_of_a_non_leaf(leaves):
    x, xt, w, wt = leaves
    y, yt = x + w, xt + wt
    y.retain_grad()
    yt.retain_grad()
    (y * y).sum().backward()
    (yt * yt).sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), yt.grad.numpy())
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy())


def test_leaf_deleted_while_its_graph_lives():
    x, xt = tp.tensor([1.0, -2.0], requires_grad=True), torch.tensor([1.0, -2.0], requires_grad=True)
    w, wt = tp.tensor([3.0, 0.5]), torch.tensor([3.0, 0.5])
    grads, grads_t = [], []
    x.register_hook(lambda g: grads.append(_np(g)))
    xt.register_hook(lambda g: grads_t.append(g.numpy()))
    impl_ref = weakref.ref(x._impl)
    y, yt = (x * w).sum(), (xt * wt).sum()
    del x, xt
    assert impl_ref() is not None                   # the graph's accumulator holds it
    y.backward()
    yt.backward()
    np.testing.assert_allclose(grads[0], grads_t[0])
    assert impl_ref().grad is not None
    del y, yt
    assert impl_ref() is None


def test_graph_and_leaf_are_freed_without_the_garbage_collector():
    gc.disable()
    try:
        x = tp.ones(3, requires_grad=True)
        y = tp.add(x, tp.ones(3)) * 2
        refs = [weakref.ref(x._impl), weakref.ref(y.grad_fn),
                weakref.ref(y.grad_fn.next_functions[0][0].next_functions[0][0])]
        acc = refs[2]()
        assert isinstance(acc, AccumulateGrad)
        acc.variable                                # the wrapped leaf made, then freed too
        del acc
        del y
        assert refs[1]() is None and refs[2]() is None      # the graph dies with its output
        assert refs[0]() is not None
        del x
        assert refs[0]() is None
    finally:
        gc.enable()
