"""Where a call goes: the dispatcher's entry (`OperatorHandle.call`), the memo of its
dispatch loop (`OperatorHandle.routes`, dispatch/dispatcher.py), the kernel registry's
lone kernel, and the front door's shortcut for a lone tensor.

Unobserved, `call` applies the thread's masks to the key set and calls what the dispatch
loop (`OperatorHandle.walk`) ends at for it, kept in `routes`; while explain() or a
profiler listens it takes `dispatch`, the same loop reporting each step. Each test runs
the same calls both ways and compares both with PyTorch.

- The memo and the watched loop end at the same slot for every op and key set, the one
  the dispatch policy names (the highest key with something to run; an autograd slot
  that only records is passed over when no tensor requires grad).
- The kernel registry hands the dispatcher a lone unconstrained kernel itself (wrapped
  to bump versions for an in-place op); several candidates or a constrained one keep the
  registry, which hands a call over down its candidates. explain() shows the same hops.
- A front door with several overloads sends a lone tensor (`x.sum()`) to the first
  overload with its defaults (MATCHED_FIRST in gen_functional.py), skipping the matcher
  loop: exactly what the loop binds.

No timings here: benchmarks/bench_add_overhead.py measures the speed.
"""
import contextlib
import itertools
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
import torch

import tensorplay as tp
from cpu_kernels import pointwise
from tensorplay._generated import autograd_wrappers, ops
from tensorplay.dispatch import DispatchKey, explain, keys as K
from tensorplay.dispatch import trace
from tensorplay.dispatch.dispatcher import (
    FALLTHROUGH, RECORDS_NOTHING, OpSchema, Routes, dispatcher,
)
from tensorplay.dispatch.trace import observers
from tensorplay.dispatch.tls import ExcludeKeys, IncludeKeys, local_keys
from tensorplay.errors import KernelConstraintError, NoKernelError


_counter = itertools.count()


def both_paths(fn):
    """fn() through the route memo, then through the watched dispatch loop (while a
    profiler listens every call takes `dispatch`)."""
    fast = fn()
    with tp.profiler.profile():
        slow = fn()
    return fast, slow


def same(t, ref):
    """A tensorplay result equals a torch one: values, dtype, shape, grad metadata."""
    assert tuple(t.shape) == tuple(ref.shape)
    assert str(t.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1]
    assert t.requires_grad == ref.requires_grad
    assert (t.grad_fn is None) == (ref.grad_fn is None)
    np.testing.assert_allclose(t.detach().numpy().astype(np.float64),
                               ref.detach().numpy().astype(np.float64), rtol=1e-6)


def pair(*shape, requires_grad=False, dtype=np.float32):
    data = np.random.default_rng(len(shape)).standard_normal(shape).astype(dtype)
    return (tp.tensor(data, requires_grad=requires_grad),
            torch.tensor(data, requires_grad=requires_grad))


def new_op():
    name = f"test.fastpath{next(_counter)}"
    return dispatcher.define(OpSchema(name, f"{name}(Tensor self)", ("self",), (0,)))


# ---- the memo and the watched loop --------------------------------------------------
def _records_only(handle, slot):
    """The autograd slots that only record a graph: a generated wrapper, the fallback of
    an op with no derivative (it records a node that raises in backward), a custom op's
    autograd kernel (tensorplay/library)."""
    return slot in _WRAPPERS or getattr(slot, "__name__", "") == "autograd_not_implemented" \
        or ("::" in handle.name and getattr(slot, "records_only", False))


_WRAPPERS = set(autograd_wrappers.WRAPPERS.values())


def _policy(handle, ks):
    """Where the dispatch policy sends a call with key set `ks` (the thread's masks
    applied): the highest key whose slot has something to run, passing over the slots
    with nothing registered and, when no tensor requires grad (no REQUIRES_GRAD flag),
    the autograd slots that would only record. Returns (key, slot, the key set less the
    keys passed over)."""
    left = ks
    while True:
        key = (left & K.KEYS_MASK).bit_length() - 1
        slot = handle.resolved[key]
        if key < K.NUM_BACKENDS:
            return key, slot, left
        if slot is FALLTHROUGH or (not left & K.REQUIRES_GRAD and _records_only(handle, slot)):
            left &= ~(1 << key)
            continue
        return key, slot, left


class _WhereItEnds:
    """A listener in place of explain()'s: records the slot the watched loop
    (`OperatorHandle.dispatch`) runs, and the keys it passes over, without running it."""

    def __init__(self):
        self.skipped = []

    def enter(self, handle, ks, args):
        pass

    def miss(self, handle, key):
        pass

    def skip(self, handle, key, why="nothing registered"):
        self.skipped.append((key, why))

    def run_backend(self, handle, key, kernel, args):
        return key, kernel, None

    def run_wrapper(self, handle, key, kernel, ks, args):
        return key, kernel, ks


def _key_sets():
    rg = K.REQUIRES_GRAD
    python, mode = 1 << DispatchKey.Python, 1 << DispatchKey.VmapMode
    for backend in (DispatchKey.CPU, DispatchKey.Meta, DispatchKey.Sparse):
        plain = (1 << backend) | (1 << K.to_autograd_key(backend))
        autocast = 1 << K.to_autocast_key(backend)
        for extra in (0, python, autocast, mode, python | autocast):
            yield (1 << backend) | extra           # an inference tensor: no autograd key
            yield plain | extra
            yield plain | extra | rg


def test_the_memo_and_the_watched_loop_end_where_the_policy_says(monkeypatch):
    """Every op, key sets of three backends with and without the REQUIRES_GRAD flag, a
    Python key, an autocast key and a mode key: the route `call` takes unobserved
    (`routes`) and the slot the watched loop runs are the one the policy names, and a
    wrapper gets the key set the policy leaves it; a miss raises on both paths."""
    tp.ones(1)                          # (the first use of the API registers the kernels)
    watch = _WhereItEnds()
    monkeypatch.setattr(trace.state, "watch", watch)      # what explain() sets
    skipped_records_only = 0
    for handle in list(dispatcher.ops.values()):
        for ks in _key_sets():
            key, slot, left = _policy(handle, ks)
            if key < K.NUM_BACKENDS and slot is None:
                with pytest.raises(NoKernelError):
                    handle.route(ks)
                with pytest.raises(NoKernelError):
                    handle.dispatch(ks)
                continue
            route = handle.route(ks)
            watch.skipped.clear()
            assert handle.dispatch(ks) == (key, slot, None if key < K.NUM_BACKENDS else left)
            if key < K.NUM_BACKENDS:
                assert route is slot, (handle.name, ks)
            elif getattr(slot, "drops_keyset", None) is not None:
                assert route is slot.__wrapped__       # a decomposition: no key set to hand
            else:
                assert route.func is slot and route.args == (left,), (handle.name, ks)
            for k, why in watch.skipped:               # each pass-over is reported, why
                if _records_only(handle, handle.resolved[k]) and not ks & K.REQUIRES_GRAD:
                    assert why == RECORDS_NOTHING      # (explain() says why: trace.py)
                    skipped_records_only += 1
                else:
                    assert handle.resolved[k] is FALLTHROUGH and why == "nothing registered"
    assert skipped_records_only > 1000, skipped_records_only


def test_a_records_only_slot_is_exactly_a_recording_autograd_kernel():
    """The loop passes over an autograd slot without the flag only where it holds a
    kernel that only records (`records_only`: a generated wrapper, the not-implemented
    fallback, a custom op's autograd kernel): a Composite decomposition above autograd, a
    sparse kernel and the Python key's fallback run whether or not anything requires
    grad."""
    tp.ones(1)                          # (the first use of the API registers the kernels)
    assert all(w.records_only for w in _WRAPPERS)
    kept = {}
    for handle in dispatcher.ops.values():
        for k in range(K.NUM_KEYS):
            slot = handle.resolved[k]
            if getattr(slot, "records_only", False):
                assert K.is_autograd_key(k) and _records_only(handle, slot), \
                    (handle.name, DispatchKey(k).name)
            elif slot is not None and slot is not FALLTHROUGH and K.is_autograd_key(k):
                kept.setdefault(DispatchKey(k).name, handle.name)
    assert "AutogradCPU" in kept and "AutogradSparse" in kept


def test_routes_fill_on_first_use_and_a_registration_empties_them():
    op = dispatcher.define(OpSchema(f"test.route{next(_counter)}", "route(...)", ("self",),
                                    (0,)))
    lib = tp.library.Library("CPU", "TestRoutes")
    lib.impl(op.name, lambda self: "first", name="first")
    assert isinstance(op.routes, Routes) and not op.routes
    assert op.routes[1](tp.ones(1)) == "first"
    assert list(op.routes) == [1]
    lib.impl(op.name, lambda self: "second", name="second", priority=5)
    assert not op.routes                       # a new, empty cache
    assert op.routes[1](tp.ones(1)) == "second"


def test_a_miss_is_not_cached_and_raises_every_time():
    op = dispatcher.define(OpSchema(f"test.miss{next(_counter)}", "miss(...)", ("self",), (0,)))
    for _ in range(2):
        with pytest.raises(NoKernelError, match="no kernel for dispatch key CPU"):
            op.routes[1]
    assert not op.routes


def test_a_library_override_takes_effect_on_the_next_call():
    """tp.add, `a + b` and the autograd wrapper's call below autograd all see a kernel
    registered after their routes were filled. (A subprocess: the override is for good.)"""
    code = textwrap.dedent("""
        import tensorplay as tp
        a, b = tp.ones(2), tp.ones(2)
        ag = tp.ones(2, requires_grad=True)
        before = [tp.add(a, b).tolist(), (a + b).tolist(), tp.add(ag, b).tolist()]
        lib = tp.library.Library("CPU", "Override")
        lib.impl("add.Tensor", lambda self, other, alpha: tp.full((2,), 7.0),
                 name="seven", priority=100)
        after = [tp.add(a, b).tolist(), (a + b).tolist(), tp.add(ag, b).tolist()]
        print(before, after)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == str([[2.0, 2.0]] * 3) + " " + str([[7.0, 7.0]] * 3)


# ---- the kernel registry's lone kernel ------------------------------------------------
def test_a_lone_unconstrained_kernel_is_the_slot_itself():
    op = new_op()

    def k(self):
        return "k"
    tp.library.Library("CPU", "TestLoneKernel").impl(op.name, k, name="k")
    assert op.resolved[DispatchKey.CPU] is k and op.route(1 << DispatchKey.CPU) is k
    assert op.call(1, tp.ones(2)) == "k"
    assert ops.add_Tensor.resolved[DispatchKey.CPU] is pointwise.add


def test_a_lone_kernels_constraint_error_is_the_registrys():
    """A lone kernel that refuses a call (KernelConstraintError) has nobody to hand it
    to: the error is the one the registry itself (explain() on) raises."""
    op = new_op()

    def even_only(self):
        if self.numel() % 2:
            raise KernelConstraintError("only even numel")
        return "even"
    tp.library.Library("CPU", "TestLoneRefusal").impl(op.name, even_only, name="even")
    assert op.call(1, tp.ones(2)) == "even"
    messages = []
    for watched in (False, True):
        with explain(file=False) if watched else contextlib.nullcontext():
            with pytest.raises(KernelConstraintError) as info:
                op.call(1, tp.ones(3))
        messages.append(str(info.value))
    assert messages[0] == messages[1] == "only even numel"


def test_several_candidates_keep_the_registry_which_hands_over_down_them():
    op = new_op()
    lib = tp.library.Library("CPU", "TestSeveralCandidates")
    calls = []

    def picky(self):
        calls.append("picky")
        if self.numel() % 2:
            raise KernelConstraintError("only even numel")
        return "picky"
    lib.impl(op.name, lambda self: "generic", name="generic", priority=0)
    lib.impl(op.name, picky, name="picky", priority=9)
    assert op.resolved[DispatchKey.CPU] is op.slot_registry(DispatchKey.CPU)
    assert op.call(1, tp.ones(2)) == "picky"
    assert op.call(1, tp.ones(3)) == "generic"  # hand-over down the cached candidate list
    assert calls == ["picky", "picky", "picky"]  # the registry's plan retries the first


def test_an_in_place_lone_kernel_bumps_what_it_wrote():
    """The slot of an in-place op's lone kernel is the kernel wrapped to bump the
    version of each tensor it wrote (`registry.bumping`), as the registry bumps."""
    slot = ops.add__Tensor.resolved[DispatchKey.CPU]
    assert slot.__wrapped__ is pointwise.add_
    x, other = tp.zeros(3), tp.ones(3)
    view = x[1:]
    assert slot(x, other, 1) is x
    assert x._version == view._version == 1 and other._version == 0
    xt = torch.zeros(3)
    xt.add_(torch.ones(3))
    assert x.tolist() == xt.tolist() and xt._version == 1


def test_constrained_top_candidate_keeps_the_registry_and_explain_shows_the_same_hops():
    op = new_op()
    lib = tp.library.Library("CPU", "TestFastpathConstrained")
    lib.impl(op.name, lambda self: "f32", name="f32-only", dtypes={tp.float32})
    assert op.resolved[DispatchKey.CPU] is op.registries[DispatchKey.CPU]
    lone = new_op()
    tp.library.Library("CPU", "TestFastpathExplain").impl(lone.name, lambda self: "k",
                                                          name="k")
    with explain(file=False) as ex:     # a lone kernel: explain() shows the registry's hops
        lone.call(1, tp.ones(1))
        lone.call(1, tp.ones(1))
    assert "kernel registry (1 candidate)" in ex.text
    assert "cache     miss" in ex.text and "cache     hit" in ex.text
    assert "kernel    k" in ex.text and "bump" not in ex.text


def test_inplace_ops_bump_the_version_watched_or_not():
    x = tp.ones(3)
    before = x._version
    x.add_(tp.ones(3))
    assert x._version == before + 1
    with explain(file=False) as ex:
        x.add_(tp.ones(3))
    assert "then bump the version of the written tensor" in ex.text


# ---- exact against the loop and PyTorch ----------------------------------------------
def test_plain_and_recorded_calls_match_the_loop_and_torch():
    (a, at), (b, bt) = pair(3, 4), pair(4)
    (g, gt) = pair(3, 4, requires_grad=True)
    cases = [
        (lambda: tp.add(a, b, alpha=2), lambda: torch.add(at, bt, alpha=2)),
        (lambda: a + b, lambda: at + bt),
        (lambda: a - 2, lambda: at - 2),
        (lambda: g * b, lambda: gt * bt),
        (lambda: g.sum(), lambda: gt.sum()),
        (lambda: g.view(12), lambda: gt.view(12)),
        (lambda: g[1], lambda: gt[1]),
        (lambda: a.max(1).values, lambda: at.max(1).values),
    ]
    for ours, theirs in cases:
        fast, slow = both_paths(ours)
        ref = theirs()
        same(fast, ref)
        same(slow, ref)
        assert type(fast.grad_fn) is type(slow.grad_fn)


def test_in_place_bumps_the_version_on_both_paths():
    (a, at), (b, bt) = pair(4), pair(4)
    v0 = a._version
    a.add_(b)
    with tp.profiler.profile():
        a.add_(b)
    at.add_(bt)
    at.add_(bt)
    assert a._version == v0 + 2
    same(a, at)


def test_backward_through_memoized_routes_matches_torch():
    (x, xt) = pair(8, requires_grad=True)
    for _ in range(2):        # the second pass runs on filled routes
        x.grad, xt.grad = None, None
        (x * 2 + 1).sum().backward()
        (xt * 2 + 1).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy())


# ---- the thread's masks --------------------------------------------------------------
def test_exclude_keys_routes_below_autograd():
    (g, _), (b, _) = pair(3, requires_grad=True), pair(3)
    with ExcludeKeys(K.AUTOGRAD_MASK):
        fast, slow = both_paths(lambda: tp.mul(g, b))
    assert fast.grad_fn is None and slow.grad_fn is None
    assert not fast.requires_grad and not slow.requires_grad
    assert tp.mul(g, b).grad_fn is not None            # the same key set, masks gone


def test_inference_mode_and_no_grad():
    (g, gt), (b, bt) = pair(3, requires_grad=True), pair(3)
    with tp.inference_mode():
        fast, slow = both_paths(lambda: g + b)
    with torch.inference_mode():
        ref = gt + bt
    same(fast, ref)
    same(slow, ref)
    assert fast.is_inference() and slow.is_inference()
    with tp.no_grad():
        fast, slow = both_paths(lambda: g * b)
    same(fast, gt.detach() * bt)
    same(slow, gt.detach() * bt)


def test_autocast_includes_its_key():
    (a, at), (b, bt) = pair(4, 4), pair(4, 4)
    with tp.autocast("cpu", dtype=tp.bfloat16):
        fast, slow = both_paths(lambda: tp.mm(a, b))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ref = torch.mm(at, bt)
    assert fast.dtype == slow.dtype == tp.bfloat16
    same(fast.float(), ref.float())
    assert tp.mm(a, b).dtype == tp.float32            # outside: the plain route


def test_vmap():
    (x, xt), (b, bt) = pair(5, 3), pair(3)
    fast, slow = both_paths(lambda: tp.vmap(lambda r: r * b + 1)(x))
    ref = torch.vmap(lambda r: r * bt + 1)(xt)
    same(fast, ref)
    same(slow, ref)


def test_python_key_mode_sees_the_same_ops():
    from tensorplay.utils.dispatch_mode import LoggingMode
    (a, _), (b, _) = pair(3), pair(3)
    logs = []
    for observe in (False, True):
        with LoggingMode() as mode:
            if observe:
                with tp.profiler.profile():
                    (a + b).sum()
            else:
                (a + b).sum()
        logs.append(mode.lines)
    assert logs[0] == logs[1] and len(logs[0]) == 2
    assert (a + b).sum().item() == pytest.approx(float(a.sum() + b.sum()))


def test_tensor_subclasses():
    from tensorplay.utils.logging_tensor import LoggingTensor, capture_logs
    (a, at), (b, bt) = pair(3), pair(3)

    class Mine(tp.Tensor):
        pass

    m = tp.Tensor._make_subclass(Mine, a)
    fast, slow = both_paths(lambda: m + b)
    same(fast, at + bt)
    same(slow, at + bt)
    assert type(fast) is type(slow)
    la = LoggingTensor(a)
    with capture_logs() as logs:
        fast = la * b
    with capture_logs() as logs_slow:
        with tp.profiler.profile():
            slow = la * b
    assert type(fast) is type(slow) is LoggingTensor
    assert len(logs) == len(logs_slow) == 1
    same(fast.elem, at * bt)


def test_threads_with_different_masks_share_routes():
    """One thread excludes the autograd keys, another does not: both fill and read the
    same `routes` dicts at once, and each gets what its own masks say."""
    (g, gt), (b, bt) = pair(6, requires_grad=True), pair(6)
    barrier = threading.Barrier(2)
    results = {}

    def work(name, exclude):
        barrier.wait()
        out = []
        for _ in range(200):
            if exclude:
                with ExcludeKeys(K.AUTOGRAD_MASK):
                    out.append(g * b)
            else:
                out.append(g * b)
        results[name] = (out, list(local_keys.masks))

    threads = [threading.Thread(target=work, args=("off", True)),
               threading.Thread(target=work, args=("on", False))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r.grad_fn is None for r in results["off"][0])
    assert all(r.grad_fn is not None for r in results["on"][0])
    for r in results["off"][0][:3] + results["on"][0][:3]:
        np.testing.assert_allclose(r.detach().numpy(), (gt * bt).detach().numpy())
    assert results["off"][1] == results["on"][1] == [0, 0, 0]


def test_included_key_on_one_thread_only():
    (a, _), (b, _) = pair(3), pair(3)
    seen = []

    def included():
        with IncludeKeys(1 << DispatchKey.AutocastCPU):
            seen.append(local_keys.snapshot())
            seen.append((a + b).dtype)

    t = threading.Thread(target=included)
    t.start()
    t.join()
    assert seen[0][0] == 1 << DispatchKey.AutocastCPU
    assert seen[1] == tp.float32 and local_keys.snapshot() == (0, 0)


# ---- listeners: explain() and the profiler see every hop -----------------------------
def test_the_dispatchers_observers_flag_follows_every_listener():
    assert not observers.active
    with explain(file=False):
        assert observers.active
        with tp.profiler.profile():
            assert observers.active
        assert observers.active        # the profiler left; explain() still listens
    assert not observers.active
    with tp.profiler.profile():
        assert observers.active
    assert not observers.active


def test_explain_shows_the_loop_after_the_routes_are_filled():
    (g, _), (b, _) = pair(3, requires_grad=True), pair(3)
    tp.add(g, b)                     # fills the routes
    with tp.dispatch.explain(records=True) as ex:
        tp.add(g, b)
    calls = [h for h in ex.records if h.kind == "call"]
    assert len(calls) == 2            # the front door's call and the wrapper's below autograd
    assert calls[0].where.endswith(" add")     # named after who called: the front door
    assert "autograd_wrappers.py" in calls[1].where and calls[1].where.endswith(" add_Tensor")
    assert any("AutogradCPU" in h.text for h in ex.records if h.kind == "dispatch")


# ---- Python operators: `a + b` calls the front door ---------------------------------
def test_python_operators_against_torch():
    (a, at), (b, bt) = pair(3, 3), pair(3, 3)
    (g, gt) = pair(3, 3, requires_grad=True)
    for ours, theirs in [(a + b, at + bt), (g - b, gt - bt), (g * 2, gt * 2),
                         (a @ b, at @ bt), (a == a, at == at), (a < b, at < bt)]:
        same(ours, theirs)
    assert (a == None) is False and (a != None) is True          # noqa: E711
    with pytest.raises(TypeError):
        a + "s"
    assert type(np.ones(3) + tp.ones(3)).__name__ in ("ndarray", "Tensor")


def test_explain_names_the_front_door_for_an_operator():
    (g, _), (b, _) = pair(3, requires_grad=True), pair(3)
    g + b
    with tp.dispatch.explain(records=True) as ex:
        g + b
    first = ex.records[0]
    assert first.kind == "call" and first.where.endswith(" add")
    assert "functional.py" in first.where


# ---- `x.sum()`: a lone tensor goes to the first overload without the matcher loop ----
def test_every_lone_tensor_shortcut_binds_what_its_matcher_binds():
    """MATCHED_FIRST (gen_functional.py) sends `name(x)` to the first overload's run with
    its defaults: exactly what the loop does, because that overload's matcher binds
    `(x, defaults...)`. Checked here for every door that has the shortcut."""
    import inspect
    import re
    from tensorplay._generated import functional as F
    source = inspect.getsource(F)
    found = re.findall(r"# (\w+)\(x\)\n\s+return _run_(\w+)\(args\[0\], (.*)\)\n", source)
    assert len(found) >= 10 and ("sum", "sum", "None") in found
    x = tp.ones(2, 3)
    for name, overload, defaults in found:
        bound = getattr(F, "_match_" + overload)(x)
        assert bound == (x,) + eval(f"({defaults},)", vars(F)), name


def test_lone_tensor_calls_match_pytorch_and_the_full_path():
    data = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]], np.float32)
    x, xt = tp.tensor(data), torch.tensor(data)
    for name in ("sum", "mean", "prod", "var", "std"):
        ours, theirs = getattr(x, name)(), getattr(xt, name)()
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
        with tp.dispatch.explain(records=True):
            observed = getattr(tp, name)(x)
        np.testing.assert_allclose(observed.numpy(), ours.numpy())
    with pytest.raises(Exception) as ours:
        tp.clamp(x)
    with pytest.raises(Exception) as theirs:
        torch.clamp(xt)
    assert "min" in str(ours.value) and "max" in str(ours.value), str(theirs.value)
