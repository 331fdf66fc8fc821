"""Target `op_tags`: each op's `tags:` from ops.yaml, as data the runtime can read.

The batching rules of `tensorplay/func` register whole families from it (every
`pointwise` op shares one broadcasting rule, every `reduction` one dim-shifting rule),
so a new op tagged in ops.yaml is batched without a line of vmap code.
"""
from __future__ import annotations

from tensorplay.codegen.gen_functional import HEADER

DOC = '"""Each op\'s ops.yaml `tags:` (only ops that have some), by full name."""\n'


def generate(ctx) -> str:
    lines = ["OP_TAGS = {"]
    for e in ctx.ops:
        if e.tags:
            lines.append(f"    {e.schema.name.full!r}: {tuple(e.tags)!r},")
    lines.append("}")
    return HEADER + DOC + "\n" + "\n".join(lines) + "\n"
