"""What a captured graph becomes: the `backend` argument of tp.compile.

    "default"   tensorplay/compiler/lowering.py: passes and generated code
    "eager"     the graph replayed op by op (run_graph): capture and guards without
                code generation, to tell a capture problem from a lowering one
    a callable  `backend(graph, example_inputs) -> callable`, as torch.compile's custom
                backends: the callable takes the graph's placeholders' tensors in order
                and returns its outputs (a list, a tuple or one tensor)

Every backend's result is called as `cg(*tensors)` and returns the list of outputs;
`source` and `kernels` are read by explain() and `compiled.source()` where present.
"""
from __future__ import annotations

from tensorplay.compiler import lowering
from tensorplay.compiler.replay import GraphReplay


class CustomBackend:
    """A user's backend function; its result wrapped so that it returns a list."""

    def __init__(self, graph, fn, example_inputs):
        self.graph = graph
        self.fn = fn(graph, list(example_inputs))
        self.source = getattr(self.fn, "source", graph.python_code())
        self.kernels = list(getattr(self.fn, "kernels", []))

    def __call__(self, *tensors):
        out = self.fn(*tensors)
        if isinstance(out, (list, tuple)):
            return list(out)
        return [out]


BACKENDS = ("default", "eager")


def list_backends(exclude_tags=()):
    """The backends' names (torch.compiler.list_backends)."""
    return list(BACKENDS)


def check_backend(backend):
    if callable(backend) or backend in BACKENDS:
        return backend
    from tensorplay.errors import ArgumentError
    raise ArgumentError(f"compile(): argument 'backend' must be one of {list(BACKENDS)} or "
                        f"a callable backend(graph, example_inputs), got {backend!r}",
                        op="compile", arg="backend")


def lower_with(backend, graph, example_inputs, device):
    """The graph made callable by `backend`."""
    if backend == "eager":
        return GraphReplay(graph)
    if backend == "default":
        return lowering.lower(graph, device=device)
    return CustomBackend(graph, backend, example_inputs)
