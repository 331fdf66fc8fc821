"""A custom op's schema: parsed by the code generator's schema model, or inferred from a
Python function's type hints (PyTorch's `infer_schema`).

    "mylib::rmsnorm(Tensor x, Tensor w, float eps=1e-6) -> Tensor"

is the schema of ops.yaml with a namespace in front. `tensorplay/codegen/model.py` parses
everything after the `::` (the same `FunctionSchema` every generated file comes from), and
`op_schema` turns it into the `OpSchema` the dispatcher keeps, as the generated
declarations.py does for ops.yaml.
"""
from __future__ import annotations

import dataclasses
import inspect
import types
import typing

from tensorplay._tensor import Tensor
from tensorplay.codegen.model import FunctionSchema, SchemaError
from tensorplay.dispatch.dispatcher import OpSchema
from tensorplay.errors import ArgumentError

__all__ = ["parse_schema", "op_schema", "infer_schema"]


def split_name(qualname):
    """"mylib::rmsnorm" -> ("mylib", "rmsnorm"); both must be identifiers."""
    namespace, sep, name = qualname.partition("::")
    if not sep or not namespace.isidentifier() or not name.split(".")[0].isidentifier():
        raise ArgumentError(f"custom_op(): the name '{qualname}' must be 'namespace::name' "
                            f"(e.g. 'mylib::rmsnorm')", op="custom_op", arg="name")
    return namespace, name


def parse_schema(text):
    """("mylib", FunctionSchema) from "mylib::f(Tensor x) -> Tensor". `-> ()` (an op that
    only mutates its arguments) gives a schema with no returns."""
    open_at = text.find("(")
    if open_at < 0:
        raise ArgumentError(f"custom_op(): the schema '{text}' has no argument list",
                            op="custom_op", arg="schema")
    namespace, name = split_name(text[:open_at].strip())
    rest = text[open_at:]
    no_returns = rest.replace(" ", "").endswith("->()")
    if no_returns:
        rest = rest[:rest.rindex("->")] + "-> Tensor"
    try:
        schema = FunctionSchema.parse(name + rest)
    except SchemaError as e:
        raise ArgumentError(f"custom_op(): bad schema '{text}': {e}", op="custom_op",
                            arg="schema") from None
    if no_returns:
        schema = dataclasses.replace(schema, returns=())
    for arg in schema.arguments:
        if arg.type.name == "Tensor" and not arg.type.is_list and arg.type.annotation \
                and not arg.type.annotation.is_write:
            raise ArgumentError(f"custom_op(): '{arg.name}' is annotated as aliased but not "
                                f"mutated; a custom op's result may not alias its inputs",
                                op="custom_op", arg=arg.name)
    return namespace, schema


def schema_text(namespace, schema):
    """The schema as written, namespace included (`-> ()` for no returns)."""
    if schema.returns:
        return f"{namespace}::{schema}"
    placeholder = FunctionSchema.parse("f() -> Tensor").returns
    text = str(dataclasses.replace(schema, returns=placeholder))
    return f"{namespace}::{text.rpartition(' -> ')[0]} -> ()"


def op_schema(namespace, schema):
    """The dispatcher's OpSchema of a parsed custom op (what declarations.py writes for an
    ops.yaml entry): its name `mylib::rmsnorm` (`mylib::f.overload` with an overload)."""
    args = schema.arguments
    return OpSchema(
        name=f"{namespace}::{schema.name}",
        text=schema_text(namespace, schema),
        arg_names=[a.name for a in args],
        tensor_positions=[i for i, a in enumerate(args) if a.type.name == "Tensor"],
        list_positions=[i for i, a in enumerate(args) if a.type.name == "Tensor"
                        and a.type.is_list],
        mutable_positions=[i for i, a in enumerate(args) if a.type.annotation is not None
                           and a.type.annotation.is_write],
        num_returns=len(schema.returns),
    )


# ---- the decorator form: the schema from type hints --------------------------------
def _type_text(hint, where):
    """The schema type of one annotation: Tensor, float, int, bool, str, Optional[...],
    list[...] / Sequence[...]."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(members) == 1 and len(typing.get_args(hint)) == 2:
            return _type_text(members[0], where) + "?"
    if origin in (list, tuple) or (origin is not None and getattr(origin, "__name__", "")
                                   == "Sequence"):
        (elem,) = typing.get_args(hint)[:1] or (None,)
        if elem is not None:
            return _type_text(elem, where) + "[]"
    simple = {Tensor: "Tensor", float: "float", int: "int", bool: "bool", str: "str"}
    if hint in simple:
        return simple[hint]
    raise ArgumentError(f"infer_schema(): {where} has an unsupported type annotation "
                        f"{hint!r} (supported: Tensor, float, int, bool, str, Optional[T], "
                        f"list[T])", op="custom_op", arg=where)


def _default_text(value, where):
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_default_text(v, where) for v in value) + "]"
    raise ArgumentError(f"infer_schema(): {where} has a default {value!r} that a schema "
                        f"cannot hold", op="custom_op", arg=where)


def _return_text(hint):
    if hint is None or hint is type(None):
        return "()"
    if hint is Tensor:
        return "Tensor"
    if typing.get_origin(hint) is tuple:
        parts = [_return_text(h) for h in typing.get_args(hint)]
        return "(" + ", ".join(parts) + ")"
    if typing.get_origin(hint) is list and typing.get_args(hint) == (Tensor,):
        return "Tensor[]"
    raise ArgumentError(f"infer_schema(): unsupported return annotation {hint!r} (supported: "
                        f"Tensor, tuple[Tensor, ...], list[Tensor], None)", op="custom_op",
                        arg="return")


def infer_schema(prototype_function, /, *, mutates_args, op_name=None):
    """The schema of `prototype_function` from its type hints, as PyTorch's
    `torch.library.infer_schema`: "(Tensor x, float eps=1e-06) -> Tensor", or with
    `op_name` "mylib::f(Tensor x, ...) -> Tensor". Each argument named in `mutates_args`
    is written `Tensor(a0!)` (`"unknown"`: every Tensor argument may be mutated)."""
    sig = inspect.signature(prototype_function)
    hints = typing.get_type_hints(prototype_function)
    if mutates_args == "unknown":
        mutates_args = [n for n in sig.parameters if hints.get(n) is not None
                        and _type_text(hints[n], n).startswith("Tensor")]
    if isinstance(mutates_args, str):
        raise ArgumentError("infer_schema(): mutates_args must be a tuple of argument names "
                            "(or 'unknown')", op="custom_op", arg="mutates_args")
    unknown = set(mutates_args) - set(sig.parameters)
    if unknown:
        raise ArgumentError(f"infer_schema(): mutates_args names {sorted(unknown)}, which are "
                            f"not arguments of {prototype_function.__name__}",
                            op="custom_op", arg="mutates_args")
    parts, star, n_mut = [], False, 0
    for name, p in sig.parameters.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise ArgumentError(f"infer_schema(): *args and **kwargs are not supported "
                                f"('{name}')", op="custom_op", arg=name)
        if name not in hints:
            raise ArgumentError(f"infer_schema(): argument '{name}' has no type annotation",
                                op="custom_op", arg=name)
        if p.kind is p.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        text = _type_text(hints[name], name)
        if name in mutates_args:
            if not text.startswith("Tensor"):
                raise ArgumentError(f"infer_schema(): '{name}' is in mutates_args but is not "
                                    f"a Tensor", op="custom_op", arg=name)
            text = f"Tensor(a{n_mut}!)" + text[len("Tensor"):]
            n_mut += 1
        text += f" {name}"
        if p.default is not p.empty:
            text += "=" + _default_text(p.default, name)
        parts.append(text)
    returns = _return_text(hints.get("return", None))
    schema = f"({', '.join(parts)}) -> {returns}"
    return f"{op_name}{schema}" if op_name else schema
