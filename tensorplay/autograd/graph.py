"""Draw the backward graph: `to_dot(loss)` returns Graphviz DOT text.

    print(tp.autograd.graph.to_dot(loss))        # paste into any Graphviz viewer
    svg = tp.autograd.graph.render(loss)         # needs the `graphviz` package
    tp.utils.pictures.draw_graph(loss)           # the same graph as SVG, no Graphviz

It also holds the saved-tensor hooks (`saved_tensors_hooks`, `save_on_cpu`,
`disable_saved_tensors_hooks`), which change how the graph keeps the tensors its
formulas read (autograd/saved.py; activation checkpointing, tp.utils.checkpoint, is
built on them).

Boxes: the output tensor (green) and the leaves (blue, with their shape; named if
you pass `params={"w": w}`). Ellipses: backward nodes, with the op they differentiate
and the shapes of the tensors they saved. Arrows follow the gradient, from the output
towards the leaves.
"""
from __future__ import annotations

from tensorplay.autograd.node import AccumulateGrad, grad_accumulator
from tensorplay.autograd.saved import saved_hooks
from tensorplay.errors import AutogradError, fmt_shape

__all__ = ["to_dot", "render", "saved_tensors_hooks", "save_on_cpu",
           "disable_saved_tensors_hooks"]


class saved_tensors_hooks:
    """`with saved_tensors_hooks(pack_hook, unpack_hook):` every tensor an op saves for
    backward inside the block is handed to `pack_hook(tensor)`, and the graph keeps what
    it returns; backward calls `unpack_hook(that)` for the tensor back. The innermost
    block's hooks apply; the hooks stay with the saved tensor after the block ends."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        if saved_hooks.disabled is not None:
            raise AutogradError(saved_hooks.disabled)
        saved_hooks.stack.append((self.pack_hook, self.unpack_hook))

    def __exit__(self, *args):
        saved_hooks.stack.pop()


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors go to the host (pinned if `pin_memory`) and come back to their own
    device in backward: device memory traded for copies."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack_to_cpu(tensor):
            if not pin_memory:
                return tensor.device, tensor.cpu()
            return tensor.device, tensor.cpu().pin_memory()

        def unpack_from_cpu(packed):
            device, tensor = packed
            return tensor.to(device, non_blocking=pin_memory)

        super().__init__(pack_to_cpu, unpack_from_cpu)


class disable_saved_tensors_hooks:
    """Inside the block, entering saved_tensors_hooks raises `error_message` (a feature
    that cannot work with them says so)."""

    def __init__(self, error_message):
        self.error_message = error_message

    def __enter__(self):
        self.previous = saved_hooks.disabled
        saved_hooks.disabled = self.error_message

    def __exit__(self, *args):
        saved_hooks.disabled = self.previous


def _quote(text):
    """A DOT string; `\\n` is DOT's line break inside a label."""
    text = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return '"' + text + '"'


def _saved_lines(node):
    lines = []
    for attr in node.SAVED:
        saved = getattr(node, attr, None)
        if saved is None or saved.sizes is None:
            continue
        lines.append(f"{attr.rstrip('_')}: {fmt_shape(saved.sizes)} {saved.dtype.name}")
    for attr in getattr(node, "_saved", None) or ():      # custom Functions
        if attr.sizes is not None:
            lines.append(f"saved: {fmt_shape(attr.sizes)} {attr.dtype.name}")
    return lines


def _label(node, names):
    if isinstance(node, AccumulateGrad):
        impl = node.variable._impl
        name = names.get(id(impl)) or impl.name or ""
        title = f"{name}\n" if name else ""
        return f"{title}{fmt_shape(impl.sizes)} {impl.dtype.name}", "box", "lightblue"
    lines = [node.name()]
    if node.OP:
        lines.append(f"({node.OP})")
    lines += _saved_lines(node)
    return "\n".join(lines), "ellipse", "lightgrey"


def to_dot(tensors, params=None):
    """The graph behind `tensors` (one tensor or several) as DOT source text."""
    roots = tensors if isinstance(tensors, (tuple, list)) else (tensors,)
    names = {id(t._impl): n for n, t in (params or {}).items()}
    lines = ["digraph backward {", '    node [fontname="monospace", fontsize=10];',
             "    rankdir=TB;"]
    ids = {}

    def node_id(node):
        if node not in ids:
            ids[node] = f"n{len(ids)}"
        return ids[node]

    stack = []
    for r, t in enumerate(roots):
        impl = t._impl
        out_id = f"out{r}"
        lines.append(f"    {out_id} [label={_quote('output ' + fmt_shape(impl.sizes))}, "
                     f"shape=box, style=filled, fillcolor=darkolivegreen1];")
        fn = impl.grad_fn
        if fn is None and impl.requires_grad:
            fn = grad_accumulator(impl)
        if fn is not None:
            lines.append(f"    {out_id} -> {node_id(fn)};")
            stack.append(fn)
    seen = set()
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        label, shape, color = _label(node, names)
        lines.append(f"    {node_id(node)} [label={_quote(label)}, shape={shape}, "
                     f"style=filled, fillcolor={color}];")
        for child, input_nr in node.next_functions:
            if child is None:
                continue
            attrs = f' [label="{input_nr}"]' if input_nr else ""
            lines.append(f"    {node_id(node)} -> {node_id(child)}{attrs};")
            stack.append(child)
    lines.append("}")
    return "\n".join(lines) + "\n"


def render(tensors, fmt="svg", params=None):
    """The drawn graph as bytes in `fmt` (svg, png, pdf...), through the `graphviz`
    package and its `dot` program."""
    try:
        import graphviz
    except ImportError:
        raise ImportError("render() needs the graphviz Python package (pip install "
                          "graphviz) and the Graphviz `dot` program; to_dot() and "
                          "tp.utils.pictures.draw_graph() work without them") from None
    return graphviz.Source(to_dot(tensors, params)).pipe(format=fmt)
