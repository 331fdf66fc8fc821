"""Pictures for the notebooks, drawn without Graphviz: SVG for graphs and tables,
matplotlib for curves. Each returns an object Jupyter shows inline.

    draw_graph(loss)              the backward graph, layered from the output to the leaves
    draw_route(lambda: a + b)     every dispatch hop of one call (from explain())
    draw_table("add.Tensor")      an op's dispatch table: what each key runs
    plot_curves(history)          training curves ({"train_loss": [...], ...})
"""
from __future__ import annotations

from tensorplay.autograd.graph import _label as node_label
from tensorplay.autograd.node import grad_accumulator
from tensorplay.dispatch.dispatcher import FALLTHROUGH, dispatcher
from tensorplay.dispatch.keys import DispatchKey, NUM_BACKENDS
from tensorplay.dispatch.trace import explain
from tensorplay.errors import ArgumentError, fmt_shape
from tensorplay.utils.svg import LINE_H, Svg, text_width

__all__ = ["draw_graph", "draw_route", "draw_table", "plot_curves"]

PAD = 6          # inside a box, around its text
GAP_X = 24       # between boxes of one layer
GAP_Y = 44       # between layers
MARGIN = 12

NODE_COLORS = {"box": "#bfe3f5", "ellipse": "#e6e6e6", "output": "#c8f08f"}
ARROW_COLOR = "#555"
FONT_BASELINE = LINE_H - 4      # from the top of a text line to its baseline


# ---- the backward graph ----------------------------------------------------------------
class _Box:
    def __init__(self, lines, fill, rounded):
        self.lines = lines
        self.fill = fill
        self.rounded = rounded
        self.w = max(text_width(t) for t in lines) + 2 * PAD
        self.h = len(lines) * LINE_H + 2 * PAD
        self.x = self.y = 0.0

    def draw(self, svg):
        svg.rect(self.x, self.y, self.w, self.h, fill=self.fill, rounded=self.rounded)
        svg.text(self.x + self.w / 2, self.y + PAD + FONT_BASELINE, self.lines, anchor="middle")


def _graph(roots, names):
    """Boxes and edges of the graph behind `roots`: (boxes by key, [(parent, child, nr)])."""
    boxes, edges, stack = {}, [], []
    for r, t in enumerate(roots):
        impl = t._impl
        key = ("out", r)
        boxes[key] = _Box([f"output {fmt_shape(impl.sizes)}"], NODE_COLORS["output"], 0)
        fn = impl.grad_fn
        if fn is None and impl.requires_grad:
            fn = grad_accumulator(impl)
        if fn is not None:
            edges.append((key, fn, 0))
            stack.append(fn)
    while stack:
        node = stack.pop()
        if node in boxes:
            continue
        label, shape, _ = node_label(node, names)
        boxes[node] = _Box(label.split("\n"), NODE_COLORS[shape], 0 if shape == "box" else 12)
        for child, input_nr in node.next_functions:
            if child is not None:
                edges.append((node, child, input_nr))
                stack.append(child)
    return boxes, edges


def _layers(boxes, edges):
    """Each box on the layer one below its deepest parent (longest path from an output),
    so every arrow points down. Returns (layers, depth of each box)."""
    children = {k: [] for k in boxes}
    indegree = dict.fromkeys(boxes, 0)
    for parent, child, _ in edges:
        children[parent].append(child)
        indegree[child] += 1
    depth = dict.fromkeys(boxes, 0)
    ready = [k for k in boxes if indegree[k] == 0]
    while ready:
        key = ready.pop()
        for child in children[key]:
            depth[child] = max(depth[child], depth[key] + 1)
            indegree[child] -= 1
            if indegree[child] == 0:
                ready.append(child)
    layers = [[] for _ in range(max(depth.values(), default=0) + 1)]
    for key in boxes:                  # boxes keep discovery order inside a layer
        layers[depth[key]].append(key)
    return layers, depth


class _Waypoint:
    """Where an arrow that spans several layers crosses one: a slot of its own in that
    layer's row, so the arrow passes between the boxes, never through one."""
    w = 6.0
    h = 0.0

    def __init__(self):
        self.x = self.y = 0.0


def _chains(boxes, edges, layers, depth):
    """Each edge as the chain of what it passes through: [parent, waypoint..., child]
    (one waypoint per layer between them, added to that layer and to `boxes`)."""
    chains = []
    for parent, child, nr in edges:
        chain = [parent]
        for d in range(depth[parent] + 1, depth[child]):
            point = _Waypoint()
            boxes[point] = point
            layers[d].append(point)
            chain.append(point)
        chain.append(child)
        chains.append((chain, nr))
    return chains


def _place(boxes, chains, layers):
    """x and y of every box and waypoint. Returns (width, height, rows): rows[i] is the
    (top, bottom) of layer i's row, inside which only vertical arrow segments run."""
    parents = {k: [] for k in boxes}
    for chain, _ in chains:
        for above, below in zip(chain, chain[1:]):
            parents[below].append(above)
    y = MARGIN
    widths, rows = [], []
    for i, layer in enumerate(layers):
        if i > 0:   # order by the mean x of the parents: fewer crossing arrows
            layer.sort(key=lambda k: sum(boxes[p].x + boxes[p].w / 2 for p in parents[k]) /
                       max(len(parents[k]), 1))
        x = MARGIN
        for key in layer:
            boxes[key].x, boxes[key].y = x, y
            x += boxes[key].w + GAP_X
        widths.append(x - GAP_X - MARGIN)
        bottom = y + max(boxes[k].h for k in layer)
        rows.append((y, bottom))
        y = bottom + GAP_Y
    width = max(widths, default=0)
    for layer, w in zip(layers, widths):      # center each layer
        for key in layer:
            boxes[key].x += (width - w) / 2
    return width + 2 * MARGIN, y - GAP_Y + MARGIN, rows


def _ports(boxes, chains):
    """Where each chain leaves its first box and enters its last: the arrows of one box
    spread along its bottom (or top) edge, ordered by where their other end sits."""
    leaving, entering = {}, {}
    for i, (chain, _) in enumerate(chains):
        leaving.setdefault(chain[0], []).append((boxes[chain[1]].x, i))
        entering.setdefault(chain[-1], []).append((boxes[chain[-2]].x, i))
    out, into = {}, {}
    for ends, ports in ((leaving, out), (entering, into)):
        for key, arrows in ends.items():
            box = boxes[key]
            for k, (_, i) in enumerate(sorted(arrows)):
                ports[i] = box.x + box.w * (k + 1) / (len(arrows) + 1)
    return out, into


def _route(boxes, chains, rows, depth_of):
    """Each chain as a polyline: down from its port on the parent's bottom edge to the
    bottom of the parent's row, across the gap to the next row, straight down through
    each waypoint's slot, and across the last gap into the child's top edge. Segments
    inside a row are vertical, under a box or in a waypoint's slot; the slanted ones
    cross the gaps between rows, where no box is: no arrow goes through a box."""
    out, into = _ports(boxes, chains)
    routes = []
    for i, (chain, nr) in enumerate(chains):
        parent, child = boxes[chain[0]], boxes[chain[-1]]
        x = out[i]
        points = [(x, parent.y + parent.h), (x, rows[depth_of(chain[0])][1])]
        for point in chain[1:-1]:
            top, bottom = rows[depth_of(point)]
            points += [(point.x + point.w / 2, top), (point.x + point.w / 2, bottom)]
        points.append((into[i], child.y))
        routes.append(([p for j, p in enumerate(points) if j == 0 or p != points[j - 1]],
                       nr))
    return routes


def draw_graph(tensors, params=None):
    """The backward graph behind `tensors` (one or several) as an `Svg`: the output on
    top (green), backward nodes (grey, with their op and saved shapes), leaves (blue,
    named from `params={"w": w}`); arrows follow the gradient, labelled with the input
    number where it is not 0. The same graph `tp.autograd.graph.to_dot` writes.

    Layered from the output down (each box one row below its deepest parent); an arrow
    that spans several rows passes through a slot reserved for it in each row it
    crosses, so no arrow runs through a box."""
    roots = tensors if isinstance(tensors, (tuple, list)) else (tensors,)
    names = {id(t._impl): n for n, t in (params or {}).items()}
    boxes, edges = _graph(roots, names)
    layers, depth = _layers(boxes, edges)
    chains = _chains(boxes, edges, layers, depth)
    row_of = {key: i for i, layer in enumerate(layers) for key in layer}
    width, height, rows = _place(boxes, chains, layers)
    svg = Svg(width, height, title="backward graph")
    for points, nr in _route(boxes, chains, rows, row_of.__getitem__):
        for (x1, y1), (x2, y2) in zip(points[:-2], points[1:-1]):
            svg.line(x1, y1, x2, y2, color=ARROW_COLOR)
        (x1, y1), (x2, y2) = points[-2], points[-1]
        svg.arrow(x1, y1, x2, y2, color=ARROW_COLOR, label=str(nr) if nr else None)
    for key, box in boxes.items():
        if not isinstance(box, _Waypoint):
            box.draw(svg)
    return svg


# ---- the route of one call --------------------------------------------------------------
KIND_COLORS = {"call": "#1f4e9a", "key set": "#555", "dispatch": "#8a3ffc", "skip": "#999",
               "kernel": "#198038", "result": "#b45f06", "miss": "#da1e28"}
INDENT = 18


def draw_route(fn, max_hops=400):
    """Run `fn()` under `tp.dispatch.explain()` and draw its hops: one row per hop,
    indented by nesting (a wrapper's redispatch sits inside its call), the kind of hop
    in colour. `fn` may also be a finished `explain()` block, drawn as it was recorded.
    Returns an `Svg`; `.records` keeps the (depth, kind, text) rows."""
    if isinstance(fn, explain):
        ex = fn
    else:
        with explain(file=False) as ex:
            fn()
    records = ex.records[:max_hops]
    if not records:
        raise ArgumentError("draw_route(): the function made no op call, so there is no "
                            "route to draw", op="draw_route", arg="fn")
    kind_w = text_width("candidate  ")       # the longest kind, and two spaces
    rows = []
    for depth, kind, text in records:
        x = MARGIN + depth * INDENT + (0 if kind == "call" else INDENT)
        rows.append((x, kind, text))
    width = max(x + kind_w + text_width(t) for x, _, t in rows) + MARGIN
    height = 2 * MARGIN + len(rows) * (LINE_H + 4)
    if len(ex.records) > max_hops:
        height += LINE_H
    svg = Svg(width, height, title="dispatch route")
    y = MARGIN + LINE_H - 4
    for x, kind, text in rows:
        color = KIND_COLORS.get(kind, "#333")
        if kind == "call":
            svg.rect(x - 3, y - LINE_H + 3, text_width(text) + 6, LINE_H + 2, fill="#eef3fb",
                     stroke="#1f4e9a", rounded=3)
            svg.text(x, y, text, fill=color, weight="bold")
        else:
            svg.line(x - INDENT + 4, y - 4, x - 3, y - 4)
            svg.text(x, y, kind, fill=color, weight="bold")
            svg.text(x + kind_w, y, text)
        y += LINE_H + 4
    if len(ex.records) > max_hops:
        svg.text(MARGIN, y, f"... {len(ex.records) - max_hops} more hops", fill="#999")
    svg.records = records
    return svg


# ---- an op's dispatch table ---------------------------------------------------------------
COLUMNS = ("kernel", "registry", "Composite", "fallback", "fallthrough")
COLUMN_COLORS = {"kernel": "#198038", "registry": "#0f62fe", "Composite": "#8a3ffc",
                 "fallback": "#b45f06", "fallthrough": "#bbb", "miss": "#da1e28"}


def table_rows(name):
    """[(key name, column, what runs)] for every shown key of the op `name`."""
    handle = dispatcher.find(name)
    shown = dispatcher.shown_keys()
    rows = []
    for k in range(int(DispatchKey.EndOfKeys)):
        if not shown >> k & 1:
            continue
        r = handle.resolved[k]
        composite = handle.kernel_names[DispatchKey.Composite]
        registry = handle.slot_registry(k) if k < NUM_BACKENDS else None
        if r is None and k == DispatchKey.Composite:
            rows.append((DispatchKey(k).name, "", "no Composite kernel"))
        elif r is None:
            rows.append((DispatchKey(k).name, "miss", "no kernel: the call fails here"))
        elif r is FALLTHROUGH:
            rows.append((DispatchKey(k).name, "fallthrough", ""))
        elif registry is not None:
            what = ", ".join(f"{c.name} (priority {c.priority})" for c in registry.candidates)
            rows.append((DispatchKey(k).name, "registry", what))
        elif handle.kernels[k] is not None:
            column = "Composite" if k == DispatchKey.Composite else "kernel"
            rows.append((DispatchKey(k).name, column, handle.kernel_names[k]))
        elif getattr(r, "fallback_name", None):
            rows.append((DispatchKey(k).name, "fallback", r.fallback_name))
        elif k < NUM_BACKENDS:
            rows.append((DispatchKey(k).name, "Composite", f"Composite fallback {composite}"))
        else:
            rows.append((DispatchKey(k).name, "Composite",
                         f"implicit autograd: {composite}"))
    return rows


def draw_table(name):
    """The dispatch table of op `name` (`"add.Tensor"`) as an `Svg` grid: one row per
    key, a dot in the column of what the key runs (its own kernel, the backend's kernel
    registry, Composite code, a boxed fallback, or nothing: fall through), and the name
    of what runs. Rows in priority order, highest first, as the dispatcher looks."""
    rows = table_rows(name)[::-1]
    key_w = max(text_width(k) for k, _, _ in rows) + 2 * PAD
    col_w = max(text_width(c) for c in COLUMNS) + 2 * PAD
    what_w = max([text_width(w) for _, _, w in rows] + [text_width("what runs")]) + 2 * PAD
    row_h = LINE_H + 6
    width = 2 * MARGIN + key_w + col_w * len(COLUMNS) + what_w
    height = 2 * MARGIN + row_h * (len(rows) + 2)
    svg = Svg(width, height, title=f"dispatch table of {name}")
    svg.text(MARGIN, MARGIN + LINE_H - 4, f"{name}: {dispatcher.find(name).schema.text}",
             weight="bold")
    top = MARGIN + row_h
    x0 = MARGIN + key_w
    for i, column in enumerate(("key",) + COLUMNS + ("what runs",)):
        x = MARGIN + PAD if i == 0 else (x0 + (i - 1) * col_w + PAD if i <= len(COLUMNS)
                                         else x0 + len(COLUMNS) * col_w + PAD)
        svg.text(x, top + row_h - 7, column, weight="bold",
                 fill=COLUMN_COLORS.get(column, "#111"))
    for j, (key, column, what) in enumerate(rows):
        y = top + row_h * (j + 1)
        svg.rect(MARGIN, y, width - 2 * MARGIN, row_h,
                 fill="#f7f7f7" if j % 2 else "white", stroke="#ddd")
        svg.text(MARGIN + PAD, y + row_h - 7, key)
        if column in COLUMNS:
            cx = x0 + COLUMNS.index(column) * col_w + col_w / 2
            svg.rect(cx - 5, y + row_h / 2 - 5, 10, 10, fill=COLUMN_COLORS[column],
                     stroke=COLUMN_COLORS[column], rounded=5)
        svg.text(x0 + len(COLUMNS) * col_w + PAD, y + row_h - 7, what,
                 fill=COLUMN_COLORS["miss"] if column == "miss" else "#111")
    svg.rows = rows
    return svg


# ---- training curves ----------------------------------------------------------------------
def _panels(history):
    """{metric: [(line label, values)]}: `train_loss` and `test_loss` share the panel
    `loss` as lines `train` and `test`; a key without a split prefix has its own panel."""
    if isinstance(history, (list, tuple)):       # one dict per epoch
        keys = list(dict.fromkeys(k for row in history for k in row))
        history = {k: [row.get(k) for row in history] for k in keys}
    panels = {}
    for key, values in history.items():
        split, _, metric = key.partition("_")
        if split in ("train", "test", "val", "valid", "validation") and metric:
            panels.setdefault(metric, []).append((split, list(values)))
        else:
            panels.setdefault(key, []).append((key, list(values)))
    return panels


def plot_curves(history, xlabel="epoch", title=None):
    """Training curves as a matplotlib `Figure` (shown inline by Jupyter): one panel per
    metric, one line per split. `history` is a dict of lists (the training loop's
    `run.history`: `{"train_loss": [...], "test_loss": [...], "train_acc": [...]}`)
    or a list of per-epoch dicts."""
    from matplotlib.figure import Figure

    panels = _panels(history)
    if not panels:
        raise ArgumentError("plot_curves(): argument 'history' must hold at least one "
                            "series of values, but got an empty one", op="plot_curves",
                            arg="history")
    fig = Figure(figsize=(4.5 * len(panels), 3.4))
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, (metric, lines) in zip(axes, panels.items()):
        for label, values in lines:
            ax.plot(range(1, len(values) + 1), values, "o-", label=label, markersize=3)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(metric)
        ax.grid(alpha=0.3)
        ax.legend()
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    # Jupyter draws a figure made through pyplot by itself; this one is made without
    # pyplot (no global state), so it says how to show itself.
    fig._repr_png_ = lambda: _png(fig)
    return fig


def _png(fig):
    import io
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    return buffer.getvalue()
