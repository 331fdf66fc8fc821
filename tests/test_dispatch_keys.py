"""The dispatch key set a call is dispatched on: the thread's masks, the key set kept on
each impl with its REQUIRES_GRAD flag, and the autograd slot the dispatch loop passes
over when nothing needs a gradient.

- `ExcludeKeys` and `IncludeKeys` read and restore only their own mask, also when the
  call inside raises.
- An impl keeps its key set (`_impl.keys`); it follows device and inference changes, and
  a result or a view gets the key set its impl would compute.
- The REQUIRES_GRAD flag is in `_impl.keys` exactly while the tensor requires grad: a
  leaf made so, `requires_grad_()`, `set_requires_grad`, a result with a history,
  `detach`, a Parameter, and a view, which reads it through its base (also a view made
  before its base came to require grad, by `requires_grad_()` or by an in-place op with
  a tensor that requires grad).
- Grad mode off removes the flag through the thread's masks (`masks[2]`): `no_grad`,
  `set_grad_enabled` (as a plain call too), `inference_mode` and the engine (grad mode
  is `create_graph` during a backward pass) keep `masks[2]` in step with
  `grad_state.enabled`.
- Without the flag the loop passes over a generated autograd wrapper (`records_only`):
  the wrapper never runs, explain() reports the skip, the profiler sees the backend key
  only; a kernel registered at an autograd key by hand keeps its hop.

Each is set against PyTorch where it shows in results or gradients. No timings here:
benchmarks/bench_add_overhead.py measures the speed.
"""
import sys

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay._device import device
from tensorplay._generated import autograd_wrappers
from tensorplay._impl import PLAIN_KEYS
from tensorplay.dispatch import DispatchKey, explain
from tensorplay.dispatch.dispatcher import OpSchema, dispatcher
from tensorplay.dispatch.keys import AUTOGRAD_MASK, KEYS_MASK, REQUIRES_GRAD
from tensorplay.dispatch.tls import (
    ExcludeKeys, IncludeKeys, grad_state, local_keys, set_grad_mode,
)
from tensorplay.errors import ShapeError


AUTOGRAD_CPU = 1 << DispatchKey.AutogradCPU


# ---- thread-local key sets -----------------------------------------------------------
def test_guards_read_and_restore_only_their_own_mask():
    assert local_keys.snapshot() == (0, 0) and local_keys.masks == [0, 0, 0]
    with ExcludeKeys(1 << DispatchKey.AutogradCPU):
        local_keys.included = 1 << DispatchKey.VmapMode     # set inside, not by a guard
        assert local_keys.snapshot() == (1 << DispatchKey.VmapMode,
                                         1 << DispatchKey.AutogradCPU)
    assert local_keys.snapshot() == (1 << DispatchKey.VmapMode, 0)   # the include stays
    local_keys.included = 0
    with IncludeKeys(1 << DispatchKey.VmapMode):
        with ExcludeKeys(1 << DispatchKey.CPU):
            assert local_keys.included == 1 << DispatchKey.VmapMode
            assert local_keys.excluded == 1 << DispatchKey.CPU
        assert local_keys.excluded == 0
    assert local_keys.masks == [0, 0, 0]


def test_a_raising_recorded_op_restores_the_excluded_keys():
    a = tp.ones(3, requires_grad=True)
    with pytest.raises(ShapeError):
        tp.add(a, tp.ones(4))
    assert local_keys.masks == [0, 0, 0]
    assert tp.add(a, tp.ones(3)).grad_fn is not None


# ---- key sets cached on the impl -----------------------------------------------------
def test_cached_key_set_follows_device_and_inference_changes():
    t = tp.ones(2)
    cpu_keys = (1 << DispatchKey.CPU) | (1 << DispatchKey.AutogradCPU)
    assert t._impl.keys == t._impl.key_set() == cpu_keys
    t._impl.device = device("meta")
    assert t._impl.keys == (1 << DispatchKey.Meta) | (1 << DispatchKey.AutogradMeta)
    t._impl.device = device("cpu")
    t._impl.inference = True
    assert t._impl.keys == 1 << DispatchKey.CPU
    with tp.inference_mode():
        assert tp.ones(1)._impl.keys == 1 << DispatchKey.CPU


def test_moving_a_parameter_with_data_refreshes_its_keys():
    p = tp.nn.Parameter(tp.ones(2))
    p.data = tp.empty(2, device="meta")
    assert p._impl.keys == (1 << DispatchKey.Meta) | (1 << DispatchKey.AutogradMeta) \
        | REQUIRES_GRAD                                 # a parameter still requires grad
    assert (p * 2).device.type == "meta"


def test_results_get_the_key_set_their_impl_would_compute():
    for t in (tp.ones(2) + 1, tp.ones(2, device="meta") * 2, tp.ones(4, 4)[1],
              tp.ones(4).view(2, 2)):
        assert t._impl.keys == t._impl.key_set()
    with tp.inference_mode():
        t = tp.ones(2) + 1
    assert t._impl.keys == t._impl.key_set() == PLAIN_KEYS[True][DispatchKey.CPU]


# ---- the REQUIRES_GRAD flag ----------------------------------------------------------
def flag_follows(*tensors):
    """Each tensor's key set has the REQUIRES_GRAD flag exactly while it requires grad,
    and its keys are otherwise those its impl computes."""
    for t in tensors:
        impl = t._impl
        assert bool(impl.keys & REQUIRES_GRAD) == t.requires_grad, t
        assert impl.keys & KEYS_MASK == impl.key_set()


def test_the_flag_is_in_the_key_set_exactly_while_a_tensor_requires_grad():
    for lib in (tp, torch):
        x = lib.ones(2, requires_grad=True)
        y = lib.tensor([1.0, 2.0], requires_grad=True)
        z = lib.ones(2)
        r = x * 2
        cases = [x, y, z, r, r.detach(), x.detach(), z + 1, r.sum(), x.clone(), x.double(),
                 lib.nn.Parameter(lib.ones(2)),
                 lib.nn.Parameter(lib.ones(2), requires_grad=False)]
        if lib is tp:
            ours = cases
            flag_follows(*cases)
        else:
            assert [t.requires_grad for t in ours] == [t.requires_grad for t in cases]
    plain = tp.ones(2)
    plain.requires_grad_()
    flag_follows(plain)
    assert plain.requires_grad and plain._impl.keys & REQUIRES_GRAD
    plain.requires_grad_(False)
    flag_follows(plain)
    assert not plain._impl.keys & REQUIRES_GRAD
    plain._impl.set_requires_grad(True)
    assert plain.requires_grad and plain._impl.keys & REQUIRES_GRAD
    plain._impl.set_requires_grad(False)
    assert not plain.requires_grad and not plain._impl.keys & REQUIRES_GRAD
    r = tp.ones(2, requires_grad=True) * 2
    r.detach_()                                   # in place: the flag goes with the history
    flag_follows(r)
    assert not r.requires_grad and r.grad_fn is None


def test_the_flag_survives_device_and_inference_changes():
    t = tp.ones(2, requires_grad=True)
    t._impl.device = device("meta")
    assert t._impl.keys == (1 << DispatchKey.Meta) | (1 << DispatchKey.AutogradMeta) \
        | REQUIRES_GRAD
    t._impl.device = device("cpu")
    flag_follows(t)
    t._impl.inference = True
    assert t._impl.keys == (1 << DispatchKey.CPU) | REQUIRES_GRAD
    t._impl.inference = False
    flag_follows(t)


def test_a_view_reads_the_flag_through_its_base():
    x = tp.ones(2, 3, requires_grad=True)
    views = [x[0], x.view(6), x.t(), x[0].view(3, 1)]
    with tp.no_grad():
        views.append(x[1])                      # made in no_grad: requires grad by its base
    flag_follows(*views)
    assert all(v.requires_grad for v in views)
    assert not x[0].detach()._impl.keys & REQUIRES_GRAD
    plain = tp.ones(3)
    v = plain[1:]
    v.requires_grad_()                          # a view's own flag
    flag_follows(v, plain)
    assert v._impl.keys & REQUIRES_GRAD and not plain._impl.keys & REQUIRES_GRAD
    assert type((v * 2).grad_fn).__name__ == "MulBackward0"


def test_a_view_made_before_its_base_requires_grad_takes_the_flag_like_torch():
    results = {}
    for lib in (tp, torch):
        base = lib.zeros(3)
        v = base[1:]
        assert not v.requires_grad
        if lib is tp:
            assert not v._impl.keys & REQUIRES_GRAD
        base.requires_grad_()
        if lib is tp:
            flag_follows(v)
        y = (v * 2).sum()              # recorded: v requires grad through its base ...
        y.backward()                   # ... but no gradient flows from a view with no history
        results[lib] = (v.requires_grad, v.grad_fn is None, y.requires_grad,
                        base.grad is None, v.grad is None)
    assert results[tp] == results[torch] == (True, True, True, True, True)


def test_an_in_place_op_gives_an_existing_view_of_its_base_the_flag_like_torch():
    """`b.add_(w)` with w requiring grad: b now has a history, and a view of b made
    before it requires grad from then on, so an op on the view records (the loop must
    not pass over its wrapper) and the gradient reaches w."""
    grads = {}
    for lib in (tp, torch):
        b = lib.zeros(3)
        v = b[1:]
        w = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        if lib is tp:
            assert not v._impl.keys & REQUIRES_GRAD
        b.add_(w)
        assert v.requires_grad and v.grad_fn is not None
        if lib is tp:
            flag_follows(v, b)
            out, seen = wrapper_calls(lambda: v * 10)
            assert seen == ["mul_Tensor"]
        (v * 10).sum().backward()
        grads[lib] = w.grad.tolist()
    assert grads[tp] == grads[torch] == [0.0, 10.0, 10.0]


# ---- grad mode: the thread's third mask ----------------------------------------------
def grad_mode_in_step(enabled):
    """Grad mode is `enabled`, and the dispatcher's view of it (`masks[2]`) agrees."""
    assert grad_state.enabled is enabled and tp.is_grad_enabled() is enabled
    assert local_keys.masks[2] == (0 if enabled else REQUIRES_GRAD)


def test_no_grad_and_enable_grad_keep_the_mask_in_step():
    grad_mode_in_step(True)
    with tp.no_grad():
        grad_mode_in_step(False)
        with tp.enable_grad():
            grad_mode_in_step(True)
        grad_mode_in_step(False)
    grad_mode_in_step(True)

    @tp.no_grad()
    def decorated():
        grad_mode_in_step(False)
        return tp.ones(2, requires_grad=True) * 2
    assert not decorated().requires_grad
    grad_mode_in_step(True)
    with pytest.raises(ValueError):
        with tp.no_grad():
            raise ValueError
    grad_mode_in_step(True)


def test_set_grad_enabled_as_a_call_a_context_and_a_decorator():
    x = tp.ones(2, requires_grad=True)
    try:
        tp.set_grad_enabled(False)              # a plain call switches at once
        grad_mode_in_step(False)
        assert (x * 2).grad_fn is None
        tp.set_grad_enabled(True)
        grad_mode_in_step(True)
        assert (x * 2).grad_fn is not None
    finally:
        set_grad_mode(True)
    with tp.set_grad_enabled(False):
        grad_mode_in_step(False)
        with tp.set_grad_enabled(True):
            grad_mode_in_step(True)
        grad_mode_in_step(False)
    grad_mode_in_step(True)
    off = tp.set_grad_enabled(False)(lambda: (grad_mode_in_step(False), x * 2)[1])
    grad_mode_in_step(True)                     # decorating does not switch
    assert off().grad_fn is None
    grad_mode_in_step(True)


def test_set_grad_mode_returns_the_mode_it_replaces():
    try:
        assert set_grad_mode(False) is True
        grad_mode_in_step(False)
        assert set_grad_mode(False) is False
        assert set_grad_mode(True) is False
        grad_mode_in_step(True)
    finally:
        set_grad_mode(True)


def test_inference_mode_keeps_the_mask_in_step_and_excludes_autograd():
    with tp.inference_mode():
        grad_mode_in_step(False)
        assert local_keys.excluded & AUTOGRAD_MASK == AUTOGRAD_MASK
        with tp.inference_mode(False):
            grad_mode_in_step(True)
            assert not local_keys.excluded & AUTOGRAD_MASK
            assert (tp.ones(2, requires_grad=True) * 2).grad_fn is not None
        grad_mode_in_step(False)
    grad_mode_in_step(True)
    assert local_keys.masks == [0, 0, 0]


@pytest.mark.filterwarnings(r"ignore:Using backward\(\) with create_graph")
@pytest.mark.parametrize("create_graph", [False, True])
def test_backward_runs_in_the_grad_mode_of_create_graph(create_graph):
    seen = []
    for lib in (tp, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * x

        def hook(g, lib=lib):
            if lib is tp:
                grad_mode_in_step(create_graph)
            seen.append((lib.is_grad_enabled(), (g * x).requires_grad))
        y.register_hook(hook)
        y.sum().backward(create_graph=create_graph)
        if lib is tp:
            grad_mode_in_step(True)
        assert x.grad.requires_grad is create_graph
    assert seen[0] == seen[1] == (create_graph, create_graph)


def test_a_backward_pass_that_raises_restores_grad_mode():
    x = tp.ones(2, requires_grad=True)
    y = x * 2

    def boom(g):
        grad_mode_in_step(False)
        raise ValueError("boom")
    y.register_hook(boom)
    with pytest.raises(ValueError, match="boom"):
        y.sum().backward()
    grad_mode_in_step(True)
    with tp.no_grad():
        z = tp.ones(2, requires_grad=True) * 2
        with tp.enable_grad():
            (z.requires_grad_() * 2).sum().backward()
        grad_mode_in_step(False)        # the pass restores the mode it found
    grad_mode_in_step(True)


def test_grad_mode_and_its_mask_are_per_thread():
    import threading
    seen = {}
    ready, done = threading.Event(), threading.Event()

    def worker():
        with tp.no_grad():
            ready.set()
            done.wait(5)
            seen["worker"] = (grad_state.enabled, list(local_keys.masks))
        seen["after"] = (grad_state.enabled, list(local_keys.masks))
    t = threading.Thread(target=worker)
    t.start()
    ready.wait(5)
    grad_mode_in_step(True)                  # the worker's no_grad is its own
    assert (tp.ones(2, requires_grad=True) * 2).grad_fn is not None
    done.set()
    t.join()
    assert seen["worker"] == (False, [0, 0, REQUIRES_GRAD])
    assert seen["after"] == (True, [0, 0, 0])


# ---- the autograd slot passed over when nothing requires grad ------------------------
def wrapper_calls(fn):
    """Run fn(); return its result and the names of the generated autograd wrappers it
    entered (seen with sys.setprofile, so nothing is patched)."""
    wrappers = {f.__code__: name for name, f in vars(autograd_wrappers).items()
                if callable(f) and getattr(f, "records_only", False)}
    assert len(wrappers) > 100
    seen = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code in wrappers:
            seen.append(wrappers[frame.f_code])
    sys.setprofile(profile)
    try:
        out = fn()
    finally:
        sys.setprofile(None)
    return out, seen


def test_a_call_with_nothing_to_record_skips_the_wrapper_and_computes_the_same():
    a_np, b_np = np.float32([1.5, -2.0]), np.float32([0.25, 4.0])
    a, b = tp.from_numpy(a_np.copy()), tp.from_numpy(b_np.copy())
    out, seen = wrapper_calls(lambda: (tp.add(a, b, alpha=2), a * b, a.sub_(b), a.view(2, 1)))
    assert seen == []
    want = torch.add(torch.from_numpy(a_np), torch.from_numpy(b_np), alpha=2)
    np.testing.assert_array_equal(out[0].numpy(), want.numpy())
    assert out[1].grad_fn is None and out[3].grad_fn is None


def test_an_input_that_requires_grad_still_runs_the_wrapper():
    a, b = tp.ones(2, requires_grad=True), tp.ones(2)
    out, seen = wrapper_calls(lambda: tp.add(b, a))     # the second input decides too
    assert seen == ["add_Tensor"]
    assert type(out.grad_fn).__name__ == "AddBackward0"
    out, seen = wrapper_calls(lambda: a.view(2, 1))
    assert seen == ["view"] and out.grad_fn is not None
    # a view of a tensor that requires grad requires grad (ViewImpl's property)
    v = a.view(2)
    _, seen = wrapper_calls(lambda: v.view(1, 2))
    assert seen == ["view"]


def test_grad_mode_off_never_runs_the_wrapper():
    a, at = tp.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    modes = [(tp.no_grad, torch.no_grad), (tp.inference_mode, torch.inference_mode),
             (lambda: tp.set_grad_enabled(False), lambda: torch.set_grad_enabled(False))]
    for mode, torch_mode in modes:
        with mode():
            out, seen = wrapper_calls(lambda: (a * 2, a.view(2, 1), tp.add(a, a)))
        with torch_mode():
            out_t = (at * 2, at.view(2, 1), torch.add(at, at))
        assert seen == [] and all(o.grad_fn is None for o in out)
        # (a view made in no_grad mode requires grad through its base, as in PyTorch)
        assert [o.requires_grad for o in out] == [o.requires_grad for o in out_t]


def test_no_grad_skips_the_graph_even_when_an_input_requires_grad():
    a = tp.ones(2, requires_grad=True)
    with tp.no_grad():
        y = tp.add(a, a)
    assert y.grad_fn is None and not y.requires_grad
    z = tp.add(a, tp.ones(2))
    assert type(z.grad_fn).__name__ == "AddBackward0"
    assert z.grad_fn.next_functions[1] == (None, 0)


def test_an_optional_tensor_input_is_tested_when_given():
    x, lo = tp.zeros(3), tp.full((3,), 0.5, requires_grad=True)
    out, seen = wrapper_calls(lambda: tp.clamp(x, lo, None))
    assert seen == ["clamp_Tensor"] and out.grad_fn is not None
    out, seen = wrapper_calls(lambda: tp.clamp(x, tp.zeros(3), None))
    assert seen == []


SKIP_HOP = "skip      AutogradCPU: no tensor requires grad, nothing to record, fall through"


def test_explain_says_grad_mode_removed_the_flag():
    a, b = tp.ones(1, requires_grad=True), tp.ones(1)
    with tp.no_grad(), explain(file=False) as ex:
        out = tp.add(a, b)
    assert not out.requires_grad
    lines = [line.strip() for line in ex.text.splitlines()]
    assert lines[1] == ("key set   {AutogradCPU, CPU} = given {AutogradCPU, CPU} requires_grad "
                        "| included {} - excluded {} - requires_grad (grad mode is off)")
    assert lines[2] == ("skip      AutogradCPU: grad mode is off, nothing to record, "
                        "fall through")


def test_explain_reports_the_skip_and_the_profiler_sees_the_backend_only():
    a, b = tp.ones(1), tp.ones(1)
    with explain(file=False) as ex:
        tp.add(a, b)
    lines = [line.strip() for line in ex.text.splitlines()]
    assert lines[0] == "add.Tensor(float32[1], float32[1], 1)"
    assert lines[1] == ("key set   {AutogradCPU, CPU} = given {AutogradCPU, CPU} | "
                        "included {} - excluded {}")
    assert lines[2] == SKIP_HOP
    assert lines[3] == "dispatch  CPU -> kernel registry (1 candidate)"
    assert "autograd_wrappers" not in ex.text and "tls" not in ex.text   # no wrapper hop
    assert ex.text.count("add.Tensor(") == 1
    # the call hop names the front door, also when a profiler's hook is on the way
    with explain(file=False, records=True) as ex, tp.profiler.profile() as prof:
        tp.add(a, b)
    first = ex.records[0]
    assert "_generated/functional.py" in first.where and "add" in first.where
    assert SKIP_HOP in ex.text
    assert [e.keys for e in prof.events if e.name == "add.Tensor"] == [["CPU"]]


def test_explain_shows_the_wrapper_hop_when_a_tensor_requires_grad():
    g, b = tp.ones(1, requires_grad=True), tp.ones(1)
    with explain(file=False) as ex, tp.profiler.profile() as prof:
        tp.add(g, b)
    assert "dispatch  AutogradCPU -> tensorplay._generated.autograd_wrappers.add_Tensor" \
        in ex.text
    assert "key set   {AutogradCPU, CPU} requires_grad = given {AutogradCPU, CPU} " \
        "requires_grad" in ex.text
    assert "skip" not in ex.text and ex.text.count("add.Tensor(") == 2
    # (one op event per call from outside: the wrapper's call below autograd is in it)
    assert [e.keys for e in prof.events if e.name == "add.Tensor"] == [["AutogradCPU", "CPU"]]


def test_explain_in_no_grad_shows_the_flag_dropped_and_the_skip():
    g, b = tp.ones(1, requires_grad=True), tp.ones(1)
    with tp.no_grad(), explain(file=False) as ex:
        y = tp.add(g, b)
    assert "key set   {AutogradCPU, CPU} = given {AutogradCPU, CPU} requires_grad" in ex.text
    assert "skip      AutogradCPU:" in ex.text and "autograd_wrappers" not in ex.text
    assert y.grad_fn is None


def test_a_kernel_registered_at_an_autograd_key_keeps_its_hop():
    """A hand-written autograd kernel is not a generated wrapper: it runs whether or not
    anything requires grad, as PyTorch's kernels at an Autograd key do."""
    name = "test.autograd_by_hand"
    op = dispatcher.define(OpSchema(name, f"{name}(Tensor self)", ("self",), (0,)))
    tp.library.Library("CPU", "TestByHandCPU").impl(name, lambda self: "cpu", name="cpu")
    plain = tp.ones(1)
    assert op.call(plain._impl.keys, plain) == "cpu"       # nothing at AutogradCPU
    tp.library.Library("AutogradCPU", "TestByHand").impl(
        name, lambda ks, self: "by hand", name="by_hand")
    assert op.call(plain._impl.keys, plain) == "by hand"
    with tp.no_grad():
        assert op.call(plain._impl.keys, plain) == "by hand"
    with explain(file=False) as ex:
        op.call(plain._impl.keys, plain)
    assert "dispatch  AutogradCPU -> by_hand" in ex.text and "skip" not in ex.text
