"""explain() over backward: each node that runs, its formula, the gradients in and out
(shapes and dtypes as PyTorch's), the edge each travels, AccumulateGrad into .grad; TLS
changes and version bumps; every hop's `file:line function` points at a real line."""
import inspect
import os
import re
import sys

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
    # the leaves are named after the variables of _explained_backward, which opened the block
    assert outs[1].data["edge"] == "AccumulateGrad of leaf a"
    assert outs[2].data["edge"] == "AccumulateGrad of leaf b"
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
    acc = [h.data["compact"] for h in ex.records if h.kind == "accum"]
    assert acc == ["into .grad of leaf a (added to the .grad there)"]
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


def _architecture_steps():
    """(step, name) of the path diagrams in ARCHITECTURE.md (` │ 4 autograd wrapper  ...`)."""
    with open(os.path.join(ROOT, "ARCHITECTURE.md")) as f:
        text = f.read()
    return [(int(n), name) for n, name in
            re.findall(r"^ [│▼] ?(\d+) (\S+(?: \S+)*?)\s{2,}", text, re.M)]


def test_tour_follows_add_forward_backward_and_the_code(capsys):
    from tensorplay import tour
    tour.main()
    out = capsys.readouterr().out
    forward, rest = out.split("2. Backward", 1)
    backward, rest = rest.split("3. The same run, compact", 1)
    compact, rest = rest.split("4. The code that ran", 1)
    code, table = rest.split("5. The dispatch table", 1)
    assert "add.Tensor(a: float32[3] requires_grad, b: float32[3] requires_grad, 1)" in forward
    assert "tls       excluded + {" in forward and "kernel    cpu_kernels.pointwise.add" in forward
    assert "AddBackward0 (backward of add.Tensor)" in backward
    assert "helper sum_to(grad=float32[3], sizes=(3,))" in backward
    assert "at derivatives.yaml:" in backward and backward.count("AccumulateGrad\n") == 2
    assert "into .grad of leaf a (first gradient: cloned; clone: CPU -> " in backward
    assert "add.Tensor(a, b, 1)  AutogradCPU -> autograd_wrappers.add_Tensor  |  CPU -> " \
        "cpu_kernels.pointwise.add" in compact
    assert "AccumulateGrad  into .grad of leaf b (first gradient: cloned)" in compact
    # the code, step by step, in the order and with the names of ARCHITECTURE.md's path
    steps = re.findall(r"^(\d+) +(\S+(?: \S+)*?)\s+(\S+:\d+ \S+)$", code, re.M)
    shown = [(int(n), name) for n, name, _ in steps]
    assert list(dict.fromkeys(shown)) == list(dict.fromkeys(_architecture_steps()))
    files = {name: where.split(":")[0] for _, name, where in steps}
    assert files["front door"] == "tensorplay/_generated/functional.py"
    assert files["autograd wrapper"] == "tensorplay/_generated/autograd_wrappers.py"
    assert files["backward node"] == "tensorplay/autograd/node.py"
    assert files["backward nodes"] == "tensorplay/_generated/autograd_nodes.py"
    assert files["CPU kernel"] == "cpu_kernels/pointwise.py"
    # the generated code: the front door's one line into the dispatcher, the
    # wrapper's needs-grad test and below_autograd, the node's formula
    assert "return ops.add_Tensor.call(input._impl.keys | other._impl.keys, input, other, " \
        "alpha)" in code
    assert "return below_autograd(ops.add_Tensor, ks, self, other, alpha)" in code
    assert "set_history(result, node)" in code and "d_self = sum_to(grad, self_sizes)" in code
    assert "AutogradCPU    tensorplay._generated.autograd_wrappers.add_Tensor" in table
    for _, _, where in steps:
        _check_where(where)
    for where in re.findall(r"at (\S+:\d+ \S+)", forward + backward):
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


# ---- the compact form ------------------------------------------------------------------
def test_compact_form_is_one_line_per_call_with_its_route():
    a = tp.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x = tp.ones(3)
    with tp.dispatch.explain(records=True) as ex:
        a + x              # recorded: the autograd wrapper, then the CPU kernel
        x + x              # nothing to record: the autograd slot is skipped (not shown)
        tp.relu6(x)        # a Composite op: its decomposition's calls nest below it
    lines = ex.compact().splitlines()
    assert lines[0] == ("add.Tensor(a, float32[3], 1)  AutogradCPU -> autograd_wrappers."
                        "add_Tensor  |  CPU -> cpu_kernels.pointwise.add")
    assert lines[1] == ("add.Tensor(float32[3], float32[3], 1)  CPU -> "
                        "cpu_kernels.pointwise.add")
    assert lines[2].startswith("relu6(float32[3])  AutogradCPU -> composite.")
    assert lines[2].endswith("(implicit autograd)")
    assert len(lines) > 3 and all(line.startswith("  ") for line in lines[3:])
    # the same records, every hop: the full form has many more lines
    assert len(ex.lines) > 3 * len(lines)


def test_explain_compact_prints_the_compact_form(capsys):
    a = tp.ones(2, requires_grad=True)
    with tp.dispatch.explain(compact=True) as ex:
        (a * 2).sum().backward()
    printed = capsys.readouterr().out
    assert printed == ex.compact() + "\n"
    assert "key set" not in printed and "candidate" not in printed
    assert "AccumulateGrad  into .grad of leaf a (first gradient: cloned)" in printed
    assert ex.text.splitlines()[0].startswith("mul.Scalar(a: float32[2] requires_grad, 2)")


def test_compact_form_of_autocast_vmap_and_a_miss():
    a, b = tp.randn(2, 3), tp.randn(3, 2)
    s = tp.sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 2.0], (2, 2))
    with tp.dispatch.explain(file=False) as ex:
        with tp.autocast("cpu"):
            tp.mm(a, b)
        tp.func.vmap(tp.sin)(a)
        try:
            s.exp()
        except tp.errors.NoKernelError:
            pass
    lines = ex.compact().splitlines()
    # the autocast wrapper's redispatch continues the line of mm; its casts nest below
    assert lines[0] == ("mm(float32[2, 3], float32[3, 2])  AutocastCPU -> autocast_wrappers."
                        "mm_cpu  |  CPU -> cpu_kernels.linalg.mm")
    assert "  cast      self: float32 -> bfloat16" in lines
    vmap = next(line for line in lines if line.startswith("sin("))
    assert vmap.endswith("VmapCPU -> func.vmap.batching_kernel  |  CPU -> "
                         "cpu_kernels.pointwise.sin")
    assert lines[-1] == "exp(float32[2, 2] sparse_coo)  Sparse -> no kernel"


# ---- leaves by name ------------------------------------------------------------------------
def test_leaves_are_named_after_the_variables_of_the_block():
    w = tp.tensor([1.0, 2.0, 3.0], requires_grad=True)
    model = tp.nn.Linear(3, 2)
    with tp.dispatch.explain(records=True) as ex:
        model(w.unsqueeze(0)).sum().backward()
    calls = [h.text for h in ex.records if h.kind == "call"]
    assert calls[0] == "unsqueeze(w: float32[3] requires_grad, 0)"
    edges = {h.data["edge"] for h in ex.records if h.kind == "grad out"}
    assert {"AccumulateGrad of leaf w", "AccumulateGrad of leaf model.weight",
            "AccumulateGrad of leaf model.bias"} <= edges
    accs = sorted(h.data["compact"] for h in ex.records if h.kind == "accum")
    assert accs == [f"into .grad of leaf {n} (first gradient: cloned)"
                    for n in ("model.bias", "model.weight", "w")]


def _step_inside():
    inner = tp.ones(2, requires_grad=True)
    (inner * inner).sum().backward()
    return inner


def test_a_leaf_made_in_a_called_function_is_named_from_its_frame():
    with tp.dispatch.explain(records=True) as ex:
        _step_inside()
    assert ex.records[0].data["compact"] == "mul.Tensor(inner, inner)"
    assert [h.data["compact"] for h in ex.records if h.kind == "accum"] == \
        ["into .grad of leaf inner (first gradient: cloned)"]


def test_unnamed_leaves_are_numbered_in_order_of_appearance():
    with tp.dispatch.explain(records=True) as ex:
        tp.stack([tp.ones(2, requires_grad=True), tp.zeros(2, requires_grad=True)])
    assert ex.records[0].data["compact"] == "stack([leaf 0, leaf 1], 0)"
    calls = [line.split("  ")[1] for line in ex.compact().splitlines()[1:3]]
    assert calls == ["unsqueeze(leaf 0, 0)", "unsqueeze(leaf 1, 0)"]


# ---- formula helpers as calls ----------------------------------------------------------------
def test_a_formula_helper_call_is_a_hop_with_its_ops_under_it():
    a, b, ex = _explained_backward()
    helpers = [h for h in ex.records if h.kind == "helper"]
    # MulBackward0: sum_to for a (already [2, 3]: no op), then for b (reduced to [3])
    assert [h.text for h in helpers] == ["sum_to(grad=float32[2, 3], sizes=(2, 3))",
                                         "sum_to(grad=float32[2, 3], sizes=(3,))"]
    assert all(h.where.startswith("tensorplay/autograd/formulas/core.py:") and
               h.where.endswith(" sum_to") for h in helpers)
    i = ex.records.index(helpers[1])
    block = []
    for h in ex.records[i + 1:]:
        if h.depth <= helpers[1].depth:
            break
        block.append(h)
    assert [h.data["op"] for h in block if h.kind == "call"] == ["sum.dim_IntList", "view"]
    result = ex.records[i + 1 + len(block)]
    assert (result.kind, result.depth, result.text) == ("result", helpers[1].depth,
                                                        "float32[3]")
    compact = ex.compact().splitlines()
    j = compact.index("  helper sum_to(grad=float32[2, 3], sizes=(3,))")
    assert compact[j + 1].startswith("    sum.dim_IntList(float32[2, 3], (0,), True, None)  ")
    assert compact[j + 2].startswith("    view(float32[1, 3], (3,))  ")
    # the profile function is gone and the depth is back where it was
    assert sys.getprofile() is None and trace.state.depth == 0


def test_helpers_are_not_shown_while_another_profile_function_is_set():
    a = tp.ones(2, 3, requires_grad=True)
    b = tp.ones(3, requires_grad=True)
    seen = []

    def profile(frame, event, arg):
        seen.append(event)

    sys.setprofile(profile)
    try:
        with tp.dispatch.explain(records=True) as ex:
            (a * b).sum().backward()
    finally:
        sys.setprofile(None)
    assert seen and not any(h.kind == "helper" for h in ex.records)
    np.testing.assert_allclose(b.grad.numpy(), [2.0, 2.0, 2.0])


# ---- AccumulateGrad in one line --------------------------------------------------------------
def test_accumulate_grad_folds_its_clone_into_one_line():
    a, b, ex = _explained_backward()
    for i, h in enumerate(ex.records):
        if h.kind == "node" and h.text == "AccumulateGrad":
            inside = []
            for g in ex.records[i + 1:]:
                if g.depth == 0 and g.kind == "node":
                    break
                inside.append(g)
            # the node, the gradient in, one accum line: the clone's hops are folded away
            assert [g.kind for g in inside] == ["grad in", "accum"]
    accums = [h for h in ex.records if h.kind == "accum"]
    assert accums[0].text == ("into .grad of leaf b (first gradient: cloned; clone: CPU -> "
                              "cpu_kernels.copy.clone)")
    assert accums[0].data["compact"] == "into .grad of leaf b (first gradient: cloned)"
    assert "clone" not in [h.data.get("op") for h in ex.records]
    compact = ex.compact().splitlines()
    assert compact[-2:] == ["AccumulateGrad  into .grad of leaf b (first gradient: cloned)",
                            "AccumulateGrad  into .grad of leaf a (first gradient: cloned)"]
    # the clone still ran: .grad is a copy, not the gradient the engine held
    np.testing.assert_allclose(b.grad.numpy(), [5.0, 7.0, 9.0])


def test_a_leaf_hook_keeps_its_ops_beside_the_folded_accumulation():
    a = tp.ones(2, requires_grad=True)
    a.register_hook(lambda g: g * 10)
    with tp.dispatch.explain(records=True) as ex:
        (a * 3).sum().backward()
    i = max(i for i, h in enumerate(ex.records) if h.kind == "node")
    kinds = [(h.kind, h.data.get("op")) for h in ex.records[i + 1:]
             if h.kind in ("call", "accum") and h.depth <= 1]
    assert kinds[0] == ("call", "mul.Scalar") and kinds[-1] == ("accum", None)
    np.testing.assert_allclose(a.grad.numpy(), [30.0, 30.0])
