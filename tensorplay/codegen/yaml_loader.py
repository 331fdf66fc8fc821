"""Loading `ops.yaml` and `derivatives.yaml` into checked records that know their line.

Every error the code generator reports should point at the line to fix
(`ops.yaml:41: unknown key 'dispach' (did you mean 'dispatch'?)`). PyYAML's usual
`safe_load` forgets positions, so we compose the node graph first, read each node's
`start_mark`, and only then build plain Python values from it.

`OpEntry` and `DerivativeEntry` live here rather than in `model.py` because they
carry a `Location` and raise `CodegenError`; keeping them here lets `model.py` stay
about schemas alone, with no import back into this module.
"""
from __future__ import annotations

import ast
import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, Sequence

import yaml

from tensorplay.codegen.model import BASE_TYPES, FunctionSchema, SchemaError, Type, did_you_mean
from tensorplay.dispatch.keys import BACKEND_KEYS


@dataclass(frozen=True)
class Location:
    """A position in a YAML file; line numbers start at 1, as editors show them."""
    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


class CodegenError(Exception):
    """A problem in a YAML file; str() is 'file:line: message'."""

    def __init__(self, loc: Location, message: str) -> None:
        super().__init__(f"{loc}: {message}")
        self.loc = loc
        self.message = message


# --- Reading YAML with positions -----------------------------------------------

KeyLines = dict[str, int]  # key -> 1-based line of that key


class _RawEntry(NamedTuple):
    value: Any                        # plain Python: a dict of str/list/dict/bool/...
    loc: Location                     # the line of the entry's first key
    key_lines: KeyLines
    value_pos: dict[str, tuple[int, int]]  # key -> (line, column) where its value starts


def _read_source(path_or_text: str | os.PathLike) -> str:
    """A path (Path, or a one-line str naming an existing file) is read; other str is YAML."""
    if isinstance(path_or_text, os.PathLike):
        return Path(path_or_text).read_text()
    if "\n" not in path_or_text and os.path.isfile(path_or_text):
        return Path(path_or_text).read_text()
    return path_or_text


def _value_position(node: yaml.Node, lines: list[str]) -> tuple[int, int]:
    """(1-based line, 0-based column) of the first character of a value's text.

    The column indexes into the raw source line, so a caret can be drawn under it.
    Quoted scalars start one past the quote; block scalars (`|`, `>`) start on the
    next non-blank line, at its indentation.
    """
    line, col = node.start_mark.line, node.start_mark.column
    style = getattr(node, "style", None)
    if style in ("'", '"'):
        col += 1
    elif style in ("|", ">"):
        line += 1
        while line < len(lines) and not lines[line].strip():
            line += 1
        text = lines[line] if line < len(lines) else ""
        col = len(text) - len(text.lstrip())
    return line + 1, col


def _compose(text: str, file_name: str) -> list[_RawEntry]:
    loader = yaml.SafeLoader(text)
    try:
        return _compose_entries(loader, text.splitlines(), file_name)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        problem = getattr(e, "problem", None) or str(e)
        line = mark.line + 1 if mark is not None else 1
        raise CodegenError(Location(file_name, line), f"invalid YAML: {problem}") from None
    finally:
        loader.dispose()


def _compose_entries(loader: yaml.SafeLoader, lines: list[str], file_name: str) -> list[_RawEntry]:
    root = loader.get_single_node()
    if root is None:
        return []
    if not isinstance(root, yaml.SequenceNode):
        raise CodegenError(
            Location(file_name, root.start_mark.line + 1),
            "the top level must be a list of entries, each starting with '- '",
        )
    entries = []
    for node in root.value:
        loc = Location(file_name, node.start_mark.line + 1)
        if not isinstance(node, yaml.MappingNode):
            raise CodegenError(loc, "each entry must be a mapping of keys such as 'func: ...'")
        key_lines: KeyLines = {}
        value_pos = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            key_line = key_node.start_mark.line + 1
            # PyYAML would silently keep the last of two equal keys; that hides typos.
            if key in key_lines:
                raise CodegenError(
                    Location(file_name, key_line),
                    f"duplicate key '{key}' (first at line {key_lines[key]})",
                )
            key_lines[key] = key_line
            value_pos[key] = _value_position(value_node, lines)
        value = loader.construct_object(node, deep=True)
        entries.append(_RawEntry(value, loc, key_lines, value_pos))
    return entries


def load_yaml_entries(
    path_or_text: str | os.PathLike, file_name: str = "<string>"
) -> list[tuple[dict, Location, KeyLines]]:
    """Parse a YAML list of mappings; each entry comes with its Location and key lines.

    Returns [(entry_dict, Location(file_name, line_of_entry), {key: line})].
    """
    text = _read_source(path_or_text)
    return [(e.value, e.loc, e.key_lines) for e in _compose(text, file_name)]


# --- Reading one entry's keys -------------------------------------------------

class _Fields:
    """One YAML entry's keys, each read with a type check that reports the key's line."""

    def __init__(self, d: dict, loc: Location, key_lines: KeyLines) -> None:
        self.d = d
        self.loc = loc
        self.key_lines = key_lines

    def at(self, key: str) -> Location:
        return Location(self.loc.file, self.key_lines.get(key, self.loc.line))

    def get(self, key: str, kind: type, what: str, default: Any = None) -> Any:
        value = self.d.get(key, default)
        if value is not default and not isinstance(value, kind):
            raise CodegenError(
                self.at(key), f"'{key}' must be {what}, got {type(value).__name__} {value!r}"
            )
        return value

    def str_list(self, key: str) -> tuple[str, ...]:
        """A YAML list of strings, or one string as shorthand for a one-item list."""
        value = self.d.get(key, [])
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise CodegenError(self.at(key), f"'{key}' must be a list of strings, got {value!r}")
        return tuple(items)

    def schema(self, key: str) -> FunctionSchema:
        """Parse a schema, re-raising problems at the key's line with the op for context."""
        if key not in self.d:
            raise CodegenError(self.loc, f"entry has no '{key}' key (the operator's schema)")
        func = self.get(key, str, "a schema string")
        try:
            return FunctionSchema.parse(func)
        except SchemaError as e:
            short = func.split("(", 1)[0].strip()
            raise CodegenError(self.at(key), f"in '{short}(...)': {e}") from None


# --- ops.yaml ------------------------------------------------------------------

OP_KEYS = ("func", "variants", "dispatch", "meta", "vmap", "tags", "python_operators", "doc",
           "autocast", "alias_of", "copy_of")
# An entry with `alias_of: acos` (arccos) or `copy_of: permute` (permute_copy) gets its
# kernel from the code generator: the other op called with the same arguments (then, for
# `copy_of`, the view copied into new memory). It has no `dispatch`, `meta` or
# `vmap` of its own: the op it calls brings them, and records the graph.
DERIVED_KEYS = ("alias_of", "copy_of")
VARIANTS = ("function", "method")
# What a tag tells the rest of the framework: `pointwise` and `reduction` pick the batching
# rule family, `view` and `inplace` say how the result relates to `self`, `random` that it
# draws from a generator, `non_differentiable` that it needs no derivatives.yaml entry.
TAGS = ("pointwise", "reduction", "view", "inplace", "random", "non_differentiable")
# The batching rule an entry gets from its tags when it names none (`vmap:`), in this
# order: a random op draws by vmap's `randomness` flag; a pointwise op broadcasts with
# the batch dim in front; a reduction with a `dim` argument shifts its dims past the
# batch dim. `vmap: none` opts out (the Composite decomposition or the per-example loop).
VMAP_BY_TAG = (("random", "random.random_rule"), ("pointwise", "pointwise_rule"),
               ("reduction", "dim_rule"))
NO_VMAP_RULE = "none"

# The keys a kernel can be written for: each backend, plus the Composite fallback.
# Taken from the dispatcher's own enum so the two cannot drift apart.
DISPATCH_KEYS = tuple(key.name for key in BACKEND_KEYS) + ("Composite",)

# The dunders a Tensor may map to an op: binary operators with their reflected
# (__radd__) and in-place (__iadd__) forms, then unary, comparison and indexing.
_BINARY = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul",
           "and", "or", "xor", "lshift", "rshift")
PYTHON_OPERATORS = tuple(
    [f"__{p}{op}__" for op in _BINARY for p in ("", "r", "i")]
    + [f"__{op}__" for op in ("neg", "pos", "abs", "invert", "eq", "ne", "lt", "le",
                              "gt", "ge", "getitem", "setitem")]
)


@dataclass(frozen=True)
class OpEntry:
    """One `ops.yaml` entry, checked.

    `dispatch` keeps YAML order as (key, kernel_name) pairs; a combined key
    `CPU, CUDA: add` becomes two pairs. `variants` defaults to {'function'}.
    """
    schema: FunctionSchema
    variants: frozenset[str]
    dispatch: tuple[tuple[str, str], ...]
    meta: str | None
    tags: tuple[str, ...]
    python_operators: tuple[str, ...]
    doc: str | None
    loc: Location
    autocast: tuple[tuple[str, str], ...] = ()   # (device key, cast policy), YAML order
    vmap: str | None = None      # the batching rule as written (None: the tags decide)
    vmap_loc: Location | None = None     # the line of `vmap:`
    alias_of: str | None = None  # `alias_of: acos`: the overload this one calls as it is
    copy_of: str | None = None   # `copy_of: permute`: the view this one copies

    @property
    def derived_from(self) -> tuple[str, str] | None:
        """('alias_of', target) or ('copy_of', target) for an entry whose kernel is
        generated, else None."""
        for key in DERIVED_KEYS:
            target = getattr(self, key)
            if target is not None:
                return key, target
        return None

    @property
    def batching_rule(self) -> str | None:
        """The batching rule's name: `vmap:` as written, else the one the tags imply
        (VMAP_BY_TAG; `reduction` only for an op with a `dim` argument), else None."""
        if self.vmap is not None:
            return None if self.vmap == NO_VMAP_RULE else self.vmap
        for tag, rule in VMAP_BY_TAG:
            if tag in self.tags and (tag != "reduction" or
                                     any(a.name == "dim" for a in self.schema.arguments)):
                return rule
        return None

    @staticmethod
    def from_yaml(d: dict, loc: Location, key_lines: KeyLines) -> OpEntry:
        fields = _Fields(d, loc, key_lines)
        # Unknown keys first: a misspelt 'fucn' deserves better than "no 'func' key".
        for key in d:
            if key not in OP_KEYS:
                hint = did_you_mean(str(key), OP_KEYS)
                raise CodegenError(fields.at(key), f"unknown key '{key}'{hint}")
        schema = fields.schema("func")
        operators = fields.str_list("python_operators")
        for op in operators:
            if op not in PYTHON_OPERATORS:
                hint = did_you_mean(op, PYTHON_OPERATORS)
                where = fields.at("python_operators")
                raise CodegenError(where, f"unknown python operator '{op}'{hint}")
        tags = fields.str_list("tags")
        for tag in tags:
            if tag not in TAGS:
                hint = did_you_mean(tag, TAGS)
                raise CodegenError(fields.at("tags"), f"unknown tag '{tag}'{hint}")
        derived = [key for key in DERIVED_KEYS if key in d]
        if len(derived) > 1:
            raise CodegenError(fields.at(derived[1]), f"'{schema.name.full}': 'alias_of' and "
                                                      f"'copy_of' exclude each other")
        for key in derived:
            for own in ("dispatch", "meta", "vmap", "autocast"):
                if own in d:
                    raise CodegenError(fields.at(own), f"'{schema.name.full}': an entry with "
                                       f"'{key}' has no '{own}' (its kernel is generated: "
                                       f"the op it calls brings its own)")
        return OpEntry(
            schema=schema,
            alias_of=fields.get("alias_of", str, "the name of an overload"),
            copy_of=fields.get("copy_of", str, "the name of a view op's overload"),
            variants=_parse_variants(fields),
            dispatch=_parse_dispatch(fields),
            meta=fields.get("meta", str, "the name of a shape rule"),
            vmap=_parse_vmap(fields),
            vmap_loc=fields.at("vmap") if "vmap" in d else None,
            tags=tags,
            python_operators=operators,
            doc=fields.get("doc", str, "a string") or _derived_doc(d),
            loc=loc,
            autocast=_parse_autocast(fields, schema),
        )


def _derived_doc(d: dict) -> str | None:
    """The doc of an `alias_of` / `copy_of` entry that gives none."""
    if "alias_of" in d:
        return f"An alias of {d['alias_of']}."
    if "copy_of" in d:
        return f"{d['copy_of']}, copied into new memory: the same values, not a view."
    return None


def _parse_variants(fields: _Fields) -> frozenset[str]:
    """'function, method' (torch's spelling) or a YAML list; default {'function'}."""
    value = fields.d.get("variants", "function")
    names = [v.strip() for v in value.split(",")] if isinstance(value, str) else value
    where = fields.at("variants")
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names) or not any(names):
        raise CodegenError(where, f"'variants' must list 'function' and/or 'method', got {value!r}")
    for name in names:
        if name not in VARIANTS:
            raise CodegenError(where, f"unknown variant '{name}'" + did_you_mean(name, VARIANTS))
    return frozenset(names)


def _parse_dispatch(fields: _Fields) -> tuple[tuple[str, str], ...]:
    table = fields.get("dispatch", dict, "a mapping from dispatch key to kernel name", {})
    loc = fields.at("dispatch")
    pairs: list[tuple[str, str]] = []
    for keys, kernel in table.items():
        if not isinstance(kernel, str) or not all(p.isidentifier() for p in kernel.split(".")):
            message = f"the kernel for '{keys}' must be a Python name, not {kernel!r}"
            raise CodegenError(loc, message)
        for key in str(keys).split(","):
            key = key.strip()
            if key not in DISPATCH_KEYS:
                hint = did_you_mean(key, DISPATCH_KEYS)
                raise CodegenError(loc, f"unknown dispatch key '{key}'{hint}")
            if any(key == k for k, _ in pairs):
                raise CodegenError(loc, f"dispatch key '{key}' is given twice")
            pairs.append((key, kernel))
    return tuple(pairs)


def _parse_vmap(fields: _Fields) -> str | None:
    """`vmap: family.rule` (a function of tensorplay/func/batching_rules/family.py), a bare
    `rule` (one of the shared rule families in batching_rules/__init__.py), or `none`."""
    value = fields.get("vmap", str, "the name of a batching rule")
    if value is None:
        return None
    parts = value.split(".")
    if len(parts) > 2 or not all(p.isidentifier() for p in parts):
        raise CodegenError(fields.at("vmap"), f"'vmap' must name a batching rule "
                                              f"('family.rule', 'rule' or 'none'), not {value!r}")
    return value


def _top_level_names(path: str) -> list[str]:
    """The functions and assigned names of a module, read from its source (the rules
    import the generated code, which may be what we are about to write)."""
    with open(path) as fh:
        tree = ast.parse(fh.read())
    names = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
    return names


def check_batching_rules(entries: Sequence[OpEntry], rules_dir: str) -> None:
    """Every batching rule an entry names (or its tags imply) is a function of
    `rules_dir` (tensorplay/func/batching_rules/): `family.rule` of family.py, a bare
    `rule` of __init__.py. The error names the op, the rule and the module."""
    package = "tensorplay.func.batching_rules"
    families: list[str] = []
    defined: dict[str, list[str]] = {}
    for e in entries:
        name = e.batching_rule
        if name is None:
            continue
        if not families:
            families = sorted(f[:-3] for f in os.listdir(rules_dir)
                              if f.endswith(".py") and not f.startswith("_"))
        op = e.schema.name.full
        where = e.vmap_loc or e.loc
        family, _, fn = name.rpartition(".")
        if family and family not in families:
            raise CodegenError(where, f"'{op}': batching rule '{name}': there is no module "
                                      f"{package}.{family}{did_you_mean(family, families)}")
        module = f"{package}.{family}" if family else package
        if module not in defined:
            file = f"{family}.py" if family else "__init__.py"
            defined[module] = _top_level_names(os.path.join(rules_dir, file))
        if fn not in defined[module]:
            raise CodegenError(where, f"'{op}': batching rule '{name}': {module} has no "
                                      f"'{fn}'{did_you_mean(fn, defined[module])}")


# Autocast cast policies, as PyTorch names them in aten/src/ATen/autocast_mode.h:
#   lower               cast floating inputs to the autocast dtype (bfloat16 / float16)
#   fp32                cast floating inputs to float32
#   fp32_set_opt_dtype  run in float32 through the op's `dtype=` argument, unless given
#   promote             cast floating inputs to the widest floating type among them
#   banned              refuse the op (unsafe in lower precision)
#   lower_contracted    lower, for the operands that reach a contraction (einsum's
#                       pairwise products: amp/casts.py cast_contracted)
AUTOCAST_POLICIES = ("lower", "fp32", "fp32_set_opt_dtype", "promote", "banned",
                     "lower_contracted")
AUTOCAST_DEVICES = ("CPU", "CUDA")


def _parse_autocast(fields: _Fields, schema: FunctionSchema) -> tuple[tuple[str, str], ...]:
    """`autocast: lower` (every device) or `autocast: {CPU: fp32, CUDA: promote}`."""
    if "autocast" not in fields.d:
        return ()
    value = fields.d["autocast"]
    where = fields.at("autocast")
    op = schema.name.full
    if isinstance(value, str):
        value = {", ".join(AUTOCAST_DEVICES): value}
    if not isinstance(value, dict):
        raise CodegenError(where, f"'{op}': 'autocast' must be a policy or a mapping from "
                                  f"device key to policy, got {value!r}")
    if schema.name.inplace or schema.is_out:
        raise CodegenError(where, f"'{op}': autocast policies apply to out-of-place ops only")
    if not any(a.type.name == "Tensor" for a in schema.arguments):
        raise CodegenError(where, f"'{op}': an autocast policy needs a Tensor argument")
    pairs: list[tuple[str, str]] = []
    for keys, policy in value.items():
        if policy not in AUTOCAST_POLICIES:
            hint = did_you_mean(str(policy), AUTOCAST_POLICIES)
            raise CodegenError(where, f"'{op}': unknown autocast policy {policy!r}{hint}")
        if policy == "fp32_set_opt_dtype" and not any(
                a.name == "dtype" and a.type.name == "ScalarType" and a.type.optional
                for a in schema.arguments):
            raise CodegenError(where, f"'{op}': policy fp32_set_opt_dtype needs a "
                                      f"'ScalarType? dtype' argument")
        if policy == "lower_contracted" and [
                (a.name, str(a.type)) for a in schema.arguments] != [
                ("equation", "str"), ("tensors", "Tensor[]")]:
            raise CodegenError(where, f"'{op}': policy lower_contracted needs the arguments "
                                      f"(str equation, Tensor[] tensors)")
        for key in str(keys).split(","):
            key = key.strip()
            if key not in AUTOCAST_DEVICES:
                hint = did_you_mean(key, AUTOCAST_DEVICES)
                raise CodegenError(where, f"'{op}': autocast has no device key '{key}'{hint}")
            if any(key == k for k, _ in pairs):
                raise CodegenError(where, f"'{op}': autocast device key '{key}' is given twice")
            pairs.append((key, policy))
    return tuple(pairs)


def load_ops(path_or_text: str | os.PathLike, file_name: str = "ops.yaml") -> list[OpEntry]:
    """Load and check every entry of ops.yaml; operator names must be unique."""
    entries: list[OpEntry] = []
    first_seen: dict[str, Location] = {}
    for d, loc, key_lines in load_yaml_entries(path_or_text, file_name):
        entry = OpEntry.from_yaml(d, loc, key_lines)
        name = entry.schema.name.full
        if name in first_seen:
            raise CodegenError(loc, f"duplicate operator '{name}' (first at {first_seen[name]})")
        first_seen[name] = loc
        entries.append(entry)
    check_derived(entries)
    return entries


def _signature(schema: FunctionSchema, annotations: bool) -> list[str]:
    """The arguments as a caller sees them: name, type, default, keyword-only; the alias
    annotations too unless `annotations` is False (a copy drops its view's `(a)`)."""
    out = []
    for a in schema.arguments:
        t = a.type if annotations else dataclasses.replace(a.type, annotation=None)
        out.append(f"{'*' if a.kwarg_only else ''}{t} {a.name}"
                   f"{'=' + a.default if a.default is not None else ''}")
    return out


def check_derived(entries: Sequence[OpEntry]) -> None:
    """`alias_of` / `copy_of` name an op of the file that is not derived itself, whose
    arguments are the entry's own (a copy's without the view's alias annotations), so
    the generated kernel can hand its arguments on as they come."""
    by_name = {e.schema.name.full: e for e in entries}
    for e in entries:
        derived = e.derived_from
        if derived is None:
            continue
        key, target_name = derived
        where, op = e.loc, e.schema.name.full
        target = by_name.get(target_name)
        if target is None:
            hint = did_you_mean(target_name, list(by_name))
            raise CodegenError(where, f"'{op}': {key} names no op of the file: "
                                      f"'{target_name}'{hint}")
        if target.derived_from is not None:
            raise CodegenError(where, f"'{op}': {key} '{target_name}' is itself derived "
                                      f"({target.derived_from[0]} "
                                      f"'{target.derived_from[1]}'): name the op it calls")
        annotations = key == "alias_of"
        mine, theirs = _signature(e.schema, annotations), _signature(target.schema, annotations)
        if mine != theirs:
            raise CodegenError(where, f"'{op}': its arguments must be those of '{target_name}' "
                                      f"({', '.join(theirs)}), not ({', '.join(mine)})")
        returns = [r.type.annotation for r in target.schema.returns]
        if key == "copy_of" and not all(a is not None and not a.is_write for a in returns):
            raise CodegenError(where, f"'{op}': copy_of names '{target_name}', which does "
                                      f"not return a view (`-> Tensor(a)`)")


# --- derivatives.yaml ----------------------------------------------------------

DERIVATIVE_OPTIONS = ("name", "output_differentiability", "non_differentiable", "saved_if",
                      "materialize_grads")


class Formula(NamedTuple):
    """One gradient formula, with enough position to point a caret into the file."""
    inputs: tuple[str, ...]   # ('self',) or, for a key `self, other`, ('self', 'other')
    text: str                 # the formula exactly as YAML gave it
    line: int                 # 1-based line where the text starts
    col: int                  # 0-based column of the text's first character in source_line
    source_line: str          # that whole line of the file


@dataclass(frozen=True)
class DerivativeEntry:
    """One `derivatives.yaml` entry: a schema and a formula per differentiable input.

    `output_differentiability` is None when not given (every output differentiable); an
    op of one output may give a condition on its arguments instead of True/False.
    `saved_if` pairs a tensor argument with a Python condition on the other arguments:
    the tensor is saved only when it holds (PyTorch saves _pad_nd's `self` for reflect
    and replicate padding, whose backward ops take it, and not for constant/circular).
    `materialize_grads` False: an output that got no gradient reaches the formulas as
    None (PyTorch's undefined tensor) instead of zeros, for formulas that take a shortcut
    then (svd's with only S used) and whose general form would divide 0 by 0.
    """
    schema: FunctionSchema
    formulas: tuple[Formula, ...]
    output_differentiability: tuple[bool | str, ...] | None
    non_differentiable: tuple[str, ...]
    loc: Location
    saved_if: tuple[tuple[str, str], ...] = ()
    materialize_grads: bool = True
    forward: tuple[Formula, ...] = ()   # tangent formulas, keyed by output (`result:`)

    @staticmethod
    def from_yaml(
        d: dict, loc: Location, key_lines: KeyLines, value_pos: dict, source_lines: Sequence[str]
    ) -> DerivativeEntry:
        """`value_pos` maps each key to the (line, column) where its value starts."""
        fields = _Fields(d, loc, key_lines)
        schema = fields.schema("name")
        outputs = result_names(schema)
        out_diff = _parse_output_differentiability(fields, schema)
        non_diff = fields.str_list("non_differentiable")
        arg_types = {a.name: a.type for a in schema.arguments}
        for name in non_diff:
            if name not in arg_types:
                hint = did_you_mean(name, arg_types)
                where = fields.at("non_differentiable")
                raise CodegenError(where, f"'{schema.name}' has no argument '{name}'{hint}")

        materialize = fields.get("materialize_grads", bool, "true or false", True)
        saved_if = fields.get("saved_if", dict, "a map of tensor argument: condition") or {}
        for name, condition in saved_if.items():
            if name not in arg_types or not arg_types[name].is_tensor:
                raise CodegenError(fields.at("saved_if"),
                                   f"'saved_if': '{name}' is not a Tensor argument of "
                                   f"'{schema.name}'")
            if not isinstance(condition, str) or not condition.strip():
                raise CodegenError(fields.at("saved_if"),
                                   f"'saved_if': the condition for '{name}' must be a string")

        formulas: list[Formula] = []
        forward: list[Formula] = []
        owner_line: dict[str, int] = {}  # input -> line of the key that gave it a formula
        for key, text in d.items():
            if key in DERIVATIVE_OPTIONS:
                continue
            where = fields.at(key)
            inputs = tuple(part.strip() for part in str(key).split(","))
            if inputs[0] in outputs or inputs[0] == "result":
                # A formula for an output is a tangent formula (forward mode), as in
                # PyTorch's file: `result: self_t * other_p + ...`, `auto_element_wise`,
                # `auto_linear`, or per named output (`values: ...`, `Q, R: ...`).
                forward.append(_forward_formula(key, inputs, text, outputs, owner_line,
                                                where, value_pos, source_lines))
                continue
            for name in inputs:
                _check_formula_input(name, schema, arg_types, owner_line, non_diff, where)
                owner_line[name] = where.line
            if not isinstance(text, str) or not text.strip():
                raise CodegenError(where, f"the formula for '{key}' must be a string, got {text!r}")
            line, col = value_pos[key]
            formulas.append(Formula(inputs, text, line, col, source_lines[line - 1]))

        if not formulas and not non_diff and out_diff is None:
            raise CodegenError(
                loc,
                f"'{schema.name}' has no formulas: give one per differentiable input, "
                "or list the inputs under 'non_differentiable'",
            )
        return DerivativeEntry(schema, tuple(formulas), out_diff, non_diff, loc,
                               tuple(saved_if.items()), materialize, tuple(forward))


def result_names(schema: FunctionSchema) -> list[str]:
    """The names formulas call an op's outputs: `result` for one, else the declared names
    (`values`, `indices`) or `result0`, `result1`..."""
    if len(schema.returns) == 1:
        return ["result"]
    return [r.name or f"result{i}" for i, r in enumerate(schema.returns)]


AUTO_FORWARD = ("auto_element_wise", "auto_linear")


def _forward_formula(key, outputs_named, text, outputs, owner_line, where, value_pos,
                     source_lines) -> Formula:
    if outputs_named == ("result",) and len(outputs) > 1:
        raise CodegenError(where, f"'result' names one output, but the op returns "
                                  f"{len(outputs)}: key the formula by {', '.join(outputs)}")
    for name in outputs_named:
        if name not in outputs:
            hint = did_you_mean(name, outputs)
            raise CodegenError(where, f"unknown output '{name}': outputs are "
                                      f"{', '.join(outputs)}{hint}")
        if name in owner_line:
            raise CodegenError(where, f"'{name}' already has a tangent formula at line "
                                      f"{owner_line[name]}")
        owner_line[name] = where.line
    if not isinstance(text, str) or not text.strip():
        raise CodegenError(where, f"the formula for '{key}' must be a string, got {text!r}")
    if text.strip() in AUTO_FORWARD and len(outputs) > 1:
        raise CodegenError(where, f"'{text.strip()}' derives the tangent of a single output; "
                                  f"this op returns {len(outputs)}")
    line, col = value_pos[key]
    return Formula(outputs_named, text, line, col, source_lines[line - 1])


def _parse_output_differentiability(
    fields: _Fields, schema: FunctionSchema
) -> tuple[bool | str, ...] | None:
    """True/False per output; or, for an op of one output, a Python condition on the
    arguments (PyTorch's `["!dtype || isDifferentiableType(*dtype)"]` of _to_copy): the
    output is differentiable, and the call recorded, only where it holds."""
    key = "output_differentiability"
    value = fields.get(key, list, "a list of True/False")
    if value is None:
        return None
    if not all(isinstance(v, (bool, str)) for v in value):
        raise CodegenError(fields.at(key), f"'{key}' must be a list of True/False, got {value!r}")
    if len(value) != len(schema.returns):
        raise CodegenError(
            fields.at(key),
            f"'{key}' has {len(value)} entries but '{schema.name}' returns {len(schema.returns)}",
        )
    if any(isinstance(v, str) for v in value):
        if len(value) > 1:
            raise CodegenError(fields.at(key), f"'{key}': a condition is for an op of one "
                                               f"output; '{schema.name}' returns {len(value)}")
        try:
            compile(value[0], "<output_differentiability>", "eval")
        except SyntaxError as e:
            raise CodegenError(fields.at(key), f"'{key}': {value[0]!r} is not a Python "
                                               f"condition ({e.msg})") from None
    return tuple(value)


def _check_formula_input(
    name: str, schema: FunctionSchema, arg_types: dict[str, Type],
    owner_line: dict[str, int], non_diff: tuple[str, ...], where: Location,
) -> None:
    if name not in arg_types:
        hint = did_you_mean(name, list(arg_types) + list(DERIVATIVE_OPTIONS))
        raise CodegenError(where, f"unknown key '{name}': not an argument of '{schema.name}'{hint}")
    if not arg_types[name].is_tensor:
        raise CodegenError(
            where,
            f"'{name}' has type {arg_types[name]}, which cannot take a gradient formula "
            "(only Tensor arguments are differentiable)",
        )
    if name in owner_line:
        raise CodegenError(where, f"'{name}' already has a formula at line {owner_line[name]}")
    if name in non_diff:
        raise CodegenError(where, f"'{name}' has a formula but is listed in 'non_differentiable'")


def load_derivatives(
    path_or_text: str | os.PathLike, file_name: str = "derivatives.yaml"
) -> list[DerivativeEntry]:
    """Load and check every entry of derivatives.yaml; one entry per operator name."""
    text = _read_source(path_or_text)
    lines = text.splitlines()
    entries: list[DerivativeEntry] = []
    first_seen: dict[str, Location] = {}
    for raw in _compose(text, file_name):
        entry = DerivativeEntry.from_yaml(raw.value, raw.loc, raw.key_lines, raw.value_pos, lines)
        name = entry.schema.name.full
        if name in first_seen:
            message = f"duplicate derivative for '{name}' (first at {first_seen[name]})"
            raise CodegenError(raw.loc, message)
        first_seen[name] = raw.loc
        entries.append(entry)
    return entries


# --- Overload ambiguity: two overloads no call can tell apart are refused ------------

# Which kinds of Python value each base type accepts at call time. Two arguments
# "overlap" when they share a kind: then no value in that slot tells them apart.
#
#   type         accepts                  so it overlaps with
#   Tensor       Tensor                   Tensor only (a 0-dim Tensor is no Scalar)
#   Scalar       int, float, bool         int, float, bool, SymInt
#   int, SymInt  int                      Scalar          (not float, not bool)
#   float        float                    Scalar          (not int)
#   bool         bool                     Scalar          (checked before int, as
#                                                          bool subclasses int)
#   Device       Device, str              str             ("cpu" names a device)
#   T[]          list of T                lists whose elements overlap
#   T[N]         list of T, or one T      also plain T    (one value is expanded)
#   T?           adds None                anything else optional
#
# The front door's binder must use the same table, or it could pick an overload
# this check believed unreachable.
_VALUE_KINDS = {name: (name,) for name in BASE_TYPES}
_VALUE_KINDS.update(Scalar=("int", "float", "bool"), SymInt=("int",), Device=("Device", "str"))


def _value_kinds(t: Type) -> tuple[str, ...]:
    kinds = _VALUE_KINDS[t.name]
    if t.is_list:
        lists = tuple(f"{k}[]" for k in kinds)
        kinds = lists if t.size is None else kinds + lists
    return kinds + (("None",) if t.optional else ())


def _common_kind(a: Type, b: Type) -> str | None:
    """A kind of value both types accept (the first in a's order), or None."""
    b_kinds = _value_kinds(b)
    return next((k for k in _value_kinds(a) if k in b_kinds), None)


def _ambiguous_call(a: FunctionSchema, b: FunctionSchema) -> str | None:
    """A call such as 'foo(Tensor, dim=int)' that binds to both schemas, or None.

    With k positional values, a schema binds when it has at least k positional
    parameters and every parameter after them is defaulted or passed by keyword.
    Extra keywords only add constraints, so the call most likely to fit both
    passes exactly the parameters that either schema requires. We try the most
    positional call first, as that is how people write calls.
    """
    shared: list[str] = []  # shared[i]: a kind of value that fits positional slot i of both
    for pa, pb in zip(a.positional, b.positional):
        common = _common_kind(pa.type, pb.type)
        if common is None:
            break  # this slot tells them apart for every call that reaches it
        shared.append(common)
    for k in range(len(shared), -1, -1):
        a_rest = {p.name: p for p in a.arguments[k:]}
        b_rest = {p.name: p for p in b.arguments[k:]}
        required = [p.name for p in (*a.arguments[k:], *b.arguments[k:]) if p.default is None]
        keywords = list(dict.fromkeys(required))
        if not all(n in a_rest and n in b_rest for n in keywords):
            continue
        kinds = [_common_kind(a_rest[n].type, b_rest[n].type) for n in keywords]
        if None not in kinds:
            args = shared[:k] + [f"{n}={kind}" for n, kind in zip(keywords, kinds)]
            return f"{a.name.base}({', '.join(args)})"
    return None


def find_ambiguous_overloads(entries: Sequence[OpEntry]) -> list[str]:
    """Messages for each pair of overloads that one Python call could bind to both.

    Only overloads with the same base name, the same in-place flag and a shared
    variant (function or method) compete for a call.
    """
    messages = []
    for i, a in enumerate(entries):
        for b in entries[i + 1:]:
            a_name, b_name = a.schema.name, b.schema.name
            same_name = (a_name.base, a_name.inplace) == (b_name.base, b_name.inplace)
            if not same_name or not (a.variants & b.variants):
                continue
            call = _ambiguous_call(a.schema, b.schema)
            if call is not None:
                messages.append(
                    f"{a.loc} and {b.loc}: overloads '{a.schema.name}' and '{b.schema.name}' "
                    f"are ambiguous: the call {call} matches both"
                )
    return messages
