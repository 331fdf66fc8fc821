"""A function's result as a flat list of tensors and a spec that rebuilds it.

The graph returns a flat list of tensors; the function returned a tensor, a tuple, a
list or a dict of them, maybe with Python values beside them (a size, a flag). The spec
keeps the structure and those values (fixed by the guards: a value computed from a
tensor's data would have been a graph break):

    ("t", i)                 the i-th tensor of the flat list
    ("c", value)             a Python value, returned as it was
    ("tuple"|"list", specs)  a tuple or a list of specs
    ("named", cls, specs)    a named tuple (`tp.max(x, 0)`'s) or a tuple subclass
    ("dict", keys, specs)    a dict
"""
from __future__ import annotations

SINGLE = ("t", 0)      # the common case: one tensor

# Python values a result may hold beside its tensors (anything else may hide a tensor or
# change behind the graph's back: the caller makes it a graph break)
CONSTANTS = (int, float, bool, str, complex, type(None))


class Unflattenable(Exception):
    """The result holds an object the spec cannot keep (its type is the message)."""


def flatten_output(result):
    flat = []
    spec = _flatten(result, flat)
    return flat, spec


def _flatten(x, flat):
    if getattr(x, "_impl", None) is not None:
        flat.append(x)
        return ("t", len(flat) - 1)
    if type(x) in (tuple, list):
        return (type(x).__name__, tuple(_flatten(v, flat) for v in x))
    if isinstance(x, tuple):
        return ("named", type(x), tuple(_flatten(v, flat) for v in x))
    if type(x) is dict:
        return ("dict", tuple(x), tuple(_flatten(v, flat) for v in x.values()))
    if isinstance(x, CONSTANTS) or type(x).__module__.startswith("tensorplay._dtype") \
            or type(x).__name__ == "device":
        return ("c", x)
    raise Unflattenable(type(x).__name__)


def build_output(spec, flat):
    """The result of spec's shape from the graph's flat outputs."""
    kind = spec[0]
    if kind == "t":
        return flat[spec[1]]
    if kind == "tuple":
        return tuple(build_output(s, flat) for s in spec[1])
    if kind == "list":
        return [build_output(s, flat) for s in spec[1]]
    if kind == "named":
        values = [build_output(s, flat) for s in spec[2]]
        cls = spec[1]
        return cls(*values) if hasattr(cls, "_fields") else cls(values)
    if kind == "dict":
        return {k: build_output(s, flat) for k, s in zip(spec[1], spec[2])}
    return spec[1]


def output_builder(spec):
    """`build_output(spec, ·)` as one function: `lambda outs: (outs[0], outs[1])` for a
    pair of tensors (the call of every replay: no walk of the spec)."""
    if _plain(spec):
        return eval(f"lambda outs: {_expression(spec)}")   # noqa: S307 - our own text
    return lambda outs: build_output(spec, outs)


def _plain(spec):
    kind = spec[0]
    if kind == "t":
        return True
    return kind in ("tuple", "list") and all(_plain(s) for s in spec[1])


def _expression(spec):
    kind = spec[0]
    if kind == "t":
        return f"outs[{spec[1]}]"
    items = ", ".join(_expression(s) for s in spec[1])
    if kind == "list":
        return f"[{items}]"
    return f"({items},)" if len(spec[1]) == 1 else f"({items})"
