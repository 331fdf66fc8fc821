"""The captured graph: placeholders, one node per op call, the outputs.

A `Node` is one call of an op at the level of ops.yaml (`tp.ops.linear.default`): its
arguments in schema order, where a tensor is a `Value` (a placeholder, a constant or an
earlier node's result) and anything else is the Python value the call was given (ints,
floats, bools, int lists), except the ints that depend on a dynamic input size: those
are `SymInt`s (`2*batch`), computed again from the inputs' sizes when the graph runs.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from tensorplay.export.drawing import draw_exported_graph
from tensorplay.export.values import SymInt, Value


@dataclass
class Node:
    func: object                 # the OpOverload (tp.ops.linear.default)
    args: tuple                  # schema order: Values, SymInts, Python values
    outputs: list                # Values (None where the op returned no tensor there)
    mutated: tuple = ()          # the positions an in-place op wrote (replay writes them too)

    @property
    def target(self):
        return self.func.name

    @property
    def returns_sequence(self):
        """Whether the op returns a tuple or a list of tensors, even of one or none
        (`unbind` of a size-1 dim returns [t]: a line of code unpacks it, `u, = ...`)."""
        schema = self.func.schema
        return schema.num_returns != 1 or schema.text.endswith("[]")

    def targets_text(self, names):
        """The left side of the node's line: `u = ` for one tensor, `u, = ` for a
        sequence of one, `a, b = `, `_ = ` for an empty sequence."""
        if not self.returns_sequence:
            return names[0]
        if len(names) == 1:
            return names[0] + ","
        return ", ".join(names) or "_"

    def aliased_argument(self):
        """The Value whose memory this node's results share, or None when they are
        fresh tensors: a view's base (`x[0]`; `reshape` and `contiguous` may return
        one), or the argument an in-place op writes and returns (`add_` returns self)."""
        func = self.func
        if func.aliased_return:
            arg = self.args[func.schema.mutable_positions[0]]
        elif func.is_view:
            arg = self.args[0]
        else:
            return None
        return arg if isinstance(arg, Value) else None

    def written_values(self):
        """The Values this node writes in place."""
        positions = self.mutated or self.func.schema.mutable_positions
        return [v for i in positions for v in values_in(self.args[i])]


@dataclass
class Graph:
    placeholders: list = field(default_factory=list)   # Values, in the signature's order
    constants: dict = field(default_factory=dict)      # name -> the captured tensor
    nodes: list = field(default_factory=list)
    outputs: list = field(default_factory=list)        # Values (or Python values)

    def mutated_constants(self):
        """The names of the constants an in-place node writes, through a view too
        (`c[0].add_(x)` writes c): a replay must start each run from the captured
        value, so it writes a copy."""
        return sorted(self.written_names() & set(self.constants))

    def memory_roots(self):
        """{value name: the name of the tensor whose memory it is}, for the Values that
        share another's memory (views, in-place ops' returned selves), followed to the
        first: `v = c[0]; w = v.add_(1)` maps v and w to c. The graph names each of them
        apart, so "is this tensor written, or returned?" asked by name alone misses the
        writes and the escapes through another name."""
        roots = {}
        for node in self.nodes:
            base = node.aliased_argument()
            if base is not None:
                root = roots.get(base.name, base.name)
                roots.update((v.name, root) for v in node.outputs if v is not None)
        return roots

    def written_names(self):
        """The names of every Value whose memory some node writes in place: the tensor
        written, its base, and every view or in-place version of that base."""
        roots = self.memory_roots()
        written = {roots.get(v.name, v.name) for node in self.nodes
                   for v in node.written_values()}
        return written | {name for name, root in roots.items() if root in written}

    # ---- reading ---------------------------------------------------------------------
    def python_code(self):
        """The graph as a Python function, one line per op, shapes as comments."""
        names = ", ".join(p.name for p in self.placeholders)
        lines = [f"def forward(self, {names}):" if names else "def forward(self):"]
        for node in self.nodes:
            args = ", ".join(_arg_text(a) for a in node.args)
            outs = [o for o in node.outputs]
            target = node.targets_text([o.name if o is not None else "_" for o in outs])
            types = ", ".join(o.type_text() for o in outs if o is not None)
            lines.append(f"    {target} = {node.func!r}({args})  # {types}")
        ret = ", ".join(_arg_text(v) for v in self.outputs)
        lines.append(f"    return ({ret},)" if len(self.outputs) == 1 else f"    return ({ret})")
        return "\n".join(lines)

    def __str__(self):
        return self.python_code()

    def __repr__(self):
        return f"Graph({len(self.placeholders)} inputs, {len(self.nodes)} ops)"

    def to_svg(self):
        return draw_exported_graph(self)

    def _repr_svg_(self):
        return str(self.to_svg())


def _arg_text(a):
    if isinstance(a, (Value, SymInt)):
        return repr(a)
    if isinstance(a, list):
        return "[" + ", ".join(_arg_text(b) for b in a) + "]"
    if isinstance(a, tuple):
        return "(" + ", ".join(_arg_text(b) for b in a) + ("," if len(a) == 1 else "") + ")"
    return repr(a)


def values_in(arg):
    """The Values an argument names (a tensor list names several), in order."""
    if isinstance(arg, Value):
        return [arg]
    if isinstance(arg, (list, tuple)):
        return [v for a in arg for v in values_in(a)]
    return []
