"""Kernel selection in depth (the second level of dispatch): the design's worked example
with real Triton kernels at the CUDA key (interpreted without a GPU), the statistics of
the choice cache, the execution-plan cache, and codegen's binding rule.

Ops defined here are test-only (`test.*` names), so registering kernels on them never
disturbs the real operators.
"""
import itertools
import logging

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

import tensorplay as tp
from tensorplay.dispatch import explain
from tensorplay.dispatch.dispatcher import OpSchema, dispatcher
from tensorplay.dispatch.plan_cache import plans
from tensorplay.dispatch.kernel_selection import ShapeRule, bump_version
from tensorplay.errors import KernelConstraintError
from triton_kernels._launch import launch, new_tensor, pointer
from triton_util import CUDA, host

_counter = itertools.count()


def new_op():
    name = f"test.kernsel{next(_counter)}"
    return dispatcher.define(OpSchema(name, f"{name}(Tensor self) -> Tensor", ("self",), (0,),
                                      (), ()))


def call(handle, *args):
    ks = 0
    for a in args:
        ks |= a._impl.key_set()
    return handle.call(ks, *args)


# ---- the design's worked example: two relu kernels at the CUDA key -----------------------
@triton.jit
def _relu_flat(x_ptr,           # input, contiguous
               out_ptr,         # output, contiguous
               n,               # number of elements
               BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


@triton.jit
def _relu_vec4(x_ptr,           # input, contiguous, rows of a multiple of 4 elements
               out_ptr,         # output, contiguous
               n4,              # number of 4-element groups
               ROWS: tl.constexpr):
    # Each program reads ROWS groups of 4: a (ROWS, 4) tile whose inner dim needs no mask
    # because the last dim is a multiple of 4 (what the shape rule guarantees).
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    offs = rows[:, None] * 4 + tl.arange(0, 4)[None, :]
    mask = rows[:, None] < n4
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


def relu_generic(self):
    out = new_tensor(self._impl.sizes, self._impl.dtype, self._impl.device)
    n = self.numel()
    launch("relu_generic", _relu_flat, (triton.cdiv(n, 256),), pointer(self), pointer(out), n,
           BLOCK=256)
    return out


def relu_vectorised(self):
    if self._impl.sizes[-1] % 4:
        raise KernelConstraintError("relu_vectorised: last dim not a multiple of 4")
    out = new_tensor(self._impl.sizes, self._impl.dtype, self._impl.device)
    n4 = self.numel() // 4
    # The launch plan depends only on the rank (a coarse signature): rows of 4 per program
    # and warps, as a tuned kernel would pick them per rank.
    rows, warps = plans.get("test.relu_vec4", (self.dim(),),
                            lambda: (64, 4) if self.dim() >= 3 else (32, 2))
    launch("relu_vec4", _relu_vec4, (triton.cdiv(n4, rows),), pointer(self), pointer(out), n4,
           ROWS=rows, num_warps=warps)
    return out


LAST_DIM_4 = ShapeRule("last dim multiple of 4", lambda self: self.shape[-1] % 4 == 0)


def relu_op(vectorised=relu_vectorised):
    op = new_op()
    lib = tp.library.Library("CUDA", "WorkedExample")
    lib.impl(op.name, relu_generic, name="relu_generic", priority=50)
    lib.impl(op.name, vectorised, name="relu_vectorised", priority=100, shape=LAST_DIM_4,
             dtypes={tp.float32}, contiguous=True)
    return op


def cuda_input(shape, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return tp.from_numpy(x).to(CUDA), x


def test_worked_example_picks_vectorised_then_hits_cache():
    op = relu_op()
    x, x_np = cuda_input((2, 3, 4, 8))      # NCHW, last dim a multiple of 4
    with explain(file=False) as ex:
        out = call(op, x)
        again = call(op, x)
    np.testing.assert_array_equal(host(out), np.maximum(x_np, 0))
    np.testing.assert_array_equal(host(again), host(out))
    assert "cache     miss" in ex.text and "cache     hit" in ex.text
    kernels = [line.split()[-1] for line in ex.text.splitlines() if "kernel    " in line]
    assert kernels == ["relu_vectorised", "relu_vectorised"]
    assert "relu_vec4 grid=(1,)" in ex.text


def test_worked_example_last_dim_57_runs_generic():
    op = relu_op()
    x, x_np = cuda_input((2, 3, 5, 57))
    with explain(file=False) as ex:
        out = call(op, x)
    np.testing.assert_array_equal(host(out), np.maximum(x_np, 0))
    assert "relu_vectorised (priority 100): rejected, shape rule 'last dim multiple of 4'" \
        in ex.text
    assert "relu_generic grid=" in ex.text


def test_worked_example_constraint_error_hands_over_and_is_logged(caplog):
    def refuses(self):
        raise KernelConstraintError("relu_vectorised: misaligned pointer")
    op = relu_op(vectorised=refuses)
    x, x_np = cuda_input((4, 8))
    with caplog.at_level(logging.INFO, logger="tensorplay.dispatch"):
        out = call(op, x)
    np.testing.assert_array_equal(host(out), np.maximum(x_np, 0))
    assert any("relu_vectorised rejected its input (relu_vectorised: misaligned pointer); "
               "handing over to relu_generic" in r.getMessage() for r in caplog.records)


# ---- statistics ------------------------------------------------------------------------
def test_stats_count_hits_misses_kernels_and_rejections(counting):
    op = relu_op()
    a, _ = cuda_input((2, 8))
    b, _ = cuda_input((2, 5))
    call(op, a)
    call(op, a)
    call(op, b)
    row = counting()[op.name]
    assert (row.hits, row.misses) == (1, 2)
    assert row.kernels == {"relu_vectorised": 2, "relu_generic": 1}
    assert row.rejected == {"relu_vectorised": {"shape rule 'last dim multiple of 4' not met": 1}}
    tp.dispatch.reset_stats()
    assert op.name not in counting()


def test_stats_count_hand_overs_fallbacks_and_invalidations(counting):
    def refuses(self):
        raise KernelConstraintError("no")
    op = relu_op(vectorised=refuses)
    x, _ = cuda_input((4, 8))
    call(op, x)
    call(op, x.to(tp.float16))      # only relu_generic takes float16
    row = counting()[op.name]
    assert row.rejected["relu_vectorised"]["raised KernelConstraintError: no"] == 1
    assert row.kernels["relu_generic"] == 2
    tp.library.Library("CUDA", "Again").impl(op.name, relu_generic, name="relu_generic",
                                               priority=50)
    call(op, x)
    assert counting()[op.name].invalidations == 2
    # A CPU registry with a float32-only kernel: float16 goes through dtype promotion.
    cpu = new_op()
    tp.library.Library("CPU", "Promote").impl(cpu.name, lambda self: self * 2, name="f32",
                                              dtypes={tp.float32})
    call(cpu, tp.ones(2, dtype=tp.float16))
    assert counting()[cpu.name].fallbacks == {"dtype promotion float16 -> float32": 1}


def test_stats_see_direct_calls_of_real_ops(counting):
    x = tp.ones(3)
    tp.add(x, x)
    tp.add(x, x)
    row = counting()["add.Tensor"]
    assert sum(row.kernels.values()) == 2 and row.hits + row.misses == 2


def test_stats_off_restores_the_direct_path():
    from cpu_kernels import pointwise
    from tensorplay.dispatch.keys import DispatchKey
    add = dispatcher.find("add.Tensor")
    assert add.resolved[DispatchKey.CPU] is pointwise.add     # the kernel itself
    tp.dispatch.enable_stats()
    try:
        assert add.resolved[DispatchKey.CPU] is add.slot_registry(DispatchKey.CPU)
    finally:
        tp.dispatch.enable_stats(False)
    assert add.resolved[DispatchKey.CPU] is pointwise.add


def test_cache_is_bounded_and_counts_evictions(counting, monkeypatch):
    from tensorplay.dispatch import kernel_selection
    monkeypatch.setattr(kernel_selection, "CACHE_LIMIT", 2)
    op = new_op()
    lib = tp.library.Library("CPU", "Bounded")
    lib.impl(op.name, lambda self: self, name="any")
    lib.impl(op.name, lambda self: self, name="f64", priority=1, dtypes={tp.float64})
    for dtype in (tp.float32, tp.float64, tp.int64, tp.float32):
        call(op, tp.ones(1, dtype=dtype))
    row = counting()[op.name]
    assert (row.misses, row.evictions) == (4, 2)
    assert len(op.registries[0].cache) == 2


def test_shape_rules_with_a_signature_run_once_per_signature():
    """Rules that name one signature function are evaluated on a signature's first call and
    looked up after that; a new signature evaluates them again."""
    checked = []

    def last_dim(self):
        return tuple(self._impl.sizes)

    def wide(self):
        checked.append("wide")
        return self.shape[-1] >= 4

    def even(self):
        checked.append("even")
        return self.shape[-1] % 2 == 0
    op = new_op()
    lib = tp.library.Library("CPU", "Signed rules")
    lib.impl(op.name, lambda self: self + 0, name="any")
    lib.impl(op.name, lambda self: self * 2, name="wide", priority=1,
             shape=ShapeRule("last dim >= 4", wide, signature=last_dim))
    lib.impl(op.name, lambda self: self * 3, name="even", priority=2,
             shape=ShapeRule("last dim even", even, signature=last_dim))
    x = tp.ones(2, 6)
    assert [float(call(op, x)[0, 0]) for _ in range(3)] == [3.0, 3.0, 3.0]
    assert sorted(checked) == ["even", "wide"]
    assert float(call(op, tp.ones(2, 5))[0, 0]) == 2.0     # another signature: checked again
    assert sorted(checked) == ["even", "even", "wide", "wide"]


def test_conv_checks_are_kept_per_signature_and_bad_arguments_still_raise():
    """The conv kernels keep the Meta rule's verdict per signature ("cpu.conv.checked"):
    a second call with the same shapes is a hit; a signature that failed raises again."""
    plans.clear()
    x, w = tp.randn(1, 2, 5, 5), tp.randn(3, 2, 3, 3)
    for _ in range(2):
        tp.nn.functional.conv2d(x, w, padding=1)
    assert plans.stats()["cpu.conv.checked"] == {"hits": 1, "misses": 1, "plans": 1}
    bad_bias = tp.randn(4)
    for _ in range(2):
        with pytest.raises(tp.errors.ShapeError, match="'bias'"):
            tp.nn.functional.conv2d(x, w, bad_bias, padding=1)
    assert plans.stats()["cpu.conv.checked"] == {"hits": 1, "misses": 3, "plans": 1}


def test_torch_oracle_of_the_worked_example():
    op = relu_op()
    x, x_np = cuda_input((3, 4, 6, 12), seed=3)
    got = host(call(op, x))
    np.testing.assert_array_equal(got, torch.relu(torch.from_numpy(x_np)).numpy())


# ---- bindings: a hand-written method or function wins over the generated one -------------
def test_handwritten_binding_wins_and_codegen_reports_it(tmp_path):
    from tensorplay.codegen import bindings, gen_functional, gen_methods
    from tensorplay.codegen import main as cg
    (tmp_path / "ops.yaml").write_text(
        "- func: relu(Tensor self) -> Tensor\n"
        "  variants: function, method\n"
        "  dispatch: {CPU: pointwise.relu}\n"
        "- func: neg(Tensor self) -> Tensor\n"
        "  variants: function, method\n"
        "  dispatch: {CPU: pointwise.neg}\n")
    (tmp_path / "derivatives.yaml").write_text("[]\n")
    package = tmp_path / "tensorplay"
    package.mkdir()
    (package / "_tensor.py").write_text(
        "class Tensor:\n    __slots__ = ()\n\n    def relu(self):\n        return self\n")
    (package / "_api.py").write_text("x = 1\n\n\ndef neg(input):\n    return input\n")
    ctx = cg.load_context(str(tmp_path / "ops.yaml"), str(tmp_path / "derivatives.yaml"),
                          str(tmp_path / "out"), root=str(tmp_path))
    files = cg.render_all(ctx)
    assert "relu = F.relu" not in files["tensor_methods.py"]
    assert "neg = F.neg" in files["tensor_methods.py"]
    exported = files["functional.py"].split("FUNCTIONS = (")[1]
    assert "'relu'," in exported and "'neg'," not in exported
    assert "def relu(" not in files["tensor_methods.pyi"]
    assert bindings.report(ctx, gen_methods.emitted_names(ctx),
                           gen_functional.exported_names(ctx)) == [
        "hand-written Tensor.relu (tensorplay/_tensor.py:4) wins: generated method not emitted",
        "hand-written tp.neg (tensorplay/_api.py:4) wins: generated function not exported",
    ]


def test_every_name_has_one_binding_in_the_real_tree():
    """No method of TensorMethods is shadowed by Tensor's own body, and no tp.* function
    in FUNCTIONS is replaced by _api.py: codegen left the hand-written names out."""
    from tensorplay._generated import functional, tensor_methods
    from tensorplay._tensor import Tensor
    from tensorplay._tensor_base import TensorBase
    generated = set(vars(tensor_methods.TensorMethods)) - {"__hash__", "__doc__", "__module__",
                                                           "__slots__", "__qualname__"}
    assert not generated & (set(vars(Tensor)) | set(vars(TensorBase)))
    assert all(getattr(tp, name) is getattr(functional, name) for name in functional.FUNCTIONS)


# ---- the execution-plan cache ------------------------------------------------------------
def _hits_misses(kernel):
    row = plans.stats().get(kernel, {"hits": 0, "misses": 0})
    return row["hits"], row["misses"]


def test_coarse_plan_signature_serves_every_shape_of_a_kind():
    op = relu_op()
    before = _hits_misses("test.relu_vec4")
    for shape in ((2, 3, 4, 8), (1, 5, 2, 12), (3, 1, 1, 4)):     # rank 4, last % 4 == 0
        x, x_np = cuda_input(shape)
        np.testing.assert_array_equal(host(call(op, x)), np.maximum(x_np, 0))
    hits, misses = _hits_misses("test.relu_vec4")
    assert (hits - before[0], misses - before[1]) in ((2, 1), (3, 0))


@pytest.mark.parametrize("padding, plan", [(2, "cpu.conv.im2col"), (1, "cpu.conv.same")])
def test_conv_plan_is_made_once_per_signature_and_matches_torch(padding, plan):
    """The im2col geometry (padding 2) and the same-size one (padding 1, a 3x3 kernel)."""
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((2, 3, 7, 6)).astype(np.float32)
    w_np = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    expected = torch.nn.functional.conv2d(torch.from_numpy(x_np), torch.from_numpy(w_np),
                                          padding=padding).numpy()
    plans.clear()
    x, w = tp.from_numpy(x_np), tp.from_numpy(w_np)
    first = tp.nn.functional.conv2d(x, w, padding=padding).numpy()
    second = tp.nn.functional.conv2d(x, w, padding=padding).numpy()
    assert plans.stats()[plan] == {"hits": 1, "misses": 1, "plans": 1}
    np.testing.assert_allclose(first, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(first, second)
    plans.enabled = False
    try:
        np.testing.assert_array_equal(
            tp.nn.functional.conv2d(x, w, padding=padding).numpy(), first)
    finally:
        plans.enabled = True
    assert plans.stats()[plan]["hits"] == 1


def test_plans_are_dropped_when_the_registry_version_moves():
    plans.clear()
    made = []
    assert plans.get("test.k", ("sig",), lambda: made.append(1) or "plan") == "plan"
    assert plans.get("test.k", ("sig",), lambda: made.append(1) or "other") == "plan"
    tp.dispatch.kernel_selection.bump_version()
    assert plans.get("test.k", ("sig",), lambda: made.append(1) or "new") == "new"
    assert len(made) == 2


def test_triton_pointwise_launch_plan_is_reused_and_gradients_match_torch():
    plans.clear()
    a_np = np.random.default_rng(1).standard_normal((5, 6)).astype(np.float32)
    a = tp.from_numpy(a_np).to(CUDA).requires_grad_()
    b = tp.from_numpy(a_np.T.copy()).to(CUDA).t()        # non-contiguous operand
    (a * b + a).sum().backward()
    (a * b + a).sum().backward()        # from here on a.grad exists: the same launches
    before = plans.stats()["triton.pointwise"]
    (a * b + a).sum().backward()
    after = plans.stats()["triton.pointwise"]
    assert after["misses"] == before["misses"] and after["hits"] > before["hits"]
    np.testing.assert_allclose(host(a.grad), 3 * (a_np + 1), rtol=1e-6)


# ---- specialised CPU candidates ----------------------------------------------------------
def _conv_case(shape, out_channels, seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(dtype)
    w = rng.standard_normal((out_channels, shape[1], 1, 1)).astype(dtype)
    b = rng.standard_normal(out_channels).astype(dtype)
    g = rng.standard_normal((shape[0], out_channels) + shape[2:]).astype(dtype)
    return x, w, b, g


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conv_1x1_candidate_runs_and_matches_torch_forward_and_backward(counting, dtype):
    x, w, b, g = _conv_case((3, 5, 4, 6), 7, dtype=dtype)
    tx, tw, tb = (torch.from_numpy(a).requires_grad_() for a in (x, w, b))
    ty = torch.nn.functional.conv2d(tx, tw, tb)
    ty.backward(torch.from_numpy(g))
    px, pw, pb = (tp.from_numpy(a).requires_grad_() for a in (x, w, b))
    py = tp.nn.functional.conv2d(px, pw, pb)
    (py * tp.from_numpy(g)).sum().backward()
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(py.detach().numpy(), ty.detach().numpy(), rtol=tol, atol=tol)
    for mine, theirs in ((px, tx), (pw, tw), (pb, tb)):
        assert mine.grad.numpy().dtype == theirs.grad.numpy().dtype
        np.testing.assert_allclose(mine.grad.numpy(), theirs.grad.numpy(), rtol=tol, atol=tol)
    stats = counting()
    assert stats["convolution"].kernels == {"cpu_kernels.conv.convolution_1x1": 1}
    assert set(stats["convolution_backward"].kernels) == {
        "cpu_kernels.conv.convolution_backward_1x1"}


def test_conv_1x1_candidate_is_passed_over_where_it_does_not_apply(counting):
    # (choices cached by earlier tests would skip the selections whose rejections it reads)
    bump_version()
    x, w, b, _ = _conv_case((2, 4, 5, 5), 3)
    X, W = tp.from_numpy(x), tp.from_numpy(w)
    expected = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w)).numpy()
    cases = [
        (X.transpose(2, 3).contiguous().transpose(2, 3), W, {}),       # non-contiguous
        (X, W, {"padding": 1}),                                         # padded
        (X.to(tp.float16), W.to(tp.float16), {}),                      # half
    ]
    for xin, win, kwargs in cases:
        got = tp.nn.functional.conv2d(xin, win, **kwargs)
        want = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), **kwargs)
        np.testing.assert_allclose(got.to(tp.float32).numpy(), want.numpy(), rtol=2e-2,
                                   atol=2e-2)
    np.testing.assert_allclose(tp.nn.functional.conv2d(X, W).numpy(), expected, rtol=1e-5,
                               atol=1e-5)
    row = counting()["convolution"]
    # Of the three it passes over, the non-contiguous one (no padding: its output is the
    # input's size) goes to the same-size candidate, which copies any layout; the other two
    # have 25 or more output positions per image: the per-image products take them.
    assert row.kernels == {"cpu_kernels.conv.convolution_same": 1,
                           "cpu_kernels.conv.convolution_per_image": 2,
                           "cpu_kernels.conv.convolution_1x1": 1}
    assert set(row.rejected["cpu_kernels.conv.convolution_1x1"]) == {
        "needs contiguous inputs",
        "shape rule '2-D, 1x1 kernel, stride 1, no padding, groups 1' not met",
        "dtype float16 not in {float32, float64}"}


# ---- measured priorities: tp.dispatch.tune ---------------------------------------------
@pytest.fixture
def tuning_env(tmp_path, monkeypatch):
    from tensorplay.dispatch import tuning
    monkeypatch.setenv("TP_TUNE_CACHE", str(tmp_path / "tuned.json"))
    yield tuning
    tp.dispatch.enable_tuning(False)


def _two_candidates(tuning, monkeypatch, seconds):
    """A CPU op with a generic candidate (priority 0) and a static favourite (priority
    10); `seconds` is what the (faked) timer measures for each, so the test does not
    depend on this machine's speed."""
    op = new_op()
    lib = tp.library.Library("CPU", "Tuned")
    lib.impl(op.name, lambda self: self * 2, name="generic")
    lib.impl(op.name, lambda self: self + self, name="favourite", priority=10)
    by_fn = {c.fn: seconds[c.name] for c in op.registries[0].candidates}
    monkeypatch.setattr(tuning, "_time", lambda fn, args, repeat: by_fn[fn])
    return op


def test_tune_pins_the_measured_fastest_over_static_priority(tuning_env, monkeypatch):
    op = _two_candidates(tuning_env, monkeypatch, {"generic": 1e-6, "favourite": 5e-6})
    x = tp.ones(2, 4)
    with explain(file=False) as ex:
        call(op, x)
    assert "kernel    favourite" in ex.text
    assert tp.dispatch.tune(op.name, (x,)) == "generic"
    with explain(file=False) as ex:
        assert call(op, x).tolist() == [[2.0] * 4] * 2
    assert "tuned: generic measured fastest (tp.dispatch.tune)" in ex.text
    assert "kernel    generic" in ex.text
    # Another shape signature (here: dtype) keeps the static order.
    with explain(file=False) as ex:
        call(op, tp.ones(2, dtype=tp.float64))
    assert "kernel    favourite" in ex.text
    tp.dispatch.enable_tuning(False)        # off: the static priority again
    with explain(file=False) as ex:
        call(op, x)
    assert "kernel    favourite" in ex.text


def test_tuned_choices_are_saved_and_stale_files_ignored(tuning_env, monkeypatch, counting):
    import json
    op = _two_candidates(tuning_env, monkeypatch, {"generic": 1e-6, "favourite": 5e-6})
    x = tp.ones(3)
    tp.dispatch.tune(op.name, (x,))
    data = json.loads(open(tuning_env.tuning_file()).read())
    assert data["version"] == tp.__version__
    pins = data["devices"][tuning_env.device_name(x.device)][op.name]
    assert pins == {op.registries[0].describe_key(op.registries[0].cache_key((x,))): "generic"}
    op.registries[0].pinned.clear()
    tp.dispatch.enable_tuning()             # reads the file back
    call(op, x)
    assert counting()[op.name].tuned == 1
    assert counting()[op.name].kernels == {"generic": 1}
    data["version"] = "0.0.0-other"
    open(tuning_env.tuning_file(), "w").write(json.dumps(data))
    op.registries[0].pinned.clear()
    tp.dispatch.enable_tuning()
    assert op.registries[0].pinned == {}


def test_pins_are_kept_per_shape_bucket(tuning_env, monkeypatch):
    """A bucket is each dim rounded up to a power of two: (2, 3) and (2, 4) share one,
    (8, 16) has its own, and each keeps the candidate measured fastest for it."""
    from tensorplay.dispatch.kernel_selection import shape_bucket
    assert shape_bucket((tp.ones(3, 5), [tp.ones(0), tp.ones(1, 9)], 2)) == \
        ((4, 8), (0,), (1, 16))
    op = new_op()
    lib = tp.library.Library("CPU", "Bucketed")
    lib.impl(op.name, lambda self: self * 2, name="generic")
    lib.impl(op.name, lambda self: self + self, name="favourite", priority=10)
    small, big = tp.ones(2, 3), tp.ones(8, 16)
    fast = {"small": "generic", "big": "favourite"}
    monkeypatch.setattr(tuning_env, "_time", lambda fn, args, repeat: 1.0 if (
        [c for c in op.registries[0].candidates if c.fn is fn][0].name ==
        fast["small" if args[0].shape[0] == 2 else "big"]) else 5.0)
    assert tp.dispatch.tune(op.name, (small,)) == "generic"
    assert tp.dispatch.tune(op.name, (big,)) == "favourite"
    keys = sorted(op.registries[0].pinned)
    assert keys == ["(float32; shapes [2, 4])", "(float32; shapes [8, 16])"]
    for x, kernel in ((tp.ones(2, 4), "generic"), (tp.ones(2, 3), "generic"),
                      (tp.ones(5, 9), "favourite")):
        with explain(file=False) as ex:
            call(op, x)
        assert f"kernel    {kernel}" in ex.text, x.shape
    with explain(file=False) as ex:
        call(op, tp.ones(3, 3))       # a bucket nobody measured: the static order
    assert "kernel    favourite" in ex.text


def test_format_one_pins_load_and_serve_every_bucket(tuning_env, monkeypatch):
    """A file of format 1 (no `format`, pins keyed without shapes) still loads; its pin
    serves every shape of its key. A new save rewrites it as format 2."""
    import json
    op = new_op()
    lib = tp.library.Library("CPU", "Old pins")
    lib.impl(op.name, lambda self: self * 2, name="generic")
    lib.impl(op.name, lambda self: self + self, name="favourite", priority=10)
    x = tp.ones(3)
    old = {"version": tp.__version__, "devices": {tuning_env.device_name(x.device): {
        op.name: {"(float32)": "generic"}}}}
    open(tuning_env.tuning_file(), "w").write(json.dumps(old))
    tp.dispatch.enable_tuning()
    for shape in ((3,), (40, 2)):
        with explain(file=False) as ex:
            call(op, tp.ones(*shape))
        assert "kernel    generic" in ex.text
    monkeypatch.setattr(tuning_env, "_time", lambda fn, args, repeat: 1.0)
    tp.dispatch.tune(op.name, (x,))
    data = json.loads(open(tuning_env.tuning_file()).read())
    assert data["format"] == 2
    assert set(data["devices"][tuning_env.device_name(x.device)][op.name]) == \
        {"(float32)", "(float32; shapes [4])"}


def test_tune_times_with_do_bench(tuning_env, monkeypatch):
    """Each candidate: one warm-up run, then `repeat` runs, each synchronised (events)."""
    from tensorplay import _device_timing
    runs = []
    monkeypatch.setattr(_device_timing, "flush_cache", lambda: runs.append("flush"))
    assert tuning_env._time(lambda a: runs.append(a), ("x",), 3) >= 0
    assert runs == ["x", "flush", "x", "flush", "x", "flush", "x"]


def test_tune_on_a_real_op_keeps_results_equal_to_torch(tuning_env):
    a_np = np.random.default_rng(2).standard_normal((6, 5)).astype(np.float32)
    b_np = np.random.default_rng(3).standard_normal((5, 4)).astype(np.float32)
    a, b = tp.from_numpy(a_np), tp.from_numpy(b_np)
    name = tp.dispatch.tune("mm", (a, b), repeat=1, save=False)
    assert name in {c.name for c in dispatcher.find("mm").registries[0].candidates}
    np.testing.assert_allclose(tp.mm(a, b).numpy(), (torch.from_numpy(a_np) @
                                                    torch.from_numpy(b_np)).numpy(), rtol=1e-5)


# ---- memory layout: channels_last ---------------------------------------------------------
def test_memory_format_methods_match_torch():
    x_np = np.random.default_rng(4).standard_normal((2, 3, 4, 5)).astype(np.float32)
    x, tx = tp.from_numpy(x_np), torch.from_numpy(x_np)
    for mine, theirs in ((x.to(memory_format=tp.channels_last),
                          tx.to(memory_format=torch.channels_last)),
                         (x.contiguous(memory_format=tp.channels_last),
                          tx.contiguous(memory_format=torch.channels_last)),
                         (x.to(memory_format=tp.channels_last).contiguous(),
                          tx.to(memory_format=torch.channels_last).contiguous()),
                         (x.to(memory_format=tp.channels_last, dtype=tp.float64),
                          tx.to(memory_format=torch.channels_last, dtype=torch.float64))):
        assert mine.stride() == theirs.stride()
        assert mine.dtype.name == str(theirs.dtype).split(".")[1]
        np.testing.assert_array_equal(mine.numpy(), theirs.numpy())
        for fmt, tfmt in ((tp.channels_last, torch.channels_last),
                          (tp.contiguous_format, torch.contiguous_format)):
            assert mine.is_contiguous(memory_format=fmt) == theirs.is_contiguous(
                memory_format=tfmt)
    cl = x.to(memory_format=tp.channels_last)
    assert cl.to(memory_format=tp.channels_last) is cl
    assert cl.contiguous(memory_format=tp.channels_last) is cl
    with pytest.raises(tp.errors.ShapeError, match="rank 4"):
        tp.ones(2, 3).to(memory_format=tp.channels_last)


def test_module_to_channels_last_lays_out_4d_parameters():
    m = tp.nn.Sequential(tp.nn.Conv2d(3, 4, 3), tp.nn.BatchNorm2d(4))
    t = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4))
    assert m.to(memory_format=tp.channels_last) is m
    t.to(memory_format=torch.channels_last)
    for (name, p), (_, q) in zip(m.named_parameters(), t.named_parameters()):
        assert p.stride() == q.stride(), name
        assert p.is_leaf and p.requires_grad


def same_strides(mine, theirs):
    """Strides equal where they matter: a dim of size 1 may have any stride."""
    return mine.shape == tuple(theirs.shape) and all(
        a == b for a, b, n in zip(mine.stride(), theirs.stride(), mine.shape) if n != 1)


def _cl_pair(shape, seed):
    x_np = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    tx = torch.from_numpy(x_np).to(memory_format=torch.channels_last).requires_grad_()
    x = tp.from_numpy(x_np).to(memory_format=tp.channels_last).requires_grad_()
    plain = tp.from_numpy(x_np).requires_grad_()
    return x, plain, tx


LAYOUT_CASES = {
    "conv2d 3x3": (lambda F, x, w: F.conv2d(x, w, padding=1), (4, 3, 3, 3)),
    "conv2d 1x1": (lambda F, x, w: F.conv2d(x, w), (5, 3, 1, 1)),
    "conv2d stride 2": (lambda F, x, w: F.conv2d(x, w, stride=2), (4, 3, 3, 3)),
    "max_pool2d": (lambda F, x, w: F.max_pool2d(x, 2), None),
    "avg_pool2d": (lambda F, x, w: F.avg_pool2d(x, 3, stride=1, padding=1), None),
    "adaptive_avg_pool2d": (lambda F, x, w: F.adaptive_avg_pool2d(x, (2, 3)), None),
    "batch_norm": (lambda F, x, w: F.batch_norm(x, None, None, training=True), None),
    "batch_norm affine": (lambda F, x, w: F.batch_norm(
        x, None, None, w[0, 0, 0] if w is not None else None, training=True), None),
}


@pytest.mark.parametrize("case", sorted(LAYOUT_CASES))
def test_channels_last_matches_contiguous_and_torch_forward_and_backward(case):
    fn, w_shape = LAYOUT_CASES[case]
    x, plain, tx = _cl_pair((2, 3, 6, 7), seed=5)
    if w_shape is None and case.endswith("affine"):
        w_shape = (1, 1, 1, 3)
    w_np = None if w_shape is None else \
        np.random.default_rng(6).standard_normal(w_shape).astype(np.float32)
    w = None if w_np is None else tp.from_numpy(w_np).requires_grad_()
    tw = None if w_np is None else torch.from_numpy(w_np).requires_grad_()
    y, y_plain = fn(tp.nn.functional, x, w), fn(tp.nn.functional, plain, w)
    ty = fn(torch.nn.functional, tx, tw)
    assert same_strides(y, ty) and y_plain.is_contiguous()
    # Equal up to the order of the sums (an NHWC kernel reduces down columns).
    np.testing.assert_allclose(y.detach().numpy(), y_plain.detach().numpy(), rtol=1e-6,
                               atol=1e-6)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
    g_np = np.random.default_rng(7).standard_normal(ty.shape).astype(np.float32)
    (y * tp.from_numpy(g_np)).sum().backward()
    (ty * torch.from_numpy(g_np)).sum().backward()
    assert same_strides(x.grad, tx.grad)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    if w is not None:
        assert same_strides(w.grad, tw.grad)
        np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_channels_last_call_takes_the_logged_layout_fallback(counting, caplog):
    x, _, _ = _cl_pair((1, 2, 4, 4), seed=8)
    tp.dispatch.kernel_selection.bump_version()         # a cache miss, so the rejections are seen
    with caplog.at_level(logging.INFO, logger="tensorplay.dispatch"):
        tp.nn.functional.adaptive_max_pool2d(x.detach(), 2)      # no NHWC kernel
    note = "layout conversion: channels_last -> contiguous_format, results back to channels_last"
    assert any(note in r.getMessage() for r in caplog.records)
    row = counting()["adaptive_max_pool2d"]
    assert row.fallbacks == {note: 1}
    assert row.rejected["cpu_kernels.pooling.adaptive_max_pool2d"] == {
        "an NCHW kernel: channels_last inputs": 1}


@pytest.mark.parametrize("case, kernels", [
    ("batch_norm", {"native_batch_norm": "cpu_kernels.normalization.native_batch_norm_nhwc",
                    "native_batch_norm_backward":
                        "cpu_kernels.normalization.native_batch_norm_backward_nhwc"}),
    ("conv2d 1x1", {"convolution": "cpu_kernels.conv.convolution_1x1_nhwc",
                    "convolution_backward": "cpu_kernels.conv.convolution_backward_1x1_nhwc"}),
])
def test_nhwc_kernels_run_for_channels_last_calls(counting, case, kernels):
    fn, w_shape = LAYOUT_CASES[case]
    x, _, tx = _cl_pair((2, 32, 4, 5), seed=9)      # NHWC batch_norm: 8 channels or more
    w_np = None if w_shape is None else \
        np.random.default_rng(10).standard_normal((w_shape[0], 32, 1, 1)).astype(np.float32)
    w = None if w_np is None else tp.from_numpy(w_np).requires_grad_()
    tw = None if w_np is None else torch.from_numpy(w_np).requires_grad_()
    y, ty = fn(tp.nn.functional, x, w), fn(torch.nn.functional, tx, tw)
    g = np.random.default_rng(11).standard_normal(ty.shape).astype(np.float32)
    (y * tp.from_numpy(g)).sum().backward()
    (ty * torch.from_numpy(g)).sum().backward()
    assert same_strides(y, ty) and same_strides(x.grad, tx.grad)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-4)
    if w is not None:
        np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-4, atol=1e-4)
    for op, name in kernels.items():
        row = counting()[op]
        assert set(row.kernels) == {name} and not row.fallbacks, op


@pytest.mark.parametrize("channels, nhwc", [(3, False), (8, True)])
def test_nhwc_batch_norm_runs_from_8_channels(counting, channels, nhwc):
    """Below 8 channels the NHWC batch norm's loops along the channels lose to the NCHW
    kernel with the layout fallback's two copies: its shape rule sends them there."""
    x, _, tx = _cl_pair((2, channels, 4, 5), seed=12)
    bump_version()              # a cache miss, where the rejections are counted
    y = tp.nn.functional.batch_norm(x, None, None, training=True)
    ty = torch.nn.functional.batch_norm(tx, None, None, training=True)
    y.sum().backward()
    ty.sum().backward()
    assert same_strides(y, ty) and same_strides(x.grad, tx.grad)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-4)
    for op in ("native_batch_norm", "native_batch_norm_backward"):
        row = counting()[op]
        name = f"cpu_kernels.normalization.{op}"
        if nhwc:
            assert set(row.kernels) == {name + "_nhwc"} and not row.fallbacks, op
        else:
            assert set(row.kernels) == {name} and row.fallbacks, op
            assert row.rejected[name + "_nhwc"] == {
                "shape rule '4-D input, at least 8 channels' not met": 1}, op


def test_profiler_table_shows_the_kernel_chosen_per_op():
    x = tp.rand(2, 4, 3, 3)
    w = tp.rand(5, 4, 1, 1)
    with tp.profiler.profile() as prof:
        tp.nn.functional.conv2d(x, w)
        tp.nn.functional.conv2d(x, tp.rand(5, 4, 3, 3))
        x.sum()
    ran = [e.kernel for e in prof.events if e.name == "convolution"]
    assert ran == ["cpu_kernels.conv.convolution_1x1", "cpu_kernels.conv.convolution"]
    conv = next(a for a in prof.key_averages() if a.key == "convolution")
    assert conv.kernels == ran
    table = prof.table()
    assert "kernel" in table.splitlines()[0]
    assert "cpu_kernels.reduction.sum" in table
    assert "cpu_kernels.conv.convolution_1x1, cpu_kernels.conv.convolution" in table


def test_einsum_of_three_operands_matches_torch():
    # The contraction order is PyTorch's left to right (no plan to search or cache).
    rng = np.random.default_rng(12)
    arrays = [rng.standard_normal(s).astype(np.float64) for s in ((3, 4), (4, 5), (5, 2))]
    expected = torch.einsum("ij,jk,kl->il", *map(torch.from_numpy, arrays)).numpy()
    got = tp.einsum("ij,jk,kl->il", *map(tp.from_numpy, arrays)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-12)
