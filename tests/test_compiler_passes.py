"""The graph passes of tp.compile's lowering (tensorplay/compiler/passes/), each on small
captured graphs: what it removes, merges, folds, opens or groups, and that the graph
still computes eager's values (replayed by run_graph, the reference interpreter)."""
import numpy as np

import tensorplay as tp
from compiler_graphs import Fn, captured
from tensorplay.compiler.passes import (
    FusedGroup, decompose_composites, eliminate_common_subexpressions, eliminate_dead_code,
    fold_constants, fuse_pointwise,
)
from tensorplay.compiler import codegen_cpu
from tensorplay.export.capture import _frozen as frozen     # a copy that keeps the number mark
from tensorplay.export.graph import Graph
from tensorplay.export.program import run_graph


def capture(fn, *inputs):
    return captured(Fn(fn), inputs)


def ops(graph):
    return [n.func.name for n in graph.nodes]


def same_values(a, b, exact=True):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.dtype == y.dtype and x.shape == y.shape
        if exact:
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
        else:
            np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-6, atol=1e-6)


def fresh(graph):
    """`graph` with its own copies of the constants (a replay may write them)."""
    return Graph(graph.placeholders, {k: frozen(t) for k, t in graph.constants.items()},
                 graph.nodes, graph.outputs)


def replayed(before, after, inputs, exact=True):
    """`after` computes what `before` does, inputs written in place included."""
    ins_a = [t.clone() for t in inputs]
    ins_b = [t.clone() for t in inputs]
    tp.manual_seed(3)
    ref = run_graph(fresh(before), ins_a)
    tp.manual_seed(3)
    got = run_graph(fresh(after), ins_b)
    same_values(ref, got, exact)
    same_values(ins_a, ins_b)


# ---- dead code --------------------------------------------------------------------------
def test_dead_code_drops_unread_nodes_and_keeps_writes_and_draws():
    def fn(x):
        x.sin()                              # unread: dropped
        unread = x.cos() * 2                 # a chain nobody reads: dropped whole
        x.add_(1.0)                          # writes the input: kept
        tp.nn.functional.dropout(x, 0.5)     # a draw moves the generator: kept
        return x.exp()
    graph, inputs = capture(fn, tp.randn(3))
    out = eliminate_dead_code(graph)
    assert "sin" not in ops(out) and "cos" not in ops(out) and "mul.Tensor" not in ops(out)
    assert "add_.Tensor" in ops(out) and "exp" in ops(out)
    assert any("bernoulli" in name for name in ops(out))
    replayed(graph, out, inputs)


def test_dead_code_drops_unread_constants():
    def fn(x):
        (x * tp.arange(3, dtype=tp.float32)).sum()   # unread, and so is the constant
        return x + 1.0
    graph, inputs = capture(fn, tp.randn(3))
    out = eliminate_dead_code(graph)
    assert len(out.constants) == 1 and ops(out) == ["add.Tensor"]


# ---- CSE --------------------------------------------------------------------------------
def test_cse_merges_equal_calls():
    def fn(x, w):
        return (x @ w).tanh() + (x @ w).tanh()
    graph, inputs = capture(fn, tp.randn(2, 3), tp.randn(3, 3))
    out = eliminate_dead_code(eliminate_common_subexpressions(graph))
    assert len(out.nodes) == len(graph.nodes) - 2
    assert ops(out).count("tanh") == 1
    replayed(graph, out, inputs)


def test_cse_keeps_calls_apart_across_a_write():
    def fn(x):
        a = x.exp()
        x.mul_(2.0)
        return a + x.exp()
    graph, inputs = capture(fn, tp.randn(3))
    out = eliminate_common_subexpressions(graph)
    assert ops(out).count("exp") == 2
    replayed(graph, out, inputs)


def test_cse_keeps_random_calls_and_distinct_outputs():
    def fn(x):
        a = tp.nn.functional.dropout(x, 0.5)
        b = tp.nn.functional.dropout(x, 0.5)
        return a + b, x.exp(), x.exp()
    graph, inputs = capture(fn, tp.ones(64))
    out = eliminate_common_subexpressions(graph)
    assert ops(out) == ops(graph)             # two draws, and two returned results
    replayed(graph, out, inputs)


def test_cse_tells_floats_apart_by_value():
    def fn(x):
        return x * 0.5 + x * 0.25
    graph, inputs = capture(fn, tp.randn(3))
    out = eliminate_common_subexpressions(graph)
    replayed(graph, out, inputs)



def test_cse_keeps_apart_equal_calls_whose_result_is_written():
    """Fuzzer seed 4045741: `b.clamp_` wrote `a` too once the two clones were merged.
    A write through a view (`d[1:]`) or to the first of the pair counts as well."""
    def fn(x):
        a, b = x.clone(), x.clone()
        b.clamp_(-1, 1)
        c, d = x.exp(), x.exp()
        d[1:].zero_()
        e, f = x.abs(), x.abs()
        e.mul_(2)
        return a + b, c + d, e + f
    graph, inputs = capture(fn, tp.randn(3) * 3)
    out = eliminate_common_subexpressions(graph)
    assert ops(out) == ops(graph)
    replayed(graph, out, inputs)


def test_cse_keeps_the_base_of_a_returned_view():
    def fn(x):
        return x.exp(), x.exp()[0:2]     # the caller may write the view
    graph, inputs = capture(fn, tp.randn(3))
    out = eliminate_common_subexpressions(graph)
    assert ops(out).count("exp") == 2

# ---- constant folding -------------------------------------------------------------------
def test_folding_computes_constant_chains_once():
    def fn(x):
        k = tp.arange(4, dtype=tp.float32)
        return x * (k * 2 + 1).exp()
    graph, inputs = capture(fn, tp.randn(4))
    out = eliminate_dead_code(fold_constants(graph))
    assert ops(out) == ["mul.Tensor"]
    assert len(out.constants) == 1
    replayed(graph, out, inputs)


def test_folding_leaves_written_constants_outputs_and_views():
    def fn(x):
        c = tp.zeros(3)
        d = tp.ones(3) * 2              # returned: the caller would get one tensor twice
        c.add_(x)                       # writes a constant: what reads it is not folded
        return c * 2, d, tp.ones(2, 3).t() * x[:, None]
    graph, inputs = capture(fn, tp.randn(3))
    out = fold_constants(graph)
    assert ops(out) == ops(graph)
    replayed(graph, out, inputs)



def test_folding_leaves_a_constant_written_through_a_view():
    def fn(x):
        c = tp.arange(3, dtype=tp.float32) * 2      # written through c[1:]: not folded
        c[1:].add_(x[1:])
        return c * 1
    graph, inputs = capture(fn, tp.randn(3))
    out = fold_constants(graph)
    assert ops(out) == ops(graph)
    replayed(graph, out, inputs)

# ---- decomposition ----------------------------------------------------------------------
def test_decomposition_opens_composite_ops_into_their_parts():
    def fn(x, y):
        return tp.nn.functional.mse_loss(x, y), tp.logaddexp(x, y)
    graph, inputs = capture(fn, tp.randn(3, 4), tp.randn(3, 4))
    assert ops(graph) == ["mse_loss", "logaddexp"]
    out = decompose_composites(graph)
    assert "mse_loss" not in ops(out) and "logaddexp" not in ops(out)
    assert {"sub.Tensor", "mul.Tensor", "exp"} <= set(ops(out))
    replayed(graph, out, inputs, exact=False)


def test_decomposition_parts_keep_their_inputs_apart_from_their_results():
    # prelu's parts have a `mul` of their own, and its input here is named `mul` too
    def fn(x, w):
        return tp.nn.functional.prelu(x * 1.0, w)
    graph, inputs = capture(fn, tp.randn(2, 3), tp.randn(3))
    out = decompose_composites(graph)
    assert "prelu" not in ops(out)
    replayed(graph, out, inputs)


def test_decomposition_is_taken_only_where_accepted():
    def fn(x, y):
        return tp.nn.functional.mse_loss(x, y)
    graph, inputs = capture(fn, tp.randn(3, 4), tp.randn(3, 4))
    seen = []
    out = decompose_composites(graph, accept=lambda parts: seen.append(ops(parts)) or False)
    assert ops(out) == ["mse_loss"] and seen and "mean" in seen[0]


def test_decomposition_keeps_a_node_whose_parts_read_the_values():
    from tensorplay.compiler.passes import decomposition

    def reads_values(x):    # a number read from the data: the two captures differ
        return x * float(x.sum())

    graph, inputs = capture(lambda x, y: tp.nn.functional.mse_loss(x, y), tp.randn(2),
                            tp.randn(2))
    node = graph.nodes[0]
    got = decomposition._decomposition(node, lambda x, y, r: reads_values(x), "cpu",
                                       graph.constants)
    assert got is None


# ---- fusion -----------------------------------------------------------------------------
def schedule_of(fn, *inputs):
    graph, _ = capture(fn, *inputs)
    constants = graph.constants
    return fuse_pointwise(graph, lambda n: codegen_cpu.fusible(n, constants),
                          lambda n: codegen_cpu.compute_dtype(n, constants))


def test_fusion_groups_a_pointwise_chain():
    graph, _ = capture(lambda x, y: ((x + y).exp() * 2.0).tanh(), tp.randn(3, 4),
                       tp.randn(4))
    schedule = fuse_pointwise(graph, lambda n: codegen_cpu.fusible(n, graph.constants),
                              lambda n: codegen_cpu.compute_dtype(n, graph.constants))
    (group,) = schedule
    assert isinstance(group, FusedGroup)
    assert group.ops == ["add.Tensor", "exp", "mul.Tensor", "tanh"]
    assert group.inputs[:2] == graph.placeholders
    assert [v.name for v in group.outputs] == ["tanh"] and group.shape == (3, 4)


def test_fusion_hoists_unrelated_work_and_stops_at_readers_and_writes():
    def fn(x, w):
        a = x.exp()
        m = w @ w                  # reads nothing of the group: runs before it
        b = a.sin() * 2.0
        s = b.sum()                # reads the group: closes it
        c = (b + 1.0).cos()
        w.add_(1.0)                # a write: closes the second group
        return s, c, m, (c * 2.0).exp()
    schedule = schedule_of(fn, tp.randn(3, 3), tp.randn(3, 3))
    kinds = [s.ops if isinstance(s, FusedGroup) else s.func.name for s in schedule]
    assert kinds == ["mm", ["exp", "sin", "mul.Tensor"], "sum",
                     ["add.Tensor", "cos"], "add_.Tensor", ["mul.Tensor", "exp"]]
    # b is read after its group (by sum and the next group), a is not
    assert [v.name for v in schedule[1].outputs] == ["mul"]


def test_fusion_splits_at_another_shape_or_dtype():
    def fn(x, y, z):
        return (x.exp() + 1.0).sum(dim=0).sigmoid().tanh(), (z.exp() + 1.0).sin()
    schedule = schedule_of(fn, tp.randn(2, 3), tp.randn(3), tp.randn(3, dtype=tp.float64))
    groups = [s for s in schedule if isinstance(s, FusedGroup)]
    assert [(g.ops, g.shape, g.dtype) for g in groups] == [
        (["exp", "add.Tensor"], (2, 3), tp.float32),
        (["sigmoid", "tanh"], (3,), tp.float32),
        (["exp", "add.Tensor", "sin"], (3,), tp.float64)]


def test_fusion_leaves_what_the_generator_cannot_fuse():
    # integers, half types and a non-default alpha run their own kernels
    schedule = schedule_of(lambda i, h, x: ((i * 2 + i).abs(), (h + h).exp(),
                                            tp.add(x, x, alpha=2).exp()),
                           tp.randint(0, 5, (3,)), tp.randn(3, dtype=tp.float16),
                           tp.randn(3))
    assert not any(isinstance(s, FusedGroup) for s in schedule)


def test_fusion_ends_a_group_with_a_reduction_tail():
    graph, _ = capture(lambda x, y: (((x - y) * (x - y)).sum(), (x * y).sum(dim=1), x.max()),
                       tp.randn(3, 4), tp.randn(3, 4))
    constants = graph.constants
    schedule = fuse_pointwise(graph, lambda n: codegen_cpu.fusible(n, constants),
                              lambda n: codegen_cpu.compute_dtype(n, constants),
                              codegen_cpu.takes_tail)
    groups = [s for s in schedule if isinstance(s, FusedGroup)]
    assert [(g.ops, g.tail) for g in groups] == [
        (["sub.Tensor", "sub.Tensor", "mul.Tensor", "sum"], True),
        (["mul.Tensor", "sum.dim_IntList"], True)]
    assert [v.name for v in groups[0].outputs] == ["sum"]
    assert schedule[-1].func.name == "max"      # not a tail the generator takes


def test_fusion_keeps_one_open_group_per_shape():
    def fn(x, y):
        a = x.exp()             # (2, 3)
        b = y.sin()             # (3,): another group, opened beside the first
        c = a * 2.0             # back to the (2, 3) group
        d = b.cos()
        return c.tanh() + d, d  # reads the (3,) group: it is closed (emitted) first
    schedule = schedule_of(fn, tp.randn(2, 3), tp.randn(3))
    assert [s.ops for s in schedule] == [["sin", "cos"],
                                         ["exp", "mul.Tensor", "tanh", "add.Tensor"]]
