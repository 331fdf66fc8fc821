"""Pointwise fusion: group chains of elementwise ops into one kernel.

An elementwise op (ops.yaml tag `pointwise`: add, mul, tanh, sigmoid...) reads each
input element once and writes each result element once. Run one by one, a chain of
them writes every intermediate result to memory and reads it back, and pays a kernel
call each time. Fused, the chain becomes one loop (one Triton kernel on cuda, a few
NumPy calls into reused buffers on the CPU) that keeps intermediates in registers.

This pass only *decides* the groups; the code generators (codegen_cpu.py,
codegen_triton.py) write each group's code and say which ops they can fuse
(`fusible(node)`: an expression they know for the op, at those dtypes).

The walk is greedy, in graph order, with one open group per (result shape, compute
dtype): a kernel computes one shape of results, in one dtype.
- a fusible node joins the open group of its shape and dtype (its inputs may broadcast
  to that shape), or opens one; if it reads a result of another open group, that group
  is closed first (emitted: its results must exist before this node runs);
- a node that is not fusible and reads nothing of an open group is emitted *before* the
  open groups (it does not depend on them, and their nodes came earlier, so they do not
  depend on it either): this lets a chain continue past unrelated work;
- a node that reads a result of an open group closes that group first; a node that
  writes memory in place closes them all (its write must stay after their reads).

A reduction that reads a result of the open group (`((x - y) ** 2).sum()`) may end it
as its *tail*, when the code generator can take it (`tail(node)`): the chain's last
values then go into the reduction without being stored first (on cuda each program
sums its block, `tl.sum`, and only the partial sums are written).

A group of one node gains nothing: it stays a plain node. The result is a *schedule*:
the graph's nodes in run order, with `FusedGroup`s in place of the fused ones.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from tensorplay.compiler.passes.rewrite import is_impure, values_in


@dataclass
class FusedGroup:
    name: str
    nodes: list                                   # in graph order
    shape: tuple                                  # the shape of every result
    dtype: object                                 # the dtype the group computes in
    inputs: list = field(default_factory=list)    # Values read from outside, in order
    outputs: list = field(default_factory=list)   # Values read after the group
    tail: bool = False                            # the last node is a reduction tail

    @property
    def ops(self):
        return [n.func.name for n in self.nodes]


def fuse_pointwise(graph, fusible, compute_dtype, tail=None):
    """The schedule of `graph`: Nodes and FusedGroups. `fusible(node)` says whether the
    code generator can fuse the node; `compute_dtype(node)` what it computes in;
    `tail(node)` whether it can end a group with this reduction."""
    schedule = []
    groups = {}             # (shape, dtype) -> the nodes of the open group of that key
    owner = {}              # value name -> the key of the open group that produces it

    def close(key, with_tail=None):
        nodes = groups.pop(key)
        for n in nodes:
            for v in n.outputs:
                if v is not None:
                    owner.pop(v.name, None)
        if with_tail is not None or len(nodes) >= 2:
            name = f"fused_{sum(isinstance(s, FusedGroup) for s in schedule)}"
            nodes = nodes + ([with_tail] if with_tail is not None else [])
            schedule.append(FusedGroup(name, nodes, key[0], key[1],
                                       tail=with_tail is not None))
        else:
            schedule.extend(nodes)

    for node in graph.nodes:
        read = list(dict.fromkeys(owner[v.name] for a in node.args for v in values_in(a)
                                  if v.name in owner))
        if fusible(node):
            result = next(v for v in node.outputs if v is not None)
            key = (tuple(result.shape), compute_dtype(node))
            for other in read:          # what it reads of another group must exist
                if other != key:
                    close(other)
            groups.setdefault(key, []).append(node)
            owner.update((v.name, key) for v in node.outputs if v is not None)
            continue
        if tail is not None and len(read) == 1 and \
                _takes_tail(node, owner, read[0]) and tail(node):
            close(read[0], with_tail=node)
            continue
        for key in (list(groups) if is_impure(node) else read):
            close(key)
        schedule.append(node)
    for key in list(groups):
        close(key)
    _connect(schedule, graph)
    return schedule


def _takes_tail(node, owner, key):
    """A reduction of one value of the group, of the group's shape and dtype."""
    read = values_in(list(node.args))
    return len(read) == 1 and owner.get(read[0].name) == key and \
        tuple(read[0].shape) == key[0] and read[0].dtype is key[1]


def _connect(schedule, graph):
    """Fill in each group's inputs (read from outside it) and outputs (read after it)."""
    readers = {}            # value name -> the schedule items that read it
    for item in schedule:
        nodes = item.nodes if isinstance(item, FusedGroup) else [item]
        for node in nodes:
            for a in node.args:
                for v in values_in(a):
                    readers.setdefault(v.name, []).append(item)
    returned = {v.name for v in values_in(list(graph.outputs))}
    for item in schedule:
        if not isinstance(item, FusedGroup):
            continue
        inside = {v.name for n in item.nodes for v in n.outputs if v is not None}
        seen = {}
        for n in item.nodes:
            for a in n.args:
                for v in values_in(a):
                    if v.name not in inside:
                        seen.setdefault(v.name, v)
        item.inputs = list(seen.values())
        item.outputs = [v for n in item.nodes for v in n.outputs if v is not None and
                        (v.name in returned or any(r is not item for r in readers.get(v.name, ())))]
