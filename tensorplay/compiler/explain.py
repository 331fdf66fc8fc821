"""What tp.compile did with a function: its graphs, guards, breaks and kernels
(torch._dynamo.explain's ExplainOutput, with the same field names).

    compiled = tp.compile(fn)
    compiled(x)
    print(compiled.explain())          # or: tp.compiler.explain(fn)(x)
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class BreakReason:
    reason: str
    guard_set: int           # which compiled guard set it broke

    def __str__(self):
        return self.reason


class ExplainOutput:
    """`graphs` (the captured graphs, forward and backward), `graph_count`,
    `graph_break_count`, `break_reasons`, `op_count`, `ops_per_graph`, `out_guards`
    (the guard lines of each guard set), `guard_code` (the generated check of the state
    each guard set reads), `kernels` (per graph, the lowering's (kernel, [fused ops])),
    `compile_times`."""

    def __init__(self, compiled):
        self.entries = list(compiled.entries)
        self.graphs, self.kernels, self.sources = [], [], []
        self.break_reasons, self.out_guards, self.compile_times = [], [], []
        self.guard_code = []      # per guard set: the generated check of its state
        for i, entry in enumerate(self.entries):
            self.out_guards.append(list(entry.guards))
            self.guard_code.append(entry.guard_source)
            self.compile_times.append(getattr(entry, "compile_time", 0.0))
            if entry.kind == "eager":
                self.break_reasons += [BreakReason(r, i) for r in entry.reasons]
                continue
            for label, graph, cg in entry.graphs():
                self.graphs.append(graph)
                self.kernels.append(list(getattr(cg, "kernels", [])))
                self.sources.append(getattr(cg, "source", None))
        self.eager_reasons = list(compiled.eager_reasons)
        self.graph_count = len(self.graphs)
        self.graph_break_count = len(self.break_reasons)
        self.ops_per_graph = [[node.target for node in g.nodes] for g in self.graphs]
        self.op_count = sum(len(ops) for ops in self.ops_per_graph)

    def __str__(self):
        lines = [f"Graph Count: {self.graph_count}",
                 f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {self.op_count}"]
        if self.break_reasons:
            lines.append("Break Reasons:")
            lines += [f"  Break Reason {i + 1}: {r.reason} (guard set {r.guard_set})"
                      for i, r in enumerate(self.break_reasons)]
        if self.eager_reasons:
            lines.append("Ran eagerly without compiling:")
            lines += [f"  {r}" for r in self.eager_reasons]
        for i, guards in enumerate(self.out_guards):
            lines.append(f"Guard set {i} ({self.entries[i].kind}):")
            lines += [f"  {g}" for g in guards]
            if self.entries[i].free_slots or self.entries[i].modules:
                lines += ["  " + line for line in self.guard_code[i].splitlines()]
        for i, (graph, kernels) in enumerate(zip(self.graphs, self.kernels)):
            lines.append(f"Graph {i}:")
            lines += ["  " + line for line in graph.python_code().splitlines()]
            if kernels:
                lines.append("  Kernels:")
                lines += [f"    {name}: {', '.join(ops)}" for name, ops in kernels]
        return "\n".join(lines)

    __repr__ = __str__


def explain(fn, *extra_args, **extra_kwargs):
    """`tp.compiler.explain(fn)(*args)`: compile `fn` afresh, call it once on the
    arguments, and return what was captured (torch._dynamo.explain)."""
    from tensorplay.compiler.frontend import CompiledFunction

    def run(*args, **kwargs):
        compiled = CompiledFunction(fn)
        compiled(*args, **kwargs)
        return ExplainOutput(compiled)

    if extra_args or extra_kwargs:
        return run(*extra_args, **extra_kwargs)
    return run
