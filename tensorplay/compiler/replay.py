"""The "eager" backend: a captured graph replayed op by op (tensorplay/export/program.py's
run_graph), with the interface of a lowered graph (`cg(*tensors)`, `.source`,
`.kernels`)."""
from __future__ import annotations

from tensorplay.dispatch.keys import AUTOCAST_OFFSET, NUM_BACKENDS
from tensorplay.dispatch.tls import ExcludeKeys, local_keys
from tensorplay.export.program import run_graph

# A replay calls ops that autocast already cast at capture: they must not be cast again.
AUTOCAST_MASK = ((1 << NUM_BACKENDS) - 1) << AUTOCAST_OFFSET


class GraphReplay:
    """The "eager" backend: each node's op called again (tensorplay/export/program.py)."""

    def __init__(self, graph):
        self.graph = graph
        self.source = graph.python_code()
        self.kernels = []
        self.mutated_constants = graph.mutated_constants()

    def __call__(self, *tensors):
        if local_keys.masks[0] & AUTOCAST_MASK:
            with ExcludeKeys(AUTOCAST_MASK):
                return run_graph(self.graph, tensors, self.mutated_constants)
        return run_graph(self.graph, tensors, self.mutated_constants)
