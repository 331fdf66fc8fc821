"""Grad modes, inference mode, hooks, retain_grad, requires_grad_, .data, saved-tensor
checks, anomaly detection and the graph drawing."""
import threading
import warnings

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.dispatch.keys import AUTOGRAD_MASK


def close(a, b):
    a = np.asarray(a.detach()) if hasattr(a, "_impl") else np.asarray(a)
    b = b.detach().numpy() if isinstance(b, torch.Tensor) else np.asarray(b)
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-9)


# ---- grad modes --------------------------------------------------------------------------
def test_no_grad_and_enable_grad_as_context_managers():
    x = tp.ones(2, requires_grad=True)
    with tp.no_grad():
        y = x * 2
        assert not tp.is_grad_enabled()
        with tp.enable_grad():
            z = x * 2
    assert tp.is_grad_enabled()
    assert y.grad_fn is None and not y.requires_grad
    assert z.grad_fn is not None and z.requires_grad


def test_modes_as_decorators():
    x = tp.ones(2, requires_grad=True)

    @tp.no_grad()
    def frozen(t):
        return t * 2

    @tp.enable_grad()
    def tracked(t):
        return t * 2

    @tp.set_grad_enabled(False)
    def switched_off(t):
        return t * 2

    assert tp.is_grad_enabled()            # decorating did not switch anything
    assert not frozen(x).requires_grad
    assert not switched_off(x).requires_grad
    with tp.no_grad():
        assert tracked(x).requires_grad
    assert frozen.__name__ == "frozen"


def test_decorated_generator_runs_only_its_steps_in_the_mode():
    @tp.no_grad()
    def gen():
        for _ in range(2):
            yield tp.is_grad_enabled()

    it = gen()
    assert next(it) is False
    assert tp.is_grad_enabled()            # the caller's code between steps is unaffected
    assert next(it) is False


def test_set_grad_enabled_as_call_and_context_manager():
    x = tp.ones(2, requires_grad=True)
    with tp.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert tp.is_grad_enabled()
    tp.set_grad_enabled(False)
    try:
        assert not tp.is_grad_enabled()
    finally:
        tp.set_grad_enabled(True)
    assert (x * 2).requires_grad


def test_grad_mode_is_thread_local():
    seen = {}

    def worker():
        x = tp.ones(2, requires_grad=True)
        seen["enabled"] = tp.is_grad_enabled()
        seen["recorded"] = (x * 2).requires_grad

    with tp.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert not tp.is_grad_enabled()
    assert seen == {"enabled": True, "recorded": True}


# ---- inference mode ----------------------------------------------------------------------
def test_inference_mode_makes_inference_tensors():
    x = tp.ones(3, requires_grad=True)
    with tp.inference_mode():
        assert tp.is_inference_mode_enabled() and not tp.is_grad_enabled()
        y = x * 2
        z = tp.zeros(3)
        z.add_(1)
        assert z._version == 0                 # no version counter bumps
    assert not tp.is_inference_mode_enabled() and tp.is_grad_enabled()
    assert y.grad_fn is None and not y.requires_grad
    assert y.is_inference() and z.is_inference() and not x.is_inference()
    assert y._impl.key_set() & AUTOGRAD_MASK == 0
    assert x._impl.key_set() & AUTOGRAD_MASK != 0


def test_inference_tensor_cannot_be_saved_for_backward():
    with tp.inference_mode():
        y = tp.ones(3)
    x = tp.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        x * y
    (x * y.clone()).sum().backward()           # a clone is a normal tensor
    close(x.grad, np.ones(3))
    with pytest.raises(RuntimeError, match="Setting requires_grad=True on inference tensor "
                                           "outside InferenceMode is not allowed"):
        y.requires_grad_()


def test_inference_mode_decorator_and_nested_false():
    @tp.inference_mode()
    def run():
        a = tp.ones(2)
        with tp.inference_mode(False):
            assert tp.is_grad_enabled() and not tp.is_inference_mode_enabled()
            b = tp.ones(2)
        return a, b

    a, b = run()
    assert a.is_inference() and not b.is_inference()


# ---- requires_grad, .data ----------------------------------------------------------------
def test_requires_grad_rules():
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require "
                                           "gradients"):
        tp.ones(2, dtype=tp.int64).requires_grad_()
    x = tp.ones(2, requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf "
                                           "variables"):
        y.requires_grad_(False)
    y.requires_grad_(True)                     # already true: allowed
    x.requires_grad = False
    assert not (x * 2).requires_grad


def test_set_data_keeps_autograd_identity():
    x = tp.ones(2, requires_grad=True)
    x.data = tp.tensor([3.0, 4.0, 5.0])
    assert x.requires_grad and x.is_leaf and x.tolist() == [3.0, 4.0, 5.0]
    (x * x).sum().backward()
    close(x.grad, [6.0, 8.0, 10.0])


# ---- hooks and retain_grad ---------------------------------------------------------------
def test_tensor_hooks_replace_gradients_like_torch():
    results = []
    for lib in (tp, torch):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        x.register_hook(lambda g: g * 2)
        y = x * x
        y.register_hook(lambda g: g + 1)
        seen = []
        y.register_hook(lambda g: seen.append(g.tolist()))
        (y * 3).sum().backward()
        results.append((x.grad, seen))
    close(results[0][0], results[1][0])
    assert results[0][1] == results[1][1] == [[4.0, 4.0, 4.0]]


def test_hook_handle_remove_and_errors():
    x = tp.ones(2, requires_grad=True)
    handle = x.register_hook(lambda g: g * 100)
    handle.remove()
    (x * 1).sum().backward()
    close(x.grad, [1.0, 1.0])
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't "
                                           "require gradient"):
        tp.ones(2).register_hook(lambda g: g)


def test_hook_on_a_deleted_intermediate_still_fires():
    x = tp.ones(2, requires_grad=True)
    seen = []
    y = x * 2
    y.register_hook(lambda g: seen.append(g.tolist()))
    z = (y * 5).sum()
    del y
    z.backward()
    assert seen == [[5.0, 5.0]]


def test_retain_grad_matches_torch():
    out = []
    for lib in (tp, torch):
        x = lib.tensor([0.5, -1.0], requires_grad=True)
        h = x.tanh()
        h.retain_grad()
        k = h * h
        k.retain_grad()
        k.sum().backward()
        x.retain_grad()                        # a no-op on a leaf
        assert h.retains_grad and x.grad is not None
        out.append((h.grad, k.grad))
    close(out[0][0], out[1][0])
    close(out[0][1], out[1][1])
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has "
                                           "requires_grad=False"):
        tp.ones(2).retain_grad()


def test_retain_grad_follows_an_inplace_change():
    out = []
    for lib in (tp, torch):
        x = lib.tensor([0.5, -1.0], requires_grad=True)
        h = x * 3
        h.retain_grad()
        h.mul_(2)
        (h * h).sum().backward()
        out.append(h.grad)
    close(out[0], out[1])


# ---- saved tensors -----------------------------------------------------------------------
def test_version_counter_error_message():
    x = tp.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    z = y * y                                   # saves y (version 0)
    y.add_(tp.ones(3))
    with pytest.raises(RuntimeError) as info:
        z.sum().backward()
    assert str(info.value).startswith(
        "one of the variables needed for gradient computation has been modified by an "
        "inplace operation: [tensorplay.FloatTensor [3]], which is output 0 of AddBackward0, "
        "is at version 1; expected version 0 instead. Hint: enable anomaly detection")


def test_saved_output_is_rebuilt_with_its_node_as_grad_fn():
    x = tp.tensor([0.1, 0.2], requires_grad=True)
    y = x.tanh()
    saved = y.grad_fn._saved_result
    assert saved.grad_fn is y.grad_fn
    close(saved, y)


# ---- anomaly mode ------------------------------------------------------------------------
def test_anomaly_mode_names_the_op_that_produced_nan():
    x = tp.zeros(1, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tp.autograd.detect_anomaly():
            y = x / x                           # the line the forward stack must show
            with pytest.raises(RuntimeError, match=r"Function 'DivBackward0' \(backward of "
                                                   r"div.Tensor\) returned nan values in its "
                                                   r"\d+th output."):
                y.sum().backward()
    texts = [str(w.message) for w in caught]
    trace = [t for t in texts if t.startswith("Error detected in DivBackward0")]
    assert trace and "y = x / x" in trace[0]
    assert not tp.autograd.is_anomaly_enabled()


def test_without_anomaly_mode_nan_passes_silently():
    x = tp.zeros(1, requires_grad=True)
    (x / x).sum().backward()
    assert np.isnan(np.asarray(x.grad)).all()


# ---- drawing -----------------------------------------------------------------------------
def test_to_dot_shows_nodes_saved_shapes_and_leaves():
    w = tp.ones(2, 3, requires_grad=True)
    x = tp.ones(3)
    loss = (w * x).tanh().sum()
    dot = tp.autograd.graph.to_dot(loss, params={"w": w})
    assert dot.startswith("digraph backward {")
    for text in ("SumBackward0", "TanhBackward0", "MulBackward0", "(mul.Tensor)",
                 "other: [3] float32", "result: [2, 3] float32", "w\\n[2, 3] float32"):
        assert text in dot, text
    assert dot.count("->") == 4


def test_render_needs_graphviz():
    pytest.importorskip("graphviz")
    out = tp.autograd.graph.render((tp.ones(2, requires_grad=True) * 2).sum())
    assert out.lstrip().startswith(b"<")


def test_anomaly_mode_reports_an_exception_in_a_backward_and_restores_itself():
    class Broken(tp.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            raise ValueError("broken backward")

    @tp.autograd.detect_anomaly()
    def run():
        y = Broken.apply(tp.ones(2, requires_grad=True))   # the forward line to report
        y.sum().backward()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match="broken backward"):
            run()
    texts = [str(w.message) for w in caught]
    assert any(t.startswith("Error detected in BrokenBackward") and "Broken.apply" in t
               for t in texts)
    with tp.autograd.set_detect_anomaly(True):
        assert tp.autograd.is_anomaly_enabled()
    assert not tp.autograd.is_anomaly_enabled()


def test_grad_runs_hooks_and_retain_grad_like_torch():
    results = []
    for lib in (tp, torch):
        x = lib.ones(2, requires_grad=True)
        x.register_hook(lambda g: g * 2)
        h = x * 1
        h.retain_grad()
        (g,) = lib.autograd.grad((h * 3).sum(), x)
        results.append((g, h.grad, x.grad))
    close(results[0][0], results[1][0])
    close(results[0][1], results[1][1])
    assert results[0][2] is None and results[1][2] is None
