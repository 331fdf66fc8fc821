"""Target `forward_formulas`: the tangent formula of every differentiable op (forward mode).

derivatives.yaml gives an op's tangent as a formula keyed by its output, as PyTorch's
file does. A formula reads each differentiable input's primal value as `<input>_p` and
its tangent as `<input>_t`, the other arguments by name, and the outputs (`result`):

    - name: mul.Tensor(Tensor self, Tensor other) -> Tensor
      self: sum_to(grad * other.conj(), self.sizes())
      other: sum_to(grad * self.conj(), other.sizes())
      result: other_t * self_p + self_t * other_p

becomes

    def mul_Tensor_tangent(self_p, other_p, result, self_t, other_t):
        summands = []
        if other_t is not None:
            summands.append(other_t * self_p)
        if self_t is not None:
            summands.append(self_t * other_p)
        return add_terms(summands)

Two kinds of op need no formula written out, as in PyTorch; their tangent formula is
derived from the entry by rewriting trees, never text:

- `result: auto_element_wise` (one input, applied element by element): the Jacobian is
  diagonal, so J v is the backward formula read with `grad` := `self_t.conj()` and
  conjugated (abs: `grad * self.sgn()` -> `(self_t.conj() * self_p.sgn()).conj()`);
- `result: auto_linear` (linear in its differentiable inputs): J v is the op itself
  applied to the tangents (`view(self_t, size)`).

The runtime (tensorplay/autograd/forward_mode.py) calls these functions at the
ForwardAD dispatch key with the arguments, the result and the tangents (None for an input
without one); `FORWARD` maps each op to its function and the derivatives.yaml line, which
explain() shows. A formula that is a sum of one term per tangent (mul's) keeps only the
terms of the tangents given, as PyTorch's zero tensors make the others vanish (a real
zero tangent would turn `0 * inf` into NaN); anywhere else a missing tangent reads as
zeros (`or_zeros`). A formula that reads the tangents of only some inputs gives no
tangent when none of those is given (`_required`), as in PyTorch.
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass

from tensorplay.codegen import formula as fm
from tensorplay.codegen.gen_autograd import (
    HELPERS_MODULE, _calls, formula_imports, helper_names, spec_for,
)
from tensorplay.codegen.gen_functional import HEADER, groups, handle
from tensorplay.codegen.template import CodeTemplate, fit
from tensorplay.codegen.yaml_loader import AUTO_FORWARD, CodegenError, result_names


@dataclass
class ForwardSpec:
    """One op's tangent function: its name, parameters, body lines and what it calls."""
    name: str
    params: list
    body: list
    calls: set
    doc: list
    where: str            # `derivatives.yaml:LINE`


def _tensor_names(schema, inputs):
    diff = {name for name, _, _ in inputs}
    return diff, [a.name for a in schema.arguments]


def _params(schema, inputs):
    """Arguments in schema order (a differentiable input as `<name>_p`), then `result`,
    then the tangents of the differentiable inputs."""
    diff = {name for name, _, _ in inputs}
    params = [f"{a.name}_p" if a.name in diff else a.name for a in schema.arguments]
    return params + ["result"] + [f"{name}_t" for name, _, _ in inputs]


def _rename_primal(tree, diff):
    """The backward formula's reads of a differentiable input become its primal."""
    def visit(node):
        if isinstance(node, fm.Name) and node.id in diff:
            return fm.Name(f"{node.id}_p", col=node.col)
        return fm._map_children(node, visit)
    return visit(tree)


def auto_element_wise(entry, inputs, where):
    """`(backward formula with grad := x_t.conj(), x := x_p).conj()` (PyTorch's rule)."""
    if len(inputs) != 1 or len(entry.formulas) != 1:
        raise CodegenError(where, f"'{entry.schema.name.full}': auto_element_wise needs "
                                  f"one differentiable input with a backward formula")
    name = inputs[0][0]
    f = entry.formulas[0]
    tree = fm.parse(f.text, file=entry.loc.file, line=f.line, col_offset=f.col,
                    source_line=f.source_line)

    def visit(node):
        if isinstance(node, fm.Name) and node.id == "grad":
            return fm.MethodCall(fm.Name(f"{name}_t"), "conj", (), ())
        return fm._map_children(node, visit)
    return fm.MethodCall(_rename_primal(visit(tree), {name}), "conj", (), ())


def auto_linear(e, inputs):
    """The op itself on the tangents, through its dispatcher handle (`call_op`): J v = f(v)
    for a linear f."""
    diff = {name for name, _, _ in inputs}
    args = [fm.Name(f"{a.name}_t" if a.name in diff else a.name)
            for a in e.schema.arguments]
    return fm.Call("call_op", (fm.Name(handle(e)), *args), ())


def _check_names(tree, allowed, entry, f):
    for name in sorted(fm.names_read(tree) - allowed):
        if name.startswith("ops."):
            continue
        base = name.removesuffix("_p").removesuffix("_t")
        hint = (f" (the forward formula reads an input's primal as '{name}_p' and its "
                f"tangent as '{name}_t')" if name == base and f"{name}_p" in allowed else "")
        raise CodegenError(entry.loc, f"'{entry.schema.name.full}': the tangent formula "
                                      f"'{f.text}' reads unknown name '{name}'{hint}")


def _fact_renames(tree, diff):
    """`self_p.sizes()` and friends read from the tensor (no node saves them here)."""
    exprs = {"sizes": "{}.shape", "dim": "{}.dim()", "numel": "{}.numel()",
             "dtype": "{}.dtype", "device": "{}.device", "shape": "{}.shape",
             "strides": "{}.stride()", "storage_offset": "{}.storage_offset()"}
    out = {}
    for node in fm._walk(tree):
        fact = fm._fact_of(node)
        # (zeros_like(x) is a call here: x may be a missing tangent, read as zeros)
        if fact is not None and fact[1] != "info":
            out[fact] = exprs[fact[1]].format(fact[0])
    return out


def _summands(tree, sign=1):
    """The terms of a top-level sum, `a - b + c` -> [(1, a), (-1, b), (1, c)]."""
    if isinstance(tree, fm.BinOp) and tree.op in "+-":
        right = -sign if tree.op == "-" else sign
        return _summands(tree.left, sign) + _summands(tree.right, right)
    return [(sign, tree)]


def _emit_pruned(tree, diff, inputs, calls, given=frozenset()):
    """(lines, value) computing a formula whose missing tangents arrive as None.

    A sum of terms, one per input's tangent (`other_t * self_p + self_t * other_p`), keeps
    only the terms of the tangents given, as PyTorch's zero tensors make the others
    vanish: a real zero tangent would turn `0 * inf` into NaN. Elsewhere a missing
    tangent reads as zeros (`or_zeros(other_t, other_p)`)."""
    tangent_names = {f"{n}_t" for n, is_list, _ in inputs}
    # (the tangent of an op's only differentiable input is always given: the kernel calls
    # the function only when some input has one; so is the one a `_required` guard asks)
    only = len(inputs) == 1 and not inputs[0][1]
    zeros = {} if only else {f"{n}_t": f"or_zeros({n}_t, {n}_p)" for n, _, _ in inputs
                             if f"{n}_t" not in given}
    renames = dict(_fact_renames(tree, diff))
    terms = _summands(tree)
    reads = [fm.names_read(t) & tangent_names for _, t in terms]
    if len(terms) < 2 or not all(reads):
        if fm.names_read(tree) & tangent_names:
            calls.add("or_zeros")
        return [], fm.emit(tree, {**renames, **zeros})
    calls.update({"add_terms", "or_zeros"})
    lines = ["summands = []"]
    for (sign, term), names in zip(terms, reads):
        # (a term's one tangent is given when it runs; of several, the others may not be)
        value = fm.emit(term, {**renames, **(zeros if len(names) > 1 else {})})
        given = " or ".join(f"{n} is not None" for n in sorted(names))
        lines += [f"if {given}:", f"    summands.append({'-' if sign < 0 else ''}"
                                    f"{value if sign > 0 else '(' + value + ')'})"]
    return lines, "add_terms(summands)"


def _required(tree, inputs):
    """(names, condition that none of them is given) when the formula reads the tangents
    of only some differentiable inputs (`names`, a Tensor[] one's name a list of them):
    its outputs have a tangent only when one of those is given, as in PyTorch,
    whose generated code computes an output's tangent only when an input whose tangent the
    formula reads has one (`required_inputs_fw_grad`). So copysign's `self_t * ...` gives
    no tangent for other's alone, where `0 * (result / self_p)` would be NaN at an
    infinite self (seed 4016630), and a derivative that is zero by definition stays
    absent. None when the formula reads every tangent (or none: auto_linear's call)."""
    read = fm.names_read(tree)
    names = [f"{n}_t" for n, _, _ in inputs if f"{n}_t" in read]
    if not names or len(names) == len(inputs):
        return None
    is_list = {f"{n}_t": lst for n, lst, _ in inputs}
    return names, " and ".join(
        f"all(t is None for t in {n})" if is_list[n] else f"{n} is None" for n in names)


def build(ctx, e, spec) -> ForwardSpec | None:
    """The tangent function of op `e` (its derivatives entry is `spec.entry`), or None
    when the entry gives no tangent formula."""
    entry = spec.entry
    if not entry.forward:
        return None
    schema = entry.schema
    outputs = result_names(schema)
    inputs = spec.inputs
    diff = {name for name, _, _ in inputs}
    allowed = ({f"{n}_p" for n in diff} | {f"{n}_t" for n in diff}
               | {a.name for a in schema.arguments if a.name not in diff}
               | fm._output_names(outputs) | set(outputs))
    body = []
    if len(outputs) > 1:
        body.append(f"{', '.join(outputs)} = result")
    tangents = {}
    calls = set()
    doc = []
    for i, f in enumerate(entry.forward):
        text = f.text.strip()
        if text == "auto_element_wise":
            tree = auto_element_wise(entry, inputs, entry.loc)
        elif text == "auto_linear":
            # through the out-of-place op even for its in-place variant's call
            base = next((o for o in ctx.ops if o.schema.name.full == schema.name.full), e)
            tree = auto_linear(base, inputs)
        else:
            tree = fm.parse(f.text, file=entry.loc.file, line=f.line, col_offset=f.col,
                            source_line=f.source_line)
            _check_names(tree, allowed, entry, f)
        _calls(tree, calls)
        derived = f" = {fm.emit(tree, _fact_renames(tree, diff))}" if text in AUTO_FORWARD else ""
        doc.append(f"{', '.join(f.inputs)}: {text}{derived}")
        required = _required(tree, inputs)
        # (the one tangent a guard asks for is given past it: no or_zeros; a list's
        # elements may still be None)
        lists = {f"{n}_t" for n, is_list, _ in inputs if is_list}
        given = frozenset(required[0]) - lists if required and len(required[0]) == 1 \
            else frozenset()
        lines, value = _emit_pruned(tree, diff, inputs, calls, given)
        targets = [f"{o}_t" for o in f.inputs]
        if len(f.inputs) == 1 and len(outputs) == 1:
            if required:
                body += [f"if {required[1]}:", "    return None"]
            body += lines + [f"return {value}"]
            break
        if required:
            body += [f"if {required[1]}:", f"    {' = '.join(targets)} = None",
                     "else:"] + [f"    {line}" for line in lines] + \
                    [f"    {', '.join(targets)} = {value}"]
        else:
            body += lines + [f"{', '.join(targets)} = {value}"]
        for o in f.inputs:
            tangents[o] = f"{o}_t"
    else:
        body.append("return (" + ", ".join(tangents.get(o, "None") for o in outputs) + ",)")
    lines = sorted(f.line for f in entry.forward)
    return ForwardSpec(f"{schema.name.unambiguous_name}_tangent", _params(schema, inputs), body, calls,
                       doc, f"{entry.loc.file}:{lines[0]}")


FUNCTION = CodeTemplate('''\
def $name($params):
    """$doc"""
    $body
''')

MODULE = CodeTemplate('''\
"""Tangent functions (forward-mode AD), one per op whose derivatives.yaml entry gives a
tangent formula (`result:`, or a formula per output). Each takes the op's arguments (a
differentiable input `x` as its primal `x_p`), the result, and the tangent `x_t` of each
differentiable input, and returns the result's tangent (a tuple for several outputs).
tensorplay/autograd/forward_mode.py calls them at the ForwardAD dispatch key."""
from tensorplay._generated import ops
$imports


$functions
class Tangent:
    """What the ForwardAD kernel needs of an op: its tangent function (None: the op has a
    backward formula but no tangent one), which arguments are differentiable inputs
    (positions; `lists`: Tensor[] ones), and the derivatives.yaml line explain() shows."""
    __slots__ = ("fn", "inputs", "lists", "where")

    def __init__(self, fn, inputs, lists, where):
        self.fn, self.inputs, self.lists, self.where = fn, inputs, lists, where

    @property
    def formula(self):
        """The formula as derivatives.yaml gives it (and what it derives to), from the
        function's docstring."""
        if self.fn is None:
            return None
        return " ".join(self.fn.__doc__.split()).split(": ", 1)[1]


# op full name -> Tangent, for every op with an autograd wrapper (in-place variants share
# their out-of-place entry's function)
FORWARD = {
    $table
}''')


def generate(ctx) -> str:
    helpers = helper_names()
    function_names = set(groups(ctx.ops))
    functions, table, by_entry = [], [], {}
    helper_calls, function_calls = set(), set()
    for e in ctx.ops:
        spec = spec_for(e, ctx.node_specs)
        if spec is None or e.schema.is_out:
            continue
        key = spec.entry.schema.name.full
        if key not in by_entry:
            fs = build(ctx, e, spec)
            by_entry[key] = fs
            if fs is not None:
                doc = "\n    ".join(textwrap.wrap(f"{key}: " + "; ".join(fs.doc), width=88,
                                                   break_on_hyphens=False))
                functions += FUNCTION.substitute(name=fs.name, params=fs.params, doc=doc,
                                                 body=fs.body) + ["", ""]
                for c in fs.calls:
                    if c not in helpers and c not in function_names:
                        raise CodegenError(spec.entry.loc, f"tangent formula of '{key}' calls "
                                           f"unknown function '{c}' (not in "
                                           f"{HELPERS_MODULE} nor tp.*)")
                    if c in helpers:
                        helper_calls.add(c)
                    else:
                        function_calls.add(c)
        fs = by_entry[key]
        names = [a.name for a in e.schema.arguments]
        positions = tuple(names.index(n) for n, _, _ in spec.inputs)
        diff = spec.entry.output_differentiability
        if diff is not None and not any(diff):
            positions = ()      # no output has a tangent: the op runs as it is
        lists = tuple(names.index(n) for n, is_list, _ in spec.inputs if is_list)
        if fs is None:
            table.append(f"{e.schema.name.full!r}: Tangent(None, {positions!r}, {lists!r}, "
                         f"{spec.entry.loc.file + ':' + str(spec.entry.loc.line)!r}),")
        else:
            table.append(f"{e.schema.name.full!r}: Tangent({fs.name}, {positions!r}, "
                         f"{lists!r}, {fs.where!r}),")
    lines = MODULE.substitute(imports=formula_imports(helper_calls, function_calls),
                              functions=functions, table=table)
    return HEADER + "\n".join(fit(lines)) + "\n"
