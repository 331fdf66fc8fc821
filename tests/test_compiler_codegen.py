"""The code generation of tp.compile's lowering (tensorplay/compiler/lowering.py,
codegen_cpu.py, codegen_triton.py): a captured graph lowered and run gives what the
reference interpreter (run_graph, every op through the dispatcher) gives, across
models and corner cases (tests/compiler_graphs.py); on the CPU bit for bit, with the
same dtypes, shapes and strides, inputs written in place alike."""
import os

import numpy as np
import pytest

import tensorplay as tp
from compiler_graphs import Fn, cases, captured
from tensorplay.compiler.lowering import lower
from tensorplay.export.capture import _frozen as frozen     # a copy that keeps the number mark
from tensorplay.export.graph import Graph
from tensorplay.export.program import run_graph

CPU_CASES = sorted(cases("cpu"))


def fresh(graph):
    """`graph` with its own copies of the constants (a replay may write them)."""
    return Graph(graph.placeholders, {k: frozen(t) for k, t in graph.constants.items()},
                 graph.nodes, graph.outputs)


def check_against_reference(graph, cg, tensors, exact=True, calls=2):
    for _ in range(calls):          # a second call: buffers and constants start afresh
        ins_ref = [t.clone() for t in tensors]
        ins_got = [t.clone() for t in tensors]
        tp.manual_seed(7)
        with tp.no_grad():
            ref = run_graph(fresh(graph), ins_ref)
        tp.manual_seed(7)
        got = cg(*ins_got)
        assert len(ref) == len(got)
        for a, b in list(zip(ref, got)) + list(zip(ins_ref, ins_got)):
            if not isinstance(a, tp.Tensor):
                assert a == b
                continue
            assert (a.dtype, tuple(a.shape), a.device) == (b.dtype, tuple(b.shape), b.device)
            x, y = np.asarray(a.detach().cpu()), np.asarray(b.detach().cpu())
            if exact:
                assert a.stride() == b.stride()
                np.testing.assert_array_equal(x, y)
            else:
                np.testing.assert_allclose(x.astype(np.float64), y.astype(np.float64),
                                           rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", CPU_CASES)
def test_cpu_code_gives_the_reference_values(name):
    tp.manual_seed(0)
    module, inputs = cases("cpu")[name]
    graph, tensors = captured(module, inputs)
    cg = lower(graph, device="cpu")
    check_against_reference(graph, cg, tensors)


def test_cpu_code_calls_kernels_directly_and_fuses_the_lstm_cell():
    tp.manual_seed(0)
    module, inputs = cases("cpu")["lstm_cell"]
    graph, tensors = captured(module, inputs)
    cg = lower(graph, device="cpu")
    source = cg.source
    assert "-> the op (dispatched)" not in source          # no dispatcher hop anywhere
    assert "cpu_kernels.linalg.addmm" in source and "cpu_kernels.pointwise.sigmoid" in source
    # one fused kernel per step, written once and called at each step
    assert [ops for _, ops in cg.kernels] == \
        [["tanh", "mul.Tensor", "addcmul", "tanh", "mul.Tensor"]] * 2
    assert source.count("def fused_0(") == 1 and source.count("_QUIET, fused_0,") == 2
    assert "np.tanh(" in source and "out=" in source
    # CSE: the bias sum and the transposed weight are computed once, not per step
    assert source.count("_k_transpose_int(") == 1 and source.count("_k_add_Tensor(") == 1
    compile(source, "<check>", "exec")                   # the source is what ran


@pytest.mark.parametrize("name", ["mlp", "cnn"])
def test_a_training_steps_forward_and_backward_graph_lowers_exactly(name):
    from compiler_graphs import captured_training_step
    tp.manual_seed(0)
    module, inputs = cases("cpu")[name]
    graph, tensors = captured_training_step(module, inputs, tp.randint(0, 10, (len(inputs[0]),)))
    assert any("backward" in n.func.name for n in graph.nodes)
    check_against_reference(graph, lower(graph), tensors)


def test_a_call_it_was_not_written_for_takes_the_reference_path():
    tp.manual_seed(0)
    graph, tensors = captured(Fn(lambda x, y: (x * y + 1.0).tanh()),
                              (tp.randn(2, 3), tp.randn(2, 3)))
    cg = lower(graph, device="cpu")
    for other in ([tp.randn(2, 3, dtype=tp.float64), tp.randn(2, 3, dtype=tp.float64)],
                  [tp.randn(4, 3), tp.randn(4, 3)]):
        assert not cg.fits(other)
        np.testing.assert_array_equal(np.asarray(cg(*other)[0]),
                                      np.asarray((other[0] * other[1] + 1.0).tanh()))
    # a non-contiguous input it was not captured with: the same values and layout
    x = tp.randn(3, 2).t()
    y = tp.randn(2, 3)
    assert cg.fits([x, y])
    check_against_reference(graph, cg, [x, y])


def test_dynamic_sizes_are_computed_from_the_inputs():
    from tensorplay.export import Dim
    from tensorplay.train.models import CharTransformer
    tp.manual_seed(0)
    model = CharTransformer(20, context=8, d_model=16, nhead=2, num_layers=1).eval()
    ep = tp.export.export(model, (tp.randint(0, 20, (3, 8)),),
                          dynamic_shapes={"ids": {0: Dim("batch")}})
    cg = lower(ep.graph)
    assert "(2 * ids.shape[0])" in cg.source
    lifted = [t for _, t in model.named_parameters()]
    for n in (3, 5):
        check_against_reference(ep.graph, cg, lifted + [tp.randint(0, 20, (n, 8))], calls=1)


def test_compiled_code_records_no_autograd_history():
    w = tp.randn(3, 3, requires_grad=True)
    graph, tensors = captured(Fn(lambda w, x: (x @ w).sigmoid() * 2.0), (w, tp.randn(2, 3)))
    out = lower(graph)(*tensors)[0]
    assert out.grad_fn is None and not out.requires_grad


# ---- the operator database: every op as a one-op graph ----------------------------------
# The reduced form: ops with several results, in-place writes, random draws, tensor lists,
# optional tensors, views, integer results. `pytest -m slow` runs every entry.
SWEEP_SAMPLE = ("max.dim", "sort", "var_mean", "split", "cat", "index_put", "add_",
                "dropout", "native_layer_norm", "nll_loss", "conv2d", "transpose", "where",
                "topk", "embedding", "unique")


def _flat(value, out):
    if isinstance(value, tp.Tensor):
        out.append(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _flat(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            _flat(v, out)
    return out


def _rebuilt(value, tensors):
    if isinstance(value, tp.Tensor):
        return next(tensors)
    if isinstance(value, (list, tuple)):
        return type(value)(_rebuilt(v, tensors) for v in value)
    if isinstance(value, dict):
        return {k: _rebuilt(v, tensors) for k, v in value.items()}
    return value


def _in_chain(t):
    """`t * 1.0` for a float tensor (the same values): puts the op between pointwise
    ops, so that what it reads and what it gives join fused groups."""
    return t * 1.0 if t.dtype in (tp.float32, tp.float64) else t


def sweep(entries, samples_per_dtype, device="cpu", chained=False):
    """Each sample of each entry captured, lowered and run against run_graph; returns
    how many were checked. `chained`: the op's float inputs and results pass through
    `_in_chain`."""
    checked = 0
    for entry in entries:
        dtypes = [d for d in (tp.float32, tp.int64, tp.bool, tp.float64) if d in entry.dtypes]
        for dtype in dtypes[:2]:
            for sample in entry.sample_inputs(device, dtype)[:samples_per_dtype]:
                tensors = _flat((sample.input, sample.args, sample.kwargs), [])

                def call(*given, sample=sample, entry=entry):
                    if chained:
                        given = [_in_chain(t) for t in given]
                    inp, args, kwargs = _rebuilt((sample.input, sample.args, sample.kwargs),
                                                 iter(given))
                    results = _flat(entry.op(inp, *args, **kwargs), [])
                    return [_in_chain(t) for t in results] if chained else results
                try:
                    tp.manual_seed(0)
                    graph = tp.export.export(Fn(call), tuple(t.clone() for t in tensors)).graph
                except Exception:
                    continue            # not capturable (reads values): not the lowering's
                cg = lower(graph, device=device)
                check_against_reference(graph, cg, tensors, exact=device == "cpu")
                checked += 1
    return checked


def _entries(names=None):
    from opinfo import op_db
    return [e for e in op_db if names is None or e.full_name in names]


@pytest.mark.parametrize("chained", [False, True])
def test_operator_database_sample_of_ops_lowers_exactly(chained):
    entries = _entries(SWEEP_SAMPLE)
    assert len(entries) >= 12
    assert sweep(entries, 1, chained=chained) >= 20


@pytest.mark.slow
@pytest.mark.parametrize("chained", [False, True])
def test_operator_database_lowers_exactly(chained):
    assert sweep(_entries(), 2, chained=chained) > 2000


# ---- cuda (the Triton interpreter here) ---------------------------------------------------
CUDA_CASES = ["lstm_cell", "broadcast", "zero_dim", "empty", "transposed_input", "inplace",
              "integers", "max_dim", "written_constant", "float64", "aliases",
              "reduction_tail"]


def cuda_ready():
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    return tp.cuda.is_available() or tp.cuda.is_interpreted()


needs_cuda = pytest.mark.skipif(not cuda_ready(), reason="no GPU and no Triton interpreter")


@needs_cuda
@pytest.mark.parametrize("name", CUDA_CASES)
def test_cuda_code_gives_the_reference_values(name):
    tp.manual_seed(0)
    module, inputs = cases("cuda")[name]
    graph, tensors = captured(module, inputs)
    cg = lower(graph, device="cuda")
    check_against_reference(graph, cg, tensors, exact=False, calls=1)


@needs_cuda
def test_cuda_fuses_a_chain_into_one_triton_kernel_that_names_its_ops():
    from tensorplay.compiler.codegen_triton import count_launches
    tp.manual_seed(0)
    module, inputs = cases("cuda")["broadcast"]
    graph, tensors = captured(module, inputs)
    cg = lower(graph, device="cuda")
    assert cg.kernels == [("fused_0_rank3",
                           ["add.Tensor", "exp", "mul.Tensor", "sub.Tensor", "tanh"])]
    assert "@triton.jit" in cg.source
    assert "# fused by tensorplay/compiler/codegen_triton.py: add.Tensor, exp, " \
           "mul.Tensor, sub.Tensor, tanh" in cg.source
    assert "_math.tanh(" in cg.source and "tl.exp(" in cg.source
    with tp.no_grad():
        assert count_launches(run_graph, graph, tensors) == 5
    assert count_launches(cg, *tensors) == 1


@needs_cuda
def test_cuda_sums_a_chain_in_its_fused_kernel():
    from tensorplay.compiler.codegen_triton import count_launches
    x, y = tp.randn(3, 5, device="cuda"), tp.randn(3, 5, device="cuda")
    graph, tensors = captured(Fn(lambda x, y: ((x - y) * (x - y)).sum()), (x, y))
    cg = lower(graph, device="cuda")
    assert cg.kernels == [("fused_0_rank2", ["sub.Tensor", "mul.Tensor", "sum"])]
    assert "tl.sum(tl.where(mask, " in cg.source
    check_against_reference(graph, cg, tensors, exact=False, calls=1)
    # the chain and the partial sums in one launch, then eager's sum of the partials
    with tp.no_grad():
        assert count_launches(cg, *tensors) < count_launches(run_graph, graph, tensors)


# Compiles the fused kernels of a few graphs with Triton's real compiler and ptxas for
# sm_90 (no GPU needed): the interpreter does not type-check as the compiler does.
_SM90_CHECK = """
import linecache, sys
sys.path.insert(0, "tests")
import triton, triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
import tensorplay as tp
from compiler_graphs import cases, captured
from tensorplay.compiler import codegen_triton as ct
from tensorplay.compiler.passes import FusedGroup, fuse_pointwise, optimize
from triton_kernels import _math, _special_math
from triton_kernels._launch import TL_DTYPES
PTR = {tp.bool: "*i1", tp.float32: "*fp32", tp.float64: "*fp64"}
count = 0
for name in ("lstm_cell", "broadcast", "zero_dim", "reduction_tail", "float64"):
    graph = optimize(captured(*cases("cpu")[name])[0])
    c = graph.constants
    for group in fuse_pointwise(graph, lambda n: ct.fusible(n, c),
                                lambda n: ct.compute_dtype(n, c), ct.takes_tail):
        if not isinstance(group, FusedGroup):
            continue
        text, scalars = ct.render("kernel", group, max(len(group.shape), 1), c)
        filename = f"<sm90 check {count}>"
        linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
        ns = dict(triton=triton, tl=tl, _math=_math, _special_math=_special_math)
        exec(compile(text, filename, "exec"), ns)
        fn = ns["kernel"]
        types = {"partial_ptr": PTR[group.dtype]}
        types.update({f"out{i}_ptr": PTR[v.dtype] for i, v in enumerate(group.outputs)})
        types.update({f"in{i}_ptr": PTR.get(v.dtype, "*fp64") for i, v in enumerate(group.inputs)})
        types.update({f"s{i}": "i32" if type(v) is int else "fp32" for i, v in enumerate(scalars)})
        const = dict(COMPUTE=TL_DTYPES[group.dtype], BLOCK=1024, WIDE_INDEX=False)
        signature = {a: "constexpr" if a in const else types.get(a, "i32") for a in fn.arg_names}
        triton.compile(ASTSource(fn, signature, const), target=GPUTarget("cuda", 90, 32))
        count += 1
print("compiled", count)
"""


@pytest.mark.slow
def test_fused_kernels_compile_for_sm90():
    import pathlib
    import subprocess
    import sys
    triton = pytest.importorskip("triton")
    if not (pathlib.Path(triton.__file__).parent / "backends" / "nvidia" / "bin" /
            "ptxas").exists():
        pytest.skip("this Triton build ships no ptxas")
    root = pathlib.Path(__file__).resolve().parents[1]
    env = {k: v for k, v in os.environ.items()
           if k not in ("TRITON_INTERPRET", "TENSORPLAY_TRITON_INTERPRET")}
    env["PYTHONPATH"] = str(root) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    done = subprocess.run([sys.executable, "-c", _SM90_CHECK], cwd=root, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert int(done.stdout.split()[-1]) >= 5


@needs_cuda
def test_cuda_fuses_ops_of_the_expression_tables():
    # the ops' own expressions (pointwise_expressions.py OPS), with their scalars
    def fn(x, y):
        F = tp.nn.functional
        a = F.gelu(x * 2.0, approximate="tanh") + F.silu(y).clamp(-1.0, 1.0)
        b = F.leaky_relu(a, 0.1) * F.softplus(y, beta=2.0) - F.hardtanh(x, -0.5, 0.5)
        return tp.where(b > 0, b, x).sigmoid(), tp.isnan(b)
    x, y = tp.randn(4, 6, device="cuda"), tp.randn(6, device="cuda")
    graph, tensors = captured(Fn(fn), (x, y))
    cg = lower(graph, device="cuda")
    # one kernel per result shape: y's (6,) chain, then x's (4, 6) one (softplus(y) is
    # left alone in its shape's group once silu and clamp's had to be stored)
    assert [ops for _, ops in cg.kernels] == [
        ["silu", "clamp"],
        ["mul.Tensor", "gelu", "add.Tensor", "leaky_relu", "mul.Tensor", "hardtanh",
         "sub.Tensor", "gt.Tensor", "where.self", "sigmoid", "isnan"]]
    assert "tl.where(v7 != 0, v6, in0)  # where.self" in cg.source
    check_against_reference(graph, cg, tensors, exact=False, calls=1)
