"""The code generator's entry point: `python -m tensorplay.codegen`.

One `CodegenContext` (the parsed ops.yaml and derivatives.yaml) is shared by
every target, so a parameter's name, default and dispatch are read from one
place. Each target is a module with `generate(ctx) -> str`; a file is written
only when its text changed (it prints `Unchanged "<path>"` or `Generated "<path>"`).
"""
from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field

from tensorplay.codegen import gen_autograd, gen_functional, gen_methods, gen_declarations
from tensorplay.codegen import bindings, gen_autocast, gen_forward, gen_op_tags, gen_stubs
from tensorplay.codegen.formula import FormulaError
from tensorplay.codegen.yaml_loader import (
    CodegenError, DerivativeEntry, OpEntry, check_batching_rules, find_ambiguous_overloads,
    load_derivatives, load_ops,
)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@dataclass
class CodegenContext:
    ops: list[OpEntry]
    derivatives: list[DerivativeEntry]
    out_dir: str
    node_specs: dict = field(default_factory=dict)
    # op full name -> the inputs (name, is_list, optional) its autograd wrapper tests
    handwritten: bindings.HandWritten = field(default_factory=bindings.HandWritten)


# (file name, generator): one module per target.
TARGETS = [
    ("declarations.py", gen_declarations.generate),
    ("ops.py", gen_functional.generate_ops),
    ("functional.py", gen_functional.generate),
    ("tensor_methods.py", gen_methods.generate),
    ("autograd_nodes.py", gen_autograd.gen_nodes),
    ("autograd_wrappers.py", gen_autograd.gen_wrappers),
    ("forward_formulas.py", gen_forward.generate),
    ("autocast_wrappers.py", gen_autocast.generate),
    ("functional.pyi", gen_stubs.functional_stub),
    ("tensor_methods.pyi", gen_stubs.methods_stub),
    ("op_tags.py", gen_op_tags.generate),
]


def write_if_changed(path: str, content: str, quiet=False) -> bool:
    try:
        with open(path) as fh:
            if fh.read() == content:
                if not quiet:
                    print(f'Unchanged "{path}"')
                return False
    except FileNotFoundError:
        pass
    with open(path, "w") as fh:
        fh.write(content)
    if not quiet:
        print(f'Generated "{path}"')
    return True


def load_context(ops_path: str, derivatives_path: str, out_dir: str,
                 root: str = ROOT) -> CodegenContext:
    """The parsed YAML, and the hand-written bindings found under `root` (bindings.py)."""
    ops = load_ops(ops_path, os.path.basename(ops_path))
    problems = find_ambiguous_overloads(ops)
    if problems:
        raise CodegenError(ops[0].loc, "ambiguous overloads:\n" + "\n".join(problems))
    check_batching_rules(ops, os.path.join(root, "tensorplay", "func", "batching_rules"))
    derivatives = load_derivatives(derivatives_path, os.path.basename(derivatives_path))
    known = {e.schema.name.full: e for e in ops}
    for d in derivatives:
        op = known.get(d.schema.name.full)
        if op is None:
            raise CodegenError(d.loc, f"derivative for unknown op '{d.schema.name.full}'")
        if op.derived_from is not None:
            key, target = op.derived_from
            raise CodegenError(d.loc, f"'{d.schema.name.full}' has {key} '{target}' "
                                      f"({op.loc}): the derivative is that op's")
        if str(op.schema) != str(d.schema):
            raise CodegenError(d.loc, f"schema differs from ops.yaml ({op.loc}): "
                                      f"'{d.schema}' vs '{op.schema}'")
    ctx = CodegenContext(ops, derivatives, out_dir)
    function_names = set(gen_functional.groups(ops))
    ctx.node_specs = gen_autograd.build_specs(derivatives, function_names)
    ctx.handwritten = bindings.find(root)
    return ctx


def render_all(ctx: CodegenContext) -> dict[str, str]:
    """{file name: text} for every target (what the freshness test compares)."""
    out = {name: gen(ctx) for name, gen in TARGETS}
    out["__init__.py"] = gen_functional.HEADER + '"""Output of tensorplay/codegen; see ops.yaml."""\n'
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tensorplay.codegen",
                                     description="Generate tensorplay/_generated from the YAML.")
    parser.add_argument("--ops", default=os.path.join(ROOT, "ops.yaml"))
    parser.add_argument("--derivatives", default=os.path.join(ROOT, "derivatives.yaml"))
    parser.add_argument("--out", default=os.path.join(ROOT, "tensorplay", "_generated"))
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if any generated file is stale")
    args = parser.parse_args(argv)
    try:
        ctx = load_context(args.ops, args.derivatives, args.out)
        files = render_all(ctx)
    except (CodegenError, FormulaError) as e:
        print(f"codegen error: {e}", file=sys.stderr)
        return 2
    for line in bindings.report(ctx, gen_methods.emitted_names(ctx),
                                gen_functional.exported_names(ctx)):
        print(line)
    os.makedirs(args.out, exist_ok=True)
    stale = []
    for name, text in files.items():
        path = os.path.join(args.out, name)
        if args.check:
            try:
                with open(path) as fh:
                    if fh.read() != text:
                        stale.append(path)
            except FileNotFoundError:
                stale.append(path)
        else:
            write_if_changed(path, text)
    if stale:
        print("stale generated files (run `python -m tensorplay.codegen`):\n  "
              + "\n  ".join(stale), file=sys.stderr)
        return 1
    return 0
