"""Target `registrations`: define every op with the dispatcher, and list which
kernel name serves which key (from `dispatch:` and `meta:` in ops.yaml).

The generated module holds data, not imports of backends: `tensorplay/_backends.py`
loads each backend package and registers the named functions it finds there, so
the core never imports `cpu_kernels` or `triton_kernels` by name.
"""
from __future__ import annotations

from tensorplay.codegen.gen_functional import HEADER
from tensorplay.codegen.yaml_loader import OpEntry


def _op_schema(e: OpEntry) -> str:
    args = e.schema.arguments
    names = tuple(a.name for a in args)
    tensors = tuple(i for i, a in enumerate(args) if a.type.name == "Tensor")
    lists = tuple(i for i, a in enumerate(args) if a.type.name == "Tensor" and a.type.is_list)
    mutable = tuple(i for i, a in enumerate(args)
                    if a.type.annotation is not None and a.type.annotation.is_write)
    return (f"OpSchema({e.schema.name.full!r}, {str(e.schema)!r},\n"
            f"             {names!r}, {tensors!r}, {lists!r}, {mutable!r}, "
            f"{len(e.schema.returns)})")


def generate(ctx) -> str:
    lines = [HEADER + '"""Every op of ops.yaml defined with the dispatcher, and the kernel names\n'
             'its `dispatch:` and `meta:` entries ask for (registered by tensorplay/_backends.py)."""',
             "from tensorplay.dispatch.dispatcher import OpSchema, dispatcher",
             "",
             "SCHEMAS = ("]
    for e in ctx.ops:
        lines.append(f"    {_op_schema(e)},")
    lines += [")", "", "for _schema in SCHEMAS:", "    dispatcher.define(_schema)", ""]
    by_key: dict[str, list[tuple[str, str]]] = {}
    for e in ctx.ops:
        for key, kernel in e.dispatch:
            by_key.setdefault(key, []).append((e.schema.name.full, kernel))
    lines.append("# backend key -> ((op, kernel function name in that backend's package), ...)")
    lines.append("DISPATCH = {")
    for key, pairs in by_key.items():
        lines.append(f"    {key!r}: (")
        lines += [f"        ({op!r}, {k!r})," for op, k in pairs]
        lines.append("    ),")
    lines.append("}")
    lines += ["", "# op -> shape/dtype rule in tensorplay/meta/ (the Meta kernel and input checks)",
              "META_RULES = {"]
    lines += [f"    {e.schema.name.full!r}: {e.meta!r}," for e in ctx.ops if e.meta]
    lines.append("}")
    return "\n".join(lines) + "\n"
