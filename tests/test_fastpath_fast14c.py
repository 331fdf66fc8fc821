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
from tensorplay._generated import autograd_wrappers, ops
from tensorplay._generated.autograd_nodes import AddBackward0
from tensorplay._impl import TensorImpl
from tensorplay.autograd.graph_edges import set_history
from tensorplay.autograd.node import AccumulateGrad
from tensorplay.errors import AutogradError
from tensorplay.utils.dispatch_mode import LoggingMode


def _np(t):
    return t.detach().numpy()


def _graph(fn):
    """The backward graph under `fn` as nested (node name, children) for comparison."""
    if fn is None:
        return None
    return (type(fn).__name__, tuple(_graph(child) for child, _ in fn.next_functions))


def _step(lib, x, w):
    """A small recorded program: leaf and non-leaf inputs, a plain input, wrapped numbers."""
    y = x * 2 + 1
    z = lib.add(y, w, alpha=3) - x / 4
    return (z * z).sum() + x.sum()


@pytest.fixture
def leaves():
    data = np.linspace(-1.0, 2.0, 6, dtype=np.float32).reshape(2, 3)
    other = np.linspace(0.5, 1.5, 3, dtype=np.float32)
    x, xt = tp.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    w, wt = tp.tensor(other), torch.tensor(other)
    return x, xt, w, wt


# ---- the direct kernel call below autograd ---------------------------------------------------
def test_recorded_program_matches_pytorch_values_graph_and_gradients(leaves):
    x, xt, w, wt = leaves
    loss, loss_t = _step(tp, x, w), _step(torch, xt, wt)
    np.testing.assert_allclose(_np(loss), loss_t.detach().numpy(), rtol=1e-6)
    assert _graph(loss.grad_fn) == _graph(loss_t.grad_fn)
    loss.backward()
    loss_t.backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-6)
    assert w.grad is None and wt.grad is None


def test_direct_path_and_redispatch_give_the_same_graph_and_gradients(leaves):
    """explain() sets the dispatcher's watch, so every wrapper takes `redispatch`."""
    x, _, w, _ = leaves
    direct = _step(tp, x, w)
    direct.backward()
    grad_direct = x.grad.clone()
    x.grad = None
    with tp.dispatch.explain(records=True) as log:
        watched = _step(tp, x, w)
    assert any(h.kind == "dispatch" and "AutogradCPU" in h.text for h in log.records)
    # the hop below autograd is reported, so that path went through the dispatcher
    assert any(h.kind == "dispatch" and h.text.startswith("CPU") for h in log.records)
    watched.backward()
    np.testing.assert_array_equal(_np(watched), _np(direct))
    assert _graph(watched.grad_fn) == _graph(direct.grad_fn)
    np.testing.assert_array_equal(x.grad.numpy(), grad_direct.numpy())


def test_a_dispatch_mode_below_autograd_still_sees_the_recorded_op(leaves):
    """A mode adds the Python key to the thread's included mask: the wrapper must
    redispatch so the mode runs below autograd, as before."""
    x, _, w, _ = leaves
    with LoggingMode() as log:
        y = tp.add(x, w)
    assert any("add.Tensor" in line for line in log.lines)
    assert type(y.grad_fn).__name__ == "AddBackward0"
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((2, 3), np.float32))


def test_in_place_op_on_a_non_leaf_bumps_the_version_through_the_direct_path(leaves):
    x, xt, w, wt = leaves
    y, yt = x * 1, xt * 1
    before = y._version
    y.add_(w)
    yt.add_(wt)
    assert y._version == before + 1 == yt._version
    assert type(y.grad_fn).__name__ == type(yt.grad_fn).__name__ == "AddBackward0"
    y.sum().backward()
    yt.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy())


def test_a_saved_tensor_modified_in_place_still_raises(leaves):
    x, xt, _, _ = leaves
    y, yt = x * 1, xt * 1
    z, zt = y * y, yt * yt
    y.add_(1)
    yt.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        zt.sum().backward()
    with pytest.raises(AutogradError, match="modified by an inplace operation"):
        z.sum().backward()


def test_a_missing_backend_kernel_raises_the_dispatcher_error():
    """A backend slot with nothing in it: the route below the wrapper misses there, and
    the miss error names the op and the key, exactly as the dispatcher's loop does."""
    from tensorplay.dispatch.dispatcher import Routes
    handle = ops.add_Tensor
    saved, saved_routes = list(handle.resolved), handle.routes
    x = tp.ones(2, requires_grad=True)
    try:
        handle.resolved = [None] + saved[1:]        # as if CPU had no kernel for add
        handle.routes = Routes(handle)              # what _resolve gives a new table
        with pytest.raises(NotImplementedError, match="add.Tensor.*CPU"):
            tp.add(x, x)
    finally:
        handle.resolved, handle.routes = saved, saved_routes
    assert tp.add(x, x).grad_fn is not None


def test_no_wrapper_argument_is_shadowed_by_a_local():
    import inspect
    from tensorplay.codegen.gen_autograd import WRAPPER_LOCALS
    for fn in autograd_wrappers.WRAPPERS.values():
        params = list(inspect.signature(fn).parameters)[1:]      # after `ks`
        assert not set(params) & WRAPPER_LOCALS, fn.__name__


# ---- the fresh output attached inline ---------------------------------------------------------
AUTOGRAD_FIELDS = ("requires_grad", "output_nr", "retains_grad", "base", "grad",
                   "grad_accumulator", "hooks", "wrapped_number")


def test_inline_attach_writes_what_set_history_writes():
    """Keeps the wrapper template's FRESH_OUTPUT in step with set_history's first branch."""
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    b = tp.tensor([3.0, 4.0])
    inline = tp.add(x, b)
    general = ops.add_Tensor.resolved[0](x, b, 1)     # the kernel alone: a fresh output
    node = AddBackward0()
    set_history(general, node)
    for field in AUTOGRAD_FIELDS:
        assert getattr(inline._impl, field) == getattr(general._impl, field), field
    assert inline._impl.grad_fn._output_meta == node._output_meta
    assert type(inline._impl.grad_fn) is AddBackward0
    slots = [s for s in TensorImpl.__slots__ if s != "__weakref__"]
    assert all(hasattr(inline._impl, s) for s in slots)


def test_integer_and_multi_output_results_take_set_history():
    x, xt = tp.ones(3, requires_grad=True), torch.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError):
        xt.sum(dtype=torch.int32)
    with pytest.raises(AutogradError, match="Autograd not support dtype: Int"):
        x.sum(dtype=tp.int32)
    assert not x.to(tp.int32).requires_grad and not xt.to(torch.int32).requires_grad
    values, indices = x.max(dim=0)
    vt, it = xt.max(dim=0)
    assert values.requires_grad and not indices.requires_grad and not it.requires_grad


# ---- grad mode, inference mode, in-place on leaves -------------------------------------------
def test_no_grad_and_inference_mode_record_nothing(leaves):
    x, xt, w, wt = leaves
    with tp.no_grad():
        y = tp.add(x, w)
    with torch.no_grad():
        yt = torch.add(xt, wt)
    assert y.grad_fn is None and not y.requires_grad and yt.grad_fn is None
    with tp.inference_mode():
        z = x * 2
    assert z.grad_fn is None and z._impl.inference and not z.requires_grad


def test_in_place_on_a_leaf_that_requires_grad_is_refused_like_pytorch(leaves):
    x, xt, w, wt = leaves
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        xt.add_(wt)
    with pytest.raises(AutogradError, match="leaf Variable that requires grad"):
        x.add_(w)
    assert x._version == 0


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
