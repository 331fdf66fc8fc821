"""tp.profiler: op events with their dispatch keys and kernel, backward nodes as events
(the names PyTorch's profiler shows), record_function spans, key_averages().table(),
a Chrome trace that is valid Trace Event Format JSON."""
import json

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.dispatch.trace import observers
from tensorplay.dispatch import trace
from tensorplay.errors import ArgumentError


def _step(lib, profiler):
    a = lib.tensor([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]], requires_grad=True)
    b = lib.tensor([0.5, -1.0, 2.0])
    with profiler.record_function("forward"):
        loss = (a * b).relu().sum()
    loss.backward()
    return a


def test_op_events_carry_keys_kernel_and_shapes():
    a = tp.ones(2, 3)
    b = tp.ones(3)
    with tp.profiler.profile(record_shapes=True) as prof:
        tp.add(a, b)
        tp.add(a.requires_grad_(), b)
    adds = [e for e in prof.events if e.name == "add.Tensor"]
    # the autograd slot runs only for the call that records (the dispatch loop skips it
    # when no tensor requires grad)
    assert [e.keys for e in adds] == [["CPU"], ["AutogradCPU", "CPU"]]
    assert all(e.kernel == "cpu_kernels.pointwise.add" for e in adds)
    assert adds[0].shapes == [(2, 3), (3,), None]        # alpha is not a tensor
    assert all(e.kind == "op" and e.end_ns >= e.start_ns for e in adds)
    assert observers.active is False and trace.state.watch is None


@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_op_events_name_the_kernel_of_the_call_layout(layout):
    """A registry whose first candidate takes only channels_last inputs (the NHWC
    pooling kernels, no other constraint): the event names the kernel that ran for this
    call's layout, not the registry's first candidate."""
    x = tp.rand(2, 4, 6, 6)
    if layout == "channels_last":
        x = x.to(memory_format=tp.channels_last)
    with tp.profiler.profile() as prof:
        tp.nn.functional.avg_pool2d(x, 2)
        tp.nn.functional.max_pool2d(x, 2)
    suffix = "_nhwc" if layout == "channels_last" else ""
    kernels = {e.name: e.kernel for e in prof.events if e.kind == "op"}
    assert kernels["avg_pool2d"] == f"cpu_kernels.pooling.avg_pool2d{suffix}"
    assert kernels["max_pool2d_with_indices"] == \
        f"cpu_kernels.pooling.max_pool2d_with_indices{suffix}"


def test_backward_nodes_are_events_named_as_torch_names_them():
    with tp.profiler.profile() as prof:
        a = _step(tp, tp.profiler)
    with torch.profiler.profile() as tprof:
        ta = _step(torch, torch.autograd.profiler)
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy())
    ours = [e.name for e in prof.events if e.kind == "backward"]
    assert ours == ["SumBackward0", "ReluBackward0", "MulBackward0", "AccumulateGrad"]
    theirs = {e.name.split(": ")[-1].removeprefix("torch::autograd::") for e in tprof.events()
              if e.name.startswith("autograd::engine::evaluate_function")}
    assert set(ours) == theirs
    # the formula's ops are nested inside their node
    relu_bw = next(e for e in prof.events if e.name == "ReluBackward0")
    inner = [e for e in prof.events if e.depth == 1 and
             relu_bw.start_ns <= e.start_ns and e.end_ns <= relu_bw.end_ns]
    assert [e.name for e in inner] == ["threshold_backward"]


def test_record_function_spans_nest_their_ops_and_cost_nothing_outside():
    with tp.profiler.record_function("outside"):     # no profile open: nothing recorded
        tp.ones(2).exp()
    with tp.profiler.profile() as prof:
        _step(tp, tp.profiler)
    span = next(e for e in prof.events if e.kind == "user")
    assert span.name == "forward" and span.depth == 0
    inside = [e.name for e in prof.events if e.depth == 1 and
              span.start_ns <= e.start_ns and e.end_ns <= span.end_ns]
    assert inside == ["mul.Tensor", "relu", "sum"]
    assert span.self_cpu_time_total_us <= span.cpu_time_total_us
    assert "outside" not in {e.name for e in prof.events}

    @tp.profiler.record_function("decorated")
    def f(x):
        return x * 2
    with tp.profiler.profile() as prof:
        f(tp.ones(2))
    assert [e.name for e in prof.events][:2] == ["decorated", "mul.Scalar"]
    assert [e.depth for e in prof.events][:2] == [0, 1]


def test_key_averages_table_sorts_and_refuses_an_unknown_column():
    with tp.profiler.profile(with_stack=True) as prof:
        x = tp.ones(4)
        for _ in range(3):
            x = x + 1
        x.sum()
    avgs = prof.key_averages()
    by_name = {a.key: a for a in avgs}
    assert by_name["add.Scalar"].count == 3 and by_name["sum"].count == 1
    total = sum(e.cpu_time_total_us for e in prof.events if e.name == "add.Scalar")
    assert by_name["add.Scalar"].cpu_time_total_us == pytest.approx(total)
    table = avgs.table(sort_by="count")
    rows = table.splitlines()[1:]
    assert rows[0].startswith("add.Scalar") and " 3 " in rows[0]
    # add.Scalar decomposes above autograd (into add.Tensor, its own event)
    assert "AutogradCPU -> tensorplay.composite." in rows[0]
    assert "CPU -> cpu_kernels.pointwise.add" in table
    assert len(avgs.table(sort_by="self_cpu_time_total", row_limit=1).splitlines()) == 2
    with pytest.raises(ArgumentError, match="sort_by.*got 'cuda_time'"):
        avgs.table(sort_by="cuda_time")
    stack = prof.events[0].stack
    assert stack and stack[0].split(":")[0].endswith("test_profiler.py")


def test_chrome_trace_is_valid_trace_event_json(tmp_path):
    with tp.profiler.profile(record_shapes=True) as prof:
        _step(tp, tp.profiler)
    path = prof.export_chrome_trace(str(tmp_path / "trace.json"))
    with open(path) as f:
        doc = json.load(f)
    events = doc["traceEvents"]
    assert len(events) == len(prof.events)
    for e in events:
        assert e["ph"] == "X" and isinstance(e["name"], str)
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0
        assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
    names = {e["name"] for e in events}
    assert {"forward", "mul.Tensor", "MulBackward0", "AccumulateGrad"} <= names
    mul = next(e for e in events if e["name"] == "mul.Tensor")
    assert mul["args"]["dispatch keys"] == "AutogradCPU -> CPU"
    assert mul["args"]["kernel"] == "cpu_kernels.pointwise.mul"
    assert mul["args"]["input shapes"] == "[(2, 3), (3,)]"
    fwd = next(e for e in events if e["name"] == "forward")      # the span holds the op
    assert fwd["ts"] <= mul["ts"] and mul["ts"] + mul["dur"] <= fwd["ts"] + fwd["dur"] + 1e-3


def test_profile_and_explain_together():
    a = tp.ones(2, requires_grad=True)
    with tp.profiler.profile() as prof, tp.dispatch.explain(file=False) as ex:
        a.sum().backward()
    assert [e.name for e in prof.events if e.kind == "backward"] == ["SumBackward0",
                                                                     "AccumulateGrad"]
    assert [h.text for h in ex.records if h.kind == "node"] == [
        "SumBackward0 (backward of sum)", "AccumulateGrad"]
    assert trace.state.watch is None and not observers.active
