"""Constant folding: compute at compile time what does not depend on the inputs.

A node whose tensor arguments are all constants of the graph (tensors made by
`tp.arange`, `tp.ones`, a plain tensor attribute of a module) gives the same result on
every call: the pass runs it once, now, and its result becomes a new constant. Folding
goes forward, so a chain of such nodes folds whole (`arange(4) * 2 + 1`).

What is not folded:
- a node with no tensor argument at all: nothing to fold from (and a factory op may
  be random);
- random ops and in-place ops (their effect is the point);
- a node with a SymInt argument: its value follows the input sizes;
- a view (`transpose(c)`): its result would share memory with the constant;
- anything that reads a constant the graph writes in place, or whose result is
  written later, directly or through a view (`c[1:].add_(x)` writes c): its value
  at run time is not its value now;
- a result the graph returns: the caller would get the same tensor on every call.
"""
from __future__ import annotations

import tensorplay as tp
from tensorplay.compiler.passes.rewrite import (
    has_symint, is_impure, rebuilt, substitute, tags, values_in,
)
from tensorplay.export.values import Value


def fold_constants(graph):
    constants = dict(graph.constants)
    written = graph.written_names()
    outputs = {v.name for v in values_in(list(graph.outputs))}
    mapping = {}
    kept = []
    for node in graph.nodes:
        args = tuple(substitute(a, mapping) for a in node.args)
        ins = values_in(list(args))
        results = [v for v in node.outputs if v is not None]
        foldable = (ins and results
                    and all(v.kind == "constant" for v in ins)
                    and not any(v.name in written for v in ins)
                    and not is_impure(node) and not node.func.is_view
                    and "view" not in tags(node)
                    and not any(has_symint(a) for a in args)
                    and not any(v.name in outputs or v.name in written for v in results))
        if foldable:
            with tp.no_grad():
                out = node.func(*[_resolve(a, constants) for a in args])
            got = out if isinstance(out, (list, tuple)) else (out,)
            for value, tensor in zip(node.outputs, got):
                if value is not None:
                    constants[value.name] = tensor
                    mapping[value.name] = Value(value.name, "constant", value.dtype,
                                                value.shape)
            continue
        kept.append(node)
    graph = rebuilt(graph, kept, mapping, constants)
    return graph


def _resolve(arg, constants):
    if isinstance(arg, Value):
        return constants[arg.name]
    if isinstance(arg, (list, tuple)):
        return type(arg)(_resolve(a, constants) for a in arg)
    return arg
