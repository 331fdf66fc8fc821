"""`ep.graph.to_svg()`: the graph as a column of boxes, one per op (the house's Svg
helpers, tensorplay/utils/svg.py), with an arrow from each value to the ops that read it."""
from __future__ import annotations

from tensorplay.export.values import Value
from tensorplay.utils.svg import LINE_H, Svg, text_width

BOX_H = 2 * LINE_H + 8
GAP = 18
MARGIN = 12


def _values(args):
    for a in args:
        if isinstance(a, Value):
            yield a
        elif isinstance(a, (list, tuple)):
            yield from _values(a)


def draw_exported_graph(graph):
    rows = [(p.name, p.type_text(), "#e8f0ff") for p in graph.placeholders]
    row_of = {p.name: i for i, p in enumerate(graph.placeholders)}
    edges = []
    for node in graph.nodes:
        i = len(rows)
        outs = [o for o in node.outputs if o is not None]
        label = f"{', '.join(o.name for o in outs) or '_'} = {node.func!r}"
        rows.append((label, ", ".join(o.type_text() for o in outs), "white"))
        for v in _values(node.args):
            if v.name in row_of:
                edges.append((row_of[v.name], i))
        for o in outs:
            row_of[o.name] = i
    width = max(text_width(line) for r in rows for line in r[:2]) + 2 * MARGIN + 80
    svg = Svg(width, len(rows) * (BOX_H + GAP) + MARGIN, title="exported graph")
    x = MARGIN + 60
    for i, (label, types, fill) in enumerate(rows):
        y = MARGIN + i * (BOX_H + GAP)
        svg.rect(x, y, width - x - MARGIN, BOX_H, fill=fill, rounded=4)
        svg.text(x + 6, y + LINE_H, [label, types])
    for a, b in edges:
        ya = MARGIN + a * (BOX_H + GAP) + BOX_H
        yb = MARGIN + b * (BOX_H + GAP)
        if b == a + 1:
            svg.arrow(x + 20, ya, x + 20, yb)
        else:     # a longer edge bends out to the left of the column
            bend = x - 10 - 4 * ((b - a) % 10)
            svg.line(x, ya - BOX_H / 2, bend, ya - BOX_H / 2, color="#888")
            svg.line(bend, ya - BOX_H / 2, bend, yb + BOX_H / 2, color="#888")
            svg.arrow(bend, yb + BOX_H / 2, x, yb + BOX_H / 2)
    return svg
