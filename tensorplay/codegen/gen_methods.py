"""Target `tensor_methods`: the `TensorMethods` mixin that `Tensor` inherits from.

A method is the functional front door itself (`add = F.add`: a module function
stored on a class becomes a method with the tensor as `self`), so both paths
share one body. Python operators come from `python_operators:` in ops.yaml: each calls
its op's front door (`__add__` calls `F.add`).
"""
from __future__ import annotations

from tensorplay.codegen import pyargs
from tensorplay.codegen.gen_functional import HEADER, groups, operator_kind
from tensorplay.codegen.template import CodeTemplate, fit

# `where(condition, self, other)` as a method: x.where(condition, other).
SELF_NOT_FIRST = CodeTemplate("""\

def $name($signature):
    return F.$name($call)
""")

# One template per kind of Python operator. A binary operator answers NotImplemented
# for what it cannot take, so Python tries the other side (`x == None` is False).
OPERATORS = {
    "unary": CodeTemplate("""\
def $dunder(self):
    return F.$fn(self)
"""),
    "reflected": CodeTemplate("""\
def $dunder(self, other):
    if not is_operand(other):
        return NotImplemented
    return F.$fn(wrap_number(other, self), self)
"""),
    # the op takes the number itself (`remainder.Scalar_Tensor(Scalar self, Tensor other)`):
    # its own derivative entry applies, as in PyTorch where `5 % t` has no gradient
    "reflected scalar": CodeTemplate("""\
def $dunder(self, other):
    if not is_operand(other):
        return NotImplemented
    return F.$fn(other, self)
"""),
    "in-place": CodeTemplate("""\
def $dunder(self, other):
    return F.$fn(self, other)
"""),
    "binary": CodeTemplate("""\
def $dunder(self, other):
    if type(other) is not type(self) and not is_operand(other):
        return NotImplemented
    return F.$fn(self, other)
"""),
}

METHODS = CodeTemplate('''\
"""Tensor methods and Python operators, generated from ops.yaml."""
from tensorplay._generated import functional as F
from tensorplay._frontdoor import is_operand, wrap_number


class TensorMethods:
    """Mixed into `Tensor`: every `method` variant of ops.yaml."""

    __slots__ = ()

    $methods

    $operators''')


def _self_first(entries) -> bool:
    args = entries[0].schema.arguments
    return bool(args) and args[0].name == "self"


def emitted_names(ctx) -> set:
    """Every method and Python operator ops.yaml asks for, hand-written or not."""
    names = {name for name, entries in groups(ctx.ops).items()
             if any("method" in e.variants for e in entries)}
    return names | {d for e in ctx.ops for d in e.python_operators}


def generate(ctx) -> str:
    methods = []
    handwritten = ctx.handwritten.methods     # these win (codegen/bindings.py)
    for name, entries in groups(ctx.ops).items():
        if not any("method" in e.variants for e in entries) or name in handwritten:
            continue
        if _self_first(entries):
            methods.append(f"{name} = F.{name}")
            continue
        ps = pyargs.py_params(entries[0].schema)
        others = [p for p in ps if p.name != "self"]
        methods += SELF_NOT_FIRST.substitute(
            name=name, signature=pyargs.signature([p for p in ps if p.name == "self"] + others),
            call=", ".join(p.name for p in ps)) + [""]
    operators = []
    for e in ctx.ops:
        for dunder in e.python_operators:
            if dunder in handwritten:
                continue
            fn = e.schema.name.base + ("_" if e.schema.name.inplace else "")
            kind = operator_kind(dunder, e.schema)
            operators += OPERATORS[kind].substitute(dunder=dunder, fn=fn) + [""]
    lines = METHODS.substitute(methods=methods, operators=operators)
    return HEADER + "\n".join(fit(lines)).rstrip() + "\n"
