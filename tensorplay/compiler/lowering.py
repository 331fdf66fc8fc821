"""Lowering a captured graph to generated code (passes, then NumPy / Triton code).

`lower(graph, *, device) -> CompiledGraph`, callable as `cg(*tensors)` on the tensors
of `graph.placeholders` in order, returning the outputs of `graph.outputs` in order,
with `.source` (the generated code) and `.kernels` ([(kernel name, [fused op names])]).

This version replays the graph op by op (the "eager" backend's GraphReplay); the passes
and code generation replace it.
"""
from __future__ import annotations

from tensorplay.compiler.replay import GraphReplay


def lower(graph, *, device):
    return GraphReplay(graph)
