"""Target `tensor_methods`: the `TensorMethods` mixin that `Tensor` inherits from.

A method is the functional front door itself (`add = F.add`: a module function
stored on a class becomes a method with the tensor as `self`), so both paths
share one body. Python operators come from `python_operators:` in ops.yaml.
"""
from __future__ import annotations

from tensorplay.codegen import pyargs
from tensorplay.codegen.gen_functional import HEADER, groups

REFLECTED = {"__radd__", "__rsub__", "__rmul__", "__rtruediv__", "__rfloordiv__", "__rmod__",
             "__rpow__", "__rmatmul__", "__rand__", "__ror__", "__rxor__"}
UNARY = {"__neg__", "__pos__", "__abs__", "__invert__"}


def _self_first(entries) -> bool:
    args = entries[0].schema.arguments
    return bool(args) and args[0].name == "self"


def generate(ctx) -> str:
    lines = [HEADER + '"""Tensor methods and Python operators, generated from ops.yaml."""',
             "from tensorplay._generated import functional as F",
             "from tensorplay._frontdoor import is_operand, wrap_number",
             "", "",
             "class TensorMethods:",
             '    """Mixed into `Tensor`: every `method` variant of ops.yaml."""',
             "",
             "    __slots__ = ()",
             ""]
    for name, entries in groups(ctx.ops).items():
        if not any("method" in e.variants for e in entries):
            continue
        if _self_first(entries):
            lines.append(f"    {name} = F.{name}")
            continue
        # `where(condition, self, other)` as a method: x.where(condition, other).
        ps = pyargs.py_params(entries[0].schema)
        others = [p for p in ps if p.name != "self"]
        sig = pyargs.signature([p for p in ps if p.name == "self"] + others)
        call = ", ".join(p.name for p in ps)
        lines += ["", f"    def {name}({sig}):",
                  f"        return F.{name}({call})", ""]
    lines.append("")
    for e in ctx.ops:
        for dunder in e.python_operators:
            fn = e.schema.name.base + ("_" if e.schema.name.inplace else "")
            if dunder in UNARY:
                lines += [f"    def {dunder}(self):", f"        return F.{fn}(self)", ""]
            elif dunder in REFLECTED:
                lines += [f"    def {dunder}(self, other):",
                          "        if not is_operand(other):",
                          "            return NotImplemented",
                          f"        return F.{fn}(wrap_number(other, self), self)", ""]
            elif dunder.startswith("__i"):
                lines += [f"    def {dunder}(self, other):",
                          f"        return F.{fn}(self, other)", ""]
            else:
                lines += [f"    def {dunder}(self, other):",
                          "        if not is_operand(other):",
                          "            return NotImplemented",
                          f"        return F.{fn}(self, other)", ""]
    return "\n".join(lines).rstrip() + "\n"
