"""Capture for tp.compile: the export capture mode (tensorplay/export/capture.py), plus
what a function called again and again needs: its state lifted as inputs, and graph
breaks noticed.

`trace(fn, args, kwargs, ...)` runs the function once, for real, under the capture mode,
with autograd live above it (the mode sits below autograd), and returns a `Trace`: the
graph of the forward, the function's own result (eager's values: the first call
returns them), and, when something requires grad, the joint graph's backward half
(joint.py adds it).

A *graph break* is anything the replay of a graph could get wrong:

- a tensor's values read into Python (`.item()`, `bool(t)`, `int(t)`, `.tolist()`,
  `.numpy()`): the function may branch on them, and the graph holds this call's branch;
- a random creation function (`tp.rand`, not dispatched): the graph would hold this
  call's numbers as a constant. A random *op* (`bernoulli_`, `native_dropout`) is a node
  like any other: replaying it calls its kernel, which draws from the generator as the
  eager call would (the passes never fold, merge or drop one);
- an op whose result is a Python value (`equal`) or whose output size depends on the
  values (`nonzero`, `masked_select`, `unique`): the graph holds this call's answer;
- a tensor stored into Python state during the call (`self.h = h`) or a backward run
  inside the function (it writes `.grad`): side effects a replay does not repeat;
- a function marked `tp.compiler.disable`.

The capture does not stop at a break: the run goes on eagerly to its end (its result is
eager's result), the reasons are collected, and the caller decides (frontend.py: run
this guard set eagerly from then on; `fullgraph=True`: raise `Unsupported` at once).
"""
from __future__ import annotations

import contextlib
import logging
import re

from tensorplay import _capture_hooks
from tensorplay.errors import Unsupported
from tensorplay.export.capture import CaptureMode
from tensorplay.export.graph import Graph
from tensorplay.export.values import Value
from tensorplay.kernel_support.checks import DataDependent

log = logging.getLogger("tensorplay.compiler")

_compiling = [0]       # captures running (is_compiling())


def is_compiling():
    """True while tp.compile captures a graph (torch.compiler.is_compiling)."""
    return _compiling[0] > 0


class CompileCapture(CaptureMode):
    """The export capture mode, with the function's reachable state lifted as inputs and
    graph breaks collected in `breaks` (raised at once under fullgraph)."""

    def __init__(self, graph, state, fullgraph):
        super().__init__(graph)
        self.state = state           # reachable.ReachableState
        self.free = []               # the state tensors the graph takes, in order
        self.breaks = []             # the reasons, in order
        self.fullgraph = fullgraph
        self.in_op = 0               # > 0 while an op runs (its kernel may read values)
        self._last_read = None

    # ---- state lifted as inputs --------------------------------------------------------
    def unknown_tensor(self, x):
        found = self.state.tensors.get(id(x._impl))
        if found is None:
            return super().unknown_tensor(x)
        tensor = found[0]
        # torch's names: L_self_fc1_weight for self.fc1.weight
        base = "l_" + re.sub(r"\W+", "_", self.state.paths[id(x._impl)]).strip("_")
        value = Value(self._fresh(base), "placeholder", x.dtype, tuple(x.shape))
        self.graph.placeholders.append(value)
        self.free.append(tensor)
        return value

    def value_of(self, x):
        value = super().value_of(x)
        if (isinstance(value, Value) and _is_plain_shape(value.shape)
                and value.shape != tuple(x.shape)):
            # resize_ changes a tensor's size outside the dispatcher: no node records it,
            # and the graph would replay the tensor at its old size
            self.graph_break(f"a tensor ('{value.name}') changed its size outside the "
                             f"dispatcher (resize_?): the graph cannot replay it")
        return value

    # ---- graph breaks ------------------------------------------------------------------
    def graph_break(self, reason):
        if self.fullgraph:
            raise Unsupported(f"tp.compile(fullgraph=True): graph break: {reason}",
                              op="compile")
        if reason not in self.breaks:
            self.breaks.append(reason)
            log.info("graph break: %s", reason)

    def values_read(self, tensor, how):
        if self.in_op:                       # a kernel reading its own argument
            return
        if self._last_read is tensor._impl:  # bool(t) reads through t.item()
            return
        self._last_read = tensor._impl
        self.graph_break(f"{how} reads a tensor's values into Python (data-dependent "
                         f"control flow cannot be captured)")

    def random_draw(self, op):
        if self.in_op:      # a random op's kernel drawing: the op is a node, replayed
            return
        self.graph_break(f"{op} draws random numbers (a replay would repeat them)")

    def __tensorplay_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.name
        self._check_data_dependent(func, args)
        self.in_op += 1
        try:
            out = super().__tensorplay_dispatch__(func, types, args, kwargs)
        finally:
            self.in_op -= 1
        results = out if isinstance(out, (list, tuple)) else (out,)
        if any(r is not None and getattr(r, "_impl", None) is None for r in results):
            self.graph_break(f"{name} returns a Python value, not a tensor")
        return out

    def _check_data_dependent(self, func, args):
        rule = func.handle.meta_rule
        if rule is None:
            return
        try:
            spec = rule(*args)
        except Exception:      # the op raises its own error when it runs
            return
        # (DataDependent is a named tuple itself; a multi-output op's spec is a tuple)
        specs = (spec,) if isinstance(spec, DataDependent) or not isinstance(spec, tuple) \
            else spec
        for s in specs:
            if isinstance(s, DataDependent):
                self.graph_break(f"{func.name}: {s.what} depends on the values of "
                                 f"'{s.arg}' (a data-dependent output)")


class Trace:
    """One capture: `graph` (forward), `free` (state tensors, after the user inputs),
    `flat_outputs` (the function's tensors out, eager's values), `breaks`, and for a
    joint capture `joint` (joint.JointGraph)."""

    def __init__(self, graph, free, result, flat_outputs, spec, breaks):
        self.graph = graph
        self.free = free
        self.result = result
        self.flat_outputs = flat_outputs
        self.spec = spec
        self.breaks = breaks
        self.joint = None


@contextlib.contextmanager
def capturing(mode):
    """The mode on, and the capture hooks pointing at it (and back on the way out, for a
    capture inside a capture)."""
    previous = _capture_hooks.observer
    _capture_hooks.observer = mode
    _compiling[0] += 1
    try:
        with mode:
            yield mode
    finally:
        _compiling[0] -= 1
        _capture_hooks.observer = previous


def trace(fn, args, kwargs, tensors, names, state, *, fullgraph, want_backward):
    """Capture `fn(*args, **kwargs)`; `tensors` are its tensor inputs in flattening order
    (named `names`), `state` its reachable state. With `want_backward`, the joint graph
    is captured too (joint.py)."""
    from tensorplay.compiler import joint
    from tensorplay.compiler.outputs import Unflattenable, flatten_output

    graph = Graph()
    mode = CompileCapture(graph, state, fullgraph)
    for name, t in zip(names, tensors):
        mode.add_placeholder(name, t)
    before = state.signature()
    geometry = [_geometry(t) for t in tensors]
    with capturing(mode):
        result = fn(*args, **kwargs)
    for t, g, p in zip(tensors, geometry, graph.placeholders):
        if _geometry(t) != g and not _written_by_a_node(graph, p.name):
            mode.graph_break(f"input '{p.name}' changed its size or strides outside the "
                             f"dispatcher (resize_?): the graph cannot replay it")
    try:
        flat, spec = flatten_output(result)
    except Unflattenable as e:
        mode.graph_break(f"the function returns a {e} (only tensors, tuples, lists, dicts "
                         f"and Python numbers can be rebuilt)")
        flat, spec = [], ("c", None)
    graph.outputs = [mode.output_of(t) for t in flat]
    tr = Trace(graph, mode.free, result, flat, spec, mode.breaks)
    after = state.signature()
    if any(after[1].get(k, g) != g for k, g in before[1].items()):
        mode.graph_break("the function wrote a .grad (a backward inside the compiled "
                         "function is not captured)")
    elif after[0] != before[0]:
        mode.graph_break("the function stored a tensor into Python state (an attribute, "
                         "a list or a dict it reaches): a replay would not repeat it")
    elif after[2] != before[2]:
        mode.graph_break("the function changed a Python value it reaches (an attribute, "
                         "a global): a replay would not repeat it")
    if want_backward and not mode.breaks:
        joint.capture_backward(tr, mode, tensors)
    tr.breaks = mode.breaks
    return tr


def _is_plain_shape(shape):
    return all(type(s) is int for s in shape)


def _geometry(t):
    impl = t._impl
    return (impl.sizes, impl.strides, impl.offset)


def _written_by_a_node(graph, name):
    """Does an in-place node write the tensor that placeholder `name` holds (following
    the names an in-place op gives its result)?"""
    names = {name}
    for node in graph.nodes:
        written = [node.args[i].name for i in node.mutated if isinstance(node.args[i], Value)]
        if any(n in names for n in written):
            if node.func.aliased_return and node.outputs[0] is not None:
                names.add(node.outputs[0].name)
            return True
    return False


def run_disabled(fn, args, kwargs):
    """`tp.compiler.disable`'s function called: during a capture, a graph break; the
    function runs eagerly either way (outside the capture mode's view it cannot go: its
    ops still reach the mode, which is why this is a break)."""
    mode = _capture_hooks.observer
    if isinstance(mode, CompileCapture):
        mode.graph_break(f"{getattr(fn, '__qualname__', fn)!s} is marked "
                         f"tp.compiler.disable")
    return fn(*args, **kwargs)


__all__ = ["is_compiling", "trace", "Trace", "CompileCapture", "run_disabled"]
