"""Capture: run the module once under a dispatch mode that writes down every op.

The mode (`CaptureMode`) sits at the Python key, below autograd, so it sees the ops that
compute: a Composite op that decomposes above autograd (`scaled_dot_product_attention`,
`dropout` in training) reaches it as its parts, and those parts are what the graph
records; an op with a kernel of its own (`linear`, `convolution`) reaches it whole.
Every op of ops.yaml is capturable this way, without a line per op.

Tensors are told apart by their impl: a placeholder's impl (a parameter, a buffer, a
user input) is known before the run, each node's results are named as they appear, and
any other tensor an op reads is a constant of the graph (a tensor made by a creation
function such as `tp.arange`, which is not dispatched, or one the module keeps as a
plain attribute): its value when the capture first sees it is what the graph holds (a
later in-place op on it is a node of the graph). A tensor that is not known by its impl
but shares a known tensor's memory and geometry (a saved output the autograd engine
rebuilds as a new impl) is that tensor's value. `tp.compile` overrides
`unknown_tensor` to lift the tensors the function reaches (parameters, closures) as
inputs instead (tensorplay/compiler/tracing.py).

Control flow that reads values (`if x.sum() > 0:`) is not captured: the graph records
the path this run took (PyTorch's strict export raises instead).
"""
from __future__ import annotations

from collections import Counter

import tensorplay as tp
from tensorplay.dispatch.python_key import TensorPlayDispatchMode
from tensorplay.export.graph import Graph, Node, Value


def _is_tensor(x):
    return getattr(x, "_impl", None) is not None


class CaptureMode(TensorPlayDispatchMode):
    """Records each op it is handed into `graph`, then runs it."""

    def __init__(self, graph):
        self.graph = graph
        self.values = {}          # id(impl) -> Value
        self.by_memory = {}       # (id(storage), sizes, strides, offset, dtype) -> Value
        self.by_memory_only = set()   # id(impl) of tensors known by their memory alone
        self.alive = []           # every tensor seen, so that no id is reused
        self.counts = Counter()   # op name -> how many results named after it so far

    def add_placeholder(self, name, tensor):
        value = Value(name, "placeholder", tensor.dtype, tuple(tensor.shape))
        self.graph.placeholders.append(value)
        self._bind(tensor, value)
        return value

    def _bind(self, tensor, value):
        impl = tensor._impl
        self.values[id(impl)] = value
        self.by_memory[_memory_key(impl)] = value
        self.alive.append(tensor)

    def _fresh(self, base):
        n = self.counts[base]
        self.counts[base] += 1
        return base if n == 0 else f"{base}_{n}"

    def value_of(self, x):
        """The graph's name for an argument: a Value for a tensor (a new constant if the
        graph has not seen it), lists element by element, anything else as it is."""
        if _is_tensor(x):
            value = self.values.get(id(x._impl))
            if value is None:
                value = self.by_memory.get(_memory_key(x._impl))
                if value is None:
                    value = self.unknown_tensor(x)
                else:
                    self.by_memory_only.add(id(x._impl))
                self._bind(x, value)
            return value
        if isinstance(x, (list, tuple)):
            return type(x)(self.value_of(b) for b in x)
        return x

    def unknown_tensor(self, x):
        """A tensor the graph has not seen: a constant, frozen as it is now."""
        name = self._fresh("c_tensor_constant")
        self.graph.constants[name] = _frozen(x)
        return Value(name, "constant", x.dtype, tuple(x.shape))

    def _own_alias(self, x):
        """An in-place op writes into `x`, a tensor known only by the memory it shares
        with a graph value (detach's result: a new impl, made without a dispatch, sharing
        the value's memory and geometry): it gets an alias node of its own first.
        Recorded as a write into that value instead, the write would make it the value's
        new version: `v3 = x.detach(); v3.mul_(x)` became `mul_(x[...], x)` when x[...]
        had the same geometry, and the view's gradient then went through the product."""
        if not _is_tensor(x):
            return
        source = self.value_of(x)       # (binds a tensor seen first here)
        if id(x._impl) not in self.by_memory_only:
            return
        self.by_memory_only.discard(id(x._impl))
        value = Value(self._fresh("alias"), "node", x.dtype, tuple(x.shape))
        self.graph.nodes.append(Node(tp.ops.alias.default, (source,), [value], ()))
        self._bind(x, value)

    def __tensorplay_dispatch__(self, func, types, args=(), kwargs=None):
        for i in func.schema.mutable_positions:
            self._own_alias(args[i])
        node_args = tuple(self.value_of(a) for a in args)
        out = func(*args, **(kwargs or {}))
        results = out if isinstance(out, (list, tuple)) else (out,)
        outputs = []
        for r in results:
            if _is_tensor(r):
                value = Value(self._fresh(func.packet.split("::")[-1].strip("_") or "t"),
                              "node", r.dtype, tuple(r.shape))
                self._bind(r, value)
                outputs.append(value)
            else:
                outputs.append(None)
        mutated = tuple(i for i in func.schema.mutable_positions if _is_tensor(args[i]))
        if func.aliased_return:        # add_(x, y) returns x itself: x's new version
            self._bind(args[func.schema.mutable_positions[0]], outputs[0])
        self.graph.nodes.append(Node(func, node_args, outputs, mutated))
        return out

    def output_of(self, x):
        if _is_tensor(x):
            return self.value_of(x)
        return x


def capture(module, placeholders, call):
    """Run `call()` (the module on the user inputs) under the capture mode.

    `placeholders`: (name, tensor) in the signature's order (parameters, buffers, user
    inputs). Returns the Graph and the flat list of the call's outputs."""
    graph = Graph()
    mode = CaptureMode(graph)
    for name, tensor in placeholders:
        mode.add_placeholder(name, tensor)
    with tp.no_grad(), mode:
        out = call()
    flat = list(out) if isinstance(out, (list, tuple)) else [out]
    graph.outputs = [mode.output_of(x) for x in flat]
    return graph, out


def _memory_key(impl):
    storage = getattr(impl, "storage", None)
    if storage is None:
        return None
    return (id(storage), impl.sizes, impl.strides, impl.offset, impl.dtype)


def _frozen(t):
    """A copy of a constant as it is when first seen; a Python number the op got as a
    0-dim tensor keeps its mark (it does not promote: `x * 0.5` stays float32)."""
    c = t.detach().clone()
    c._impl.wrapped_number = t._impl.wrapped_number
    return c
