"""The dispatch key set a call is dispatched on: the thread-local include/exclude masks,
the key set cached on each impl, and the autograd key a front door skips when nothing
needs a gradient.

- `ExcludeKeys` and `IncludeKeys` read and restore only their own mask, also when the
  call inside raises.
- An impl caches its key set (`_impl.keys`); it follows device and inference changes, and
  a result or a view gets the key set its impl would compute.
- A front door skips the autograd wrapper's hop when no input requires grad or grad mode
  is off: `OperatorHandle.no_grad_keys` clears only the autograd slots that would only
  redispatch (a Composite decomposition above autograd, a sparse kernel and a kernel
  registered at an autograd key keep theirs); explain() and the profiler still see the hop.

Each shortcut is set against the path it replaces on the cases where the two could
differ. No timings here: benchmarks/bench_add_overhead.py measures the speed.
"""
import sys

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay._device import device
from tensorplay._generated import autograd_wrappers, ops
from tensorplay._impl import PLAIN_KEYS
from tensorplay.dispatch import DispatchKey, explain
from tensorplay.dispatch.dispatcher import FALLTHROUGH, OpSchema, dispatcher
from tensorplay.dispatch.keys import AUTOGRAD_OFFSET, NUM_BACKENDS
from tensorplay.dispatch.tls import ExcludeKeys, IncludeKeys, local_keys
from tensorplay.errors import ShapeError


AUTOGRAD_CPU = 1 << DispatchKey.AutogradCPU


# ---- thread-local key sets -----------------------------------------------------------
def test_guards_read_and_restore_only_their_own_mask():
    assert local_keys.masks == (0, 0)
    with ExcludeKeys(1 << DispatchKey.AutogradCPU):
        local_keys.included = 1 << DispatchKey.VmapMode     # set inside, not by a guard
        assert local_keys.masks == (1 << DispatchKey.VmapMode, 1 << DispatchKey.AutogradCPU)
    assert local_keys.masks == (1 << DispatchKey.VmapMode, 0)   # the include stays
    local_keys.included = 0
    with IncludeKeys(1 << DispatchKey.VmapMode):
        with ExcludeKeys(1 << DispatchKey.CPU):
            assert local_keys.included == 1 << DispatchKey.VmapMode
            assert local_keys.excluded == 1 << DispatchKey.CPU
        assert local_keys.excluded == 0
    assert local_keys.masks == (0, 0)


def test_a_raising_recorded_op_restores_the_excluded_keys():
    a = tp.ones(3, requires_grad=True)
    with pytest.raises(ShapeError):
        tp.add(a, tp.ones(4))
    assert local_keys.masks == (0, 0)
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
    assert p._impl.keys == (1 << DispatchKey.Meta) | (1 << DispatchKey.AutogradMeta)
    assert (p * 2).device.type == "meta"


def test_results_get_the_key_set_their_impl_would_compute():
    for t in (tp.ones(2) + 1, tp.ones(2, device="meta") * 2, tp.ones(4, 4)[1],
              tp.ones(4).view(2, 2)):
        assert t._impl.keys == t._impl.key_set()
    with tp.inference_mode():
        t = tp.ones(2) + 1
    assert t._impl.keys == t._impl.key_set() == PLAIN_KEYS[True][DispatchKey.CPU]


# ---- the skipped autograd hop --------------------------------------------------------
def wrapper_calls(fn):
    """Run fn(); return its result and the names of the generated autograd wrappers it
    entered (seen with sys.setprofile, so nothing is patched)."""
    wrappers = {f.__code__: name for name, f in vars(autograd_wrappers).items()
                if callable(f) and getattr(f, "redispatches_without_grad", False)}
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


def test_grad_mode_off_skips_the_wrapper_as_its_own_test_would():
    a = tp.ones(2, requires_grad=True)
    with tp.no_grad():
        out, seen = wrapper_calls(lambda: a * 2)
    assert seen == [] and out.grad_fn is None and not out.requires_grad


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


def test_explain_and_the_profiler_still_see_the_autograd_hop():
    a, b = tp.ones(1), tp.ones(1)
    with explain(file=False) as ex:
        tp.add(a, b)
    assert "dispatch  AutogradCPU -> tensorplay._generated.autograd_wrappers.add_Tensor" \
        in ex.text
    # the call hop names the front door, also when a profiler's hook is on the way
    with explain(file=False, records=True) as ex, tp.profiler.profile():
        tp.add(a, b)
    first = ex.records[0]
    assert "_generated/functional.py" in first.where and "add" in first.where
    assert "dispatch  AutogradCPU" in ex.text


def test_no_grad_keys_clear_only_slots_that_would_only_redispatch():
    every_autograd_key = sum(1 << k for k in range(AUTOGRAD_OFFSET,
                                                   AUTOGRAD_OFFSET + NUM_BACKENDS))
    kept = {}
    for handle in dispatcher.ops.values():
        for k in range(AUTOGRAD_OFFSET, AUTOGRAD_OFFSET + NUM_BACKENDS):
            slot = handle.resolved[k]
            cleared = not handle.no_grad_keys >> k & 1
            skippable = slot is FALLTHROUGH or \
                getattr(slot, "redispatches_without_grad", False)
            assert cleared == skippable, (handle.name, DispatchKey(k).name)
            if not skippable:
                kept.setdefault(DispatchKey(k).name, handle.name)
        assert handle.no_grad_keys | every_autograd_key == -1     # nothing else cleared
    # a Composite decomposition run above autograd and a sparse kernel keep their keys
    assert "AutogradCPU" in kept and "AutogradSparse" in kept
    assert not ops.add_Tensor.no_grad_keys & AUTOGRAD_CPU


def test_a_kernel_registered_at_an_autograd_key_keeps_its_hop():
    name = "test.fastpath_skip_autograd"
    op = dispatcher.define(OpSchema(name, f"{name}(Tensor self)", ("self",), (0,)))
    assert not op.no_grad_keys & AUTOGRAD_CPU           # nothing there yet: skippable
    tp.library.Library("AutogradCPU", "TestFastpathSkip").impl(
        name, lambda ks, self: "by hand", name="by_hand")
    assert op.no_grad_keys & AUTOGRAD_CPU
