"""Target `autocast_wrappers`: one wrapper per op and device that ops.yaml gives an
`autocast:` policy, registered at that device's `Autocast<backend>` key.

For `mm` (`autocast: lower`) it writes, for the CPU and the same for CUDA,

    def mm_cpu(ks, self, mat2):
        to_type = lower_type('cpu', 'mm')
        with ExcludeKeys(AUTOCAST_CPU):
            self = cached_cast(to_type, self, 'cpu', 'self')
            mat2 = cached_cast(to_type, mat2, 'cpu', 'mat2')
            return ops.mm.redispatch(ks & ~AUTOCAST_CPU, self, mat2)

The casts run with the key excluded too, as PyTorch's do. The policy functions
(`lower_type`, `fp32_type`, `promote_type`, `fp32_opt_dtype`, `banned`) and
`cached_cast` / `cast_contracted` are written once, in `tensorplay/amp/casts.py`. Ops
without a policy get no wrapper: their Autocast slot falls through.
"""
from __future__ import annotations

from tensorplay.codegen.gen_functional import HEADER, handle
from tensorplay.codegen.template import CodeTemplate, fit
from tensorplay.codegen.yaml_loader import OpEntry

WRAPPER = CodeTemplate("""\
def ${name}_${device}(ks, $args):
    $policy
    with ExcludeKeys($key):
        $casts
        return $call
""")

BANNED = CodeTemplate("""\
def ${name}_${device}(ks, $args):
    banned($where)
""")

WRAPPERS = CodeTemplate('''\
"""Autocast wrappers, registered at AutocastCPU and AutocastCUDA (see ops.yaml `autocast:`).

Each one picks the dtype its policy asks for; then, with its own Autocast key excluded
(so neither the casts nor the ops its kernel calls are autocast again), it casts the
eligible tensor arguments (floating, not float64, on the autocast device) and
redispatches below the key. The policies are tensorplay/amp/casts.py."""
from tensorplay.amp.casts import (
    banned, cached_cast, cast_contracted, fp32_opt_dtype, fp32_type, lower_type,
    promote_type,
)
from tensorplay.dispatch.keys import DispatchKey
from tensorplay.dispatch.tls import ExcludeKeys
from tensorplay._generated import ops

AUTOCAST_CPU = 1 << DispatchKey.AutocastCPU
AUTOCAST_CUDA = 1 << DispatchKey.AutocastCUDA


$wrappers
# Autocast key -> {op full name: wrapper}
WRAPPERS = {
    $table
}

# device key -> {op full name: policy}, as declared in ops.yaml
POLICIES = {
    $policies
}''')


def _tensor_args(e: OpEntry) -> list[str]:
    return [a.name for a in e.schema.arguments if a.type.name == "Tensor"]


def gen_wrapper(e: OpEntry, device_key: str, policy: str) -> list[str]:
    device = device_key.lower()
    names = [a.name for a in e.schema.arguments]
    name = e.schema.name.unambiguous_name
    where = f"{device!r}, {e.schema.name.full!r}"
    if policy == "banned":
        return BANNED.substitute(name=name, device=device, args=names, where=where)
    casts = []
    if policy == "lower_contracted":
        policy_line = f"to_type = lower_type({where})"
        casts = [f"tensors = cast_contracted(to_type, equation, tensors, {device!r}, "
                 f"'tensors')"]
    elif policy == "fp32_set_opt_dtype":
        first = _tensor_args(e)[0]
        policy_line = f"dtype = fp32_opt_dtype({where}, {first}, dtype)"
    else:
        if policy == "promote":
            to_type = f"promote_type({where}, {', '.join(_tensor_args(e))})"
        else:
            to_type = f"{policy}_type({where})"
        policy_line = f"to_type = {to_type}"
        casts = [f"{t} = cached_cast(to_type, {t}, {device!r}, {t!r})" for t in _tensor_args(e)]
    key = f"AUTOCAST_{device_key}"
    call = f"{handle(e)}.redispatch(ks & ~{key}, {', '.join(names)})"
    return WRAPPER.substitute(name=name, device=device, args=names, policy=policy_line,
                              key=key, casts=casts, call=call)


def generate(ctx) -> str:
    wrappers = []
    tables = {"CPU": [], "CUDA": []}
    policies = {"CPU": [], "CUDA": []}
    for e in ctx.ops:
        for device_key, policy in e.autocast:
            wrappers += gen_wrapper(e, device_key, policy) + ["", ""]
            fn = f"{e.schema.name.unambiguous_name}_{device_key.lower()}"
            tables[device_key].append(f"    {e.schema.name.full!r}: {fn},")
            policies[device_key].append(f"    {e.schema.name.full!r}: {policy!r},")
    table = []
    for device_key, rows in tables.items():
        table += [f"'Autocast{device_key}': {{"] + rows + ["},"]
    policy_lines = []
    for device_key, rows in policies.items():
        policy_lines += [f"{device_key!r}: {{"] + rows + ["},"]
    lines = WRAPPERS.substitute(wrappers=wrappers, table=table, policies=policy_lines)
    return HEADER + "\n".join(fit(lines)) + "\n"
