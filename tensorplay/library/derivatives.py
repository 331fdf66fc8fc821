"""A custom op's derivative formulas, compiled at run time by the code generator.

    custom_op("mylib::scale(Tensor x, float a) -> Tensor", derivatives={"x": "grad * a"})

The formulas are the language of derivatives.yaml, and this module has no interpreter of
its own: it builds the `DerivativeEntry` that the YAML loader would have built for such
an entry, hands it to `build_specs` (tensorplay/codegen/gen_autograd.py: parse, find what
to save, hoist common subexpressions), and writes the backward node and the autograd
wrapper with the same `gen_node` / `gen_wrapper` that write autograd_nodes.py and
autograd_wrappers.py. The source is then executed, as `import` executes the generated
files: `ScaleBackward0` and its wrapper are what the generator would have emitted had the
op been in ops.yaml (`CustomOpDef.backward_source()` prints them). A formula that does
not parse is a `FormulaError` with a caret under the bad token, as for the YAML file.
"""
from __future__ import annotations

import linecache
import types

from tensorplay.codegen import gen_autograd
from tensorplay.codegen.yaml_loader import (
    CodegenError, DerivativeEntry, Formula, Location, OpEntry, _check_formula_input,
)
from tensorplay.errors import ArgumentError

__all__ = ["compile_derivatives", "NON_DIFFERENTIABLE"]

# The value that marks an input without a gradient (derivatives.yaml's
# `non_differentiable: [index]`), e.g. {"x": "grad * 2", "index": "non_differentiable"}
NON_DIFFERENTIABLE = "non_differentiable"


def _entry(qualname, schema, derivatives):
    """The DerivativeEntry of `derivatives` ({input or "a, b": formula}), checked as the
    YAML loader checks an entry. Each formula is shown as line `key: formula` of a
    file named after the op, so an error's caret points into what the user wrote."""
    file = f"<derivatives of {qualname}>"
    arg_types = {a.name: a.type for a in schema.arguments}
    formulas, non_diff, owner = [], [], {}
    for line, (key, text) in enumerate(derivatives.items(), 1):
        inputs = tuple(part.strip() for part in str(key).split(","))
        where = Location(file, line)
        if text == NON_DIFFERENTIABLE:
            non_diff.extend(inputs)
            continue
        if not isinstance(text, str) or not text.strip():
            raise CodegenError(where, f"the formula for '{key}' must be a string, got {text!r}")
        for name in inputs:
            _check_formula_input(name, schema, arg_types, owner, tuple(non_diff), where)
            owner[name] = line
        source_line = f"{key}: {text}"
        formulas.append(Formula(inputs, text, line, len(str(key)) + 2, source_line))
    for a in schema.arguments:
        if a.type.is_tensor and a.name not in owner and a.name not in non_diff:
            raise ArgumentError(
                f"custom_op(): {qualname}: no derivative formula for '{a.name}'; give one "
                f"(derivatives={{'{a.name}': '...'}}) or mark it "
                f"{{'{a.name}': '{NON_DIFFERENTIABLE}'}}", op=qualname, arg=a.name)
    if any(a.type.annotation is not None and a.type.annotation.is_write
           for a in schema.arguments):
        raise ArgumentError(f"custom_op(): {qualname} mutates an argument; derivative "
                            f"formulas are supported for functional custom ops only",
                            op=qualname, arg="derivatives")
    # every input non_differentiable: no output is differentiable either (the generator
    # then writes no node, and a wrapper that records nothing)
    out_diff = None if formulas else (False,) * len(schema.returns)
    return DerivativeEntry(schema, tuple(formulas), out_diff, tuple(non_diff),
                           Location(file, 1))


def _function_names():
    """What a formula may call besides the helpers: the tp.* functions, as for the
    generator (which reads them from ops.yaml)."""
    from tensorplay._generated import functional
    return {n for n in vars(functional) if not n.startswith("_")}


def compile_derivatives(qualname, schema, derivatives):
    """(the autograd wrapper, the node class (None when no output is differentiable),
    their source, `ops`) of `derivatives` for the op `qualname` (`schema` parsed by the
    codegen's model). The wrapper runs the op below
    autograd by its handle, `ops.<name>`: the caller sets it once the op is defined (a
    formula that does not compile leaves no op behind)."""
    entry = _entry(qualname, schema, derivatives)
    functions = _function_names()
    spec = gen_autograd.build_specs([entry], functions)[schema.name.full]
    op_entry = OpEntry(schema=schema, variants=frozenset({"function"}), dispatch=(),
                       meta=None, tags=(), python_operators=(), doc=None,
                       loc=Location(f"<{qualname}>", 1))
    wrapper_source = "\n".join(gen_autograd.gen_wrapper(op_entry, spec)) + "\n"
    node, node_source = None, ""
    if not gen_autograd.records_nothing(spec):
        # The node names its forward op; the generator writes the name without a namespace.
        op_line = f"    OP = {schema.name.full!r}"
        node_source = "\n".join(f"    OP = {qualname!r}" if line == op_line else line
                                for line in gen_autograd.gen_node(spec)) + "\n\n\n"
        # Two modules, as autograd_nodes.py and autograd_wrappers.py are: the wrapper is
        # named after the op (`mul` for mylib::mul), which must not hide a function a
        # formula calls.
        nodes = _run(node_source, f"<generated backward node of {qualname}>",
                     _node_namespace(spec))
        node = nodes[spec.class_name]
    wrappers = _run(wrapper_source, f"<generated autograd wrapper of {qualname}>",
                    _wrapper_namespace(spec.class_name, node))
    wrapper = wrappers[schema.name.unambiguous_name]
    wrapper.records_only = True     # as every generated wrapper (autograd_wrappers.py)
    return wrapper, node, node_source + wrapper_source, wrappers["ops"]


def _run(source, filename, namespace):
    # linecache lets tracebacks, inspect and explain() show the generated lines
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), namespace)
    return namespace


def _node_namespace(spec):
    """What autograd_nodes.py imports: Node, and the functions the formulas call."""
    from tensorplay._generated import functional
    from tensorplay.autograd import formulas
    from tensorplay.autograd.node import Node
    ns = {"Node": Node, "__name__": "tensorplay.library.generated"}
    helpers = gen_autograd.helper_names()
    for call in spec.calls:
        ns[call] = getattr(formulas, call) if call in helpers else getattr(functional, call)
    return ns


def _wrapper_namespace(class_name, node):
    """What autograd_wrappers.py imports: the recording steps, the saved variables, the
    node class, and `ops`, whose handle the caller sets once the op is defined."""
    from tensorplay.autograd import recording, saved
    from tensorplay.dispatch.tls import grad_state
    ns = {class_name: node, "grad_state": grad_state, "ops": types.SimpleNamespace(),
          "__name__": "tensorplay.library.generated"}
    for name in ("NOT_SAVED", "SavedVariable", "SavedVariableList", "list_saves"):
        ns[name] = getattr(saved, name)
    for name in ("any_requires_grad", "below_autograd", "check_inplace", "rebase_history",
                 "set_history"):
        ns[name] = getattr(recording, name)
    return ns
