"""Composite decomposition: replace an op written with other ops by those ops.

ops.yaml's `dispatch: {Composite: ...}` names ops that have no kernel of their own:
their code (tensorplay/composite/) calls other ops. Most of them decompose above
autograd, so capture already records their parts; but an op with a derivative of its
own (`mse_loss`, `logaddexp`, `pow.Tensor_Scalar`) reaches the capture mode whole, and
its parts stay hidden in one node, out of reach of CSE and fusion.

The pass opens such a node the way tp.export captures a model: it runs the op's
Composite kernel under the capture mode (tensorplay/export/capture.py) on example
tensors of the node's shapes and dtypes, and splices the recorded nodes in place of the
one. No op needs code of its own here.

A decomposition may read the values (`if x.min() < 0:`), and a capture records only the
path that one run took. So the pass captures twice, on two different example inputs,
and keeps the decomposition only when both captures are the same ops with the same
arguments and the same constants; otherwise (or if the example run fails) the node
stays as it is. It runs until nothing more opens (a part may be Composite too).

Not opened: views (a view's parts would have to share memory the same way), in-place
ops, random ops, and graphs with dynamic sizes (the parts would hold the example's
sizes as plain ints).
"""
from __future__ import annotations

import numpy as np

import tensorplay as tp
from tensorplay.compiler.passes.rewrite import (
    graph_has_symints, is_impure, rebuilt, substitute, tags, values_in,
)
from tensorplay.dispatch.keys import DispatchKey
from tensorplay.export.capture import capture
from tensorplay.export.graph import Node
from tensorplay.export.values import Value

MAX_ROUNDS = 4


def composite_kernel(func, device):
    """The Composite kernel a call of `func` on `device` runs, or None when the backend
    has a kernel of its own."""
    handle = func.handle
    composite = handle.kernels[DispatchKey.Composite]
    backend = DispatchKey.CUDA if tp.device(device).type == "cuda" else DispatchKey.CPU
    if composite is None or handle._has_backend_kernel(backend):
        return None
    return composite


def decompose_composites(graph, device="cpu", accept=None):
    """`graph` with its Composite nodes opened. `accept(parts)`, when given, decides
    for each decomposition (a captured Graph) whether to take it: the lowering takes
    only those whose parts its code generator can fuse, since on its own a chain of
    parts costs more calls than the one node."""
    if graph_has_symints(graph):
        return graph
    for _ in range(MAX_ROUNDS):
        graph, changed = _one_round(graph, device, accept)
        if not changed:
            break
    return graph


def _one_round(graph, device, accept):
    nodes, mapping, constants = [], {}, dict(graph.constants)
    changed = False
    used = {v.name for n in graph.nodes for v in n.outputs if v is not None}
    used.update(p.name for p in graph.placeholders)
    used.update(constants)
    for node in graph.nodes:
        node = Node(node.func, tuple(substitute(a, mapping) for a in node.args),
                    node.outputs, node.mutated)
        kernel = composite_kernel(node.func, device)
        parts = None
        if kernel is not None and not is_impure(node) and not node.func.is_view \
                and "view" not in tags(node):
            parts = _decomposition(node, kernel, device, graph.constants)
        if parts is not None and accept is not None and not accept(parts[0]):
            parts = None
        if parts is None:
            nodes.append(node)
            continue
        changed = True
        sub, inputs = parts
        _splice(node, sub, inputs, nodes, mapping, constants, used)
    return rebuilt(graph, nodes, mapping, constants), changed


def _decomposition(node, kernel, device, constants):
    """The captured Graph of `kernel` on the node's arguments, and the node's Values its
    placeholders stand for; None when the capture fails or depends on the values."""
    inputs = list(dict.fromkeys(v.name for v in values_in(list(node.args))))
    by_name = {v.name: v for v in values_in(list(node.args))}
    captures = []
    for seed in (1, 2):
        examples = {name: _example(by_name[name], device, (seed, k), constants)
                    for k, name in enumerate(inputs)}

        def call():
            return kernel(*[_bind(a, examples) for a in node.args])
        try:
            # placeholders named apart from any result the capture names (`__arg0`)
            sub, _ = capture(None, [(f"__arg{i}", examples[n]) for i, n in enumerate(inputs)],
                             call)
        except Exception:       # the example run failed: keep the node whole
            return None
        captures.append(sub)
    first, second = captures
    if not _same(first, second) or len(first.outputs) != len(node.outputs):
        return None
    for out, value in zip(first.outputs, node.outputs):
        if (value is None) != (not isinstance(out, Value)):
            return None
        if value is not None and (out.dtype is not value.dtype
                                  or tuple(out.shape) != tuple(value.shape)):
            return None
    if any(n.mutated for n in first.nodes):
        return None     # a decomposition that writes its own temporaries: keep it whole
    return first, [by_name[n] for n in inputs]


def _example(value, device, seed, constants):
    """An example tensor for `value`: a constant's own value, else random data (drawn
    apart for each input: equal inputs could hide a test such as `x == y`)."""
    if value.kind == "constant":
        return constants[value.name]
    rng = np.random.default_rng(seed)
    shape = tuple(value.shape)
    dtype = value.dtype
    if dtype is tp.bool:
        data = rng.random(shape) < 0.5
    elif dtype.is_complex:
        data = rng.uniform(0.5, 2, shape) + 1j * rng.uniform(0.5, 2, shape)
    elif dtype.is_floating_point:
        data = rng.uniform(0.5, 2, shape)       # positive: log, sqrt, pow are defined
    else:
        data = rng.integers(1, 5, shape)
    return tp.tensor(data, dtype=dtype, device=device)


def _bind(arg, examples):
    if isinstance(arg, Value):
        return examples[arg.name]
    if isinstance(arg, (list, tuple)):
        return type(arg)(_bind(a, examples) for a in arg)
    return arg


def _same(a, b):
    """Two captures record the same computation: ops, arguments, constants."""
    if len(a.nodes) != len(b.nodes) or list(a.constants) != list(b.constants):
        return False
    for x, y in zip(a.nodes, b.nodes):
        if x.func is not y.func or repr(x.args) != repr(y.args):
            return False
    for name in a.constants:
        ca, cb = a.constants[name], b.constants[name]
        if ca.dtype is not cb.dtype or tuple(ca.shape) != tuple(cb.shape) or \
                not np.array_equal(np.asarray(ca.cpu()), np.asarray(cb.cpu()), equal_nan=True):
            return False
    return repr(a.outputs) == repr(b.outputs)


def _splice(node, sub, inputs, nodes, mapping, constants, used):
    """Append `sub`'s nodes in place of `node`: its placeholders are `inputs`, its
    constants and results get names not used yet (`<result>_<part>`)."""
    prefix = next((v.name for v in node.outputs if v is not None), node.func.packet)
    local = {p.name: value for p, value in zip(sub.placeholders, inputs)}

    def fresh(base):
        name = f"{prefix}_{base}"
        k = 1
        while name in used:
            name = f"{prefix}_{base}_{k}"
            k += 1
        used.add(name)
        return name

    for name, tensor in sub.constants.items():
        new = fresh(name)
        constants[new] = tensor
        local[name] = Value(new, "constant", tensor.dtype, tuple(tensor.shape))
    for part in sub.nodes:
        outs = [None if v is None else Value(fresh(v.name), "node", v.dtype, v.shape)
                for v in part.outputs]
        for old, new in zip(part.outputs, outs):
            if old is not None:
                local[old.name] = new
        nodes.append(Node(part.func, tuple(substitute(a, local) for a in part.args), outs,
                          part.mutated))
    for value, out in zip(node.outputs, sub.outputs):
        if value is not None:
            mapping[value.name] = local[out.name]
