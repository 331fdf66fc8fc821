"""CPU code generation for a fused pointwise group: NumPy calls into reused buffers.

Eager runs `tanh(mul(a, b))` as two kernels, each wrapping its NumPy result as a new
tensor. A fused group works on the arrays: it takes its inputs' arrays once, runs
each op as its NumPy ufunc writing into a buffer (`out=`), and wraps as tensors only
the results read after the group. A buffer is reused as soon as the value in it is
dead (a little register allocation), so a chain of ten ops on one shape allocates one
or two arrays, not ten:

    def fused_0(t0, t1, t2, t3, t4):     # an LSTM step's tail, called at every step
        # tanh, mul.Tensor, addcmul, tanh, mul.Tensor -> float32[4, 32]
        a0 = t0._impl.array()
        ...
        b0 = np.tanh(a0)  # tanh
        b1 = np.multiply(a1, a2)  # mul.Tensor
        b2 = np.multiply(a3, b0)  # addcmul: tensor1 * tensor2, then
        np.add(b1, b2, out=b2)    #          self + that
        np.tanh(b2, out=b0)  # tanh       (b0's tanh is dead: its buffer is reused)
        np.multiply(a4, b0, out=b1)  # mul.Tensor
        r0, r1, = _wrap(_layout_fused_0, (t0, t1, t2, t3, t4, ), (b2, b1, ), ...)
        return (r0, r1,)

The results are laid out as eager's would be (layout.py). A reduction that ends the
group (`takes_tail`) runs its own kernel on the chain's result inside the function.

Exactness: each op is written as its CPU kernel computes it (cpu_kernels/pointwise.py:
sigmoid is `1 / (1 + exp(-x))` there, so here too), and only where the kernel's type
promotion is trivial: every tensor is float32, or every tensor float64 (a Python
number's 0-dim tensor, a "wrapped number", is converted to that dtype, as the kernels'
`_with_number` does; `where`'s condition is a bool tensor). Then each ufunc computes
in that dtype exactly as the kernel's,
and the results are bit for bit eager's. Anything else (integers, half types, mixed
dtypes, `alpha=2`) is not fused and runs its own kernel.

NumPy's warnings for inf and nan (`exp(1000)`, `0 / 0`) are off inside the group, as
the kernels turn them off around their own ufuncs.
"""
from __future__ import annotations

import numpy as np

from tensorplay import _dtype as dt
from tensorplay.compiler.layout import LayoutPlan
from tensorplay.export.values import Value
from cpu_kernels._common import out, out_strided
from cpu_kernels._float_errors import Ignored, call_ignoring

FLOATS = (dt.float32, dt.float64)
QUIET = Ignored(divide="ignore", invalid="ignore", over="ignore", under="ignore")


def _ufunc(name):
    """A recipe of one ufunc over the tensor inputs."""
    def steps(ins, scalars):
        return [(name, tuple(ins))]
    return steps


def _sigmoid(ins, scalars):
    # cpu_kernels.pointwise._sigmoid_of: 1 / (1 + exp(-x))
    return [("negative", (ins[0],)), ("exp", ("@",)), ("add", ("1", "@")),
            ("true_divide", ("1", "@"))]


def _relu(ins, scalars):
    return [("maximum", (ins[0], "ZERO"))]        # keeps NaN, like the kernel


def _where(ins, scalars):
    # cpu_kernels.pointwise.where: np.where(condition, self, other), a new array
    return [("where", tuple(ins))]


def _addcmul(ins, scalars):
    # cpu_kernels.pointwise.addcmul: self + value * (tensor1 * tensor2)
    value = scalars["value"]
    steps = [("multiply", (ins[1], ins[2]))]
    if value != 1:
        steps.append(("multiply", (repr(value), "@")))
    return steps + [("add", (ins[0], "@"))]


# op name -> (recipe, {scalar argument position: the value it must have (None: any
# number)}, whether its result is bool). A recipe gives NumPy steps: (ufunc name, its
# operands), "@" being the previous step's result.
RECIPES = {
    "add.Tensor": (_ufunc("add"), {2: 1}, False),
    "sub.Tensor": (_ufunc("subtract"), {2: 1}, False),
    "mul.Tensor": (_ufunc("multiply"), {}, False),
    "div.Tensor": (_ufunc("true_divide"), {}, False),
    "maximum": (_ufunc("maximum"), {}, False),
    "minimum": (_ufunc("minimum"), {}, False),
    "neg": (_ufunc("negative"), {}, False),
    "abs": (_ufunc("absolute"), {}, False),
    "exp": (_ufunc("exp"), {}, False),
    "log": (_ufunc("log"), {}, False),
    "sqrt": (_ufunc("sqrt"), {}, False),
    "sin": (_ufunc("sin"), {}, False),
    "cos": (_ufunc("cos"), {}, False),
    "tanh": (_ufunc("tanh"), {}, False),
    "sigmoid": (_sigmoid, {}, False),
    "relu": (_relu, {}, False),
    "addcmul": (_addcmul, {3: None}, False),
    "where.self": (_where, {}, False),
    "eq.Tensor": (_ufunc("equal"), {}, True),
    "ne.Tensor": (_ufunc("not_equal"), {}, True),
    "lt.Tensor": (_ufunc("less"), {}, True),
    "le.Tensor": (_ufunc("less_equal"), {}, True),
    "gt.Tensor": (_ufunc("greater"), {}, True),
    "ge.Tensor": (_ufunc("greater_equal"), {}, True),
}


NO_OUT = ("where",)      # NumPy functions that take no `out=`: they make their result


def is_wrapped_number(value, constants):
    """A Python number the op was given as a 0-dim tensor (`x * 0.5`)."""
    if value.kind != "constant":
        return False
    impl = constants[value.name]._impl
    return impl.wrapped_number and impl.dtype is not dt.bool and not impl.dtype.is_complex


def compute_dtype(node, constants):
    """The dtype the node computes in: that of its float tensors (not a wrapped
    number's, not where's bool condition)."""
    return next(v.dtype for v in node.args if isinstance(v, Value)
                and not is_wrapped_number(v, constants) and v.dtype is not dt.bool)


def fusible(node, constants):
    """Can a group compute this node exactly as its kernel does?"""
    entry = RECIPES.get(node.func.name)
    if entry is None or node.mutated or len(node.outputs) != 1 or node.outputs[0] is None:
        return False
    _, scalars, boolean = entry
    result = node.outputs[0]
    tensors = [a for a in node.args if isinstance(a, Value)]
    real = [v for v in tensors if not is_wrapped_number(v, constants)]
    if node.func.name == "where.self":      # the condition: a bool tensor
        if tensors[0].dtype is not dt.bool or is_wrapped_number(tensors[0], constants):
            return False
        real = [v for v in real if v is not tensors[0]]
    if not real:
        return False
    dtype = real[0].dtype
    if dtype not in FLOATS or any(v.dtype is not dtype for v in real):
        return False
    if result.dtype is not (dt.bool if boolean else dtype):
        return False
    if tuple(result.shape) != _broadcast([tuple(v.shape) for v in tensors]):
        return False
    for pos, want in scalars.items():
        got = node.args[pos]
        if type(got) not in (int, float):
            return False
        if want is not None and (got != want or type(got) is not int):
            return False        # (alpha=1.0 is a float alpha: the kernel scales by it)
    return all(isinstance(a, Value) or i in scalars for i, a in enumerate(node.args))


def _broadcast(shapes):
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        return None


def emit_group(group, writer):
    """The group as a generated function (in the preamble) and the line that calls it."""
    constants = writer.graph.constants
    np_dtype = group.dtype.np
    zero = writer.bind(np.zeros((), np_dtype), f"zero_{group.dtype.name}")
    # the function's own parameter names: equal groups (an unrolled loop's) share one
    params = [f"t{i}" for i in range(len(group.inputs))]
    lines = [f"    # {', '.join(group.ops)} -> {group.dtype.name}{list(group.shape)}"]
    arrays = {}         # value name -> the array expression in the function
    for i, v in enumerate(group.inputs):
        if is_wrapped_number(v, constants):
            c = writer.bind(np.asarray(constants[v.name]._impl.array(), np_dtype),
                            f"{v.name}_{group.dtype.name}")
            arrays[v.name] = c
        else:
            arrays[v.name] = f"a{i}"
            lines.append(f"    a{i} = {params[i]}._impl.array()")
    # the buffers: which value each holds, and the last step that reads each value
    pointwise = group.nodes[:-1] if group.tail else group.nodes
    last_read = {}
    for k, node in enumerate(group.nodes):      # (the tail reads last of all)
        for a in node.args:
            if isinstance(a, Value):
                last_read[a.name] = k
    escaping = {v.name for v in group.outputs}
    free = {False: [], True: []}        # (bool buffer?) -> buffers whose value is dead
    holder = {}                         # buffer -> the value name in it
    nbuf = 0
    for k, node in enumerate(pointwise):
        recipe, scalar_pos, boolean = RECIPES[node.func.name]
        ins = [arrays[a.name] if isinstance(a, Value) else None for a in node.args]
        ins = [x for x in ins if x is not None]
        scalars = {node.func.schema.arg_names[p]: node.args[p] for p in scalar_pos}
        steps = recipe(ins, scalars)
        # a dead buffer of the right kind, not one this node reads when it takes
        # several steps (the first would overwrite an operand of a later one)
        pool = free[boolean]
        buf = None
        for b in pool if steps[0][0] not in NO_OUT else ():
            if len(steps) == 1 or b not in ins:
                buf = b
                pool.remove(b)
                break
        result = node.outputs[0]
        for j, (ufunc, operands) in enumerate(steps):
            ops = [zero if o == "ZERO" else buf if o == "@" else o for o in operands]
            comment = f"  # {node.func.name}" if j == 0 else ""
            if buf is None and group.shape == () and ufunc not in NO_OUT:
                # a ufunc of 0-d arrays returns a NumPy scalar, which takes no `out=`:
                # a 0-d buffer first
                buf = f"b{nbuf}"
                nbuf += 1
                kind = "np.bool_" if boolean else f"np.{np.dtype(np_dtype).name}"
                lines.append(f"    {buf} = np.empty((), {kind})")
            if buf is None:
                buf = f"b{nbuf}"
                nbuf += 1
                lines.append(f"    {buf} = np.{ufunc}({', '.join(ops)}){comment}")
            else:
                lines.append(f"    np.{ufunc}({', '.join(ops)}, out={buf}){comment}")
        holder[buf] = result.name
        arrays[result.name] = buf
        # values that die here give their buffers back (not escaping ones: their
        # tensors keep the array)
        for b, name in list(holder.items()):
            if name in escaping or b == buf:
                continue
            if last_read.get(name, -1) <= k:
                free[b.startswith("b") and _is_bool(group, name)].append(b)
                del holder[b]
    # the results read after the group (and the tail's operand), as tensors laid out
    # as eager's would be
    layout = params        # every tensor argument has a say in eager's rule
    wanted = [v for v in group.outputs if v.name in arrays]
    tail_read = None
    if group.tail:
        (tail_read,) = [a for a in group.nodes[-1].args if isinstance(a, Value)]
        if tail_read.name not in {v.name for v in wanted}:
            wanted.append(tail_read)
    tensors = {v.name: f"r{i}" for i, v in enumerate(wanted)}
    if wanted:
        targets = "".join(tensors[v.name] + ", " for v in wanted)
        arrays_text = "".join(arrays[v.name] + ", " for v in wanted)
        dtypes_text = "".join(writer.bind(v.dtype, v.dtype.name) + ", " for v in wanted)
        lines.append(f"    {targets}= _wrap(__PLAN__, ({''.join(p + ', ' for p in layout)}), "
                     f"({arrays_text}), ({dtypes_text}))")
    if group.tail:
        # the reduction's own kernel, on the chain's result (a tensor laid out as eager
        # makes it, so that it adds up in the same order)
        node = group.nodes[-1]
        kernel, what = writer.callee(node)
        args = ", ".join(tensors[a.name] if isinstance(a, Value) else writer.arg(a)
                         for a in node.args)
        tensors[node.outputs[0].name] = "tail"
        lines.append(f"    tail = {kernel}({args})  # {node.func.name} -> {what}")
    lines.append(f"    return ({', '.join(tensors[v.name] for v in group.outputs)},)")
    body = "\n".join(lines)
    fname = writer.shared.get(body)
    if fname is None:
        # (equal text, equal structure: the plan is made once per function)
        fname = writer.shared[body] = writer.fresh(group.name)
        plan = writer.bind(LayoutPlan(group, [v.name for v in wanted]), f"layout_{fname}")
        writer.preamble += [f"def {fname}({', '.join(params)}):",
                            body.replace("__PLAN__", plan), ""]
    group.name = fname
    writer.namespace.setdefault("np", np)
    writer.namespace["_wrap"] = wrap
    writer.namespace["_call_ignoring"] = call_ignoring
    writer.namespace["_QUIET"] = QUIET
    targets = ", ".join(writer.name(v) for v in group.outputs)
    inputs = ", ".join(writer.name(v) for v in group.inputs)
    return [f"{targets}, = _call_ignoring(_QUIET, {fname}, {inputs})"
            f"  # fused: {', '.join(group.ops)}"]


def wrap(plan, inputs, arrays, dtypes):
    """The group's result arrays as tensors, laid out as eager lays them out (layout.py);
    row-major at once when every input is (the common case)."""
    for t in inputs:
        if not t._impl.is_contiguous:
            break
    else:
        return [out(a, d) for a, d in zip(arrays, dtypes)]
    return [out_strided(a, d, st) for a, d, st in zip(arrays, dtypes, plan.strides(inputs))]


TAILS = ("sum", "sum.dim_IntList", "mean", "mean.dim")


def takes_tail(node):
    """Can a group end with this reduction? (Its own kernel runs on the group's result:
    on the CPU the gain is that the result needs no name in the program.)"""
    return node.func.name in TAILS and len(node.outputs) == 1


def _is_bool(group, name):
    for n in group.nodes:
        if n.outputs[0].name == name:
            return n.outputs[0].dtype is dt.bool
    return False
