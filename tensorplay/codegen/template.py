"""Code templates: the generators keep the shape of what they emit visible.

A template is the emitted block itself with `$name` (or `${name}`) placeholders, as in
torchgen's `CodeTemplate`:

    FRONT_DOOR = CodeTemplate('''\\
    def $name($signature):
        $docstring
        $body
    ''')

A placeholder alone on its line takes a list of lines and indents every one of them
like the placeholder (an empty list removes the line); anywhere else a list is joined
with ", ". `fit` then folds the few generated lines that pass 100 columns at their
outermost brackets, so no generator has to count characters.
"""
from __future__ import annotations

import re
import textwrap

WIDTH = 100

_PLACEHOLDER = re.compile(r"\$(\w+|\{\w+\})")


class CodeTemplate:
    def __init__(self, text: str):
        self.lines = textwrap.dedent(text).rstrip("\n").split("\n")

    def substitute(self, **values) -> list[str]:
        out = []
        for line in self.lines:
            alone = re.fullmatch(r"( *)\$(\w+|\{\w+\})", line)
            if alone:
                value = values[alone.group(2).strip("{}")]
                items = value if isinstance(value, (list, tuple)) else [value]
                indent = alone.group(1)
                for item in items:
                    out += [indent + ln if ln else ln for ln in str(item).split("\n")]
                continue
            out.append(_PLACEHOLDER.sub(lambda m: _inline(values[m.group(1).strip("{}")]), line))
        return out


def _inline(value) -> str:
    return ", ".join(value) if isinstance(value, (list, tuple)) else str(value)


# ---- folding long lines -----------------------------------------------------------
def fit(lines: list[str], width: int = WIDTH) -> list[str]:
    """Every line within `width` columns where a bracket allows it: a long call or
    import is folded one argument per line; strings and comments are left whole."""
    out = []
    for line in lines:
        out += _fold(line, width)
    return out


def _fold(line: str, width: int) -> list[str]:
    if len(line) <= width:
        return [line]
    span = _outer_brackets(line)
    if span is None:
        return [line]
    start, end = span
    items = _split_top_level(line[start + 1:end])
    indent = len(line) - len(line.lstrip())
    inner = " " * (indent + 4)
    head = line[:start + 1]
    tail = line[end:]
    # Try packing the items on as few lines as fit; one per line when one is too long.
    # A parenthesised expression (not a call, not a tuple) takes no trailing comma: one
    # would make it a tuple.
    grouping = line[start] == "(" and len(items) == 1 and (
        start == 0 or not (line[start - 1].isalnum() or line[start - 1] in "_)]"))
    body = _pack(items, inner, width, comma="" if grouping else ",")
    out = [head]
    for ln in body:
        out += _fold(ln, width)
    # The closing bracket may carry the rest of the statement (`) = f("...")`): fold that
    # too, scanning it as if the bracket were a name.
    closing = _fold(" " * indent + "_" + tail[1:], width)
    closing[0] = " " * indent + tail[0] + closing[0][indent + 1:]
    return out + closing


def _pack(items: list[str], indent: str, width: int, comma: str = ",") -> list[str]:
    lines, current = [], ""
    for item in items:
        if len(indent) + len(item) + 1 > width and _is_string(item):
            # A message too long for a line: adjacent literals, which Python joins.
            if current:
                lines.append(indent + current)
                current = ""
            pieces = _cut_string(item, width - len(indent))
            lines += [indent + p for p in pieces[:-1]] + [indent + pieces[-1] + comma]
            continue
        piece = item + comma
        if current and len(indent) + len(current) + 1 + len(piece) > width:
            lines.append(indent + current)
            current = piece
        else:
            current = f"{current} {piece}" if current else piece
    if current:
        lines.append(indent + current)
    return lines


def _is_string(item: str) -> bool:
    return len(item) > 2 and item[0] == item[-1] and item[0] in "'\"" and \
        item.count(item[0]) == 2 and "\\" not in item


def _cut_string(item: str, width: int) -> list[str]:
    quote, body = item[0], item[1:-1]
    pieces, current = [], ""
    for word in body.split(" "):
        candidate = f"{current} {word}" if current else word
        if current and len(candidate) + 3 > width:
            pieces.append(current + " ")
            current = word
        else:
            current = candidate
    pieces.append(current)
    return [quote + p + quote for p in pieces]


def _scan(line: str):
    """(index, char, depth before it) for each bracket and comma outside strings and
    comments."""
    depth = 0
    quote = None
    i = 0
    while i < len(line):
        c = line[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if line.startswith(quote, i):
                i += len(quote)
                quote = None
                continue
        elif c == "#":
            return
        elif c in "'\"":
            quote = line[i:i + 3] if line[i:i + 3] in ("'''", '"""') else c
            i += len(quote)
            continue
        elif c in "([{":
            yield i, c, depth
            depth += 1
        elif c in ")]}":
            depth -= 1
            yield i, c, depth
        elif c == ",":
            yield i, c, depth
        i += 1


def _outer_brackets(line: str):
    """The widest depth-0 bracket pair that holds a comma: the main call of the line,
    not the `isinstance(x, Tensor)` in front of it (or, for a call of one long
    argument, the brackets that close the line)."""
    pairs, opened, commas = [], None, set()
    for i, c, depth in _scan(line):
        if c in "([{" and depth == 0:
            opened = i
        elif c in ")]}" and depth == 0 and opened is not None:
            pairs.append((opened, i))
            opened = None
        elif c == "," and depth == 1 and opened is not None:
            commas.add(opened)
    with_commas = [(start, end) for start, end in pairs if start in commas]
    if not with_commas:
        # One long argument (a message): fold it only when it is the line's end.
        whole = [(start, end) for start, end in pairs if end == len(line.rstrip()) - 1]
        return whole[0] if whole else None
    return max(with_commas, key=lambda pair: pair[1] - pair[0])


def _split_top_level(text: str) -> list[str]:
    cuts = [i for i, c, depth in _scan(text) if c == "," and depth == 0]
    parts, prev = [], 0
    for i in cuts:
        parts.append(text[prev:i].strip())
        prev = i + 1
    parts.append(text[prev:].strip())
    return [p for p in parts if p]


def conjunction(tests: list[str], indent: int, op: str = "and", used: int = 4,
                width: int = WIDTH) -> str:
    """`a and b and c` for a line at `indent` whose other text takes `used` columns;
    when too long, one operand a line:

        if (a
                and b):
    """
    text = f" {op} ".join(tests) or "True"
    if indent + used + len(text) <= width:
        return text
    return "(" + f"\n{' ' * (indent + 8)}{op} ".join(tests) + ")"


def long_string(text: str, indent: int, width: int = WIDTH) -> list[str]:
    """`text` as a Python string literal that fits: one piece, or pieces cut after a
    ", " that Python joins again (adjacent literals inside parentheses)."""
    if indent + len(repr(text)) + 1 <= width:
        return [repr(text)]
    pieces, current = [], ""
    for part in text.split(", "):
        candidate = f"{current}, {part}" if current else part
        if current and indent + 4 + len(repr(candidate + ", ")) > width:
            pieces.append(current + ", ")
            current = part
        else:
            current = candidate
    pieces.append(current)
    return ["("] + ["    " + repr(p) for p in pieces] + [")"]
