"""explain() over backward: each node that runs, its formula, the gradients in and out
(shapes and dtypes as PyTorch's), the edge each travels, AccumulateGrad into .grad; TLS
changes and version bumps; every hop's `file:line function` points at a real line."""
import inspect
import os
import re

import numpy as np
import torch

import tensorplay as tp
from tensorplay.dispatch import trace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(tp.__file__)))


def _mul_sum(lib):
    a = lib.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    b = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
    return a, b


def _explained_backward():
    a, b = _mul_sum(tp)
    loss = (a * b).sum()
    with tp.dispatch.explain(records=True) as ex:
        loss.backward()
    return a, b, ex


def test_backward_nodes_run_in_order_with_formula_and_edges():
    a, b, ex = _explained_backward()
    nodes = [h.text for h in ex.records if h.kind == "node"]
    assert nodes == ["SumBackward0 (backward of sum)", "MulBackward0 (backward of mul.Tensor)",
                     "AccumulateGrad", "AccumulateGrad"]
    formulas = [h for h in ex.records if h.kind == "formula"]
    assert [h.where.split()[-1] for h in formulas] == ["sum", "mul.Tensor"]
    assert "other * grad" in formulas[1].text or "grad * other" in formulas[1].text
    outs = [h for h in ex.records if h.kind == "grad out"]
    # SumBackward0 -> MulBackward0; MulBackward0 -> the two leaves' AccumulateGrad
    assert outs[0].data["edge"] == "MulBackward0 input 0"
    assert outs[1].data["edge"] == "AccumulateGrad of leaf float32[2, 3] requires_grad"
    assert outs[2].data["edge"] == "AccumulateGrad of leaf float32[3] requires_grad"
    accs = [h.text for h in ex.records if h.kind == "accum"]
    assert len(accs) == 2 and all("first gradient: cloned" in t for t in accs)


def test_gradients_in_and_out_have_torch_shapes_and_dtypes():
    a, b, ex = _explained_backward()
    ta, tb = _mul_sum(torch)
    (ta * tb).sum().backward()
    outs = [h.data for h in ex.records if h.kind == "grad out"]
    mul_out = outs[1:3]          # MulBackward0's gradients, for a and for b (before sum_to)
    assert mul_out[0]["shape"] == tuple(ta.grad.shape)
    assert mul_out[0]["dtype"] == str(ta.grad.dtype).removeprefix("torch.")
    ins = [h.data for h in ex.records if h.kind == "grad in"]
    assert ins[0]["shape"] == () and ins[0]["dtype"] == "float32"   # d loss / d loss
    # the explained pass computes what torch computes
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy())
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy())


def test_second_backward_adds_into_grad():
    a = tp.tensor([1.0, 2.0], requires_grad=True)
    (a * 2).sum().backward()
    with tp.dispatch.explain(records=True) as ex:
        (a * 3).sum().backward()
    acc = [h.text for h in ex.records if h.kind == "accum"]
    assert acc == ["into .grad of leaf float32[2] requires_grad (added to the .grad there)"]
    np.testing.assert_allclose(a.grad.numpy(), [5.0, 5.0])


def _check_where(where):
    path_line, func = where.split(" ", 1)
    path, line = path_line.rsplit(":", 1)
    line = int(line)
    full = path if os.path.isabs(path) else os.path.join(ROOT, path)
    assert os.path.exists(full), where
    with open(full) as f:
        lines = f.read().splitlines()
    assert 1 <= line <= len(lines), where
    if path.endswith(".yaml"):
        assert lines[line - 1].startswith(f"- name: {func}("), where
        return
    name = func.split(".")[-1]
    if name.startswith("<"):
        return
    # the line is the function's `def`, or inside its body: its `def` comes before it
    pattern = re.compile(rf"^\s*(def|class) {re.escape(name)}\b")
    assert any(pattern.match(s) for s in lines[max(0, line - 300):line]), where


def test_every_hop_names_a_real_line():
    a = tp.tensor([1.0, -2.0, 3.0], requires_grad=True)
    w = tp.ones(3)
    with tp.dispatch.explain(records=True) as ex:
        y = (a * w).relu().sum()
        y.backward()
        w.add_(1)
    kinds = {h.kind for h in ex.records}
    assert {"call", "key set", "dispatch", "kernel", "candidate", "cache", "result", "tls",
            "node", "formula", "grad in", "grad out", "accum", "version"} <= kinds
    for h in ex.records:
        assert h.where, h
        _check_where(h.where)
    kernel = next(h for h in ex.records if h.kind == "kernel")
    assert kernel.where.startswith("cpu_kernels/pointwise.py:") and \
        kernel.where.endswith(" mul")


def test_tls_change_and_version_bump_are_hops():
    a = tp.tensor([1.0, 2.0], requires_grad=True)
    x = tp.zeros(2)
    with tp.dispatch.explain(records=True) as ex:
        a.exp()
        x.add_(1)
    tls = [h for h in ex.records if h.kind == "tls"]
    assert len(tls) == 1 and tls[0].text.startswith("excluded + {")
    assert "AutogradCPU" in tls[0].text and tls[0].depth == 1
    version = [h.text for h in ex.records if h.kind == "version"]
    assert version == [f"self: version now {x._version} (saved copies of the old value now "
                       f"mismatch)"] and x._version == 1


def test_records_mode_collects_without_printing_and_gives_rows(capsys):
    a = tp.ones(2, requires_grad=True)
    with tp.dispatch.explain(records=True) as ex:
        a.sum().backward()
    assert capsys.readouterr().out == ""
    rows = ex.rows()
    assert rows[0]["kind"] == "call" and rows[0]["op"] == "sum"
    assert all({"depth", "kind", "text", "where"} <= set(r) for r in rows)
    depth, kind, text = ex.records[0]           # still unpacks as draw_route reads it
    assert (depth, kind) == (0, "call") and text.startswith("sum(")
    table = ex.table(kinds={"node", "grad out"})
    assert "SumBackward0" in table and "AccumulateGrad" in table and "key set" not in table


def test_one_dispatch_loop():
    # The traced path is OperatorHandle.call itself: trace.py only observes, never picks
    # a slot, and the untraced and traced calls agree.
    source = inspect.getsource(trace)
    assert "resolved[" not in source and "bit_length" not in source
    a = tp.tensor([1.0, 2.0, 3.0])
    plain = (a * 2 + 1).numpy()
    with tp.dispatch.explain(file=False) as ex:
        traced = (a * 2 + 1).numpy()
    np.testing.assert_array_equal(plain, traced)
    assert trace.state.watch is None and not trace.state.active
    # the call line names the front door that entered the dispatcher
    assert ex.records[0].where.startswith("tensorplay/_generated/functional.py:")
    assert ex.records[0].where.endswith(" mul")


def test_tour_follows_add_forward_backward_and_the_code(capsys):
    from tensorplay import tour
    tour.main()
    out = capsys.readouterr().out
    forward, rest = out.split("2. Backward", 1)
    backward, code = rest.split("3. The code that ran", 1)
    assert "add.Tensor(float32[3] requires_grad, float32[3] requires_grad, 1)" in forward
    assert "tls       excluded + {" in forward and "kernel    cpu_kernels.pointwise.add" in forward
    assert "AddBackward0 (backward of add.Tensor)" in backward
    assert "at derivatives.yaml:" in backward and backward.count("AccumulateGrad\n") == 2
    wheres = re.findall(r": (\S+:\d+ \S+)\n\n", code)
    assert [w.split(":")[0] for w in wheres] == [
        "tensorplay/_generated/functional.py", "tensorplay/_generated/autograd_wrappers.py",
        "tensorplay/_generated/autograd_nodes.py", "cpu_kernels/pointwise.py"]
    for where in wheres + re.findall(r"at (\S+:\d+ \S+)", forward + backward):
        _check_where(where)


def test_vmap_rules_and_autocast_casts_name_their_code():
    x = tp.tensor([[1.0, 2.0], [3.0, 4.0]])
    with tp.dispatch.explain(records=True) as ex:
        out = tp.func.vmap(tp.sin)(x)
        with tp.autocast("cpu", dtype=tp.bfloat16):
            tp.matmul(x, x)
    np.testing.assert_allclose(out.numpy(), np.sin(x.numpy()), rtol=1e-6)
    rule = next(h for h in ex.records if h.kind == "vmap")
    assert "batching rule" in rule.text and rule.where.startswith("tensorplay/func/")
    casts = [h for h in ex.records if h.kind == "cast"]
    assert [h.text for h in casts] == ["self: float32 -> bfloat16", "other: float32 -> bfloat16"]
    for h in [rule] + casts:
        _check_where(h.where)
