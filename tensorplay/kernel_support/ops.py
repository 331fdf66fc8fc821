"""Other ops, as a kernel sees them: their shape rules, their schemas, and running one
below autograd.

Shape rules. A kernel names a rule as ops.yaml's `meta:` does: `shape_rule("pointwise.lerp")`
is `lerp` of tensorplay/meta/pointwise.py, a bare name (`shape_rule("binary_sub")`) one of
tensorplay/meta/rules.py; `shape_rule_of("add.Tensor")` is the rule of that overload. A
rule is `rule(op, args) -> OutSpec` (a tuple of them for several outputs, SELF for an
in-place op), `op` the name its errors use, `args` the call's arguments in schema order.
A kernel runs one for what it computes (a result's sizes and dtype: the Triton launchers
allocate from it, as the Meta backend does) or for the typed error it raises on bad input
that NumPy or Triton would refuse less clearly, or not at all:

    spec = shape_rule("pointwise.lerp")("lerp", (self, end, weight))
    out = factory.empty(spec.sizes, dtype=spec.dtype, device=device)

Kernels do not import tensorplay.meta: the backend loader hands this module the rules
ops.yaml names when it registers the Meta backend (`load_meta` in
tensorplay/_backend_loading.py), as it registers the kernels themselves by ops.yaml's
names. A kernel that needs nothing from its op's rule but the error can simply fail:
`OperatorHandle.call` asks the op's rule about a kernel's ValueError, TypeError or
IndexError (`explain_bad_input`), and the rule raises the typed error.

Running another op. A Triton launcher that sums a partial result (`sum.dim_IntList`) or
compares two tensors (`ne.Scalar`) runs those ops as the dispatcher would from a front
door, less the front door itself (argument parsing, the overload choice) and less
autograd: the kernel is one op of the graph, whose node the autograd wrapper above it
records, so the ops inside it record nothing (what `below_autograd` does for a wrapper).
The rest of a call applies: kernel selection on the arguments' backend, a profiler or
explain(), a dispatch mode, a Meta kernel for meta tensors.

    total = call_below_autograd("sum.dim_IntList", x, [1], False, None)

`op` is the overload's full name (ops.yaml's `func:`, as `tp.ops` lists them) and the
arguments are all of its arguments in schema order, defaults included: nothing is parsed
or filled in.
"""
from __future__ import annotations

from tensorplay.dispatch.dispatcher import dispatcher
from tensorplay.dispatch.keys import AUTOGRAD_MASK
from tensorplay.dispatch.tls import local_keys

__all__ = ["shape_rule", "shape_rule_of", "schema_of", "call_below_autograd", "install_rules"]

_RULES = {}      # the name ops.yaml's `meta:` uses -> rule(op, args)
_RULE_OF = {}    # operator overload -> that name


def install_rules(rules, rule_of):
    """Called once by the backend loader as it registers the Meta backend: `rules`, the
    rule of every name ops.yaml's `meta:` uses, and `rule_of`, each overload's name."""
    _RULES.update(rules)
    _RULE_OF.update(rule_of)


def shape_rule(name):
    """The rule ops.yaml's `meta:` calls `name`."""
    rule = _RULES.get(name)
    if rule is None:
        raise KeyError(f"no shape rule named {name!r}: the rules are the names ops.yaml's "
                       f"`meta:` entries give (`binary_sub`, `pooling.avg_pool2d`), installed "
                       f"by the backend loader as tensorplay loads")
    return rule


def shape_rule_of(op):
    """The rule of operator overload `op` (`add.Tensor`): its ops.yaml entry's `meta:`."""
    name = _RULE_OF.get(op)
    if name is None:
        raise KeyError(f"operator {op!r} has no shape rule of its own (no `meta:` in ops.yaml)")
    return _RULES[name]


def schema_of(op):
    """The schema of operator overload `op`: its argument names (`arg_names`), which of
    them are tensors (`tensor_positions`) and which it writes (`mutable_positions`)."""
    return dispatcher.find(op).schema


def call_below_autograd(op, *args):
    """Run operator overload `op` on `args` (schema order, every argument given), on the
    key set of its tensor arguments (a list of tensors counts each one), as a front door
    computes it, with the autograd keys excluded on this thread meanwhile."""
    handle = dispatcher.find(op)
    ks = 0
    for arg in args:
        impl = getattr(arg, "_impl", None)
        if impl is not None:
            ks |= impl.keys
        elif type(arg) is list or type(arg) is tuple:
            for item in arg:
                item_impl = getattr(item, "_impl", None)
                if item_impl is not None:
                    ks |= item_impl.keys
    masks = local_keys.masks        # this thread's [included, excluded, grad mode off]
    excluded = masks[1]
    masks[1] = excluded | AUTOGRAD_MASK
    try:
        return handle.call(ks, *args)
    finally:
        masks[1] = excluded
