"""The derivative-formula compiler: text -> tokens -> AST -> analysis -> Python source.

A backward formula in ``derivatives.yaml`` such as ``sum_to(grad * other, self.sizes())``
is a tiny expression language. We never rewrite it with string substitution: that breaks
as soon as one name is a prefix of another (``self`` inside ``self_size``). Instead:

1. ``tokenize`` cuts the text into tokens that remember their column;
2. ``parse`` builds a frozen-dataclass AST by precedence climbing;
3. ``names_read`` / ``analyze_saved`` decide what the backward node must save;
4. ``find_common_subexpressions`` hoists repeated work into temporaries;
5. ``emit`` prints the AST back as Python source, renaming names on the way.

Every error is a ``FormulaError`` that points a caret at the offending token in the YAML.

    >>> emit(parse("-a ** 2 * (b + c)"), {"a": "self_"})
    '-self_ ** 2 * (b + c)'
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import re
from dataclasses import dataclass, field
from typing import Callable, Iterator, Optional, Union


class FormulaError(Exception):
    """A malformed or meaningless formula, located like a compiler error.

    ``col`` is 1-based, as printed (the gcc/Python convention editors jump to);
    the caret sits under character ``col - 1`` of ``source_line``.
    """

    def __init__(self, reason: str, *, file: str = "<string>", line: int = 1, col: int = 1,
                 source_line: Optional[str] = None) -> None:
        self.reason = reason
        self.file = file
        self.line = line
        self.col = col
        self.source_line = source_line
        super().__init__(str(self))

    def __str__(self) -> str:
        text = f"{self.file}:{self.line}:{self.col}: {self.reason}"
        if self.source_line is None:
            return text
        # Keep tabs as tabs so the caret lines up however the terminal renders them.
        pad = "".join("\t" if ch == "\t" else " " for ch in self.source_line[: self.col - 1])
        return f"{text}\n{self.source_line}\n{pad}^"


# ----------------------------------------------------------------------------- tokens

@dataclass(frozen=True)
class Token:
    kind: str  # NUMBER, NAME, STRING, OP or END
    text: str
    col: int  # 0-based offset into the formula text


# One alternative per token kind; the first that matches at the current position wins,
# so the two-character operators are listed before their one-character prefixes.
_TOKEN_RE = re.compile(r"""
      (?P<SPACE>  [ \t]+ )
    | (?P<NUMBER> (?: \d+ \.? \d* | \. \d+ ) (?: [eE] [+-]? \d+ )? )
    | (?P<NAME>   [A-Za-z_] [A-Za-z0-9_]* )
    | (?P<STRING> " (?: [^"\\] | \\. )* " | ' (?: [^'\\] | \\. )* ' )
    | (?P<OP>     \*\* | <= | >= | == | != | [-+*/()\[\],.<>=] )
""", re.VERBOSE)


def tokenize(text: str) -> list[Token]:
    """Split ``text`` into tokens, ending with one END token.

    Raises a FormulaError (without file position; ``parse`` adds it) on an unknown
    character or an unterminated string.
    """
    tokens = []
    pos = 0
    while pos < len(text):
        match = _TOKEN_RE.match(text, pos)
        if match is None:
            ch = text[pos]
            reason = "unterminated string" if ch in "\"'" else f"unknown character {ch!r}"
            raise FormulaError(reason, col=pos + 1, source_line=text)
        if match.lastgroup != "SPACE":
            tokens.append(Token(match.lastgroup, match.group(), pos))
        pos = match.end()
    tokens.append(Token("END", "", len(text)))
    return tokens


# ----------------------------------------------------------------------------- AST
# ``col`` is excluded from equality and hashing: two occurrences of ``self.exp()`` at
# different columns are the same expression, which is exactly what CSE needs.

@dataclass(frozen=True)
class Node:
    col: int = field(default=0, compare=False, kw_only=True)

    def __str__(self) -> str:
        return emit(self)


@dataclass(frozen=True)
class Number(Node):
    value: Union[int, float]


@dataclass(frozen=True)
class String(Node):
    value: str


@dataclass(frozen=True)
class Name(Node):
    id: str


@dataclass(frozen=True)
class Attribute(Node):
    obj: Node
    attr: str


@dataclass(frozen=True)
class Call(Node):
    func: str  # only plain names are callable: helpers the generated module imports
    args: tuple[Node, ...]
    kwargs: tuple[tuple[str, Node], ...]


@dataclass(frozen=True)
class MethodCall(Node):
    obj: Node
    method: str
    args: tuple[Node, ...]
    kwargs: tuple[tuple[str, Node], ...]


@dataclass(frozen=True)
class UnaryOp(Node):
    op: str  # '-' or '+'
    operand: Node


@dataclass(frozen=True)
class BinOp(Node):
    op: str  # + - * / ** < > <= >= == !=
    left: Node
    right: Node


@dataclass(frozen=True)
class ListExpr(Node):
    items: tuple[Node, ...]


@dataclass(frozen=True)
class TupleExpr(Node):
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Subscript(Node):
    obj: Node
    index: Node


# Children are found through the dataclass fields, as Python's ``ast.iter_child_nodes``
# does, so a new node type needs no change here. Tuples hold items, arguments, and the
# ``(name, value)`` pairs of keyword arguments.

def _children(node: Node) -> Iterator[Node]:
    def nodes_in(value) -> Iterator[Node]:
        if isinstance(value, Node):
            yield value
        elif isinstance(value, tuple):
            for item in value:
                yield from nodes_in(item)

    for f in dataclasses.fields(node):
        yield from nodes_in(getattr(node, f.name))


def _map_children(node: Node, fn: Callable[[Node], Node]) -> Node:
    """Rebuild ``node`` with ``fn`` applied to each direct child (the tree is immutable)."""
    def convert(value):
        if isinstance(value, Node):
            return fn(value)
        if isinstance(value, tuple):
            return tuple(convert(item) for item in value)
        return value

    changes = {f.name: convert(getattr(node, f.name)) for f in dataclasses.fields(node)}
    return dataclasses.replace(node, **changes)


def _walk(node: Node) -> Iterator[Node]:
    """Pre-order: a node, then everything below it."""
    yield node
    for child in _children(node):
        yield from _walk(child)


# ----------------------------------------------------------------------------- parser
# Binding powers, low to high. A binary operator is (left power, right power):
# left-associative operators bind a little tighter on the right, so ``a - b - c``
# stops the right operand at the second '-' and groups as ``(a - b) - c``;
# ``**`` binds equally on both sides, so ``a ** b ** c`` groups as ``a ** (b ** c)``.
#
#     comparisons 10  <  + - 20  <  * / 30  <  unary 40  <  ** 50  <  postfix
_COMPARE = ("<", ">", "<=", ">=", "==", "!=")
_BINARY = {op: (10, 11) for op in _COMPARE}
_BINARY.update({"+": (20, 21), "-": (20, 21), "*": (30, 31), "/": (30, 31), "**": (50, 50)})
# A prefix operator's operand is parsed at power 40: it swallows ``**`` (so ``-x ** 2`` is
# ``-(x ** 2)`` as in Python) but stops before ``*`` (so ``-a * b`` is ``(-a) * b``).
_UNARY_POWER = 40
_CLOSERS = {"(": ")", "[": "]"}


class _Parser:
    def __init__(self, text: str, file: str, line: int, col_offset: int,
                 source_line: Optional[str]) -> None:
        self.file = file
        self.line = line
        self.col_offset = col_offset
        # Without the YAML line, show the formula where it sits in that line.
        self.source_line = source_line if source_line is not None else " " * col_offset + text
        try:
            self.tokens = tokenize(text)
        except FormulaError as err:
            raise self.error_at(err.col - 1, err.reason) from None
        self.pos = 0

    def error_at(self, col: int, reason: str) -> FormulaError:
        return FormulaError(reason, file=self.file, line=self.line,
                            col=self.col_offset + col + 1, source_line=self.source_line)

    def unexpected(self, tok: Token) -> FormulaError:
        if tok.kind == "END":
            return self.error_at(tok.col, "unexpected end of formula")
        return self.error_at(tok.col, f"unexpected token {tok.text!r}")

    def peek(self) -> Token:
        return self.tokens[self.pos]

    def next(self) -> Token:
        tok = self.tokens[self.pos]
        self.pos += 1
        return tok

    def at(self, text: str) -> bool:
        tok = self.peek()
        return tok.kind == "OP" and tok.text == text

    def close(self, opener: Token, expected: str) -> None:
        """Consume the closer matching ``opener``, or explain what went wrong."""
        tok = self.next()
        closer = _CLOSERS[opener.text]
        if tok.kind == "OP" and tok.text == closer:
            return
        if tok.kind == "END":
            raise self.error_at(opener.col, f"unclosed {opener.text!r}")
        raise self.error_at(tok.col, f"expected {expected}, got {tok.text!r}")

    def parse_formula(self) -> Node:
        if self.peek().kind == "END":
            raise self.error_at(0, "empty formula")
        node = self.expr(0)
        tok = self.peek()
        if tok.kind != "END":
            raise self.error_at(tok.col, f"unexpected {tok.text!r} after a complete expression")
        return node

    def expr(self, min_power: int) -> Node:
        """Precedence climbing: parse operators that bind at least ``min_power``."""
        left = self.prefix()
        chained = False
        while True:
            tok = self.peek()
            if tok.kind != "OP" or tok.text not in _BINARY:
                return left
            left_power, right_power = _BINARY[tok.text]
            if left_power < min_power:
                return left
            if tok.text in _COMPARE and chained:
                # Python reads ``a < b < c`` as ``a < b and b < c``; refuse the ambiguity.
                raise self.error_at(tok.col, "comparisons cannot be chained; add parentheses")
            chained = tok.text in _COMPARE
            self.next()
            left = BinOp(tok.text, left, self.expr(right_power), col=tok.col)

    def prefix(self) -> Node:
        tok = self.peek()
        if tok.kind == "OP" and tok.text in ("-", "+"):
            self.next()
            return UnaryOp(tok.text, self.expr(_UNARY_POWER), col=tok.col)
        return self.postfix(self.atom())

    def postfix(self, node: Node) -> Node:
        while True:
            tok = self.peek()
            if self.at("("):
                if not isinstance(node, Name):
                    raise self.error_at(tok.col, "only a function name or a method can be called")
                args, kwargs, _ = self.sequence(self.next(), keywords=True)
                node = Call(node.id, args, kwargs, col=node.col)
            elif self.at("."):
                self.next()
                name = self.next()
                if name.kind != "NAME":
                    raise self.unexpected(name)
                if self.at("("):
                    args, kwargs, _ = self.sequence(self.next(), keywords=True)
                    node = MethodCall(node, name.text, args, kwargs, col=name.col)
                else:
                    node = Attribute(node, name.text, col=name.col)
            elif self.at("["):
                opener = self.next()
                index = self.expr(0)
                self.close(opener, "']'")
                node = Subscript(node, index, col=opener.col)
            else:
                return node

    def sequence(self, opener: Token, *, keywords: bool = False) -> tuple[tuple, tuple, bool]:
        """Comma-separated items up to the closer of ``opener``.

        Returns the positional items, the ``name=value`` pairs (only when ``keywords``,
        i.e. in a call) and whether a comma was seen, which tells ``(a,)`` from ``(a)``.
        """
        closer = _CLOSERS[opener.text]
        items, kwargs, comma = [], [], False
        while not self.at(closer) and self.peek().kind != "END":
            tok = self.peek()
            if keywords and tok.kind == "NAME" and self.tokens[self.pos + 1].text == "=":
                if any(key == tok.text for key, _ in kwargs):
                    raise self.error_at(tok.col, f"keyword argument {tok.text!r} repeated")
                self.pos += 2
                kwargs.append((tok.text, self.expr(0)))
            elif kwargs:
                raise self.error_at(tok.col, "positional argument follows keyword argument")
            else:
                items.append(self.expr(0))
            if not self.at(","):
                break
            comma = True
            self.next()
        self.close(opener, f"',' or {closer!r}")
        return tuple(items), tuple(kwargs), comma

    def atom(self) -> Node:
        tok = self.next()
        if tok.kind == "NUMBER":
            is_int = tok.text.isdigit()
            return Number(int(tok.text) if is_int else float(tok.text), col=tok.col)
        if tok.kind == "STRING":
            return String(self.string_value(tok), col=tok.col)
        if tok.kind == "NAME":
            return Name(tok.text, col=tok.col)
        if tok.kind == "OP" and tok.text == "[":
            return ListExpr(self.sequence(tok)[0], col=tok.col)
        if tok.kind == "OP" and tok.text == "(":
            items, _, comma = self.sequence(tok)
            if len(items) == 1 and not comma:
                return items[0]  # plain grouping: the tree already records it
            return TupleExpr(items, col=tok.col)
        raise self.unexpected(tok)

    def string_value(self, tok: Token) -> str:
        # Python's own literal reader gives us every escape sequence for free.
        try:
            return ast.literal_eval(tok.text)
        except (SyntaxError, ValueError):  # e.g. a bad ``\N{...}`` escape
            raise self.error_at(tok.col, f"invalid string {tok.text}") from None


def parse(text: str, *, file: str = "<string>", line: int = 1, col_offset: int = 0,
          source_line: Optional[str] = None) -> Node:
    """Parse one formula into an AST.

    Args:
        text: the formula, e.g. ``"grad * other"``.
        file, line: where the formula lives, for error messages.
        col_offset: 0-based column at which ``text`` starts inside its file line.
        source_line: the whole file line to show under an error (default: the formula).
    """
    return _Parser(text, file, line, col_offset, source_line).parse_formula()


# ----------------------------------------------------------------------------- analysis

# True/False/None are spelled as names but are constants: nothing to save for them.
_CONSTANTS = frozenset({"True", "False", "None"})
# Metadata of a tensor argument that can be saved as a plain value instead of the tensor:
# the backward of ``add`` needs ``self``'s shape, not its (possibly huge) data.
_FACT_ATTRS = frozenset({"dtype", "device", "shape"})
# (strides() and storage_offset(): the geometry an in-place view op such as as_strided_
# changes, saved before it runs, as PyTorch's TensorGeometry)
_FACT_METHODS = frozenset({"sizes", "dim", "numel", "strides", "storage_offset"})
# ``zeros_like(x)`` reads x's sizes, dtype and device only: PyTorch's codegen saves them
# (its ``x_info``, a TypeAndSize) instead of x, so an in-place change of x after the call
# leaves the backward working. The fact "info" is that triple; the node makes the zeros.
_FACT_CALLS = {"zeros_like": "info"}


def names_read(node: Node) -> set[str]:
    """Free variables of a formula: function, method and attribute names are not reads."""
    return {n.id for n in _walk(node) if isinstance(n, Name) and n.id not in _CONSTANTS}


def _fact_of(node: Node) -> Optional[tuple[str, str]]:
    """``(name, attr)`` if ``node`` is ``name.sizes()``, ``name.dtype``, ... else None."""
    if isinstance(node, Attribute) and node.attr in _FACT_ATTRS:
        what = node.attr
    elif (isinstance(node, MethodCall) and node.method in _FACT_METHODS
          and not node.args and not node.kwargs):
        what = node.method
    elif (isinstance(node, Call) and node.func in _FACT_CALLS and len(node.args) == 1
          and not node.kwargs and isinstance(node.args[0], Name)):
        return node.args[0].id, _FACT_CALLS[node.func]
    else:
        return None
    return (node.obj.id, what) if isinstance(node.obj, Name) else None


def _output_names(outputs: list[str]) -> set[str]:
    """Every name that refers to a forward output: ``result``, ``resultN``, declared names."""
    if not outputs:
        return set()
    return {"result", *outputs} | {f"result{i}" for i in range(len(outputs))}


def output_index(name: str, outputs: list[str]) -> Optional[int]:
    """Which forward output a formula name refers to; None means all of them, as a tuple.

    ``result`` is the only output (or the tuple of several), ``resultN`` is output N,
    and a declared name (``indices``) is itself.

        >>> output_index("indices", ["values", "indices"]), output_index("result", ["out"])
        (1, 0)
    """
    if name not in _output_names(outputs):
        raise ValueError(f"{name!r} is not an output; outputs are {outputs}")
    if name in outputs:
        return outputs.index(name)
    if name == "result":
        return 0 if len(outputs) == 1 else None
    return int(name[len("result"):])


@dataclass(frozen=True)
class SavePlan:
    """What a backward node keeps from the forward call.

    saved_tensors: tensor arguments saved as SavedVariables, in argument order.
    saved_outputs: output names the formulas read (``result``, ``result1``, ``indices``).
    saved_facts: ``(fact_name, arg, attr)`` such as ``("self_sizes", "self", "sizes")``.
    saved_values: non-tensor arguments read, in argument order.
    """
    saved_tensors: tuple[str, ...]
    saved_outputs: tuple[str, ...]
    saved_facts: tuple[tuple[str, str, str], ...]
    saved_values: tuple[str, ...]

    def fact_renames(self) -> dict[tuple[str, str], str]:
        """The ``rename`` entries that make ``emit`` read saved facts by name (a saved
        "info" is read back as the zeros it describes)."""
        return {(arg, attr): f"zeros_of_info({fact})" if attr == "info" else fact
                for fact, arg, attr in self.saved_facts}


Location = tuple[str, int, int, Optional[str]]  # (file, line, col_offset, source_line)


def analyze_saved(formulas: dict[str, Node], *, tensor_args: list[str], other_args: list[str],
                  outputs: list[str],
                  locations: Optional[dict[str, Location]] = None) -> SavePlan:
    """Decide what to save from the names the formulas read.

    Args:
        formulas: input name -> parsed formula.
        tensor_args, other_args: the forward's tensor and non-tensor arguments, in order.
        outputs: one name per forward output (``["result"]`` for a single unnamed one).
        locations: input name -> where its formula sits, so errors point into the YAML.
    """
    output_names = _output_names(outputs)
    # Gradients arrive as backward inputs, so they are never saved; grad_input_mask (which
    # of the slot's inputs need a gradient, PyTorch's name) is known when backward runs.
    available = ({"grad", "grads", "grad_input_mask"} | {f"grad_{out}" for out in outputs}
                 | output_names)
    tensor_uses, facts, other_uses = set(), set(), set()

    def visit(node: Node, slot: str) -> None:
        fact = _fact_of(node)
        if fact is not None and fact[0] in tensor_args:
            facts.add(fact)
            return
        if isinstance(node, Name) and node.id not in _CONSTANTS:
            if node.id in tensor_args:
                tensor_uses.add(node.id)
            elif node.id in other_args or node.id in available:
                other_uses.add(node.id)
            else:
                raise _unknown_name(node, slot, tensor_args + other_args + sorted(available),
                                    (locations or {}).get(slot))
        for child in _children(node):
            visit(child, slot)

    for slot, formula in formulas.items():
        visit(formula, slot)
    # A tensor saved whole already carries its metadata: no need for a separate fact.
    facts = {(arg, attr) for arg, attr in facts if arg not in tensor_uses}

    def output_order(name: str) -> tuple[int, str]:
        index = output_index(name, outputs)
        return (-1 if index is None else index, name)

    read_outputs = sorted(other_uses & output_names, key=output_order)
    return SavePlan(
        saved_tensors=tuple(a for a in tensor_args if a in tensor_uses),
        saved_outputs=tuple(read_outputs),
        saved_facts=tuple((f"{arg}_{attr}", arg, attr) for arg, attr in
                          sorted(facts, key=lambda f: (tensor_args.index(f[0]), f[1]))),
        saved_values=tuple(a for a in other_args if a in other_uses),
    )


def _unknown_name(node: Name, slot: str, valid: list[str],
                  location: Optional[Location]) -> FormulaError:
    file, line, col_offset, source_line = location or ("<string>", 1, 0, None)
    reason = f"unknown name {node.id!r} in the formula for {slot!r}"
    close = difflib.get_close_matches(node.id, valid, n=1)
    if close:
        reason += f" (did you mean {close[0]!r}?)"
    reason += "; valid names: " + ", ".join(valid)
    return FormulaError(reason, file=file, line=line, col=col_offset + node.col + 1,
                        source_line=source_line)


# ----------------------------------------------------------------------------- CSE

def _is_hoistable(node: Node) -> bool:
    if not isinstance(node, (Call, MethodCall, BinOp, UnaryOp)):
        return False
    if isinstance(node, UnaryOp) and isinstance(node.operand, Number):
        return False  # ``-1`` is a constant, not work
    if isinstance(node, Call) and node.func == "not_implemented":
        return False  # raises instead of computing; leave it where the reader expects it
    # ``self.sizes()`` is a saved fact, not a computation; ``zeros_like(x)`` still makes
    # a tensor (from x's saved info, or from x itself when x is no argument: ``grad``)
    fact = _fact_of(node)
    return fact is None or fact[1] == "info"


def _size(node: Node) -> int:
    return sum(1 for _ in _walk(node))


def _count(roots: list[Node], hoisted: set[Node]) -> dict[Node, int]:
    """Occurrences once every ``hoisted`` subtree is a temporary: stop descending at one."""
    counts: dict[Node, int] = {}

    def visit(node: Node) -> None:
        counts[node] = counts.get(node, 0) + 1
        if node not in hoisted:
            for child in _children(node):
                visit(child)

    for root in roots:
        visit(root)
    for node in hoisted:  # the temporaries' own definitions are code too
        for child in _children(node):
            visit(child)
    return counts


def find_common_subexpressions(
        formulas: dict[str, Node]) -> tuple[list[tuple[str, Node]], dict[str, Node]]:
    """Hoist subtrees that occur at least twice into ``_tmp0``, ``_tmp1``, ...

    Returns the temporaries in definition order (each only uses earlier ones) and the
    formulas rewritten to read them. Largest subtrees are tried first, so in
    ``grad * x.exp().log()`` twice we hoist ``x.exp().log()`` and not ``x.exp()``,
    which then only occurs once, inside the temporary.
    """
    roots = list(formulas.values())
    first_seen: dict[Node, int] = {}
    for root in roots:
        for node in _walk(root):
            first_seen.setdefault(node, len(first_seen))
    candidates = [n for n, c in _count(roots, set()).items() if c > 1 and _is_hoistable(n)]
    candidates.sort(key=lambda n: (-_size(n), first_seen[n]))
    hoisted: set[Node] = set()
    for node in candidates:
        if _count(roots, hoisted).get(node, 0) > 1:
            hoisted.add(node)

    # Number temporaries in post-order of first appearance: a subtree is always visited
    # before any subtree that contains it, so every temporary is defined before its use.
    names: dict[Node, str] = {}

    def number(node: Node) -> None:
        for child in _children(node):
            number(child)
        if node in hoisted and node not in names:
            names[node] = f"_tmp{len(names)}"

    for root in roots:
        number(root)

    def rewrite(node: Node) -> Node:
        if node in names:
            return Name(names[node], col=node.col)
        return _map_children(node, rewrite)

    temps = [(name, _map_children(node, rewrite)) for node, name in names.items()]
    return temps, {slot: rewrite(formula) for slot, formula in formulas.items()}


# ----------------------------------------------------------------------------- emission
# The printer returns (text, power); a parent wraps a child in parentheses only when
# the child binds more loosely than its position requires: the fewest parentheses that
# still re-parse to the same tree.
_POSTFIX_POWER = 60
_ATOM_POWER = 70

Rename = dict[Union[str, tuple[str, str]], str]


def emit(node: Node, rename: Optional[Rename] = None) -> str:
    """Python source for ``node``.

    ``rename`` maps a name (``"self"`` -> ``"self_"``) or a fact ``(arg, attr)``
    (``("self", "sizes")`` -> ``"self_sizes"``) to the local that holds it. Function
    calls are emitted as plain calls: the generated module imports the helpers.
    """
    return _format(node, rename or {})[0]


def _string_literal(value: str) -> str:
    text = repr(value)
    if text.startswith("'") and '"' not in value:
        return '"' + text[1:-1] + '"'  # YAML formulas use double quotes; keep that look
    return text


def _format(node: Node, rename: Rename) -> tuple[str, int]:
    def sub(child: Node, min_power: int) -> str:
        text, power = _format(child, rename)
        return f"({text})" if power < min_power else text

    def arguments(args: tuple, kwargs: tuple) -> str:
        parts = [sub(a, 0) for a in args] + [f"{k}={sub(v, 0)}" for k, v in kwargs]
        return ", ".join(parts)

    def obj(child: Node) -> str:
        text, power = _format(child, rename)
        # ``1.exp()`` would tokenize as the number ``1.`` followed by a name.
        return f"({text})" if power < _POSTFIX_POWER or isinstance(child, Number) else text

    fact = _fact_of(node)
    if fact is not None and fact in rename:
        return rename[fact], _ATOM_POWER
    if isinstance(node, Number):
        return repr(node.value), (_UNARY_POWER if node.value < 0 else _ATOM_POWER)
    if isinstance(node, String):
        return _string_literal(node.value), _ATOM_POWER
    if isinstance(node, Name):
        return rename.get(node.id, node.id), _ATOM_POWER
    if isinstance(node, Attribute):
        return f"{obj(node.obj)}.{node.attr}", _POSTFIX_POWER
    if isinstance(node, Call):
        return f"{node.func}({arguments(node.args, node.kwargs)})", _POSTFIX_POWER
    if isinstance(node, MethodCall):
        call = f"{node.method}({arguments(node.args, node.kwargs)})"
        return f"{obj(node.obj)}.{call}", _POSTFIX_POWER
    if isinstance(node, Subscript):
        return f"{obj(node.obj)}[{sub(node.index, 0)}]", _POSTFIX_POWER
    if isinstance(node, UnaryOp):
        return f"{node.op}{sub(node.operand, _UNARY_POWER)}", _UNARY_POWER
    if isinstance(node, BinOp):
        left_power, right_power = _BINARY[node.op]
        if node.op == "**":
            # ``(-a) ** b`` needs its parentheses; ``a ** -b`` does not.
            left, right = sub(node.left, left_power + 1), sub(node.right, _UNARY_POWER)
        elif node.op in _COMPARE:
            # Comparisons do not associate (``a < b < c`` is an error), so parenthesise both.
            left, right = sub(node.left, left_power + 1), sub(node.right, right_power)
        else:
            left, right = sub(node.left, left_power), sub(node.right, right_power)
        return f"{left} {node.op} {right}", left_power
    if isinstance(node, ListExpr):
        return "[" + ", ".join(sub(i, 0) for i in node.items) + "]", _ATOM_POWER
    if isinstance(node, TupleExpr):
        inner = ", ".join(sub(i, 0) for i in node.items)
        return f"({inner},)" if len(node.items) == 1 else f"({inner})", _ATOM_POWER
    raise TypeError(f"not a formula node: {node!r}")
