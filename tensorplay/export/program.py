"""`tp.export.export(module, args)` -> `ExportedProgram`: the captured graph, its
signature (which placeholder is which parameter, buffer or user input), the state dict,
and `module()`, which replays the graph as a Module."""
from __future__ import annotations

import enum
import inspect
from dataclasses import dataclass

import tensorplay as tp
from tensorplay import nn
from tensorplay.export.capture import _frozen, capture
from tensorplay.export.dynamic import ExportError, dynamic_dims, grown, merge
from tensorplay.export.values import SymInt, Value


class InputKind(enum.Enum):
    USER_INPUT = enum.auto()
    PARAMETER = enum.auto()
    BUFFER = enum.auto()
    CONSTANT_TENSOR = enum.auto()


class OutputKind(enum.Enum):
    USER_OUTPUT = enum.auto()


@dataclass
class InputSpec:
    kind: InputKind
    arg: str             # the placeholder's name
    target: str | None   # the parameter's / buffer's name in the module


@dataclass
class OutputSpec:
    kind: OutputKind
    arg: str
    target: str | None = None


class ExportGraphSignature:
    """Which placeholder is what (torch.export.ExportGraphSignature's names)."""

    def __init__(self, input_specs, output_specs):
        self.input_specs = input_specs
        self.output_specs = output_specs

    def _targets(self, kind):
        return [s.target for s in self.input_specs if s.kind is kind]

    @property
    def parameters(self):
        return self._targets(InputKind.PARAMETER)

    @property
    def buffers(self):
        return self._targets(InputKind.BUFFER)

    @property
    def user_inputs(self):
        return [s.arg for s in self.input_specs if s.kind is InputKind.USER_INPUT]

    @property
    def user_outputs(self):
        return [s.arg for s in self.output_specs]

    @property
    def inputs_to_parameters(self):
        return {s.arg: s.target for s in self.input_specs if s.kind is InputKind.PARAMETER}

    @property
    def inputs_to_buffers(self):
        return {s.arg: s.target for s in self.input_specs if s.kind is InputKind.BUFFER}

    def __repr__(self):
        ins = "\n".join(f"    {s.kind.name} {s.arg}" + (f" <- {s.target}" if s.target else "")
                        for s in self.input_specs)
        outs = "\n".join(f"    {s.kind.name} {s.arg}" for s in self.output_specs)
        return f"ExportGraphSignature(\n  inputs:\n{ins}\n  outputs:\n{outs}\n)"


def run_graph(graph, inputs, mutated_constants=None):
    """Replay: each node's op called on the values it names. `inputs` are the tensors of
    the placeholders, in order; SymInts are computed from their sizes. A constant that
    a node writes in place is copied first (`mutated_constants`, the graph's
    `mutated_constants()`: a caller that replays often passes it, computed once)."""
    env = {p.name: t for p, t in zip(graph.placeholders, inputs)}
    env.update(graph.constants)
    if mutated_constants is None:
        mutated_constants = graph.mutated_constants()
    for name in mutated_constants:      # written in place: a fresh copy per run
        env[name] = _frozen(env[name])

    def resolve(a):
        if isinstance(a, Value):
            return env[a.name]
        if isinstance(a, SymInt):
            return a.evaluate(inputs)
        if isinstance(a, (list, tuple)):
            return type(a)(resolve(b) for b in a)
        return a

    for node in graph.nodes:
        out = node.func(*resolve(node.args))
        results = out if isinstance(out, (list, tuple)) else (out,)
        for value, r in zip(node.outputs, results):
            if value is not None:
                env[value.name] = r
    return [resolve(v) for v in graph.outputs]


class ExportedModule(nn.Module):
    """`ep.module()`: the graph replayed, with the exported parameters and buffers at
    their names (`fc1.weight`), so `state_dict()` matches the original module's."""

    def __init__(self, program):
        super().__init__()
        self._program = program
        for spec in program.graph_signature.input_specs:
            if spec.kind in (InputKind.PARAMETER, InputKind.BUFFER):
                *path, leaf = spec.target.split(".")
                owner = self
                for part in path:
                    if part not in owner._modules:
                        owner.add_module(part, nn.Module())
                    owner = owner._modules[part]
                value = program.state_dict[spec.target]
                if spec.kind is InputKind.PARAMETER:
                    owner.register_parameter(leaf, nn.Parameter(value.detach().clone(),
                                                                 value.requires_grad))
                else:
                    owner.register_buffer(leaf, value.detach().clone())

    def forward(self, *args, **kwargs):
        p = self._program
        state = dict(self.named_parameters())
        state.update(self.named_buffers())
        lifted = [state[s.target] for s in p.graph_signature.input_specs
                  if s.kind in (InputKind.PARAMETER, InputKind.BUFFER)]
        outs = run_graph(p.graph, lifted + p._user_tensors(args, kwargs))
        return outs[0] if p._single_output else tuple(outs)


class ExportedProgram:
    """What `export()` returns: `graph` (print it, `.to_svg()`), `graph_signature`,
    `state_dict`, `constants`, `range_constraints` (dynamic dim name -> (min, max)),
    `module()`."""

    def __init__(self, graph, signature, state_dict, user_arg_names, single_output,
                 range_constraints, dynamic_dims, example_inputs):
        self.graph = graph
        self.graph_signature = signature
        self.state_dict = state_dict
        self.constants = graph.constants
        self.range_constraints = range_constraints
        self.dynamic_dims = dynamic_dims          # [(user input position, dim, name)]
        self.example_inputs = example_inputs
        self._user_arg_names = user_arg_names
        self._single_output = single_output

    def _user_tensors(self, args, kwargs):
        args = list(args)
        for name in self._user_arg_names[len(args):]:
            if name in (kwargs or {}):
                args.append(kwargs[name])
        tensors = [a for a in args if isinstance(a, tp.Tensor)]
        want = len(self.graph_signature.user_inputs)
        if len(tensors) != want:
            raise ExportError(f"ExportedProgram.module(): expected {want} tensor inputs "
                              f"({self.graph_signature.user_inputs}), got {len(tensors)}",
                              op="export")
        return tensors

    def module(self):
        return ExportedModule(self)

    def run_decompositions(self, decomp_table=None):
        """The graph is already at the level the dispatch mode sees (below the Composite
        decompositions that run above autograd): nothing more to decompose."""
        return self

    def __str__(self):
        return (f"ExportedProgram:\n{self.graph.python_code()}\n\nGraph signature: "
                f"{self.graph_signature!r}\nRange constraints: {self.range_constraints}")


def export(mod, args, kwargs=None, *, dynamic_shapes=None, strict=False,
           preserve_module_call_signature=(),
           prefer_deferred_runtime_asserts_over_guards=False):
    """Capture `mod(*args, **kwargs)` as a graph of ops (torch.export.export's signature).

    The module runs under a dispatch mode (tensorplay/export/capture.py) that records
    each op; parameters and buffers become the graph's first inputs. `dynamic_shapes`
    marks input dims dynamic (tensorplay/export/dynamic.py). Data-dependent control flow
    is captured as the path this run took. `strict` is accepted and changes nothing."""
    if not isinstance(args, tuple):
        raise ExportError(f"export(): 'args' must be a tuple, got {type(args).__name__}",
                          op="export", arg="args")
    kwargs = dict(kwargs or {})
    try:
        names = [n for n, p in inspect.signature(mod.forward).parameters.items()
                 if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    except (TypeError, ValueError):
        names = []
    names = (names + [f"args_{i}" for i in range(len(names), len(args))])[:len(args)]
    names += list(kwargs)
    values = list(args) + list(kwargs.values())
    user = [(n, v) for n, v in zip(names, values) if isinstance(v, tp.Tensor)]
    user_names = [n for n, _ in user]
    dims = dynamic_dims(dynamic_shapes, user_names, [t for _, t in user])

    params = list(mod.named_parameters())
    buffers = list(mod.named_buffers())
    lifted = [("p_" + n.replace(".", "_"), t) for n, t in params] + \
             [("b_" + n.replace(".", "_"), t) for n, t in buffers]
    offset = len(lifted)

    def run(tensors):
        it = iter(tensors)
        vals = [next(it) if isinstance(v, tp.Tensor) else v for v in values]
        call_args, call_kwargs = vals[:len(args)], dict(zip(kwargs, vals[len(args):]))
        return capture(mod, lifted + list(zip(user_names, tensors)),
                       lambda: mod(*call_args, **call_kwargs))

    # the values at export; capture runs the module for real (several times with dynamic
    # dims), so what it writes in place (batch norm's running statistics in training
    # mode) is put back after, as if export had only looked
    state = {n: _snapshot(t) for n, t in params + buffers}
    inputs = [t for _, t in user]
    try:
        graph, out = run(inputs)
        dim_names = list(dict.fromkeys(name for _, _, name in dims))
        if dim_names:
            graphs = [graph]
            for name in dim_names:
                graphs.append(_run_grown(run, inputs, dims, {name}, 1))
            graphs.append(_run_grown(run, inputs, dims, set(dim_names), 2))
            sizes = {}
            for pos, dim, name in dims:
                sizes.setdefault(name, (inputs[pos].shape[dim], (offset + pos, dim)))
            graph = merge(graphs, sizes, dim_names)
    finally:
        with tp.no_grad():
            for n, t in params + buffers:
                t.copy_(state[n])

    single = not isinstance(out, (list, tuple))
    input_specs = [InputSpec(InputKind.PARAMETER, ph, n)
                   for (ph, _), (n, _) in zip(lifted, params)]
    input_specs += [InputSpec(InputKind.BUFFER, ph, n)
                    for (ph, _), (n, _) in zip(lifted[len(params):], buffers)]
    input_specs += [InputSpec(InputKind.USER_INPUT, n, None) for n in user_names]
    output_specs = [OutputSpec(OutputKind.USER_OUTPUT, v.name if isinstance(v, Value) else
                               repr(v)) for v in graph.outputs]
    ranges = {}
    for _, _, name in dims:
        d = _dim_object(dynamic_shapes, name)
        ranges[name] = (getattr(d, "min", None) or 0, getattr(d, "max", None))
    return ExportedProgram(graph, ExportGraphSignature(input_specs, output_specs), state,
                           names, single, ranges, dims, tuple(args))


def _run_grown(run, inputs, dims, names, by):
    try:
        return run(grown(inputs, dims, names, by))[0]
    except ExportError:
        raise
    except Exception as e:
        raise ExportError(f"export(): the model fails when dynamic dim(s) {sorted(names)} "
                          f"grow by {by} ({type(e).__name__}: {e}); dims that must be "
                          f"equal must share one Dim (one name)", op="export",
                          arg="dynamic_shapes") from e


def _snapshot(t):
    c = t.detach().clone()
    return nn.Parameter(c, t.requires_grad) if isinstance(t, nn.Parameter) else c


def _dim_object(dynamic_shapes, name):
    specs = dynamic_shapes.values() if isinstance(dynamic_shapes, dict) else dynamic_shapes
    for spec in specs:
        if spec is None:
            continue
        for d in (spec.values() if isinstance(spec, dict) else spec):
            if getattr(d, "__name__", None) == name:
                return d
    return None
