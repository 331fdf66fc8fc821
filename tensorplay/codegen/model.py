"""The operator schema model: one frozen dataclass per piece of an `ops.yaml` entry.

Every operator is declared once, as a schema string in PyTorch's notation:

    add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor

and every generated file (front doors, Tensor methods, autograd nodes) is derived
from the objects below. Each class has `parse(text)` and a `__str__` that gives the
text back exactly, so `str(FunctionSchema.parse(s)) == s` for any schema written in
the canonical spelling (single spaces, `", "` between arguments). That round trip is
what the tests lean on: if printing loses nothing, parsing understood everything.

Validation happens in `__post_init__`, so an object built by hand is checked as
strictly as one parsed from text. Problems raise `SchemaError` with a message that
names the offending piece; the YAML layer (`yaml_loader.py`) adds file and line.

The YAML-level records that hold a schema plus its file location (`OpEntry`,
`DerivativeEntry`) live in `yaml_loader.py`, next to `Location` and `CodegenError`,
so this module stays about schemas alone and imports nothing from the YAML side.
"""
from __future__ import annotations

import difflib
import keyword
import re
from dataclasses import dataclass
from typing import Iterable


class SchemaError(ValueError):
    """A schema string (or a piece of one) is malformed or inconsistent."""


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """Return a suffix for an error message that helps with a misspelled `word`.

    Returns " (did you mean 'x'?)" when a close match exists, otherwise
    " (expected one of: a, b, c)" so a failed lookup always lists the valid choices.
    """
    choices = list(choices)
    close = difflib.get_close_matches(word, choices, n=1)
    if close:
        return f" (did you mean '{close[0]}'?)"
    return f" (expected one of: {', '.join(choices)})"


# --- Scanning helpers -------------------------------------------------------
# Schema text nests (), [] and quotes, so "split on ','" must ignore commas inside
# them: `int[2] stride=[1,1]`, `str sep=", "`.

def _scan(text: str):
    """Yield (index, char, depth) for each character outside quoted strings.

    `depth` counts the brackets still open after the character, so a ')' that
    closes a top-level group reports depth 0.
    """
    depth = 0
    quote_at = -1
    for i, ch in enumerate(text):
        if quote_at >= 0:
            if ch == text[quote_at]:
                quote_at = -1
            continue
        if ch in "\"'":
            quote_at = i
            continue
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        yield i, ch, depth
    if quote_at >= 0:
        raise SchemaError(f"unterminated string: the quote at column {quote_at + 1} never closes")


def _split_top_level(text: str) -> list[str]:
    """Split `text` on commas at nesting depth 0; '' gives []."""
    if not text.strip():
        return []
    parts = []
    start = 0
    for i, ch, depth in _scan(text):
        if ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return parts


def _find_top_level(text: str, target: str) -> int:
    """Index of the first `target` at depth 0 outside quotes, or -1. For ')' that is
    the end of the first parenthesised group."""
    for i, ch, depth in _scan(text):
        if ch == target and depth == 0:
            return i
    return -1


def _check_balanced(text: str) -> None:
    """Raise SchemaError naming the first unmatched bracket (columns are 1-based)."""
    stack: list[tuple[str, int]] = []
    pairs = {")": "(", "]": "["}
    for i, ch, _ in _scan(text):
        if ch in "([":
            stack.append((ch, i))
        elif ch in ")]":
            if not stack or stack[-1][0] != pairs[ch]:
                raise SchemaError(
                    f"unbalanced brackets: '{ch}' at column {i + 1} has no matching opener"
                )
            stack.pop()
    if stack:
        ch, i = stack[-1]
        raise SchemaError(f"unbalanced brackets: '{ch}' at column {i + 1} is never closed")


def _split_type_and_name(text: str) -> tuple[str, str | None]:
    """'Tensor(a -> *) self' -> ('Tensor(a -> *)', 'self'); 'Tensor' -> ('Tensor', None).

    The split is at the last space outside parentheses, because alias annotations
    such as `(a -> *)` contain spaces of their own.
    """
    last = -1
    for i, ch, depth in _scan(text):
        if ch == " " and depth == 0:
            last = i
    if last < 0:
        return text, None
    return text[:last].strip(), text[last + 1:].strip()


# --- Names ---------------------------------------------------------------------

@dataclass(frozen=True)
class OperatorName:
    """`add_.Tensor` -> base 'add', inplace True, overload 'Tensor'.

    A trailing underscore marks an in-place op, except on dunders (`__and__`),
    which are ordinary names. `overload` is '' when absent (`relu`).
    """
    base: str
    inplace: bool
    overload: str

    @classmethod
    def parse(cls, text: str) -> OperatorName:
        name, dot, overload = text.strip().partition(".")
        if not name.isidentifier():
            raise SchemaError(f"invalid operator name '{text.strip()}'")
        if dot and not overload.isidentifier():
            raise SchemaError(f"invalid overload name '{overload}' in '{text.strip()}'")
        is_dunder = name.startswith("__") and name.endswith("__")
        inplace = not is_dunder and len(name) > 1 and name.endswith("_")
        base = name[:-1] if inplace else name
        return cls(base=base, inplace=inplace, overload=overload)

    def __str__(self) -> str:
        name = self.base + ("_" if self.inplace else "")
        return f"{name}.{self.overload}" if self.overload else name

    @property
    def full(self) -> str:
        """The name as written in YAML, e.g. 'add.Tensor' or 'add_.Tensor'; the key
        under which ops and derivatives are looked up (same text as str())."""
        return str(self)

    @property
    def unambiguous_name(self) -> str:
        """A Python identifier unique per overload: add_Tensor, add__Tensor, relu."""
        name = self.base + ("_" if self.inplace else "")
        return f"{name}_{self.overload}" if self.overload else name


# --- Types ---------------------------------------------------------------------

_ALIAS = r"(?:[a-z]\w*|\*)"
_ALIAS_SET = rf"{_ALIAS}(?:\|{_ALIAS})*"
_ANNOTATION_RE = re.compile(
    rf"^\((?P<set>{_ALIAS_SET})(?P<write>!)?(?: -> (?P<after>{_ALIAS_SET}))?\)$"
)


@dataclass(frozen=True)
class Annotation:
    """An alias annotation on a Tensor type, parentheses included.

    `(a)`      the value aliases alias set a (a view of it);
    `(a!)`     ... and is written to (in-place / out argument);
    `(a -> *)` after the call it aliases something new (unbind's outputs).
    """
    alias_set: tuple[str, ...]
    is_write: bool
    alias_after: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> Annotation:
        m = _ANNOTATION_RE.match(text)
        if m is None:
            raise SchemaError(f"malformed alias annotation '{text}' (expected '(a)', '(a!)' ...)")
        after = tuple(m["after"].split("|")) if m["after"] else ()
        return cls(tuple(m["set"].split("|")), bool(m["write"]), after)

    def __str__(self) -> str:
        text = "|".join(self.alias_set) + ("!" if self.is_write else "")
        if self.alias_after:
            text += " -> " + "|".join(self.alias_after)
        return f"({text})"


BASE_TYPES = (
    "Tensor", "int", "float", "bool", "str", "Scalar", "ScalarType", "Device",
    "Generator", "Layout", "MemoryFormat", "SymInt",
)

# base, then optional annotation, '?', '[size]', '?'. The '?' before '[' makes the
# element optional (`Tensor?[]`), the one after it the whole list (`int[1]?`).
_TYPE_RE = re.compile(
    r"^(?P<base>\w+)(?P<ann>\([^()]*\))?(?P<q1>\?)?(?:\[(?P<size>\d*)\](?P<q2>\?)?)?$"
)


@dataclass(frozen=True)
class Type:
    """A schema type: `Tensor`, `int?`, `int[]`, `int[2]`, `int[1]?`, `Tensor?[]`, `Tensor(a!)`

    `optional`      the value as a whole may be None (`int?`, `int[1]?`);
    `elem_optional` list elements may be None (`Tensor?[]`), lists only;
    `size`          fixed list length (`int[2]`); None for `int[]` and non-lists;
    `annotation`    alias annotation, Tensor only.
    """
    name: str
    optional: bool = False
    is_list: bool = False
    size: int | None = None
    annotation: Annotation | None = None
    elem_optional: bool = False

    def __post_init__(self) -> None:
        if self.name not in BASE_TYPES:
            raise SchemaError(f"unknown type '{self.name}'" + did_you_mean(self.name, BASE_TYPES))
        if self.annotation is not None and self.name != "Tensor":
            raise SchemaError(
                f"alias annotation '{self.annotation}' is only allowed on Tensor, not '{self.name}'"
            )
        if not self.is_list and (self.size is not None or self.elem_optional):
            raise SchemaError(f"'{self.name}' is not a list: it has no size or optional elements")
        if self.size is not None and self.size < 1:
            raise SchemaError(f"list size must be at least 1, got {self.name}[{self.size}]")

    @classmethod
    def parse(cls, text: str) -> Type:
        m = _TYPE_RE.match(text.strip())
        if m is None:
            raise SchemaError(f"malformed type '{text.strip()}'")
        annotation = Annotation.parse(m["ann"]) if m["ann"] else None
        is_list = m["size"] is not None
        if is_list:
            size = int(m["size"]) if m["size"] else None
            return cls(m["base"], bool(m["q2"]), True, size, annotation, bool(m["q1"]))
        return cls(m["base"], bool(m["q1"]), False, None, annotation)

    def __str__(self) -> str:
        text = self.name + (str(self.annotation) if self.annotation else "")
        if not self.is_list:
            return text + ("?" if self.optional else "")
        text += "?" if self.elem_optional else ""
        text += f"[{self.size if self.size is not None else ''}]"
        return text + ("?" if self.optional else "")

    @property
    def is_tensor(self) -> bool:
        """Tensor, Tensor?, Tensor[], Tensor?[]: the types autograd can flow through."""
        return self.name == "Tensor"


# --- Arguments and returns -----------------------------------------------------

@dataclass(frozen=True)
class Argument:
    """`int dim=0`: a type, a name, the default as written (or None) and whether the
    argument came after `*` (keyword-only)."""
    name: str
    type: Type
    default: str | None = None
    kwarg_only: bool = False

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise SchemaError(f"invalid argument name '{self.name}'")
        if keyword.iskeyword(self.name):
            raise SchemaError(f"argument name '{self.name}' is a Python keyword")
        d = self.default
        if d is None:
            return
        where = f"argument '{self.name}'"
        if d == "None":
            if not self.type.optional:
                raise SchemaError(
                    f"{where} defaults to None but its type '{self.type}' is not optional "
                    f"(write '{self.type}?')"
                )
            return
        if self.type.is_tensor:
            raise SchemaError(f"{where}: a Tensor argument can only default to None, got '{d}'")
        if d.startswith("[") and not self.type.is_list:
            raise SchemaError(f"{where}: list default '{d}' for non-list type '{self.type}'")
        if d.startswith("[") and not d.endswith("]"):
            raise SchemaError(f"{where}: malformed list default '{d}'")
        if self.type.name == "bool" and not self.type.is_list and d not in ("True", "False"):
            raise SchemaError(f"{where}: a bool default must be True or False, got '{d}'")
        if self.type.name == "str" and d[0] not in "\"'":
            raise SchemaError(f"{where}: a str default must be quoted, got {d}")

    @classmethod
    def parse(cls, text: str, kwarg_only: bool = False) -> Argument:
        eq = _find_top_level(text, "=")
        decl, default = text.strip(), None
        if eq >= 0:
            decl, default = text[:eq].strip(), text[eq + 1:].strip()
        if default == "":
            raise SchemaError(f"argument '{text.strip()}' has '=' but no default value")
        type_text, name = _split_type_and_name(decl)
        if name is None:
            raise SchemaError(f"argument '{text.strip()}' has a type but no name")
        return cls(name=name, type=Type.parse(type_text), default=default, kwarg_only=kwarg_only)

    def __str__(self) -> str:
        text = f"{self.type} {self.name}"
        return text if self.default is None else f"{text}={self.default}"

    def python_default(self) -> str | None:
        """The default as Python source text, or None when there is no default.

        "1" -> "1", "-1.5" -> "-1.5", "True" -> "True", "None" -> "None",
        '"constant"' keeps its quotes, "[]" -> "()", "[0,1]" -> "(0, 1)" (tuples, so
        a default can never be a shared mutable list).
        NOTE: `int[2] stride=1` stays "1": the runtime expands a scalar given for a
        fixed-size list. Bare identifiers such as `contiguous_format`, `long`,
        `float` or `Mean` are returned as written; the generator must map them to
        runtime objects (e.g. `long` -> `tensorplay.long`), because only it knows
        which module provides them.
        """
        d = self.default
        if d is None or not d.startswith("["):
            return d
        items = _split_top_level(d[1:-1])
        if len(items) == 1:
            return f"({items[0]},)"
        return "(" + ", ".join(items) + ")"


@dataclass(frozen=True)
class Return:
    """One return value: `Tensor`, `Tensor values`, `Tensor(a!)`."""
    name: str | None
    type: Type

    def __post_init__(self) -> None:
        if self.name is not None and not self.name.isidentifier():
            raise SchemaError(f"invalid return name '{self.name}'")

    @classmethod
    def parse(cls, text: str) -> Return:
        if not text.strip():
            raise SchemaError("empty return type")
        type_text, name = _split_type_and_name(text.strip())
        return cls(name=name, type=Type.parse(type_text))

    def __str__(self) -> str:
        return str(self.type) if self.name is None else f"{self.type} {self.name}"


# --- The whole schema ----------------------------------------------------------

@dataclass(frozen=True)
class FunctionSchema:
    """`name(arguments) -> returns`; see the module docstring."""
    name: OperatorName
    arguments: tuple[Argument, ...]
    returns: tuple[Return, ...]

    def __post_init__(self) -> None:
        seen: set[str] = set()
        previous_default: Argument | None = None
        for i, arg in enumerate(self.arguments):
            if arg.name in seen:
                raise SchemaError(f"duplicate argument name '{arg.name}'")
            seen.add(arg.name)
            if i > 0 and self.arguments[i - 1].kwarg_only and not arg.kwarg_only:
                raise SchemaError(f"positional argument '{arg.name}' follows keyword-only ones")
            if arg.kwarg_only:
                continue  # keyword-only arguments may mix defaults freely, as in Python
            if arg.default is not None:
                previous_default = arg
            elif previous_default is not None:
                raise SchemaError(
                    f"positional argument '{arg.name}' has no default but follows "
                    f"'{previous_default.name}', which has one"
                )
        if self.name.inplace:
            first = self.arguments[0] if self.arguments else None
            ann = first.type.annotation if first is not None else None
            # Tensor(a!)[] is accepted too: foreach ops mutate a whole list in place.
            if first is None or not first.type.is_tensor or ann is None or not ann.is_write:
                got = f"'{first}'" if first is not None else "no arguments"
                raise SchemaError(
                    f"in-place operator '{self.name}' must take a mutable 'Tensor(a!)' as "
                    f"its first argument, got {got}"
                )

    @classmethod
    def parse(cls, text: str) -> FunctionSchema:
        _check_balanced(text)
        open_at = text.find("(")
        if open_at < 0:
            raise SchemaError(f"missing '(' after the operator name in '{text}'")
        name = OperatorName.parse(text[:open_at])  # an identifier: no brackets before '('
        close_at = _find_top_level(text, ")")
        rest = text[close_at + 1:]
        if "->" not in rest:
            raise SchemaError("missing ' -> ' and a return type after the argument list")
        if not rest.startswith(" -> "):
            raise SchemaError(f"expected ' -> ' after the argument list, got '{rest.strip()}'")
        arguments = _parse_arguments(text[open_at + 1:close_at])
        return cls(name=name, arguments=arguments, returns=_parse_returns(rest[len(" -> "):]))

    def __str__(self) -> str:
        parts = []
        star_written = False
        for arg in self.arguments:
            if arg.kwarg_only and not star_written:
                parts.append("*")
                star_written = True
            parts.append(str(arg))
        if len(self.returns) == 1 and self.returns[0].name is None:
            returns = str(self.returns[0])
        else:
            returns = "(" + ", ".join(str(r) for r in self.returns) + ")"
        return f"{self.name}({', '.join(parts)}) -> {returns}"

    @property
    def is_inplace(self) -> bool:
        return self.name.inplace

    @property
    def is_out(self) -> bool:
        """True for `out=` variants: a keyword-only `Tensor(a!) out` argument."""
        return any(
            a.kwarg_only and a.name == "out" and a.type.is_tensor
            and a.type.annotation is not None and a.type.annotation.is_write
            for a in self.arguments
        )

    @property
    def is_view(self) -> bool:
        """True when the first Tensor argument is annotated read-only `(a)` and a return
        shares its alias set: the output is a view of the input (`view`, `unbind`)."""
        first = next((a for a in self.arguments if a.type.is_tensor), None)
        if first is None or first.type.annotation is None or first.type.annotation.is_write:
            return False
        aliases = set(first.type.annotation.alias_set)
        return any(
            r.type.annotation is not None and not r.type.annotation.is_write
            and aliases & set(r.type.annotation.alias_set)
            for r in self.returns
        )

    @property
    def tensor_args(self) -> tuple[str, ...]:
        """Names of Tensor, Tensor? and Tensor[] arguments, in order."""
        return tuple(a.name for a in self.arguments if a.type.is_tensor)

    @property
    def positional(self) -> tuple[Argument, ...]:
        return tuple(a for a in self.arguments if not a.kwarg_only)

    @property
    def kwarg_only(self) -> tuple[Argument, ...]:
        return tuple(a for a in self.arguments if a.kwarg_only)

    @property
    def returns_tuple(self) -> bool:
        """More than one return: the Python function returns a tuple."""
        return len(self.returns) > 1


def _parse_arguments(text: str) -> tuple[Argument, ...]:
    arguments = []
    kwarg_only = False
    for part in _split_top_level(text):
        if part == "":
            raise SchemaError("empty argument in the argument list (two commas in a row?)")
        if part == "*":
            if kwarg_only:
                raise SchemaError("'*' appears twice in the argument list")
            kwarg_only = True
            continue
        arguments.append(Argument.parse(part, kwarg_only=kwarg_only))
    if kwarg_only and not any(a.kwarg_only for a in arguments):
        raise SchemaError("'*' must be followed by at least one keyword-only argument")
    return tuple(arguments)


def _parse_returns(text: str) -> tuple[Return, ...]:
    text = text.strip()
    if not text:
        raise SchemaError("missing return type after ' -> '")
    # "(Tensor values, Tensor indices)" is a tuple; "Tensor(a)" only starts like one.
    if text.startswith("(") and _find_top_level(text, ")") == len(text) - 1:
        return tuple(Return.parse(part) for part in _split_top_level(text[1:-1]))
    return (Return.parse(text),)
