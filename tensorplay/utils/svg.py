"""A few SVG shapes, written as text: what the pictures of `pictures.py` are made of.

No drawing library and no Graphviz: an `Svg` collects elements (boxes, text, arrows)
and prints itself as one `<svg>` document. Jupyter shows any object that has a
`_repr_svg_` method as a picture, so returning an `Svg` from a cell draws it inline.
Text is monospace, so its width is known without measuring a font: CHAR_W per character.
"""
from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr

FONT = 11                   # px
CHAR_W = FONT * 0.62        # the advance of one monospace character
LINE_H = FONT + 4


def text_width(line):
    return len(line) * CHAR_W


class Svg:
    """An SVG document built element by element; `str(svg)` is its text."""

    def __init__(self, width, height, title=""):
        self.width = width
        self.height = height
        self.title = title
        self.parts = []

    def rect(self, x, y, w, h, fill="white", stroke="#444", rounded=0, **attrs):
        self.parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" '
                          f'rx="{rounded}" fill="{fill}" stroke="{stroke}"{_attrs(attrs)}/>')

    def text(self, x, y, lines, anchor="start", fill="#111", weight="normal"):
        """One line of text per entry of `lines`, the first with its baseline at `y`."""
        if isinstance(lines, str):
            lines = [lines]
        spans = "".join(f'<tspan x="{x:.1f}" dy="{0 if i == 0 else LINE_H}">{escape(t)}</tspan>'
                        for i, t in enumerate(lines))
        self.parts.append(f'<text x="{x:.1f}" y="{y:.1f}" font-family="monospace" '
                          f'font-size="{FONT}" text-anchor="{anchor}" fill="{fill}" '
                          f'font-weight="{weight}">{spans}</text>')

    def arrow(self, x1, y1, x2, y2, color="#555", label=None):
        self.parts.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" '
                          f'stroke="{color}" marker-end="url(#arrow)"/>')
        if label:
            self.text((x1 + x2) / 2 + 3, (y1 + y2) / 2, label, fill="#777")

    def line(self, x1, y1, x2, y2, color="#ccc"):
        self.parts.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" '
                          f'stroke="{color}"/>')

    def __str__(self):
        head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width:.0f}" '
                f'height="{self.height:.0f}" viewBox="0 0 {self.width:.0f} {self.height:.0f}">')
        marker = ('<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" '
                  'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
                  '<path d="M 0 0 L 10 5 L 0 10 z" fill="#555"/></marker></defs>')
        title = f"<title>{escape(self.title)}</title>" if self.title else ""
        background = '<rect width="100%" height="100%" fill="white"/>'
        return "\n".join([head, title, marker, background, *self.parts, "</svg>"])

    def _repr_svg_(self):
        return str(self)

    def save(self, path):
        with open(path, "w", encoding="utf-8") as f:
            f.write(str(self))


def _attrs(attrs):
    return "".join(f" {k.replace('_', '-')}={quoteattr(str(v))}" for k, v in attrs.items())
