"""What every pass needs to read and rewrite a Graph (tensorplay/export/graph.py).

A pass never edits the graph it is given: it returns a new `Graph` that shares the
`Node`s it did not change. A node's arguments name tensors by `Value`, so replacing a
result by another (CSE keeps one of two equal nodes, folding turns a result into a
constant) is a substitution `{old name: new Value}` applied to every later argument and
to the graph's outputs (`substitute`).
"""
from __future__ import annotations

from tensorplay._generated.op_tags import OP_TAGS
from tensorplay.export.graph import Graph, Node, values_in  # noqa: F401 (the passes' import)
from tensorplay.export.values import SymInt, Value


def tags(node):
    """The op's ops.yaml `tags:` ('pointwise', 'reduction', 'view', 'inplace', 'random')."""
    return OP_TAGS.get(node.func.name, ())


def has_symint(arg):
    if isinstance(arg, SymInt):
        return True
    if isinstance(arg, (list, tuple)):
        return any(has_symint(a) for a in arg)
    return False


def graph_has_symints(graph):
    return any(has_symint(a) for n in graph.nodes for a in n.args) or \
        any(isinstance(v, SymInt) for v in graph.outputs)


def substitute(arg, mapping):
    """`arg` with each Value whose name is in `mapping` replaced by mapping's Value."""
    if isinstance(arg, Value):
        return mapping.get(arg.name, arg)
    if isinstance(arg, (list, tuple)):
        return type(arg)(substitute(a, mapping) for a in arg)
    return arg


def with_args(node, args):
    """`node` with other arguments (the same node when nothing changed)."""
    if all(a is b for a, b in zip(args, node.args)):
        return node
    return Node(node.func, tuple(args), node.outputs, node.mutated)


def rebuilt(graph, nodes, mapping=None, constants=None):
    """A new Graph: `graph`'s placeholders, `nodes` (their arguments substituted by
    `mapping`), the outputs substituted too, `constants` (default: graph's)."""
    mapping = mapping or {}
    if mapping:
        nodes = [with_args(n, [substitute(a, mapping) for a in n.args]) for n in nodes]
    return Graph(placeholders=list(graph.placeholders),
                 constants=dict(graph.constants if constants is None else constants),
                 nodes=list(nodes),
                 outputs=[substitute(v, mapping) for v in graph.outputs])


def is_impure(node):
    """A node whose effect is more than its results: it writes an argument in place, or
    draws random numbers (two equal calls give different values)."""
    return bool(node.mutated) or bool(node.func.schema.mutable_positions) or \
        "random" in tags(node) or "inplace" in tags(node)
