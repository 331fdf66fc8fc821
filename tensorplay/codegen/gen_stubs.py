"""Targets `functional.pyi` and `tensor_methods.pyi`: type stubs so editors complete
`tp.add(` and `x.add(` with the real parameter names and defaults."""
from __future__ import annotations

from tensorplay.codegen import pyargs
from tensorplay.codegen import gen_functional
from tensorplay.codegen.gen_functional import HEADER, groups
from tensorplay.codegen.template import fit

_IMPORTS = ["from typing import Sequence, Union", "",
            "from tensorplay._tensor import Tensor",
            "from tensorplay._dtype import dtype",
            "from tensorplay._device import device",
            "", "Number = Union[int, float, bool]",
            "DeviceLike = Union[device, str]", "Generator = object", ""]


def _stub_params(params, method):
    out = []
    star = False
    for p in params:
        hint = pyargs.python_type_hint(p.type)
        if method and p.name == "self":
            out.append("self")
            continue
        if p.vararg:
            out.append(f"*{p.name}: {'Tensor' if p.type.name == 'Tensor' else 'int'}")
            star = True
            continue
        if p.kwonly and not star:
            out.append("*")
            star = True
        out.append(f"{p.name}: {hint}" + (f" = {p.default}" if p.default is not None else ""))
    return ", ".join(out)


def _stubs(ctx, method):
    lines = []
    indent = "    " if method else ""
    for name, entries in groups(ctx.ops).items():
        variant = "method" if method else "function"
        chosen = [e for e in entries if variant in e.variants]
        if method and chosen and chosen[0].schema.arguments[0].name != "self":
            continue
        if method and name in ctx.handwritten.methods:      # codegen/bindings.py
            continue
        overload = len(chosen) > 1
        for e in chosen:
            params = pyargs.py_params(e.schema, function=not method)
            if not method and gen_functional.takes_out(name, entries):
                params = params + [pyargs.PyParam("out", e.schema.returns[0].type, "None",
                                                  True)]
            if overload:
                lines.append(f"{indent}@overload")
            lines.append(f"{indent}def {name}({_stub_params(params, method)}) -> "
                         f"{pyargs.returns_hint(e.schema)}: ...")
    return lines


def functional_stub(ctx) -> str:
    lines = [HEADER.rstrip(), "from typing import overload"] + _IMPORTS + _stubs(ctx, False)
    return "\n".join(fit(lines)) + "\n"


def methods_stub(ctx) -> str:
    lines = [HEADER.rstrip(), "from typing import overload"] + _IMPORTS
    lines += ["class TensorMethods:"] + (_stubs(ctx, True) or ["    ..."])
    return "\n".join(fit(lines)) + "\n"
