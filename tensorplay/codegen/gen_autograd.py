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
from tensorplay.codegen.gen_functional import (
    HEADER, grad_test, handle, needs_grad_test, wrap_schema,
)
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


def gen_nodes(ctx) -> str:
    helper_calls = set()
    helpers = helper_names()
    function_calls = set()
    for spec in ctx.node_specs.values():
        for c in spec.calls:
            (helper_calls if c in helpers else function_calls).add(c)
    imports = []
    if helper_calls:
        imports.append(f"from {HELPERS_MODULE} import ({', '.join(sorted(helper_calls))})")
    if function_calls:
        imports.append("from tensorplay._generated.functional import "
                       f"({', '.join(sorted(function_calls))})")
    nodes = []
    for spec in ctx.node_specs.values():
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
            "device": f"{arg}._impl.device", "shape": f"{arg}.shape"}[attr]


# One Tensor out of an op with a formula for it: the usual case is a new floating tensor
# with no history, and graph_edges.set_history's first branch attaches it, written out
# here to save the call; tests/test_fastpath_fast14c.py keeps the two in step. Anything
# else (an output with history, an integer output, not a tensor) takes set_history.
FRESH_OUTPUT = CodeTemplate("""\
result_impl = getattr(result, "_impl", None)
if (result_impl is not None and result_impl.grad_fn is None and not result_impl.requires_grad
        and result_impl.dtype.is_floating_point):
    result_impl.grad_fn = node
    result_impl.output_nr = 0
    result_impl.requires_grad = True
    node._output_meta = ((result_impl.sizes, result_impl.dtype, result_impl._device),)
else:
    set_history(result, node)""")

# The names the wrapper's body binds; no argument may have one of them.
WRAPPER_LOCALS = {"ks", "node", "masks", "excluded", "below", "result", "result_impl"}

# The inputs' requires_grad flags are tested before grad mode: they are plain attributes,
# while grad_state is thread-local (a slower read), and most calls need no graph.
# The autograd keys are excluded around the call below as `with ExcludeKeys(AUTOGRAD_MASK):`
# would do (dispatch/tls.py), written out: the guard object and its two method calls cost
# more than the op's own bookkeeping. Like the guard, `finally` restores only the excluded
# half of the thread's masks, also when the op raises.
# The op below autograd is `redispatch` written out: the route of the key set it would
# compute (the header of autograd_wrappers.py says why it is the same), or, while
# explain() or a profiler watches, the dispatcher's loop that reports each step.
# The node is made as `$node()` would make it, written out: a class call runs
# Node.__init__ in a frame of its own, which cost as much as the fields it sets (about
# 0.13 us of a recorded add). These are exactly Node.__init__'s fields and values;
# tests/test_fastpath_recorded2.py keeps the two in step.
WRAPPER = CodeTemplate("""\
def $name(ks, $args):
    if not ($needs):
        return $call
    $check_inplace
    node = _new($node)
    node._seq = next(_sequence)
    node._pre_hooks = node._post_hooks = node._tensor_pre_hooks = node._retains_grad = None
    node._anomaly_trace = forward_stack() if anomaly_state.enabled else None
    node._output_meta = ()
    node._edges = $edges
    $record
    masks = local_keys.mask_pair      # this thread's [included, excluded], changed in place
    excluded = masks[1]
    below = (ks | masks[0]) & ~excluded & BELOW_AUTOGRAD    # the key set redispatch makes
    masks[1] = excluded | AUTOGRAD_MASK
    try:
        $save_inputs
        if trace_state.watch is None:
            result = $handle.routes[below]($args)
        else:
            result = $call
    finally:
        masks[1] = excluded
    $history
    $save_outputs
    return result
""")


def gen_wrapper(e: OpEntry, spec: NodeSpec) -> list[str]:
    schema = e.schema
    names = [a.name for a in schema.arguments]
    inplace = schema.is_inplace
    plan = spec.plan
    optional = {a.name: a.type.optional for a in schema.arguments}
    # What the node keeps that is not a tensor: list lengths, values, facts like sizes.
    record = [f"node.{name}_len = len({name})" for name, is_list, _ in spec.inputs if is_list]
    record += [f"node.{v}_ = {v}" for v in plan.saved_values]
    lists = {a.name for a in schema.arguments if a.type.name == "Tensor" and a.type.is_list}
    for fact, arg, attr in plan.saved_facts:
        expr = _fact_expr(arg, attr, arg in lists)
        record.append(f"node.{fact} = " + (f"None if {arg} is None else {expr}"
                                           if optional.get(arg) else expr))
    # A tensor is saved only when a formula that reads it will run: mul saves `other`
    # only if `self` needs a gradient (PyTorch's rule, see _save_condition).
    if inplace and "self" in plan.saved_tensors:
        # The formula needs self as it was before the op changed it: clone it while
        # autograd is still recording, so the copy keeps self's history (higher order).
        cond = _save_condition(spec, "self")
        value = "self.clone()" if cond == "True" else f"self.clone() if {cond} else None"
        record.append(f"node.self_ = SavedVariable({value}, is_output=False)")
    # Tensor[] / Tensor?[] arguments (einsum's operands, index's indices) are saved
    # as a list of SavedVariables.
    save_inputs = []
    for t in plan.saved_tensors:
        if inplace and t == "self":
            continue
        cond = _save_condition(spec, t)
        if t in lists and t not in spec.entry.non_differentiable:
            # A differentiable Tensor[] (einsum's operands): what each element saves is
            # the op's rule (saved.list_saves); decided while autograd still records, so
            # a copy it makes keeps its element's history.
            others = ", ".join(n for n in names if n != t)
            record.append(f"node.{t}_ = SavedVariableList({t}, is_output=False, saves="
                          f"list_saves({schema.name.base!r}, {t}, ({others},)))")
            continue
        saver = "SavedVariableList" if t in lists else "SavedVariable"
        save = f"node.{t}_ = {saver}({t}, is_output=False)"
        if cond == "True":
            save_inputs.append(save)
        else:
            # Not read in this call: the shared NOT_SAVED (saved.py), no object made.
            none = "NOT_SAVED" if saver == "SavedVariable" else f"{saver}(None, is_output=False)"
            save_inputs += [f"if {cond}:", "    " + save, "else:", f"    node.{t}_ = {none}"]
    clash = sorted(set(names) & WRAPPER_LOCALS)
    if clash:
        raise CodegenError(e.loc, f"{schema.name.full}: argument {clash[0]!r} would be "
                                  f"shadowed by a local of the autograd wrapper")
    rets = schema.returns
    if inplace:
        history = ["rebase_history(self, node)"]
    elif (len(rets) == 1 and rets[0].type.name == "Tensor" and not rets[0].type.is_list
          and not spec.entry.output_differentiability):
        history = FRESH_OUTPUT.substitute()
    else:
        diff = spec.entry.output_differentiability
        history = [f"set_history(result, node{', ' + repr(diff) if diff else ''})"]
    save_outputs = []
    for o in plan.saved_outputs:
        idx = fm.output_index(o, spec.outputs)
        target = "result" if idx is None or len(spec.outputs) == 1 else f"result[{idx}]"
        save_outputs.append(f"node.{o}_ = SavedVariable({target}, is_output=True)")
    return WRAPPER.substitute(
        name=schema.name.unambiguous_name, args=names,
        needs=_needs_grad(spec),
        call=f"{handle(e)}.redispatch(ks & BELOW_AUTOGRAD, {', '.join(names)})",
        handle=handle(e),
        check_inplace=[f"check_inplace(self, {schema.name.full!r})"] if inplace else [],
        node=spec.class_name, edges=_edges_expr(spec), record=record,
        save_inputs=save_inputs, history=history, save_outputs=save_outputs) + [""]


def _needs_grad(spec: NodeSpec) -> str:
    """`(a requires grad or b requires grad) and grad_state.enabled`, wrapped to fit."""
    return needs_grad_test(spec.inputs, indent=4)


def _edges_expr(spec: NodeSpec) -> str:
    """The node's next_functions: one edge per input. Plain tensor inputs (the common
    case) read their edge directly; lists and optional tensors go through
    collect_next_edges, which expands and skips them."""
    names = [n for n, _, _ in spec.inputs]
    if any(is_list or optional for _, is_list, optional in spec.inputs):
        return f"tuple(collect_next_edges({', '.join(names)}))"
    # An input that does not require grad has no edge (impl_edge's answer for it, as
    # grad_fn is only ever set on a tensor that requires grad): tested here, no call.
    edges = ", ".join(f"input_edge({n}._impl) if {n}._impl.requires_grad else NO_EDGE"
                      for n in names)
    return f"({edges},)" if len(names) == 1 else f"({edges})"


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

Each one: if no input requires grad (or grad mode is off), redispatch below
autograd at once. Otherwise build the backward node, save what the formulas
read, run the op below autograd with the autograd keys excluded (so the ops
a kernel calls do not record a second graph), and attach the node.

The op below autograd: `redispatch(ks & BELOW_AUTOGRAD, ...)` would apply the
thread's masks, the autograd keys now among the excluded, giving the key set
`(ks | included) & ~excluded & BELOW_AUTOGRAD`, and run that key set's route
(dispatcher.py, `Routes`) unless explain() or a profiler watches. The wrapper
does the same without the method call: the same route, the same arguments;
while something watches it calls `redispatch`, whose loop reports each hop."""
from tensorplay.autograd.grad_mode import grad_state
from tensorplay.autograd.saved import NOT_SAVED, SavedVariable, SavedVariableList, list_saves
from tensorplay.autograd.graph_edges import (
    NO_EDGE, any_requires_grad, check_inplace, collect_next_edges, impl_edge, input_edge,
    rebase_history, set_history,
)
from tensorplay.autograd.node import _sequence, anomaly_state, forward_stack
from tensorplay.dispatch import trace
from tensorplay.dispatch.keys import AUTOGRAD_MASK
from tensorplay.dispatch.tls import local_keys
from tensorplay._generated import ops
from tensorplay._generated.autograd_nodes import ($nodes)

BELOW_AUTOGRAD = ~AUTOGRAD_MASK
_new = object.__new__
trace_state = trace.state            # its `watch` is set while explain() or a profiler listens


$wrappers
# op full name -> wrapper, registered at AutogradCPU..AutogradMeta
WRAPPERS = {
    $table
}

# Each wrapper only redispatches below autograd when its first test fails: the front
# doors skip its hop then (dispatcher.py, `_no_grad_keys`).
for _wrapper in WRAPPERS.values():
    _wrapper.redispatches_without_grad = True''')


def _wrapped(ctx) -> list:
    """(op, node spec) of every op that gets an autograd wrapper."""
    registered = []
    for e in ctx.ops:
        spec = spec_for(e, ctx.node_specs)
        if spec is not None and not e.schema.is_out:
            registered.append((e, spec))
    return registered


def wrapped_inputs(ctx) -> dict:
    """op full name -> the inputs its wrapper's first test reads (for the front doors)."""
    return {e.schema.name.full: spec.inputs for e, spec in _wrapped(ctx)}


def gen_wrappers(ctx) -> str:
    registered = _wrapped(ctx)
    wrappers = []
    for e, spec in registered:
        wrappers += gen_wrapper(e, spec) + [""]
    table = [f"{e.schema.name.full!r}: {e.schema.name.unambiguous_name},"
             for e, _ in registered]
    nodes = sorted({s.class_name for s in ctx.node_specs.values()})
    lines = WRAPPERS.substitute(nodes=nodes, wrappers=wrappers, table=table)
    return HEADER + "\n".join(fit(lines)) + "\n"
