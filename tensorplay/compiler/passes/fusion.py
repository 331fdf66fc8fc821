"""Pointwise fusion: group chains of elementwise ops into one kernel.

An elementwise op (ops.yaml tag `pointwise`: add, mul, tanh, sigmoid...) reads each
input element once and writes each result element once. Run one by one, a chain of
them writes every intermediate result to memory and reads it back, and pays a kernel
call each time. Fused, the chain becomes one loop (one Triton kernel on cuda, a few
NumPy calls into reused buffers on the CPU) that keeps intermediates in registers.

This pass only *decides* the groups; the code generators (codegen_cpu.py,
codegen_triton.py) write each group's code and say which ops they can fuse
(`fusible(node)`: an expression they know for the op, at those dtypes).

The walk is greedy, in graph order:
- a fusible node joins the open group when it has the group's result shape and compute
  dtype (inputs may broadcast to that shape), otherwise it starts a new group;
- a node that is not fusible and does not read the group is emitted *before* the group
  (it does not depend on it, and the group's nodes came earlier, so they do not depend
  on it either): this lets a chain continue past unrelated work;
- a node that reads a result of the group, or writes memory in place (its write must
  stay after the group's reads), closes the group first.

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
    group = []              # the open group's nodes
    produced = set()        # names its nodes produce
    key = None

    def close(with_tail=None):
        nonlocal group, produced, key
        if with_tail is not None or len(group) >= 2:
            name = f"fused_{sum(isinstance(s, FusedGroup) for s in schedule)}"
            nodes = group + ([with_tail] if with_tail is not None else [])
            schedule.append(FusedGroup(name, nodes, key[0], key[1], tail=with_tail is not None))
        else:
            schedule.extend(group)
        group, produced, key = [], set(), None

    for node in graph.nodes:
        reads_group = any(v.name in produced for a in node.args for v in values_in(a))
        if fusible(node):
            result = next(v for v in node.outputs if v is not None)
            node_key = (tuple(result.shape), compute_dtype(node))
            if group and node_key != key:
                close()
            group.append(node)
            key = node_key
            produced.update(v.name for v in node.outputs if v is not None)
            continue
        if group and reads_group and tail is not None and _takes_tail(node, produced, key) \
                and tail(node):
            close(with_tail=node)
            continue
        if group and (reads_group or is_impure(node)):
            close()
        schedule.append(node)
    close()
    _connect(schedule, graph)
    return schedule


def _takes_tail(node, produced, key):
    """A reduction of one value of the group, of the group's shape and dtype."""
    read = values_in(list(node.args))
    return len(read) == 1 and read[0].name in produced and \
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
