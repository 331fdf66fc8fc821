"""The compact form of an explain() log: one line per op call, its route as `key -> what
ran` steps.

    with tp.dispatch.explain(compact=True):
        c = a * b
    mul.Tensor(a, b)  AutogradCPU -> autograd_wrappers.mul_Tensor  |  CPU -> cpu_kernels.pointwise.mul

The full form (`explain()`) prints every hop: the key set, the slots fallen through, the
registry's candidates and cache, the results. The compact form keeps what ran:

    a call      `op(arguments)` (leaves by name, other tensors as `float32[3]`), then
                its steps; a wrapper's redispatch of the same op continues the same line
                (`AutogradCPU -> ... | CPU -> ...`), an op the wrapper or the kernel
                calls gets a line of its own, indented below
    a step      `key -> what runs` (the kernel the registry chose; a Composite
                decomposition; a wrapper); `key -> no kernel` for a miss; a registry
                fallback in brackets after its kernel
    backward    the node, its formula, each formula helper call (`helper sum_to(...)`)
                with the ops it ran below it, the gradients sent out along the edges;
                AccumulateGrad on one line with what it did to `.grad`
    notes       autocast casts and vmap batching rules, a line each

It is built from the records (`Hop`s) after the fact, by `compact_lines(records)`:
nothing here listens to the dispatcher. Dropped: key sets, TLS changes, skipped slots
(an autograd slot with nothing to record, a fallthrough), candidates, cache lookups,
results, version bumps, gradients in, Triton launches.
"""
from __future__ import annotations

OPENERS = ("call", "node", "helper")            # hops that open a block of their own
NOTES = ("formula", "tangent", "grad out", "cast", "vmap", "hand-over")    # a line each
SEPARATOR = "  |  "


def short(name):
    """`tensorplay._generated.autograd_wrappers.add_Tensor` -> `autograd_wrappers.add_Tensor`."""
    return name.removeprefix("tensorplay.").removeprefix("_generated.")


class Line:
    """One line of the compact form: a block (call, backward node, helper call) with its
    steps, or a note."""

    __slots__ = ("indent", "kind", "text", "op", "steps", "awaiting", "pending", "note")

    def __init__(self, indent, kind, text, op=None):
        self.indent = indent
        self.kind = kind
        self.text = text
        self.op = op
        self.steps = []
        self.awaiting = False   # a wrapper ran: the same op's redispatch continues this line
        self.pending = None     # the key of a registry step waiting for its `kernel` hop
        self.note = None        # that registry's fallback, shown after the kernel

    def add_step(self, key, runs):
        note = f" [{self.note}]" if self.note else ""
        self.pending = self.note = None
        self.steps.append(f"{key} -> {runs}{note}")

    def __str__(self):
        pad = "  " * self.indent
        if self.kind == "call":
            return pad + self.text + ("  " + SEPARATOR.join(self.steps) if self.steps else "")
        if self.kind == "helper":
            return pad + "helper " + self.text
        if self.kind in OPENERS:
            return pad + self.text + ("  " + "  ".join(self.steps) if self.steps else "")
        return pad + f"{self.kind:<10}{self.text}"


def compact_lines(records):
    """The compact form of `records` (an explain() block's `Hop`s), as a list of `Line`s.

    A block's hops sit at its depth (its own: key set, formula, result) or one deeper
    (its dispatch steps, kernel, and the blocks it opens). `open_blocks` holds the
    blocks not yet ended, as (depth, Line); a merged redispatch adds its depth with the
    line it continues."""
    lines = []
    open_blocks = []

    def close(depth):
        while open_blocks and open_blocks[-1][0] >= depth:
            open_blocks.pop()

    def owner(depth):
        for d, line in reversed(open_blocks):
            if d <= depth:
                return line
        return None

    for h in records:
        kind, depth, data = h.kind, h.depth, h.data
        if kind in OPENERS:
            close(depth)
            parent = owner(depth)
            if kind == "call" and parent is not None and parent.awaiting and \
                    parent.op == data.get("op"):
                parent.awaiting = False        # the wrapper's redispatch: same line
                open_blocks.append((depth, parent))
                continue
            line = Line(parent.indent + 1 if parent is not None else 0, kind,
                        data.get("compact", h.text), data.get("op"))
            lines.append(line)
            open_blocks.append((depth, line))
            continue
        if kind == "result":
            close(depth)
            continue
        close(depth + 1)
        line = owner(depth - 1) if kind in ("dispatch", "kernel", "miss", "fallback") \
            else owner(depth)
        if kind == "dispatch" and line is not None:
            runs = data.get("runs")
            if runs is None:                     # a kernel registry: its `kernel` hop says
                line.pending = data.get("key")
            else:
                line.add_step(data.get("key"), runs)
                line.awaiting = bool(data.get("wrapper"))
        elif kind == "kernel" and line is not None:
            key = line.pending or "?"
            line.add_step(key, short(h.text))
        elif kind == "miss" and line is not None:
            line.add_step(h.text.split(":", 1)[0], "no kernel")
        elif kind == "fallback" and line is not None:
            line.note = h.text
        elif kind == "accum" and line is not None:
            line.steps.append(data.get("compact", h.text))
        elif kind in NOTES:
            parent = owner(depth)
            lines.append(Line(parent.indent + 1 if parent is not None else 0, kind,
                              data.get("compact", h.text)))
    return lines


def first_route(records):
    """`op: key -> what | ...` of the first call in `records` (what AccumulateGrad folds
    into its one line), or None."""
    for line in compact_lines(records):
        if line.kind == "call":
            return f"{line.op}: {' | '.join(line.steps)}" if line.steps else line.op
    return None
