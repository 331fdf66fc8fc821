"""cuda code generation for a fused pointwise group: one Triton kernel.

Eager launches one kernel per pointwise op, each reading its inputs from memory and
writing its result back. A fused group is one kernel: each program loads its block of
every input once, evaluates the ops one after the other on registers, and stores only
the results read after the group. The kernel is written from the pieces the eager
kernels are made of (triton_kernels/_template.py's structure: the flat index turned
into coordinates, an offset per operand from its strides, broadcasting as stride 0;
each op's expression from triton_kernels/pointwise_expressions.py, its inputs renamed):

    # fused by tensorplay/compiler: tanh, mul.Tensor, addcmul, tanh, mul.Tensor
    @triton.jit
    def fused_0_rank2(out0_ptr, out1_ptr, in0_ptr, ..., n_elements, size0, size1, ...):
        ...
        in0 = tl.load(in0_ptr + in0_offset, mask=mask).to(COMPUTE)
        ...
        v0 = _math.tanh(in0)                       # tanh
        v1 = in1 * in2                             # mul.Tensor
        v2 = v1 + tl.full([BLOCK], s0, COMPUTE) * (in3 * v0)   # addcmul
        ...
        tl.store(out0_ptr + out0_offset, v2.to(out0_ptr.dtype.element_ty), mask=mask)

Fused only where eager's kernels compute in the same dtype as the group: every tensor
float32 (or every one float64), a Python number's 0-dim tensor or a bool mask converted
to it, as the eager launchers convert them. Then each expression is evaluated in that dtype as eager
evaluates it, and only the stores and loads of intermediates are gone. Everything else
(half types, integers, in-place ops) runs its own kernel.
"""
from __future__ import annotations

import re

import triton
import triton.language as tl

from tensorplay import _dtype as dt
from tensorplay.export.values import Value
from tensorplay.compiler.codegen_cpu import is_wrapped_number
from triton_kernels import _math, _special_math
from tensorplay.compiler.layout import LayoutPlan
from tensorplay.kernel_support.results import factory
from triton_kernels._launch import (
    TL_DTYPES, broadcast_strides, launch, needs_wide_index, new_tensor, pointer,
)
from triton_kernels.pointwise import CONFIGS
from triton_kernels.pointwise_expressions import EXPRESSIONS, OPS

FLOATS = (dt.float32, dt.float64)
_OPS_BY_NAME = {entry.op: entry for entry in OPS.values()}


def expression(node):
    """(expression over x, y, z and scalar names, {scalar name: value}) of the node's op
    from the eager kernels' tables, or None."""
    func = node.func
    schema = func.schema
    arity = len(schema.tensor_positions)
    args = dict(zip(schema.arg_names, node.args))
    entry = EXPRESSIONS.get(func.packet)
    if entry is not None and entry[0] == arity and func.overload in ("Tensor", "default",
                                                                     "self"):
        names = entry[2] if len(entry) > 2 else ()
        return entry[1], {n: args[n] for n in names}
    entry = _OPS_BY_NAME.get(func.name)
    if entry is None or entry.check is not None:
        return None
    if callable(entry.expr):
        try:
            return entry.expr(args)
        except Exception:
            return None
    return entry.expr, {}


def compute_dtype(node, constants):
    """The group dtype of a node: its result's, or for a bool result (a comparison)
    its inputs'."""
    result = node.outputs[0].dtype
    if result is not dt.bool:
        return result
    return next(v.dtype for v in node.args if isinstance(v, Value)
                and not is_wrapped_number(v, constants) and v.dtype is not dt.bool)


def fusible(node, constants):
    if node.mutated or node.func.schema.mutable_positions or len(node.outputs) != 1 \
            or node.outputs[0] is None:
        return False
    schema = node.func.schema
    tensors = [node.args[i] for i in schema.tensor_positions]
    if not tensors or not all(isinstance(v, Value) for v in tensors):
        return False            # an optional tensor not given, a tensor list
    if any(isinstance(a, (Value, list, tuple)) and i not in schema.tensor_positions
           for i, a in enumerate(node.args)):
        return False
    # a bool tensor (where's condition, a mask) converts to the float dtype exactly, as
    # eager converts it, when the result is that float dtype
    result = node.outputs[0]
    real = [v for v in tensors if not is_wrapped_number(v, constants)
            and not (v.dtype is dt.bool and result.dtype is not dt.bool)]
    if not real:
        return False
    dtype = real[0].dtype
    if dtype not in FLOATS or any(v.dtype is not dtype for v in real) or \
            result.dtype not in (dtype, dt.bool):
        return False
    if any(len(v.shape) > len(result.shape) for v in tensors):
        return False
    entry = _OPS_BY_NAME.get(node.func.name)
    if result.dtype is dt.bool and entry is not None and entry.compute == "result":
        return False        # eager computes it in the bool result's dtype, not the inputs'
    got = expression(node)
    if got is None:
        return False
    _, scalars = got
    return all(type(v) in (int, float, bool) for v in scalars.values())


def _renamed(expr, names):
    """`expr` with each identifier of `names` (x, y, alpha...) replaced, attribute
    names (`tl.exp`) left alone."""
    pattern = re.compile(r"(?<![\w.])(" + "|".join(map(re.escape, names)) + r")(?!\w)")
    return pattern.sub(lambda m: names[m.group(1)], expr)


def render(name, group, rank, constants):
    """The Triton source of the group's kernel, and its scalar arguments in order."""
    ins = [f"in{i}" for i in range(len(group.inputs))]
    stored = [v for v in group.outputs if not (group.tail and v is group.nodes[-1].outputs[0])]
    outs = [f"out{i}" for i in range(len(stored))]
    value_of = {v.name: ins[i] for i, v in enumerate(group.inputs)}
    dims = range(rank)
    body, scalar_values, params = [], [], []
    for k, node in enumerate(group.nodes[:-1] if group.tail else group.nodes):
        expr, scalars = expression(node)
        schema = node.func.schema
        names = {n: value_of[node.args[p].name]
                 for n, p in zip("xyz", schema.tensor_positions)}
        for sname, value in scalars.items():
            s = f"s{len(scalar_values)}"
            scalar_values.append(value)
            params.append(s)
            names[sname] = s
        result = f"v{k}"
        value_of[node.outputs[0].name] = result
        body.append(f"    {result} = {_renamed(expr, names)}  # {node.func.name}")
    decorator = "@triton.jit" if not params else \
        f"@triton.jit(do_not_specialize={params!r})"
    lines = [f"# fused by tensorplay/compiler/codegen_triton.py: {', '.join(group.ops)}",
             decorator, f"def {name}("]
    lines += [f"    {o}_ptr,  # result {i}" for i, o in enumerate(outs)]
    if group.tail:
        lines.append("    partial_ptr,  # the tail's sum of each program's block")
    lines += [f"    {v}_ptr,  # input {i}, converted to COMPUTE after loading"
              for i, v in enumerate(ins)]
    lines += [f"    {s},  # a scalar argument" for s in params]
    lines += ["    n_elements,", f"    {', '.join(f'size{d}' for d in dims)},"]
    lines += [f"    {', '.join(f'{v}_stride{d}' for d in dims)},  # 0 where broadcast"
              for v in outs + ins]
    lines += ["    COMPUTE: tl.constexpr,", "    BLOCK: tl.constexpr,",
              "    WIDE_INDEX: tl.constexpr,", "):",
              "    pid = tl.program_id(0)", "    if WIDE_INDEX:",
              "        pid = pid.to(tl.int64)",
              "    index = pid * BLOCK + tl.arange(0, BLOCK)",
              "    mask = index < n_elements", "    rest = index"]
    for d in range(rank - 1, 0, -1):
        lines += [f"    i{d} = rest % size{d}", f"    rest = rest // size{d}"]
    lines.append("    i0 = rest")
    for v in outs + ins:
        lines.append(f"    {v}_offset = " + " + ".join(f"i{d} * {v}_stride{d}" for d in dims))
    for v in ins:
        lines.append(f"    {v} = tl.load({v}_ptr + {v}_offset, mask=mask).to(COMPUTE)")
    lines += body
    for o, v in zip(outs, stored):
        lines.append(f"    tl.store({o}_ptr + {o}_offset, "
                     f"{value_of[v.name]}.to({o}_ptr.dtype.element_ty), mask=mask)")
    if group.tail:
        (read,) = [a for a in group.nodes[-1].args if isinstance(a, Value)]
        lines += [f"    # {group.nodes[-1].func.name}: this block's share, summed in registers",
                  f"    block_sum = tl.sum(tl.where(mask, {value_of[read.name]}, 0.0), axis=0)",
                  "    tl.store(partial_ptr + pid, block_sum.to(partial_ptr.dtype.element_ty))"]
    return "\n".join(lines) + "\n", scalar_values


def run_fused(name, kernel, rank, inputs, scalars, shape, out_dtypes, compute, plan,
              tail=None):
    """Allocate the group's results (laid out like its inputs, as eager's are) and
    launch its kernel over them. `tail`: the sum kernel that adds up the programs'
    partial sums (the group ends with a sum), whose result comes last."""
    device = next(t._impl.device for t in inputs if t._impl.device.type == "cuda")
    inputs = [t if t._impl.device is device else t.to(device) for t in inputs]
    if all(t._impl.is_contiguous for t in inputs):
        outs = [new_tensor(shape, d, device) for d in out_dtypes]
    else:       # laid out as eager's kernels would lay them out (layout.py)
        outs = [factory.empty_strided(shape, st, dtype=d, device=device)
                for d, st in zip(out_dtypes, plan.strides(inputs))]
    n = 1
    for s in shape:
        n *= s
    block = CONFIGS[0].kwargs["BLOCK"]
    programs = triton.cdiv(n, block)
    partial = [new_tensor((programs,), compute, device)] if tail is not None else []
    if n == 0:
        return outs + ([tail(partial[0], None)] if tail is not None else [])
    sizes = list(shape) or [1]
    strides = []
    for t in outs + inputs:
        strides += broadcast_strides(t, shape) if shape else [0]
    launch(name, kernel, (programs,),
           *[pointer(t) for t in outs + partial + inputs], *scalars, n, *sizes, *strides,
           COMPUTE=TL_DTYPES[compute], BLOCK=block, WIDE_INDEX=needs_wide_index(n, *outs, *inputs),
           num_warps=CONFIGS[0].num_warps)
    if tail is not None:
        outs.append(tail(partial[0], None))
    return outs


def emit_group(group, writer):
    constants = writer.graph.constants
    rank = max(len(group.shape), 1)
    text, scalars = render("KERNEL", group, rank, constants)
    fname = writer.shared.get(text)
    if fname is None:
        fname = writer.shared[text] = writer.fresh(f"{group.name}_rank{rank}")
        writer.preamble += text.replace("def KERNEL(", f"def {fname}(").splitlines() + [""]
    group.name = fname
    ns = writer.namespace
    ns.update(triton=triton, tl=tl, _math=_math, _special_math=_special_math,
              _run_fused=run_fused)
    stored = [v for v in group.outputs if not (group.tail and v is group.nodes[-1].outputs[0])]
    dtypes = "".join(writer.bind(v.dtype, v.dtype.name) + ", " for v in stored)
    # the tail's result last
    targets = ", ".join(writer.name(v) for v in stored +
                        ([group.nodes[-1].outputs[0]] if group.tail else []))
    inputs = ", ".join(writer.name(v) for v in group.inputs)
    tail = f", tail={writer.callee(group.nodes[-1])[0]}" if group.tail else ""
    plan = writer.bind(LayoutPlan(group, [v.name for v in stored]), f"layout_{fname}")
    return [f"{targets}, = _run_fused({fname!r}, {fname}, {rank}, [{inputs}], "
            f"{writer.arg(list(scalars))}, {tuple(group.shape)!r}, [{dtypes}], "
            f"{writer.bind(group.dtype, group.dtype.name)}, {plan}{tail})"
            f"  # fused: {', '.join(group.ops)}"]


def takes_tail(node):
    """A group can end with `sum(x)` (every element, no dtype): each program sums its
    block of the chain's result, and eager's sum kernel adds up the partial sums."""
    return node.func.name == "sum" and node.args[1] is None


def count_launches(fn, *args):
    """How many Triton kernels `fn(*args)` launches: every launch goes through
    triton_kernels/_launch.py's `launch`, which reports a `triton` hop to an explain()
    block (eager kernels and fused ones alike)."""
    from tensorplay.dispatch.trace import explain
    with explain(records=True) as log:
        fn(*args)
    return sum(1 for h in log.records if h.kind == "triton")
