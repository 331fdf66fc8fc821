"""How a schema becomes a Python signature, argument checks and overload tests.

Shared by the functional, method and stub generators so that a parameter's name,
default and check are derived in exactly one place.
"""
from __future__ import annotations

from dataclasses import dataclass

from tensorplay.codegen.model import FunctionSchema, Type


@dataclass(frozen=True)
class PyParam:
    name: str
    type: Type
    default: str | None     # Python source text, or None when required
    kwonly: bool
    vararg: bool = False    # `x.view(2, 3)`: a lone int[] taken as *size (or a Tensor[])


def py_params(schema: FunctionSchema, function: bool = False) -> list[PyParam]:
    """The Python parameters of a schema. With `function`, the schema's `self` is named
    `input`, as PyTorch's functions name it (`tp.sum(input=x)`); methods keep `self`."""
    args = schema.arguments
    positional = [a for a in args if not a.kwarg_only]
    # PyTorch's convenience: an op whose only positional argument (after a leading
    # Tensor) is an int[] accepts the ints one by one: x.view(2, 3), tp.zeros(2, 3).
    rest = positional[1:] if positional and positional[0].type.name == "Tensor" \
        and not positional[0].type.is_list else positional
    vararg = None
    if len(rest) == 1 and _is_int_list(rest[0].type) and rest[0].type.size is None \
            and rest[0].default is None and not rest[0].type.optional:
        vararg = rest[0].name
    # And one whose positional arguments end with its only Tensor[] (after strs) takes
    # the tensors one by one, as torch.einsum("ij,jk", a, b) and broadcast_tensors(a, b).
    lead = positional[:-1]
    if positional and _is_tensor_list(positional[-1]) and \
            all(a.type.name == "str" and not a.type.is_list for a in lead):
        vararg = positional[-1].name
    return [PyParam(py_name(a.name, function), a.type, a.python_default(), a.kwarg_only,
                    a.name == vararg)
            for a in args]


def py_name(schema_name: str, function: bool) -> str:
    return "input" if function and schema_name == "self" else schema_name


def _is_int_list(t: Type) -> bool:
    return t.is_list and t.name in ("int", "SymInt")


def _is_tensor_list(a) -> bool:
    return a.type.is_list and a.type.name == "Tensor" and not a.type.optional \
        and a.default is None


def signature(params: list[PyParam]) -> str:
    """`self, other, *, alpha=1` (with `*size` for a vararg list)."""
    parts = []
    star_done = False
    for p in params:
        if p.vararg:
            parts.append(f"*{p.name}")
            star_done = True
            continue
        if p.kwonly and not star_done:
            parts.append("*")
            star_done = True
        parts.append(p.name if p.default is None else f"{p.name}={p.default}")
    if any(p.vararg for p in params):
        parts.append("**kwargs")
    return ", ".join(parts)


def vararg_lines(op: str, params: list[PyParam]) -> list[str]:
    """Normalise `*size`: (2, 3) from view(2, 3), view((2, 3)) or view(size=(2, 3))."""
    for p in params:
        if p.vararg:
            single = f"type({p.name}[0]) is not _b.int" if p.type.name != "Tensor" else \
                f"not isinstance({p.name}[0], Tensor)"
            lines = [
                "if kwargs:",
                f"    {p.name} = unpack_kwargs({op!r}, {p.name!r}, {p.name}, kwargs)",
                f"elif len({p.name}) == 1 and {single}:",
                f"    {p.name} = {p.name}[0]",
            ]
            if p.type.name != "Tensor":
                # `x.view()` leaves out a required list (PyTorch's TypeError); an empty
                # one is given as `x.view(())`. Tensors may be none: broadcast_tensors().
                lines += [f"elif not {p.name}:",
                          f"    missing_arg({op!r}, {p.name!r})"]
            return lines
    return []


# The check of each parameter type: (when to act, what to do), or (None, what to do)
# when it always runs. `{n}` is the argument, `{op}` the op name. The test is the
# fast one, so a well-typed call pays one comparison.
_CHECKS = {
    "Tensor": ("not isinstance({n}, Tensor)", "bad_arg({op!r}, {n!r}, 'Tensor', {n})"),
    "Tensor?": ("{n} is not None and not isinstance({n}, Tensor)",
                "bad_arg({op!r}, {n!r}, 'Tensor or None', {n})"),
    "Tensor[]": (None, "{n} = as_tensor_list({op!r}, {n!r}, {n})"),
    "Tensor?[]": (None, "{n} = as_tensor_list({op!r}, {n!r}, {n}, optional=True)"),
    "int": ("type({n}) is not _b.int", "{n} = as_int({op!r}, {n!r}, {n})"),
    "int?": ("{n} is not None and type({n}) is not _b.int", "{n} = as_int({op!r}, {n!r}, {n})"),
    "int[]": (None, "{n} = as_int_list({op!r}, {n!r}, {n}{size})"),
    "int[]?": ("{n} is not None", "{n} = as_int_list({op!r}, {n!r}, {n}{size})"),
    "float": ("type({n}) not in FLOAT_TYPES", "{n} = as_float({op!r}, {n!r}, {n})"),
    "float?": ("{n} is not None and type({n}) not in FLOAT_TYPES",
               "{n} = as_float({op!r}, {n!r}, {n})"),
    "float[]": (None, "{n} = as_float_list({op!r}, {n!r}, {n})"),
    "float[]?": ("{n} is not None", "{n} = as_float_list({op!r}, {n!r}, {n})"),
    "bool": ("type({n}) is not _b.bool", "{n} = as_bool({op!r}, {n!r}, {n})"),
    "bool?": ("{n} is not None and type({n}) is not _b.bool",
              "{n} = as_bool({op!r}, {n!r}, {n})"),
    "Scalar": ("type({n}) not in SCALAR_TYPES", "{n} = as_scalar({op!r}, {n!r}, {n})"),
    "Scalar?": ("{n} is not None and type({n}) not in SCALAR_TYPES",
                "{n} = as_scalar({op!r}, {n!r}, {n})"),
    "ScalarType": ("type({n}) is not DTYPE", "{n} = as_dtype({op!r}, {n!r}, {n})"),
    "ScalarType?": ("{n} is not None and type({n}) is not DTYPE",
                    "{n} = as_dtype({op!r}, {n!r}, {n})"),
    "Device": ("type({n}) is not DEVICE", "{n} = as_device({op!r}, {n!r}, {n})"),
    "Device?": ("{n} is not None and type({n}) is not DEVICE",
                "{n} = as_device({op!r}, {n!r}, {n})"),
    "str": ("type({n}) is not _b.str", "bad_arg({op!r}, {n!r}, 'str', {n})"),
    "str?": ("{n} is not None and type({n}) is not _b.str", "bad_arg({op!r}, {n!r}, 'str', {n})"),
}


def type_key(t: Type) -> str:
    name = "int" if t.name == "SymInt" else t.name
    if t.is_list:
        elem = "?" if t.elem_optional else ""
        return f"{name}{elem}[]" + ("?" if t.optional else "")
    return name + ("?" if t.optional else "")


def check_lines(op: str, params: list[PyParam]) -> list[str]:
    lines = []
    for p in params:
        check = _CHECKS.get(type_key(p.type))
        if check is None:
            continue   # Generator, Layout, MemoryFormat: passed through as given
        size = f", {p.type.size}" if p.type.size else ""
        when, action = (part and part.format(n=p.name, op=op, size=size) for part in check)
        lines += [action] if when is None else [f"if {when}:", f"    {action}"]
    return lines


def checked_by_match(p: PyParam) -> bool:
    """True when `match_expr(p)` already is the full check (`isinstance(x, Tensor)`), so
    the branch that just tested it need not test it again."""
    key = type_key(p.type)
    if key in ("Tensor", "str"):
        return p.default != "None"
    return key in ("Tensor?", "str?")


# Loose tests used only to choose between overloads (the chosen one then checks fully).
_MATCH = {
    "Tensor": "isinstance({n}, Tensor)",
    "Tensor[]": "is_tensor_list({n})",
    "int": "is_int({n})",
    "int[]": "is_int_list({n})",
    "float": "is_number({n})",
    "float[]": "is_number_list({n})",
    "bool": "is_bool({n})",
    "Scalar": "is_number({n})",
    "ScalarType": "is_dtype({n})",
    "Device": "is_device({n})",
    "str": "isinstance({n}, _b.str)",
}


def match_expr(p: PyParam) -> str:
    key = type_key(p.type)
    base = key.rstrip("?")
    test = _MATCH.get(base, "True").format(n=p.name)
    if key.endswith("?") or p.default == "None":
        return f"({p.name} is None or {test})"
    return test


def python_type_hint(t: Type) -> str:
    base = {"Tensor": "Tensor", "int": "int", "SymInt": "int", "float": "float", "bool": "bool",
            "str": "str", "Scalar": "Number", "ScalarType": "dtype", "Device": "DeviceLike",
            "Generator": "Generator", "Layout": "object", "MemoryFormat": "object"}[t.name]
    if t.is_list:
        base = f"Sequence[{base}]" if t.name != "int" else "Sequence[int] | int"
    if t.optional:
        base = f"{base} | None"
    return base


def returns_hint(schema: FunctionSchema) -> str:
    rets = schema.returns
    if not rets:
        return "None"
    hints = ["list[Tensor]" if r.type.is_list else "Tensor" if r.type.name == "Tensor"
             else python_type_hint(r.type) for r in rets]
    if len(hints) == 1:
        return hints[0]
    return f"tuple[{', '.join(hints)}]"
