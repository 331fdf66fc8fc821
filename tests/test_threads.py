"""Threads: ops and backward run from 8 threads at once give the serial results; grad
mode, inference mode and the dispatch include/exclude sets are per thread; registering
a kernel while other threads dispatch never shows them a half-registered table.

The switch interval is lowered while the threads run, so the interpreter hands over
between threads every few bytecodes instead of every 5 ms: interleavings that would be
rare in a real program happen many times per test.
"""
from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

import tensorplay as tp
from tensorplay.dispatch.dispatcher import OperatorHandle, OpSchema
from tensorplay.dispatch.keys import AUTOGRAD_MASK, DispatchKey
from tensorplay.dispatch.tls import ExcludeKeys, IncludeKeys, tls_local_key_sets

N_THREADS = 8
DEVICES = ["cpu"]
if tp.cuda.is_available() or tp.cuda.is_interpreted():
    DEVICES.append("cuda")   # the Triton interpreter without a GPU


@pytest.fixture(autouse=True)
def fast_switching():
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(before)


def run_together(fns):
    """Start one thread per function at the same moment; their results, in order. An
    exception in any thread is raised here."""
    barrier = threading.Barrier(len(fns))
    results = [None] * len(fns)
    errors = []

    def body(i, fn):
        try:
            barrier.wait()
            results[i] = fn()
        except BaseException as e:   # noqa: BLE001 (re-raised in the main thread)
            errors.append(e)
    threads = [threading.Thread(target=body, args=(i, fn)) for i, fn in enumerate(fns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


# ---- forward + backward ---------------------------------------------------------------
def _mlp_data(seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((16, 8)).astype(np.float32),
            rng.standard_normal((16, 4)).astype(np.float32))


def _own_mlp_step(seed, steps=3, device="cpu"):
    """A small MLP with its own parameters: `steps` SGD steps; the final weights."""
    rng = np.random.default_rng(100 + seed)
    params = [tp.tensor(rng.standard_normal(s).astype(np.float32) * 0.3, device=device,
                        requires_grad=True)
              for s in ((8, 32), (32,), (32, 4), (4,))]
    x, y = (tp.tensor(a, device=device) for a in _mlp_data(seed))
    for _ in range(steps):
        w1, b1, w2, b2 = params
        loss = ((tp.relu(x @ w1 + b1) @ w2 + b2 - y) ** 2).mean()
        loss.backward()
        with tp.no_grad():
            for p in params:
                p -= 0.1 * p.grad
                p.grad = None
    return [p.detach().cpu().numpy().copy() for p in params] + [loss.item()]


@pytest.mark.parametrize("device", [pytest.param(d, marks=pytest.mark.slow) if d == "cuda"
                                    else d for d in DEVICES])   # cuda: about 4 s
def test_independent_training_steps_in_8_threads_equal_the_serial_ones(device):
    steps = 1 if device == "cuda" else 3   # every interpreted launch costs a millisecond
    serial = [_own_mlp_step(seed, steps, device) for seed in range(N_THREADS)]
    threaded = run_together([lambda s=seed: _own_mlp_step(s, steps, device)
                             for seed in range(N_THREADS)])
    for got, expected in zip(threaded, serial):
        for g, e in zip(got, expected):
            np.testing.assert_array_equal(g, e)


def test_gradients_of_one_shared_model_from_8_threads_equal_the_serial_ones():
    tp.manual_seed(0)
    model = tp.nn.Sequential(tp.nn.Linear(8, 32), tp.nn.Tanh(), tp.nn.Linear(32, 4))
    params = list(model.parameters())

    def grads(seed):
        x, y = (tp.tensor(a) for a in _mlp_data(seed))
        loss = tp.nn.functional.mse_loss(model(x), y)
        return [g.numpy().copy() for g in tp.autograd.grad(loss, params)]
    serial = [grads(seed) for seed in range(N_THREADS)]
    threaded = run_together([lambda s=seed: grads(s) for seed in range(N_THREADS)])
    for got, expected in zip(threaded, serial):
        for g, e in zip(got, expected):
            # NOTE: within float32 rounding, not bit for bit: one run in a dozen differed
            # in the last bits once (not reproduced since); a gradient taken from another
            # thread's graph would differ in every digit.
            np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-7)
    assert all(p.grad is None for p in params)   # autograd.grad accumulates nothing


def test_threads_making_a_leafs_accumulator_at_once_all_get_the_same_one(monkeypatch):
    """A leaf's AccumulateGrad is made on first use and cached weakly on the leaf. Two
    threads that both found none and each made one left the thread whose `autograd.grad`
    target was overwritten with a target in no graph ("not used in the graph", seen in
    CI about one run in ten). Here every thread's constructor waits until all threads
    are in one (or 0.3 s: with the lock only one ever is), which makes that
    interleaving certain."""
    from tensorplay.autograd import node
    made = node.AccumulateGrad.__init__
    entered = []
    all_in = threading.Event()

    def waiting_init(self, impl):
        entered.append(self)
        if len(entered) == N_THREADS:
            all_in.set()
        all_in.wait(timeout=0.3)
        made(self, impl)
    monkeypatch.setattr(node.AccumulateGrad, "__init__", waiting_init)
    w = tp.ones(3, requires_grad=True)

    def grad_of_w(k):
        return tp.autograd.grad((w * float(k)).sum(), w)[0].numpy().copy()
    got = run_together([lambda k=k: grad_of_w(k) for k in range(N_THREADS)])
    for k, g in enumerate(got):
        np.testing.assert_array_equal(g, np.full(3, float(k)))
    assert len(entered) == 1


def test_backward_from_8_threads_into_one_leaf_loses_no_gradient():
    """`.grad += g` is a read and a write: without a lock, two threads read the same old
    .grad and one gradient is lost (about one run in two lost some before the lock)."""
    w = tp.zeros(1000, requires_grad=True)

    def backward_many():
        for _ in range(100):
            (w * 1.0).sum().backward()
        return True
    for _ in range(3):
        w.grad = None
        assert run_together([backward_many] * N_THREADS) == [True] * N_THREADS
        np.testing.assert_array_equal(w.grad.numpy(), np.full(1000, 100.0 * N_THREADS))


def test_backward_of_a_shared_model_from_8_threads_sums_every_gradient():
    tp.manual_seed(0)
    model = tp.nn.Sequential(tp.nn.Linear(8, 32), tp.nn.Tanh(), tp.nn.Linear(32, 4))
    params = list(model.parameters())

    def backward(seed):
        x, y = (tp.tensor(a) for a in _mlp_data(seed))
        tp.nn.functional.mse_loss(model(x), y).backward()
        return True
    expected = [np.zeros(p.shape) for p in params]
    for seed in range(N_THREADS):
        for p in params:
            p.grad = None
        backward(seed)
        for e, p in zip(expected, params):
            e += p.grad.numpy()
    for p in params:
        p.grad = None
    run_together([lambda s=seed: backward(s) for seed in range(N_THREADS)])
    for e, p in zip(expected, params):   # the same sum, in another order
        np.testing.assert_allclose(p.grad.numpy(), e, rtol=1e-5, atol=1e-6)


DRAWS = {   # the ops that take several steps of the generator per call
    "randn": lambda d: tp.randn(100, device=d),
    "normal_": lambda d: tp.empty(37, device=d).normal_(),
    "randn scalar": lambda d: tp.empty(15, device=d).normal_(),   # the cached half
    "dropout": lambda d: tp.nn.functional.dropout(tp.ones(100, device=d)),
    "randperm": lambda d: tp.randperm(50, device=d),
}


# On cuda the factories draw on the host (the cpu cases cover them); the in-place fills
# and dropout take Philox offsets there.
CUDA_DRAWS = ("normal_", "dropout")


@pytest.mark.parametrize("device, name", [("cpu", name) for name in sorted(DRAWS)]
                         + [("cuda", name) for name in CUDA_DRAWS if "cuda" in DEVICES])
def test_random_ops_from_8_threads_draw_the_serial_numbers_in_some_order(device, name):
    """Each op takes a whole segment of the stream (PyTorch's generator mutex): the
    threads' results are the serial ones, permuted, never a mix or a repeat."""
    draw, per_thread = DRAWS[name], 2 if device == "cuda" else 12
    tp.manual_seed(1)
    serial = sorted(draw(device).cpu().numpy().tobytes()
                    for _ in range(N_THREADS * per_thread))
    tp.manual_seed(1)
    threaded = run_together([lambda: [draw(device).cpu().numpy().tobytes()
                                      for _ in range(per_thread)]] * N_THREADS)
    assert sorted(sum(threaded, [])) == serial


# ---- per-thread state -----------------------------------------------------------------
def _in_lockstep(mode_of_first, probe):
    """Thread 1 runs `probe` inside `mode_of_first`, thread 2 runs it outside, both at
    the same moments (the barrier makes the two probes overlap the other's mode)."""
    barrier = threading.Barrier(2)

    def inside():
        with mode_of_first():
            barrier.wait()
            out = probe()
            barrier.wait()
        return out

    def outside():
        barrier.wait()
        out = probe()
        barrier.wait()
        return out
    return run_together([inside, outside])


W = tp.ones(3, requires_grad=True)


def test_no_grad_is_per_thread():
    probe = lambda: ((W * 2).requires_grad, tp.is_grad_enabled())  # noqa: E731
    assert _in_lockstep(tp.no_grad, probe) == [(False, False), (True, True)]


def test_enable_grad_is_per_thread():
    def probe():
        with tp.no_grad():
            return (W * 2).requires_grad
    barrier = threading.Barrier(2)

    def inside():
        with tp.no_grad():
            with tp.enable_grad():
                barrier.wait()
                out = (W * 2).requires_grad
                barrier.wait()
        return out

    def outside():
        barrier.wait()
        out = probe()
        barrier.wait()
        return out
    assert run_together([inside, outside]) == [True, False]


def test_inference_mode_is_per_thread():
    def probe():
        y = W * 2
        return y.is_inference(), y.requires_grad, tp.is_inference_mode_enabled()
    assert _in_lockstep(tp.inference_mode, probe) == [(True, False, True),
                                                      (False, True, False)]


def test_exclude_keys_is_per_thread():
    def probe():
        return (W * 2).grad_fn is None, tls_local_key_sets()[1].bits
    inside, outside = _in_lockstep(lambda: ExcludeKeys(AUTOGRAD_MASK), probe)
    assert inside == (True, AUTOGRAD_MASK)
    assert outside == (False, 0)


def test_autocast_is_per_thread():
    a, b = tp.ones(4, 4), tp.ones(4, 4)

    def probe():
        return (a @ b).dtype, tp.is_autocast_enabled("cpu"), tls_local_key_sets()[0].bits
    inside, outside = _in_lockstep(lambda: tp.autocast("cpu"), probe)
    assert inside == (tp.bfloat16, True, 1 << DispatchKey.AutocastCPU)
    assert outside == (tp.float32, False, 0)


def _private_op(name):
    """An operator of one tensor argument that no other test sees."""
    return OperatorHandle(OpSchema(name, f"{name}(Tensor self) -> Tensor", ("self",), (0,)))


def test_include_keys_is_per_thread():
    op = _private_op("threads.include")
    op.register(DispatchKey.CPU, lambda self: "cpu")
    op.register(DispatchKey.AutocastCPU, lambda ks, self: "autocast")
    x = tp.ones(2)
    probe = lambda: op.call(x._impl.key_set(), x)  # noqa: E731
    mode = lambda: IncludeKeys(1 << DispatchKey.AutocastCPU)  # noqa: E731
    assert _in_lockstep(mode, probe) == ["autocast", "cpu"]


# ---- registering while others dispatch --------------------------------------------------
def test_registering_while_4_threads_dispatch_shows_old_or_new_never_half():
    op = _private_op("threads.register")
    op.register(DispatchKey.CPU, lambda self: "old", name="old")
    op.register(DispatchKey.Composite, lambda self: "composite", name="composite")
    # Candidates that never match (int8 only) make each re-sort of the list long enough
    # for a dispatching thread to look at it mid-sort.
    for i in range(64):
        op.register(DispatchKey.CPU, lambda self: "int8", name=f"int8_{i}", dtypes={tp.int8},
                    priority=i % 7 - 3)
    x32, x64 = tp.ones(2), tp.ones(2, dtype=tp.float64)
    stop = threading.Event()
    seen = [set() for _ in range(4)]

    def dispatch(i):
        x = x64 if i % 2 else x32
        while not stop.is_set():
            seen[i].add(op.call(x._impl.key_set(), x))
        return True

    def register():
        # `new` goes above and below `old` in turn; a float64-only candidate makes the
        # registry choose per dtype; a kernel at AutogradCPU comes and goes with
        # FALLTHROUGH: every registration rewrites the resolved table.
        for i in range(300):
            op.register(DispatchKey.CPU, lambda self: "new", name="new",
                        priority=1 if i % 2 else -1)
            op.register(DispatchKey.CPU, lambda self: "f64", name="f64",
                        dtypes={tp.float64}, priority=5 if i % 3 == 0 else -5)
            op.register(DispatchKey.AutogradCPU, (lambda ks, self: "autograd")
                        if i % 5 == 0 else None, name="autograd", check_signature=False)
        op.register(DispatchKey.CPU, lambda self: "f64", name="f64", dtypes={tp.float64},
                    priority=5)
        stop.set()
        return True

    try:
        assert run_together([register] + [lambda i=i: dispatch(i) for i in range(4)]) \
            == [True] * 5
    finally:
        stop.set()
    allowed = {"old", "new", "f64", "autograd"}
    for i, values in enumerate(seen):
        assert values and values <= allowed, (i, values)
    # After the last registration every thread sees the final table (no stale cache).
    final = run_together([lambda x=x: op.call(x._impl.key_set(), x)
                          for x in (x32, x64, x32, x64)])
    assert final == ["new", "f64", "new", "f64"]


def test_a_registration_publishes_new_tables_and_leaves_the_old_ones_intact():
    """What makes the test above hold by construction: a call reads `resolved` (and a
    registry its `candidates`) once; registering builds new ones and swaps them in, so a
    call already holding the old ones keeps a consistent, complete table."""
    op = _private_op("threads.swap")
    op.register(DispatchKey.CPU, lambda self: "old", name="old")
    table, candidates = op.resolved, op.registries[DispatchKey.CPU].candidates
    table_before, candidates_before = list(table), list(candidates)
    op.register(DispatchKey.CPU, lambda self: "new", name="new", priority=1)
    op.register(DispatchKey.AutogradCPU, lambda ks, self: "autograd")
    assert op.resolved is not table and table == table_before
    assert op.registries[DispatchKey.CPU].candidates is not candidates
    assert candidates == candidates_before
    x = tp.ones(1)
    assert op.call(x._impl.key_set(), x) == "autograd"
