"""The compiled backward (AOT autograd): the joint graph, cut in two.

When a tensor input or a lifted parameter requires grad (and grad mode is on), the
capture goes on after the forward: with the capture mode still on, it runs

    tp.autograd.grad(outputs that require grad, inputs that require grad,
                     grad_outputs=tangents, retain_graph=True, allow_unused=True)

The autograd engine runs the generated backward formulas as ordinary op calls, so the
mode records them too: the graph now holds the forward's ops, then the backward's, whose
inputs are the tangents (new placeholders) and forward values (the inputs, and results
the formulas saved). `partition` cuts it after the last forward op:

    forward graph    the inputs -> the outputs, and the forward values the backward reads
                     (the *saved* values)
    backward graph   the saved values and the tangents -> a gradient per input that
                     requires grad

Both are lowered like any graph, and runtime.py runs them inside one
`tp.autograd.Function`: its forward returns the outputs and saves the saved values, its
backward runs the backward graph. A `loss.backward()` after a compiled call therefore
runs compiled code, and the gradients are the formulas' own: eager's.
"""
from __future__ import annotations

from dataclasses import dataclass

import tensorplay as tp
from tensorplay.errors import Unsupported
from tensorplay.export.graph import Graph, Node
from tensorplay.export.values import Value


@dataclass
class JointGraph:
    forward: Graph             # inputs -> user outputs + saved values
    backward: Graph            # saved values + tangents -> the gradients that exist
    num_outputs: int           # the user outputs at the front of forward's outputs
    diff_outputs: tuple        # positions of the outputs that require grad (get tangents)
    grad_inputs: tuple         # positions of the inputs that get a gradient, in order
    output_meta: tuple         # (sizes, dtype, device) of each diff output (zero tangents)
    reaches: tuple             # per grad input: the diff outputs (their index) it reaches


def capture_backward(tr, mode, user_tensors):
    """Record the backward of `tr` into the same graph, then cut (sets `tr.joint`)."""
    from tensorplay.compiler.tracing import capturing

    inputs = list(user_tensors) + list(mode.free)
    n_inputs = len(inputs)
    diff_in = [i for i, t in enumerate(inputs) if t.requires_grad]
    diff_out = [j for j, o in enumerate(tr.flat_outputs) if o.requires_grad]
    if not diff_in or not diff_out:
        return
    graph = tr.graph
    n_forward = len(graph.nodes)
    outs = [tr.flat_outputs[j] for j in diff_out]
    tangents = []
    for k, o in enumerate(outs):
        g = tp.ones_like(o.detach())
        mode.add_placeholder(f"tangent_{k}", g)
        tangents.append(g)
    try:
        with capturing(mode):
            grads = tp.autograd.grad(outs, [inputs[i] for i in diff_in],
                                     grad_outputs=tangents, retain_graph=True,
                                     allow_unused=True)
    except Unsupported:
        raise
    except Exception as e:     # noqa: BLE001 - eager raises it at backward() instead
        mode.graph_break(f"the backward cannot be captured ({type(e).__name__}: {e})")
        return
    if len(mode.free) != n_inputs - len(user_tensors):
        mode.graph_break("the backward read a tensor the forward did not (a hook?)")
        return
    grad_values = [mode.value_of(g) if g is not None else None for g in grads]
    why = _unsupported_mutation(graph, n_forward, diff_in, n_inputs)
    if why:
        mode.graph_break(why)
        return
    tr.joint = partition(graph, n_inputs, n_forward, diff_in, diff_out, grad_values,
                         [(tuple(o.shape), o.dtype, o.device) for o in outs])


def _unsupported_mutation(graph, n_forward, diff_in, n_inputs):
    """An in-place write to an input the backward may need is not compiled: autograd
    would have to see it (mark_dirty); a buffer's update (batch norm's running
    statistics) is fine."""
    grad_names = {graph.placeholders[i].name for i in diff_in}
    for node in graph.nodes[:n_forward]:
        for i in node.mutated:
            a = node.args[i]
            if isinstance(a, Value) and a.name in grad_names:
                return (f"{node.func!r} writes in place to input '{a.name}', which "
                        f"requires grad")
    return None


def _values_in(args):
    for a in args:
        if isinstance(a, Value):
            yield a
        elif isinstance(a, (list, tuple)):
            yield from _values_in(a)


def partition(graph, n_inputs, n_forward, diff_in, diff_out, grad_values, output_meta):
    inputs = graph.placeholders[:n_inputs]
    tangents = graph.placeholders[n_inputs:]
    forward_nodes, backward_nodes = graph.nodes[:n_forward], graph.nodes[n_forward:]

    # what the backward reads from the forward: its saved values
    made_by_backward = {v.name for n in backward_nodes for v in n.outputs if v is not None}
    made_by_backward |= {t.name for t in tangents}
    saved, seen = [], set()
    backward_reads = [v for n in backward_nodes for v in _values_in(n.args)]
    backward_reads += [v for v in grad_values if v is not None]
    for v in backward_reads:
        if v.name in made_by_backward or v.kind == "constant" or v.name in seen:
            continue
        seen.add(v.name)
        saved.append(v)

    forward = Graph(placeholders=list(inputs), nodes=list(forward_nodes),
                    outputs=list(graph.outputs) + saved)
    forward.constants = _constants_of(graph, forward_nodes, forward.outputs)

    as_input = {v.name: Value(v.name, "placeholder", v.dtype, v.shape) for v in saved}

    def rename(a):
        if isinstance(a, Value):
            return as_input.get(a.name, a)
        if isinstance(a, (list, tuple)):
            return type(a)(rename(b) for b in a)
        return a

    backward = Graph(placeholders=list(as_input.values()) + list(tangents),
                     nodes=[Node(n.func, rename(n.args), n.outputs, n.mutated)
                            for n in backward_nodes],
                     outputs=[rename(v) for v in grad_values if v is not None])
    backward.constants = _constants_of(graph, backward_nodes, backward.outputs)
    grad_inputs = tuple(i for i, v in zip(diff_in, grad_values) if v is not None)
    return JointGraph(forward, backward, len(graph.outputs), tuple(diff_out), grad_inputs,
                      tuple(output_meta), _reaches(forward, grad_inputs, diff_out))


def _reaches(forward, grad_inputs, diff_out):
    """For each input that gets a gradient, the differentiable outputs computed from it:
    when none of those gets a gradient in a backward pass, the input's is None (eager's
    answer), not zeros."""
    sources = {p.name: {i} for i, p in enumerate(forward.placeholders)}
    for node in forward.nodes:
        found = set().union(*(sources.get(v.name, set()) for v in _values_in(node.args)))
        for v in node.outputs:
            if v is not None:
                sources[v.name] = found
    out_sources = [sources.get(forward.outputs[j].name, set())
                   if isinstance(forward.outputs[j], Value) else set() for j in diff_out]
    return tuple(tuple(k for k, s in enumerate(out_sources) if i in s) for i in grad_inputs)


def _constants_of(graph, nodes, outputs):
    """The constants that `nodes` read or `outputs` name."""
    names = {v.name for n in nodes for v in _values_in(n.args) if v.kind == "constant"}
    names |= {v.name for v in _values_in(outputs) if v.kind == "constant"}
    return {k: graph.constants[k] for k in graph.constants if k in names}
