"""One binding per name: a hand-written method or function wins over the generated one.

Some Tensor methods and `tp.*` functions are written by hand (a richer signature, a
Python-level shortcut); ops.yaml may describe an op of the same name. Python would pick
the hand-written one anyway (`Tensor`'s own body comes before its `TensorMethods` base;
`tensorplay/_api.py` assigns its functions after the generated ones), but a reader of
`_generated/` would then find a method that never runs. So codegen reads the
hand-written names first and does not emit the generated twin: a method is left out
of `TensorMethods`, a function out of `FUNCTIONS` (its front door stays in
`functional.py`, where other generated code may call it), and `main` reports each.

The hand-written names are read from the source with `ast`, not by importing it: the
generator must run while `_generated/` is missing or stale.
"""
from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field

# Where the hand-written bindings live: (file under the repository root, class or None)
METHOD_SOURCES = (("tensorplay/_tensor.py", "Tensor"), ("tensorplay/_tensor_base.py",
                                                         "TensorBase"))
FUNCTION_SOURCES = ("tensorplay/_api.py",)

# Class-body names Python itself defines or that are not bindings.
_NOT_BINDINGS = {"__slots__", "__module__", "__qualname__", "__doc__", "__annotations__"}


@dataclass
class HandWritten:
    """name -> "path:line" of each hand-written binding."""
    methods: dict = field(default_factory=dict)
    functions: dict = field(default_factory=dict)


def _names_in(body) -> dict:
    """The names a module or class body binds by def, class or assignment, with lines."""
    names = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = node.lineno
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    names[t.id] = node.lineno
    return names


def _parse(root, path):
    full = os.path.join(root, path)
    if not os.path.exists(full):
        return None
    with open(full) as fh:
        return ast.parse(fh.read(), full)


def find(root: str) -> HandWritten:
    found = HandWritten()
    for path, cls in METHOD_SOURCES:
        tree = _parse(root, path)
        if tree is None:
            continue
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == cls:
                for name, line in _names_in(node.body).items():
                    if name not in _NOT_BINDINGS:
                        found.methods.setdefault(name, f"{path}:{line}")
    for path in FUNCTION_SOURCES:
        tree = _parse(root, path)
        if tree is None:
            continue
        for name, line in _names_in(tree.body).items():
            if not name.startswith("_"):
                found.functions.setdefault(name, f"{path}:{line}")
    return found


def report(ctx, method_names, function_names) -> list[str]:
    """One line per generated binding left out because a hand-written one exists."""
    lines = [f"hand-written Tensor.{n} ({ctx.handwritten.methods[n]}) wins: generated "
             f"method not emitted" for n in sorted(method_names & ctx.handwritten.methods.keys())]
    lines += [f"hand-written tp.{n} ({ctx.handwritten.functions[n]}) wins: generated function "
              f"not exported" for n in sorted(function_names & ctx.handwritten.functions.keys())]
    return lines
