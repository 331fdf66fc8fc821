"""Common-subexpression elimination (CSE): compute each distinct expression once.

Two nodes are the same expression when they call the same op on the same arguments:
the same Values (by name) and the same Python values. The second one is dropped, and
every later reader of its results reads the first one's instead. An LSTM cell called
in a loop computes `transpose(weight_hh)` and `bias_ih + bias_hh` on every step: after
CSE, once.

When is it wrong to merge two equal-looking calls?
- random ops: `rand(3)` twice gives two draws;
- a write in between: `a = exp(x); x.add_(1); b = exp(x)` reads another x. The pass
  counts the in-place writes it has passed (an "epoch"), and only merges nodes of the
  same epoch. (A write to any tensor ends the epoch: a view can write its base, and
  two placeholders may share memory the graph does not know of, so the pass does not
  guess.)
- a result the caller gets twice: two outputs of the graph would become one tensor, and
  writing one would change the other. A node whose result is an output, or the base
  of a returned view (`return a, b[0:2]`), is not merged away (it may still be the
  one that others merge into).
- a result whose memory is written in place, before or after, by its own name or
  through a view or an in-place op's returned self: `a = x.clone(); b = x.clone();
  b.clamp_(0, 1)` must leave a as it was, so two equal calls are two tensors when
  either is written. Such a node is neither merged away nor merged into
  (`Graph.written_names` follows the aliases; fuzzer seed 4045741 merged two clones).
"""
from __future__ import annotations

from tensorplay.compiler.passes.rewrite import (is_impure, rebuilt, substitute, values_in,
                                                with_args)
from tensorplay.export.values import SymInt, Value


def _key(arg):
    """A hashable description of an argument (Values by name)."""
    if isinstance(arg, Value):
        return ("value", arg.name)
    if isinstance(arg, SymInt):
        return ("symint", arg.const, arg.terms)
    if isinstance(arg, (list, tuple)):
        return (type(arg).__name__,) + tuple(_key(a) for a in arg)
    if isinstance(arg, float):
        return ("float", repr(arg))       # 0.0 and -0.0, nan: told apart by their text
    try:
        hash(arg)
    except TypeError:
        return ("object", id(arg))
    return (type(arg).__name__, arg)


def eliminate_common_subexpressions(graph):
    roots = graph.memory_roots()
    returned = values_in(list(graph.outputs))
    outputs = {v.name for v in returned} | {roots[v.name] for v in returned if v.name in roots}
    written = graph.written_names()
    seen = {}          # key -> the node computing it first
    mapping = {}       # dropped result's name -> the Value that replaces it
    kept = []
    epoch = 0
    for node in graph.nodes:
        args = tuple(substitute(a, mapping) for a in node.args)
        if is_impure(node):
            epoch += 1
            kept.append((node, args))
            continue
        mine = [v for v in node.outputs if v is not None]
        if any(v.name in written for v in mine):
            kept.append((node, args))       # a tensor of its own (the docstring)
            continue
        key = (node.func.name, epoch, _key(args))
        first = seen.get(key)
        if first is not None and not any(v.name in outputs for v in mine):
            for old, new in zip(node.outputs, first.outputs):
                if old is not None:
                    mapping[old.name] = new
            continue
        if first is None:
            seen[key] = node
        kept.append((node, args))
    nodes = [with_args(n, args) for n, args in kept]
    return rebuilt(graph, nodes, mapping)
