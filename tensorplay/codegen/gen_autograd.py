"""Targets `autograd_nodes` and `autograd_wrappers`, from derivatives.yaml.

For `mul.Tensor` with `self: sum_to(grad * other, self.sizes())` it writes

    class MulBackward0(Node):                 # autograd_nodes.py
        def apply(self, grads):
            grad = grads[0]
            other = self.other_.unpack(self)
            ...
            if self.needs_input_grad(0):
                d_self = sum_to(grad * other, self_sizes)   # d_<input>: its gradient

and the wrapper registered at every Autograd key (autograd_wrappers.py), which
records that node with what the formulas read (decided by the formula
analysis: `other` is saved as a tensor, `self` only as its sizes).
"""
from __future__ import annotations

import ast
import os
from dataclasses import dataclass

from tensorplay.codegen import formula as fm
from tensorplay.codegen.gen_functional import HEADER, handle, wrap_schema
from tensorplay.codegen.template import CodeTemplate, conjunction, fit
from tensorplay.codegen.yaml_loader import CodegenError, DerivativeEntry, OpEntry

HELPERS_MODULE = "tensorplay.autograd.formulas"
HELPERS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           "autograd", "formulas")


def helper_names() -> set[str]:
    """The functions formulas may call from the helpers package, read from its source
    (importing it would need the generated code that we are about to write)."""
    names = set()
    for file in sorted(os.listdir(HELPERS_DIR)):
        if not file.endswith(".py") or file.startswith("_"):
            continue
        with open(os.path.join(HELPERS_DIR, file)) as fh:
            tree = ast.parse(fh.read())
        names |= {n.name for n in tree.body if isinstance(n, ast.FunctionDef)
                  and not n.name.startswith("_")}
    return names


@dataclass
class NodeSpec:
    """Everything both targets need to know about one backward node."""
    class_name: str
    entry: DerivativeEntry
    inputs: list          # differentiable tensor args: (name, is_list, optional)
    plan: fm.SavePlan
    temps: list
    formulas: dict        # slot -> rewritten AST; slot is "self" or "self, other"
    outputs: list         # output names as formulas see them
    calls: set            # function names the formulas call


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_") if part)


def output_names(schema) -> list[str]:
    rets = schema.returns
    if len(rets) == 1:
        return ["result"]
    return [r.name or f"result{i}" for i, r in enumerate(rets)]


def _calls(node, out):
    if isinstance(node, fm.Call):
        out.add(node.func)
    for child in fm._children(node):
        _calls(child, out)
    return out


def _facts(tree, out):
    fact = fm._fact_of(tree)
    if fact is not None:
        out.add(fact)
        return out
    for child in fm._children(tree):
        _facts(child, out)
    return out


def _keep_all_facts(plan, parsed, tensor_args):
    """Save `x.sizes()` & co. as plain facts even when `x` itself is saved: the wrapper
    saves a tensor only when a formula that reads its *values* will run, so the facts
    must not depend on it."""
    facts = set()
    for tree in parsed.values():
        _facts(tree, facts)
    facts = sorted((f for f in facts if f[0] in tensor_args),
                   key=lambda f: (tensor_args.index(f[0]), f[1]))
    return fm.SavePlan(plan.saved_tensors, plan.saved_outputs,
                       tuple((f"{arg}_{attr}", arg, attr) for arg, attr in facts),
                       plan.saved_values)


def build_specs(derivatives: list[DerivativeEntry], function_names: set[str]) -> dict:
    """Parse and analyse every formula; returns {op full name: NodeSpec}."""
    helpers = helper_names()
    counters: dict[str, int] = {}
    specs = {}
    for d in derivatives:
        schema = d.schema
        base = _camel(schema.name.base)
        n = counters.get(base, 0)
        counters[base] = n + 1
        tensor_args = [a.name for a in schema.arguments if a.type.name == "Tensor"]
        other_args = [a.name for a in schema.arguments if a.type.name != "Tensor"]
        parsed, locations = {}, {}
        for f in d.formulas:
            slot = ", ".join(f.inputs)
            parsed[slot] = fm.parse(f.text, file=d.loc.file, line=f.line, col_offset=f.col,
                                    source_line=f.source_line)
            locations[slot] = (d.loc.file, f.line, f.col, f.source_line)
        outputs = output_names(schema)
        plan = fm.analyze_saved(parsed, tensor_args=tensor_args, other_args=other_args,
                                outputs=outputs, locations=locations)
        for slot, tree in parsed.items():
            for call in _calls(tree, set()):
                if call not in helpers and call not in function_names:
                    raise CodegenError(d.loc, f"formula for '{slot}' calls unknown function "
                                              f"'{call}' (not in {HELPERS_MODULE} nor tp.*)")
        plan = _keep_all_facts(plan, parsed, tensor_args)
        temps, rewritten = fm.find_common_subexpressions(parsed)
        inputs = [(a.name, a.type.is_list, a.type.optional) for a in schema.arguments
                  if a.type.name == "Tensor" and a.name not in d.non_differentiable
                  and not (a.type.annotation and a.type.annotation.is_write and a.kwarg_only)]
        calls = set()
        for tree in parsed.values():
            _calls(tree, calls)
        if any(attr == "info" for _, _, attr in plan.saved_facts):
            calls.add("zeros_of_info")      # what a saved zeros_like(x) is read back with
        specs[schema.name.full] = NodeSpec(f"{base}Backward{n}", d, inputs, plan, temps,
                                           rewritten, outputs, calls)
    return specs


# ---- autograd_nodes.py ------------------------------------------------------------
def _rename(spec: NodeSpec) -> dict:
    rename = {"self": "self_"}
    rename.update(spec.plan.fact_renames())
    return rename


def _local(name: str) -> str:
    return "self_" if name == "self" else name


NODE = CodeTemplate('''\
class $name(Node):
    """$schema

    $formulas
    """

    __slots__ = $slots
    SAVED = $saved
    OP = $op

    def apply(self, grads):''')


def records_nothing(spec: NodeSpec) -> bool:
    """An entry whose every output is non-differentiable and which gives no formula (the
    special functions, `histc`: PyTorch's `output_differentiability: [False]`): no node,
    and a wrapper that only runs the op below autograd, so its result requires no grad
    (and the autograd slot is not left empty, where the not-implemented fallback would
    give it a grad_fn that raises)."""
    diff = spec.entry.output_differentiability
    return diff is not None and not any(diff) and not spec.entry.formulas


def differentiable_if(spec: NodeSpec) -> str | None:
    """The condition on the arguments under which the one output is differentiable
    (`output_differentiability: ["dtype is None or ..."]`), or None."""
    diff = spec.entry.output_differentiability
    if diff is not None and isinstance(diff[0], str):
        return diff[0]
    return None


def gradients_read(spec: NodeSpec):
    """The positions of the output gradients the formulas read, when not all of them:
    the engine makes zeros only for those (native_batch_norm's formulas read `grad`, the
    output's; the saved mean's and invstd's never got a gradient, and zeros of them
    would be made and dropped on every backward). None: every one (or one output)."""
    if len(spec.outputs) < 2:
        return None
    names = set()
    for tree in list(spec.formulas.values()) + [t for _, t in spec.temps]:
        names |= fm.names_read(tree)
    if "grads" in names:
        return None
    read = tuple(i for i, o in enumerate(spec.outputs)
                 if f"grad_{o}" in names or (i == 0 and "grad" in names))
    return read if len(read) < len(spec.outputs) else None


def gen_node(spec: NodeSpec) -> list[str]:
    plan = spec.plan
    rename = _rename(spec)
    saved = [f"{t}_" for t in plan.saved_tensors] + [f"{o}_" for o in plan.saved_outputs]
    values = [f"{v}_" for v in plan.saved_values] + [f[0] for f in plan.saved_facts]
    lists = [f"{name}_len" for name, is_list, _ in spec.inputs if is_list]
    doc = [f"{f.inputs[0] if len(f.inputs) == 1 else ', '.join(f.inputs)}: {f.text}"
           for f in spec.entry.formulas]
    schema = wrap_schema(f"Backward of `{spec.entry.schema}`.", width=92)
    head = NODE.substitute(name=spec.class_name, schema="\n    ".join(schema), formulas=doc,
                           slots=repr(tuple(saved + values + lists)), saved=repr(tuple(saved)),
                           op=repr(spec.entry.schema.name.full))
    at = head.index(f"    OP = {spec.entry.schema.name.full!r}") + 1
    if not spec.entry.materialize_grads:
        head.insert(at, "    materialize_grads = False   # a missing output gradient is None")
    else:
        read = gradients_read(spec)
        if read is not None:
            head.insert(at, f"    materialize_outputs = {read!r}   # the gradients the "
                            f"formulas read")
    body = []
    if len(spec.outputs) == 1:
        body.append("grad = grads[0]")
    else:
        body.append("grad = grads[0]")
        for i, o in enumerate(spec.outputs):
            body.append(f"grad_{o} = grads[{i}]")
    for t in plan.saved_tensors:
        body.append(f"{_local(t)} = self.{t}_.unpack(self)")
    for o in plan.saved_outputs:
        body.append(f"{o} = self.{o}_.unpack(self)")
    for v in plan.saved_values:
        body.append(f"{_local(v)} = self.{v}_")
    for fact, _, _ in plan.saved_facts:
        body.append(f"{fact} = self.{fact}")
    # Which edge each input owns: static positions, or computed when a list input
    # (cat's `tensors`) owns a variable number of edges.
    has_lists = any(is_list for _, is_list, _ in spec.inputs)
    needs = {}
    if has_lists:
        body.append("at = 0")
    for i, (name, is_list, _) in enumerate(spec.inputs):
        if has_lists:
            count = f"self.{name}_len" if is_list else "1"
            body.append(f"needs_{name} = self.needs_any_input_grad(at, {count})")
            body.append(f"at += {count}")
            needs[name] = f"needs_{name}"
        else:
            needs[name] = f"self.needs_input_grad({i})"
    for name, _, _ in spec.inputs:
        body.append(f"d_{name} = None")
    slot_needs = {}
    for slot in spec.formulas:
        conds = [needs[n] for n in slot.split(", ") if n in needs]
        slot_needs[slot] = conjunction(conds, indent=8, op="or") if conds else "False"
    for tmp, tree in spec.temps:
        if "grad_input_mask" in fm.names_read(tree):
            raise CodegenError(spec.entry.loc, "grad_input_mask is bound per formula; a "
                               "subexpression shared by several cannot read it")
        users = [s for s, t in spec.formulas.items() if tmp in fm.names_read(t)]
        users += [n for n, t in spec.temps if tmp in fm.names_read(t)]
        cond = " or ".join(dict.fromkeys(slot_needs[s] for s in users if s in slot_needs))
        value = fm.emit(tree, rename)
        line = f"{tmp} = {value} if {cond or 'True'} else None"
        if len(line) + 8 > 100:
            body += [f"{tmp} = None", f"if {cond or 'True'}:", f"    {tmp} = {value}"]
        else:
            body.append(line)
    for slot, tree in spec.formulas.items():
        targets = ", ".join(f"d_{n}" for n in slot.split(", "))
        body.append(f"if {slot_needs[slot]}:")
        if "grad_input_mask" in fm.names_read(tree):
            # One flag per input of the slot, as PyTorch's grad_input_mask: a formula that
            # computes several gradients in one call skips the ones nobody needs.
            flags = ", ".join(needs.get(n, "False") for n in slot.split(", "))
            body.append(f"    grad_input_mask = [{flags}]")
        line = f"    {targets} = {fm.emit(tree, rename)}"
        if len(line) + 8 > 100 and "," in targets:
            line = f"    ({targets}) = {fm.emit(tree, rename)}"   # folds at the targets
        body.append(line)
    parts = []
    for name, is_list, _ in spec.inputs:
        if is_list:
            parts.append(f"*(d_{name} if d_{name} is not None "
                         f"else (None,) * self.{name}_len)")
        else:
            parts.append(f"d_{name}")
    body.append(f"return ({', '.join(parts)}{',' if len(parts) == 1 else ''})")
    return head + ["        " + b for b in body] + [""]


NODES = CodeTemplate('''\
"""Backward nodes, one class per differentiable op of derivatives.yaml.

`apply(grads)` gets one gradient per forward output and returns one per
input edge (None where that input needs none). It calls TensorPlay ops, so
a backward pass can itself be differentiated (create_graph=True)."""
from tensorplay.autograd.node import Node
$imports


$nodes''')


def formula_imports(helper_calls, function_calls) -> list[str]:
    """The import lines of a generated module whose formulas call `helper_calls` (from
    tensorplay/autograd/formulas) and `function_calls` (the generated functional API)."""
    imports = []
    if helper_calls:
        imports.append(f"from {HELPERS_MODULE} import ({', '.join(sorted(helper_calls))})")
    if function_calls:
        imports.append("from tensorplay._generated.functional import "
                       f"({', '.join(sorted(function_calls))})")
    return imports


def gen_nodes(ctx) -> str:
    helper_calls = set()
    helpers = helper_names()
    function_calls = set()
    for spec in ctx.node_specs.values():
        for c in spec.calls:
            (helper_calls if c in helpers else function_calls).add(c)
    imports = formula_imports(helper_calls, function_calls)
    nodes = []
    for spec in ctx.node_specs.values():
        if not records_nothing(spec):
            nodes += gen_node(spec) + [""]
    while nodes and not nodes[-1]:
        nodes.pop()
    lines = NODES.substitute(imports=imports, nodes=nodes)
    return HEADER + "\n".join(fit(lines)) + "\n"


# ---- autograd_wrappers.py ---------------------------------------------------------
def _fact_expr(arg: str, attr: str, is_list: bool = False) -> str:
    """`x.sizes()` & co. as Python; of a Tensor[] argument, one per element (a tuple)."""
    if is_list:
        return f"tuple({_fact_expr('t', attr)} for t in {arg})"
    return {"sizes": f"{arg}._impl.sizes", "dim": f"len({arg}._impl.sizes)",
            "numel": f"{arg}.numel()", "dtype": f"{arg}._impl.dtype",
            "device": f"{arg}._impl.device", "shape": f"{arg}.shape",
            "strides": f"{arg}._impl.strides", "storage_offset": f"{arg}._impl.offset",
            "info": f"({arg}._impl.sizes, {arg}._impl.dtype, {arg}._impl.device)"}[attr]


# The names the wrapper's body binds; no argument may have one of them.
WRAPPER_LOCALS = {"ks", "node", "result"}

# The five steps of tensorplay/autograd/recording.py. The needs-grad test is written out
# (PyTorch's compute_requires_grad): one flag per input, cheaper than a call. Grad mode is
# not in it: the dispatcher only reaches a wrapper with grad mode on (dispatcher.py).
WRAPPER = CodeTemplate("""\
def $name(ks, $args):
    if not $needs:
        return below_autograd($handle, ks, $args)
    $check_inplace
    node = $node($inputs)
    $record
    result = below_autograd($handle, ks, $args)
    $history
    $save_outputs
    return result
""")


# An op none of whose outputs is differentiable (`records_nothing`): nothing to record.
NON_DIFFERENTIABLE_WRAPPER = CodeTemplate("""\
def $name(ks, $args):
    return below_autograd($handle, ks, $args)    # no output is differentiable
""")


def gen_wrapper(e: OpEntry, spec: NodeSpec) -> list[str]:
    schema = e.schema
    names = [a.name for a in schema.arguments]
    if records_nothing(spec):
        return NON_DIFFERENTIABLE_WRAPPER.substitute(
            name=schema.name.unambiguous_name, args=names, handle=handle(e)) + [""]
    inplace = schema.is_inplace
    plan = spec.plan
    condition = differentiable_if(spec)
    optional = {a.name: a.type.optional for a in schema.arguments}
    lists = {a.name for a in schema.arguments if a.type.name == "Tensor" and a.type.is_list}
    # What the node keeps that is not a tensor: list lengths, values, facts like sizes.
    record = [f"node.{name}_len = len({name})" for name, is_list, _ in spec.inputs if is_list]
    record += [f"node.{v}_ = {v}" for v in plan.saved_values]
    for fact, arg, attr in plan.saved_facts:
        expr = _fact_expr(arg, attr, arg in lists)
        record.append(f"node.{fact} = " + (f"None if {arg} is None else {expr}"
                                           if optional.get(arg) else expr))
    # The tensors the formulas read, saved only when a formula that reads them will run:
    # mul saves `other` only if `self` needs a gradient (PyTorch's rule, _save_condition).
    for t in plan.saved_tensors:
        record += _save_input(e, spec, t, names, lists)
    clash = sorted(set(names) & WRAPPER_LOCALS)
    if clash:
        raise CodegenError(e.loc, f"{schema.name.full}: argument {clash[0]!r} would be "
                                  f"shadowed by a local of the autograd wrapper")
    if inplace and "view" in e.tags:
        # an in-place view op (transpose_): self's geometry changes, no value does
        history = ["rebase_history(self, node, view_op=True)"]
    elif inplace:
        history = ["rebase_history(self, node)"]
    else:
        # (a condition instead of True/False is checked with `needs` below)
        diff = None if condition is not None else spec.entry.output_differentiability
        history = [f"set_history(result, node{', ' + repr(diff) if diff else ''})"]
    save_outputs = []
    for o in plan.saved_outputs:
        idx = fm.output_index(o, spec.outputs)
        target = "result" if idx is None or len(spec.outputs) == 1 else f"result[{idx}]"
        save_outputs.append(f"node.{o}_ = SavedVariable({target}, is_output=True)")
    needs = needs_grad_test(spec.inputs)
    if condition is not None:
        # (an output that is not differentiable for these arguments records nothing)
        needs = conjunction([needs, f"({condition})"], indent=4, used=12)
        if not needs.startswith("("):
            needs = f"({needs})"
    return WRAPPER.substitute(
        name=schema.name.unambiguous_name, args=names, inputs=[n for n, _, _ in spec.inputs],
        needs=needs,
        handle=handle(e),
        check_inplace=[f"check_inplace(self, {schema.name.full!r})"] if inplace else [],
        node=spec.class_name, record=record, history=history,
        save_outputs=save_outputs) + [""]


def _save_input(e: OpEntry, spec: NodeSpec, t: str, names, lists) -> list[str]:
    """The line(s) that save input `t` for the formulas."""
    schema = e.schema
    cond = _save_condition(spec, t)
    if schema.is_inplace and t == "self":
        # The formula needs self as it was before the op changes it: clone it while
        # autograd still records, so the copy keeps self's history (higher order).
        value = "self.clone()" if cond == "True" else f"self.clone() if {cond} else None"
        return [f"node.self_ = SavedVariable({value}, is_output=False)"]
    if t in lists and t not in spec.entry.non_differentiable:
        # A differentiable Tensor[] (einsum's operands): what each element saves is the
        # op's rule (saved.list_saves); decided while autograd still records, so a copy
        # it makes keeps its element's history.
        others = ", ".join(n for n in names if n != t)
        return [f"node.{t}_ = SavedVariableList({t}, is_output=False, saves="
                f"list_saves({schema.name.base!r}, {t}, ({others},)))"]
    saver = "SavedVariableList" if t in lists else "SavedVariable"
    save = f"{saver}({t}, is_output=False)"
    if cond == "True":
        return [f"node.{t}_ = {save}"]
    # Not read in this call: the shared NOT_SAVED (saved.py), no object made.
    none = "NOT_SAVED" if saver == "SavedVariable" else f"{saver}(None, is_output=False)"
    line = f"node.{t}_ = {save} if {cond} else {none}"
    if len(line) + 4 <= 100:
        return [line]
    return [f"if {cond}:", f"    node.{t}_ = {save}", "else:", f"    node.{t}_ = {none}"]


def _tensor_uses(tree) -> set:
    """Names a formula reads as values: `self.sizes()` is a saved fact, not a use of self."""
    if fm._fact_of(tree) is not None:
        return set()
    if isinstance(tree, fm.Name):
        return {tree.id}
    names = set()
    for child in fm._children(tree):
        names |= _tensor_uses(child)
    return names


def _save_condition(spec: NodeSpec, name: str) -> str:
    """Python condition under which input `name` is saved. Which tensors a node saves is
    visible (an in-place change of a saved tensor makes backward raise), so the rule is
    PyTorch's (`guard_for` in torchgen's gen_variable_type.py): a saved input is skipped
    only when exactly one formula reads it, that formula gives the gradient of a single
    input, and the op has several differentiable inputs, no Tensor[] argument, no
    "backward" in its name, and the saved input is a plain (not optional) Tensor.
    Otherwise it is saved whenever the node is built."""
    condition = _reads_condition(spec, name)
    given = dict(spec.entry.saved_if).get(name)
    if given is None:
        return condition
    return f"({given})" if condition == "True" else f"({given}) and ({condition})"


def _reads_condition(spec: NodeSpec, name: str) -> str:
    schema = spec.entry.schema
    argument = next(a for a in schema.arguments if a.name == name)
    slots = [slot for slot, tree in spec.formulas.items() if name in _reads(spec, tree)]
    if (len(slots) != 1 or ", " in slots[0] or len(spec.inputs) <= 1
            or "backward" in schema.name.base or argument.type.optional
            or any(a.type.name == "Tensor" and a.type.is_list for a in schema.arguments)):
        return "True"
    return _needs_expr(spec, {slots[0]})


def _reads(spec: NodeSpec, tree) -> set:
    """The names a formula reads as values, through the temps it uses."""
    temps = dict(spec.temps)
    names = _tensor_uses(tree)
    for tmp in [n for n in names if n in temps]:
        names |= _tensor_uses(temps[tmp])
    return names


def needs_grad_test(inputs) -> str:
    """`(a requires grad or b requires grad)` over the wrapper's differentiable `inputs`
    (name, is_list, optional), for `if not $needs:`, wrapped to fit."""
    tests = conjunction([grad_test(*inp) for inp in inputs], indent=4, op="or", used=12)
    if " or " in tests and not tests.startswith("("):
        tests = f"({tests})"         # (a test wrapped over lines comes parenthesized)
    return tests


def grad_test(name: str, is_list: bool, optional: bool) -> str:
    """Python condition: does input `name` require a gradient in this call?"""
    if is_list:
        return f"any_requires_grad({name})"
    if optional:
        return f"({name} is not None and {name}._impl.requires_grad)"
    return f"{name}._impl.requires_grad"


def _needs_expr(spec: NodeSpec, inputs) -> str:
    """Python condition: does any of `inputs` need a gradient in this call?"""
    parts = [grad_test(*inp) for inp in spec.inputs if inp[0] in inputs]
    if len(parts) == len(spec.inputs) or not parts:
        return "True"   # the wrapper only runs when some input needs a gradient
    return " or ".join(parts)


def spec_for(e: OpEntry, specs: dict):
    """The backward node spec of an op. In-place ops reuse the out-of-place entry:
    `add_.Tensor` -> `add.Tensor`, and `floor_divide_.Tensor` -> `floor_divide` when
    the out-of-place op has no overload name."""
    n = e.schema.name
    if n.full in specs:
        return specs[n.full]
    if not n.inplace:
        return None
    for name in (f"{n.base}.{n.overload}" if n.overload else n.base, n.base):
        spec = specs.get(name)
        if spec is not None and _same_arguments(spec.entry.schema, e.schema):
            return spec
    return None


def _same_arguments(a, b) -> bool:
    def shape(schema):
        return [(x.name, x.type.name, x.type.is_list, x.type.optional) for x in schema.arguments]
    return shape(a) == shape(b)


WRAPPERS = CodeTemplate('''\
"""Autograd wrappers, registered at every Autograd* key.

Each one records its op in the backward graph in the steps of
tensorplay/autograd/recording.py: if no input needs a gradient, run the op below
autograd at once; otherwise make the backward node (its edges point at the inputs'
histories), save what the formulas read, run the op below autograd (the autograd keys
excluded, so the ops a kernel calls record nothing) and make the node the result's
grad_fn."""
from tensorplay.autograd.saved import NOT_SAVED, SavedVariable, SavedVariableList, list_saves
from tensorplay.autograd.recording import (
    any_requires_grad, below_autograd, check_inplace, rebase_history, set_history,
)
from tensorplay.dispatch.tls import grad_state
from tensorplay._generated import ops
from tensorplay._generated.autograd_nodes import ($nodes)


$wrappers
# op full name -> wrapper, registered at AutogradCPU..AutogradMeta
WRAPPERS = {
    $table
}

# A wrapper only records: with no tensor that requires grad (no REQUIRES_GRAD flag in
# the key set) the dispatch loop skips it (dispatcher.py, `walk`).
for _wrapper in WRAPPERS.values():
    _wrapper.records_only = True''')


def _wrapped(ctx) -> list:
    """(op, node spec) of every op that gets an autograd wrapper."""
    registered = []
    for e in ctx.ops:
        spec = spec_for(e, ctx.node_specs)
        if spec is not None and not e.schema.is_out:
            registered.append((e, spec))
    return registered


def gen_wrappers(ctx) -> str:
    registered = _wrapped(ctx)
    wrappers = []
    for e, spec in registered:
        wrappers += gen_wrapper(e, spec) + [""]
    table = [f"{e.schema.name.full!r}: {e.schema.name.unambiguous_name},"
             for e, _ in registered]
    nodes = sorted({s.class_name for s in ctx.node_specs.values() if not records_nothing(s)})
    lines = WRAPPERS.substitute(nodes=nodes, wrappers=wrappers, table=table)
    return HEADER + "\n".join(fit(lines)) + "\n"
