"""Dead-code elimination: drop the nodes whose results nobody reads.

Walk the graph backwards, keeping a set of the names still needed: first the graph's
outputs; a node is kept when one of its results is needed, and then the tensors it
reads are needed too. One backward walk finds them all, because a node's readers come
after it.

A node that does more than compute its results is kept even when they are unused:
an in-place op (`x.add_(1)` writes x, which the caller sees) and a random op (its draw
advances the generator, so dropping it would change every later draw). This is the
rule PyTorch's `Graph.eliminate_dead_code` follows with `is_impure`.

    a = exp(x)          # kept: b reads it
    unused = sin(x)     # dropped
    b = mul(a, a)       # kept: an output
    return (b,)
"""
from __future__ import annotations

from tensorplay.compiler.passes.rewrite import is_impure, rebuilt, values_in


def eliminate_dead_code(graph):
    needed = {v.name for v in values_in(list(graph.outputs))}
    kept = []
    for node in reversed(graph.nodes):
        results = {v.name for v in node.outputs if v is not None}
        if is_impure(node) or results & needed:
            kept.append(node)
            needed.update(v.name for a in node.args for v in values_in(a))
    kept.reverse()
    constants = {k: t for k, t in graph.constants.items() if k in needed}
    return rebuilt(graph, kept, constants=constants)
