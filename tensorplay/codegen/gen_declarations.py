"""Target `declarations`: declare every op with the dispatcher, and list which
kernel name serves which key (from `dispatch:` and `meta:` in ops.yaml) and which
batching rule vmap uses (`vmap:`, or the rule the op's tags imply).

The generated module holds data, not imports of backends: `tensorplay/_backend_loading.py`
loads each backend package and registers the named functions it finds there, so
the core never imports `cpu_kernels` or `triton_kernels` by name.
"""
from __future__ import annotations

from tensorplay.codegen.gen_functional import HEADER
from tensorplay.codegen.template import CodeTemplate, fit, long_string
from tensorplay.codegen.yaml_loader import OpEntry

OP_SCHEMA = CodeTemplate("""\
OpSchema(
    name=$name,
    text=$text,
    $fields
),""")


def _op_schema(e: OpEntry) -> list[str]:
    args = e.schema.arguments
    fields = [f"arg_names={tuple(a.name for a in args)!r},"]
    # Only what differs from OpSchema's defaults: most ops mutate nothing, return one.
    optional = {
        "tensor_positions": tuple(i for i, a in enumerate(args) if a.type.name == "Tensor"),
        "list_positions": tuple(i for i, a in enumerate(args)
                                if a.type.name == "Tensor" and a.type.is_list),
        "mutable_positions": tuple(i for i, a in enumerate(args)
                                   if a.type.annotation is not None
                                   and a.type.annotation.is_write),
    }
    fields += [f"{key}={value!r}," for key, value in optional.items() if value]
    if len(e.schema.returns) != 1:
        fields.append(f"num_returns={len(e.schema.returns)},")
    text = long_string(str(e.schema), indent=13)
    text = [text[0]] + ["    " + ln for ln in text[1:]]
    return OP_SCHEMA.substitute(name=repr(e.schema.name.full), text="\n".join(text),
                                fields=fields)


DECLARATIONS = CodeTemplate('''\
"""Every op of ops.yaml defined with the dispatcher, the kernel names its `dispatch:`
and `meta:` entries ask for (registered by tensorplay/_backend_loading.py), and the
batching rules of `vmap:` (registered by tensorplay/func/vmap.py). The handles to call
them by are in `ops.py`."""
from tensorplay.dispatch.dispatcher import OpSchema, dispatcher

SCHEMAS = (
    $schemas
)

for _schema in SCHEMAS:
    dispatcher.define(_schema)

# backend key -> ((op, kernel function name in that backend's package), ...)
DISPATCH = {
    $dispatch
}

# op -> ('alias_of', op it calls) or ('copy_of', view it copies): ops whose Composite
# kernel tensorplay/_backend_loading.py makes (load_derived)
DERIVED = {
    $derived
}

# op -> shape/dtype rule in tensorplay/meta/ (the Meta kernel and input checks)
META_RULES = {
    $meta
}

# op -> batching rule in tensorplay/func/batching_rules/ (ops.yaml `vmap:`, or the rule
# its tags imply: see VMAP_BY_TAG in tensorplay/codegen/yaml_loader.py)
VMAP_RULES = {
    $vmap
}''')


def generate(ctx) -> str:
    schemas = []
    for e in ctx.ops:
        schemas += _op_schema(e)
    by_key: dict[str, list[tuple[str, str]]] = {}
    for e in ctx.ops:
        for key, kernel in e.dispatch:
            by_key.setdefault(key, []).append((e.schema.name.full, kernel))
    dispatch = []
    for key, pairs in by_key.items():
        dispatch += [f"{key!r}: ("] + [f"    ({op!r}, {k!r})," for op, k in pairs] + ["),"]
    meta = [f"{e.schema.name.full!r}: {e.meta!r}," for e in ctx.ops if e.meta]
    vmap = [f"{e.schema.name.full!r}: {e.batching_rule!r}," for e in ctx.ops if e.batching_rule]
    derived = [f"{e.schema.name.full!r}: {e.derived_from!r}," for e in ctx.ops if e.derived_from]
    lines = DECLARATIONS.substitute(schemas=schemas, dispatch=dispatch, derived=derived,
                                    meta=meta, vmap=vmap)
    return HEADER + "\n".join(fit(lines)) + "\n"
