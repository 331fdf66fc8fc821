"""The hops of an explain() log (tensorplay/dispatch/trace.py reports them), and how
each names the code it comes from.

    Hop(depth, kind, text, where, data)     one line of the log: it unpacks as
                                            (depth, kind, text); `where` is
                                            `file:line function`, paths relative to
                                            the repository
    code_where(fn)                          where a function (or a class's apply) starts
    frame_where(level)                      the line a caller is at, passing over the
                                            dispatcher's entry points
    formula_where("mul.Tensor")             the derivatives.yaml line of a formula
    is_formula_helper(code)                 a function derivatives.yaml formulas call
                                            (tensorplay/autograd/formulas/)
    tensor_text(impl)                       `float32[2, 3] non-contiguous requires_grad`

Nothing here listens to the dispatcher or keeps state beyond two caches of what files
say; trace.py holds the listening.
"""
from __future__ import annotations

import os
import sys

from tensorplay._layout import strided

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# ---- where: `file:line function` ------------------------------------------------------
def repo_path(path):
    """A path relative to the repository (the folder holding the tensorplay package)."""
    path = os.path.abspath(path)
    if path.startswith(_ROOT + os.sep):
        return os.path.relpath(path, _ROOT)
    return path


def code_where(fn):
    """`file:line function` of a function (unwrapping the dispatcher's own wrappers), a
    class's `apply`, or None when it has no Python code (a builtin)."""
    for _ in range(5):
        inner = getattr(fn, "__wrapped__", None) or getattr(fn, "__func__", None)
        if inner is None:
            break
        fn = inner
    if isinstance(fn, type):
        fn = getattr(fn, "apply", None) or getattr(fn, "__call__", None)
    elif not hasattr(fn, "__code__") and hasattr(type(fn), "__call__"):
        fn = type(fn).__call__         # a callable object: its __call__
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    return f"{repo_path(code.co_filename)}:{code.co_firstlineno} {code.co_qualname}"


# The entry points a call passes through on its way into the dispatch loop: a hop names
# their caller instead (the front door, the wrapper), which is the code a reader looks for.
_ENTRY_POINTS = {("dispatcher.py", "call"), ("dispatcher.py", "redispatch"),
                 ("trace.py", "observed"), ("dispatcher.py", "below_autograd")}


def frame_where(level):
    """`file:line function` of the frame `level` calls above the caller, passing over the
    dispatcher's entry points (`_ENTRY_POINTS`)."""
    f = sys._getframe(level + 1)
    while (os.path.basename(f.f_code.co_filename), f.f_code.co_name) in _ENTRY_POINTS:
        f = f.f_back
    return f"{repo_path(f.f_code.co_filename)}:{f.f_lineno} {f.f_code.co_qualname}"


# ---- hops -------------------------------------------------------------------------------
class Hop:
    """One hop of an explain() log. It unpacks as `(depth, kind, text)` (what
    `draw_route` reads); `where` is the code it names (`file:line function`), `data` a
    dict of the structured fields (shapes, dtypes, edges) a table shows."""

    __slots__ = ("depth", "kind", "text", "where", "data")

    def __init__(self, depth, kind, text, where=None, data=None):
        self.depth = depth
        self.kind = kind
        self.text = text
        self.where = where
        self.data = data or {}

    def __iter__(self):
        return iter((self.depth, self.kind, self.text))

    @property
    def line(self):
        """The hop as explain() prints it."""
        if self.kind in ("call", "node"):     # a call or backward node opens a block
            return "  " * self.depth + self.text
        if self.kind == "helper":             # so does a formula helper's call
            return "  " * self.depth + "helper " + self.text
        return "  " * self.depth + f"  {self.kind:<10}{self.text}"

    def as_row(self):
        return {"depth": self.depth, "kind": self.kind, "text": self.text,
                "where": self.where, **self.data}

    def __repr__(self):
        return f"Hop({self.depth}, {self.kind!r}, {self.text!r}, where={self.where!r})"


# ---- the values a hop shows ---------------------------------------------------------------
def describe_with(value, inner):
    """`value` as a hop shows it: a tensor as `tensor_text`, a list or tuple item by item
    with `inner`, anything else as its repr cut to 40 characters."""
    impl = getattr(value, "_impl", None)
    if impl is not None:
        return tensor_text(impl)
    if isinstance(value, (list, tuple)):
        parts = ", ".join(inner(v) for v in value)
        if isinstance(value, list):
            return f"[{parts}]"
        return f"({parts},)" if len(value) == 1 else f"({parts})"
    text = repr(value)
    return text if len(text) < 40 else text[:37] + "..."


def tensor_text(impl):
    """`float32[2, 3]`, then `@cuda:0` off the CPU, the layout or `non-contiguous`,
    `requires_grad`."""
    text = f"{impl.dtype.name}[{', '.join(map(str, impl.sizes))}]"
    if impl.device.type != "cpu":
        text += f"@{impl.device}"
    if impl.layout is not strided:
        text += f" {impl.layout.name}"
    elif not impl.is_contiguous:
        text += " non-contiguous"
    if impl.requires_grad:
        text += " requires_grad"
    return text


# ---- backward: formulas and their helpers -------------------------------------------------
_formula_lines = {}


def formula_where(op):
    """`derivatives.yaml:LINE op` of the entry `op` (e.g. `add.Tensor`) was generated from."""
    if not _formula_lines:
        path = os.path.join(_ROOT, "derivatives.yaml")
        try:
            with open(path) as f:
                for n, line in enumerate(f, 1):
                    if line.startswith("- name: "):
                        _formula_lines[line[8:].split("(", 1)[0].strip()] = n
        except OSError:
            _formula_lines[None] = 0
    n = _formula_lines.get(op)
    return f"derivatives.yaml:{n} {op}" if n else None


_FORMULAS = os.path.join(_ROOT, "tensorplay", "autograd", "formulas") + os.sep
_helper_code = {}        # code object -> whether it is a helper's


def is_formula_helper(code):
    """Whether `code` is a helper's: a public module-level function of
    tensorplay/autograd/formulas/ (read by file, not imported: autograd sits above the
    dispatcher)."""
    known = _helper_code.get(code)
    if known is None:
        known = _helper_code[code] = (code.co_filename.startswith(_FORMULAS)
                                      and code.co_qualname == code.co_name
                                      and not code.co_name.startswith("_"))
    return known
