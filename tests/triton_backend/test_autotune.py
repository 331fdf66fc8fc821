"""Autotuned launch configurations (tensorplay/dispatch/autotune.py) on the pointwise
template and the matmul (softmax takes its launch from heuristics, triton_kernels/_rows.py): every config computes the right values, a measured
choice is kept per shape bucket, explain() says which config ran and why; and
triton_kernels.source() for every op with a CUDA kernel."""
import pytest

from triton_util import assert_same, make

import tensorplay as tp
import triton_kernels
from tensorplay._generated.declarations import DISPATCH
from tensorplay.dispatch import autotune
from tensorplay.dispatch.plan_cache import plans
from tensorplay.errors import NoKernelError
from triton_kernels import linalg, pointwise


@pytest.fixture
def autotuning():
    """Autotuning on (the interpreter's default is off), restored afterwards."""
    before = autotune.options.enabled
    tp.dispatch.enable_autotune()
    yield
    autotune.options.enabled = before
    autotune.bump_version()


def hops(fn):
    with tp.dispatch.explain(file=False) as ex:
        fn()
    return [line.strip() for line in ex.lines if line.strip().startswith("autotune")]


@pytest.mark.parametrize("module, run", [
    (pointwise, lambda: (make((50, 30)).cuda() * 3 + make((30,), seed=1).cuda(),
                         make((50, 30)) * 3 + make((30,), seed=1))),
    (linalg, lambda: (tp.mm(make((40, 24)).cuda(), make((24, 8), seed=1).cuda()),
                      tp.mm(make((40, 24)), make((24, 8), seed=1)))),
    (linalg, lambda: (tp.mm(make((64, 32)).cuda(), make((32, 64), seed=1).cuda()),
                      tp.mm(make((64, 32)), make((32, 64), seed=1)))),
], ids=["pointwise", "mm masked", "mm aligned"])
def test_every_config_computes_the_same_values(module, run, monkeypatch):
    assert len(module.CONFIGS) >= 2
    for config in module.CONFIGS:
        monkeypatch.setattr(module, "CONFIGS", [config])     # the default is this one
        got, expected = run()
        assert_same(got, expected, rtol=1e-4, atol=1e-5)


def test_in_place_pointwise_is_applied_once_while_measured(autotuning):
    """Measured launches write a scratch result: add_ reads self as it was each time.
    (More elements than the smallest block: a tensor that fits in one program of every
    config has nothing to choose, and is not measured.)"""
    x, y = make((40, 30)), make((30,), seed=1)
    xc = x.cuda()
    text = hops(lambda: xc.add_(y.cuda()))
    assert len(text) == 1 and "measured fastest of 2 for ((2048,), 'float32')" in text[0]
    assert_same(xc, x + y)
    assert hops(lambda: make((6, 5)).cuda() + 1) == []


def test_matmul_choice_per_bucket_and_the_aligned_configs_divide(autotuning):
    a, b = make((64, 32)).cuda(), make((32, 64), seed=1).cuda()
    assert_same(tp.mm(a, b), tp.mm(a.cpu(), b.cpu()), rtol=1e-4, atol=1e-4)
    aligned = [k for k in autotune.choices("matmul") if not k[2]]
    assert aligned == [((64, 64, 32), "float32", False, (0, 1))]
    tp.mm(make((40, 24)).cuda(), make((24, 8)).cuda())
    assert ((64, 8, 32), "float32", True, None) in autotune.choices("matmul")


def test_off_by_default_under_the_interpreter():
    if not tp.cuda.is_interpreted():
        pytest.skip("on a GPU autotuning is on by default")
    assert not autotune.autotune_enabled()
    x = make((40, 24)).cuda()
    assert hops(lambda: tp.mm(x, x.t())) == []
    with tp.dispatch.explain(file=False) as ex:
        tp.mm(x, x.t())
    assert f"BLOCK_M={linalg.CONFIGS[0].kwargs['BLOCK_M']}" in ex.text


# ---- triton_kernels.source -----------------------------------------------------------------
# Ops whose CUDA kernel has no fixed Triton source: an expression made from each call's
# arguments (dtype-dependent fills and bit patterns, a diagonal or a number of decimals)
# or no Triton kernel of their own (composed of other ops).
PER_CALL_EXPRESSION = {
    "round.decimals", "round_.decimals", "nan_to_num", "nan_to_num_", "bitwise_not",
    "bitwise_not_", "normal_", "uniform_", "exponential_", "bernoulli", "bernoulli.p",
    "bernoulli_.float", "bernoulli_.Tensor", "tril", "tril_", "triu", "triu_",
    "binary_cross_entropy_with_logits", "nextafter", "nextafter_", "isneginf", "isposinf",
    "random_.from", "random_.to", "random_", "cauchy_", "log_normal_", "geometric_",
}
COMPOSED = {"equal", "count_nonzero", "nanmedian.dim"}


def test_source_of_every_op_with_a_cuda_kernel():
    without = {}
    for op, _ in DISPATCH["CUDA"]:
        try:
            text = triton_kernels.source(op)
        except NoKernelError as e:
            assert e.op == op and f"{op} has no" in str(e)
            without[op] = str(e)
            continue
        assert "@triton.jit" in text and "\ndef " in text, op
    assert {op for op, why in without.items() if "template" in why} == PER_CALL_EXPRESSION
    assert {op for op, why in without.items() if "template" not in why} == COMPOSED


def test_source_of_hand_written_kernels():
    text = triton_kernels.source("softmax")
    assert text.startswith("# triton_kernels/softmax.py: softmax_kernel\n@triton.jit\n"
                           "def softmax_kernel(")
    assert "def matmul_kernel(" in triton_kernels.source("mm")
    assert "def reduce_kernel(" in tp.cuda.source("sum")
    assert "result = _special_math.lgamma(x)" in triton_kernels.source("lgamma")
    assert "def add_kernel_rank2(" in triton_kernels.source("add", rank=2)
    with pytest.raises(NoKernelError, match=r"source\(\): no_such_op has no CUDA kernel"):
        triton_kernels.source("no_such_op")


def test_a_config_that_cannot_run_is_left_out(autotuning):
    """As Triton's autotuner does with OutOfResources (float64's biggest matmul tiles on a
    GPU): measured without it; a kernel none of whose configs runs raises the first error."""
    configs = [autotune.Config({"BLOCK": 1}), autotune.Config({"BLOCK": 2})]

    def run(config):
        if config.kwargs["BLOCK"] == 1:
            raise RuntimeError("out of resources: shared memory")

    assert autotune.choose("fake kernel", configs, ("bucket",), run) is configs[1]
    assert [c for c, _ in autotune.choices("fake kernel")[("bucket",)].times] == [configs[1]]
    with pytest.raises(RuntimeError, match="shared memory"):
        autotune.choose("fake kernel", configs[:1], ("other",), run)
