"""`tp.dispatch.explain()`: the teaching view of a call, every hop printed.

    >>> a = tp.tensor([1.0, 2.0, 3.0], requires_grad=True)
    >>> with tp.dispatch.explain():
    ...     c = a + tp.ones(3)
    add.Tensor(a: float32[3] requires_grad, float32[3], 1)
      key set   {AutogradCPU, CPU} requires_grad = given ... | included {} - excluded {}
        dispatch  AutogradCPU -> tensorplay._generated.autograd_wrappers.add_Tensor
      add.Tensor(a: float32[3] requires_grad, float32[3], 1)
        tls       excluded + {AutogradCPU, ...}
        key set   {CPU} requires_grad = given ... | included {} - excluded {AutogradCPU, ...}
          dispatch  CPU -> kernel registry (1 candidate)
          ...
          kernel    cpu_kernels.pointwise.add
        result    float32[3]
      result    float32[3] requires_grad

Backward is explained node by node: the node, the derivatives.yaml formula it was
generated from, the gradients in, each formula helper it calls (`helper sum_to(...)`,
the ops it runs under it), the gradients out and the edge each one travels,
AccumulateGrad into `.grad` on one line. Every hop names its code as `file:line
function` (`Hop.where`, dispatch/hops.py); leaves are named after the variables that
hold them (dispatch/leaf_names.py); `explain(compact=True)` prints one line per call
(dispatch/explain_compact.py).

There is no second dispatch loop here: `OperatorHandle.call` is the loop, and while a
sink listens (`state.watch` is not None) it reports each step to `watch` below. The
hot path pays one attribute read for all of this. explain() blocks get every hop
(`emit(hop)`); profilers (tensorplay/profiler.py) only what ran (`note`) and the
backward nodes to time (`begin` / `end`).
"""
from __future__ import annotations

import sys

from tensorplay.dispatch.explain_compact import compact_lines, first_route, short
from tensorplay.dispatch.hops import (  # noqa: F401  (code_where, Hop: read here by others)
    Hop, code_where, describe_with, formula_where, frame_where, is_formula_helper, repo_path,
    tensor_text,
)
from tensorplay.dispatch.keys import DispatchKey, format_keys
from tensorplay.dispatch.leaf_names import LeafNames, is_leaf
from tensorplay.dispatch.tls import local_keys


class _State:
    def __init__(self):
        # Instance attributes (read with a specialized instruction; see `observers` below)
        self.active = False     # an explain() block listens (registry, autocast test this)
        self.watch = None       # the observer the dispatch loop and the engine report to
        self.depth = 0
        self.sinks = []         # explain() blocks
        self.profilers = []
        self.masks = [(0, 0)]   # TLS masks seen by each enclosing call, to report changes
        self.names = None       # the innermost explain() block's LeafNames
        self.folded = None      # hops held back to fold into one line (AccumulateGrad's)


state = _State()


class _Observers:
    """What `OperatorHandle.call` tests first (`observers.active`), kept here by `_update`:
    set while a profiler or an explain() block is open, and every call then takes the
    observed path (`observed` below: no skipped autograd hop) so that every hop is seen.
    `listeners` (profilers) have `begin(name, kind, shapes)` and `end()`
    (tensorplay/profiler.py)."""

    def __init__(self):
        # Instance attributes, not class ones: CPython reads an instance's own value
        # with a specialized instruction, a class attribute through the type each time.
        self.active = False
        self.record_shapes = False
        self.listeners = []


observers = _Observers()


def observed(handle, ks, args):
    """A call made while explain() or a profiler listens (`OperatorHandle.call`): each
    profiler gets an `op` event around it, and the call takes the dispatch loop that
    reports every step (`OperatorHandle.dispatch`)."""
    shapes = None
    if observers.record_shapes:
        shapes = [tuple(a._impl.sizes) if hasattr(a, "_impl") else None for a in args]
    listeners = list(observers.listeners)
    for listener in listeners:
        listener.begin(handle.name, "op", shapes)
    try:
        return handle.dispatch(ks, *args)
    finally:
        for listener in listeners:
            listener.end()


def hop(kind, text, where=None, data=None, depth=None):
    """Report one hop to every sink; `where` defaults to the code that reports it."""
    if where is None:
        where = frame_where(1)
    h = Hop(state.depth if depth is None else depth, kind, text, where, data)
    _report(h)


def _report(h):
    if state.folded is not None:        # held back, see `_accumulate_in_one_line`
        state.folded.append(h)
        return
    for sink in state.sinks:
        sink.emit(h)


def describe(value):
    """`float32[2, 3]` for a tensor, repr for the rest (kept short); a leaf with its name
    first, `w: float32[3] requires_grad` (dispatch/leaf_names.py)."""
    impl = getattr(value, "_impl", None)
    if impl is not None and state.names is not None and is_leaf(impl):
        return f"{state.names.name(impl)}: {tensor_text(impl)}"
    return describe_with(value, describe)


def describe_compact(value):
    """What the compact form shows of an argument: a leaf's name alone, else `describe`."""
    impl = getattr(value, "_impl", None)
    if impl is not None and state.names is not None and is_leaf(impl):
        return state.names.name(impl)
    return describe_with(value, describe_compact)


def leaf_phrase(impl):
    """`leaf w` (or `leaf 0`, unnamed); without a naming block, the leaf described."""
    if state.names is not None:
        return state.names.phrase(impl)
    return f"leaf {tensor_text(impl)}"


# ---- the dispatch loop's observer -------------------------------------------------------
class _Watch:
    """What `OperatorHandle.call` reports to while anything listens. Each method is one
    step of that loop; the loop itself stays in dispatcher.py. explain() blocks get
    every hop (`state.active`); profilers only `note(key, kernel)` of what ran, which
    costs far less than the text of the hops."""

    def enter(self, handle, ks, args):
        if not state.active:
            return
        from tensorplay.dispatch.dispatcher import dispatcher
        included, excluded, grad_off = local_keys.masks
        eff = (ks | included) & ~(excluded | grad_off)
        shown = dispatcher.shown_keys()
        caller = frame_where(2)          # enter <- dispatch <- whoever called the op
        hop("call", f"{handle.name}({', '.join(describe(a) for a in args)})", caller,
            {"op": handle.name,
             "compact": f"{handle.name}({', '.join(describe_compact(a) for a in args)})"})
        outer_in, outer_ex = state.masks[-1]
        here = frame_where(1)
        for name, now, before in (("included", included, outer_in),
                                  ("excluded", excluded, outer_ex)):
            if now != before:
                added, dropped = now & ~before, before & ~now
                text = name
                if added:
                    text += f" + {format_keys(added, shown)}"
                if dropped:
                    text += f" - {format_keys(dropped, shown)}"
                hop("tls", text, caller, {"mask": name})
        grad_off = " - requires_grad (grad mode is off)" if ks & grad_off else ""
        hop("key set", f"{format_keys(eff, shown)} = given {format_keys(ks, shown)} | "
            f"included {format_keys(included, shown)} - excluded "
            f"{format_keys(excluded, shown)}{grad_off}", here, {"keys": format_keys(eff, shown)})

    def miss(self, handle, key):
        if state.active:
            name = DispatchKey(key).name if key >= 0 else "<none>"
            hop("miss", f"{name}: no kernel and no Composite fallback", frame_where(1),
                depth=state.depth + 1)

    def skip(self, handle, key, why="nothing registered"):
        if state.active:
            if why == "nothing to record":      # (dispatcher.RECORDS_NOTHING) and why
                why = ("grad mode is off" if local_keys.masks[2] else
                       "no tensor requires grad") + ", nothing to record"
            hop("skip", f"{DispatchKey(key).name}: {why}, fall through",
                frame_where(1), depth=state.depth + 1)

    def run_backend(self, handle, key, kernel, args):
        from tensorplay.dispatch.kernel_selection import KernelRegistry
        name = DispatchKey(key).name
        reg = handle.registries.get(key)
        is_registry = reg is not None and bool(reg.candidates)
        if state.profilers:
            ran = _chosen(reg, args) if is_registry else \
                handle.kernel_names[DispatchKey.Composite]
            for p in state.profilers:
                p.note(name, ran)
        if not state.active:
            return kernel(*args)
        if is_registry:
            bumps = bool(handle.schema.mutable_positions)
            bump = " (then bump the version of the written tensor)" if bumps else ""
            n = len(reg.candidates)
            text = f"{name} -> kernel registry ({n} candidate{'s' if n != 1 else ''}){bump}"
            where = code_where(KernelRegistry.__call__)
            runs = None                  # the registry's `kernel` hop names it
        else:
            bumps = False
            what = handle.kernel_names[DispatchKey.Composite]
            text = f"{name} -> Composite fallback {what}"
            where = code_where(kernel)
            runs = short(what)
        hop("dispatch", text, where, {"key": name, "runs": runs}, depth=state.depth + 1)
        out = self._nested(reg if is_registry else kernel, args)   # the registry: its hops
        if bumps:
            for i in handle.schema.mutable_positions:
                a = args[i]
                if a is not None and not a._impl.inference:
                    hop("version", f"{handle.schema.arg_names[i]}: version now "
                        f"{a._impl.version.value} (saved copies of the old value now "
                        f"mismatch)", code_where(_bump_code()), depth=state.depth + 1)
        hop("result", describe(out), frame_where(1))
        return out

    def run_wrapper(self, handle, key, kernel, ks, args):
        name = DispatchKey(key).name
        if state.profilers:
            # a Composite decomposition above autograd is what this op runs; a wrapper
            # (autograd, autocast) redispatches, and the kernel is noted further down
            ran = handle.kernel_names[DispatchKey.Composite] \
                if getattr(kernel, "__wrapped__", None) is not None else None
            for p in state.profilers:
                p.note(name, ran)
        if not state.active:
            return kernel(ks, *args)
        what = handle.kernel_names[key] or getattr(kernel, "fallback_name", None)
        if what is None:
            composite = handle.kernel_names[DispatchKey.Composite]
            what = f"Composite (implicit autograd) {composite}"
            runs = f"{short(composite)} (implicit autograd)"
        else:
            runs = short(what)
        # A wrapper runs the op again below its key (its redispatch continues the compact
        # line); a decomposition above autograd (implicit Composite, the sparse kernels at
        # AutogradSparse) runs other ops instead.
        redispatches = not runs.endswith("(implicit autograd)") and \
            key != DispatchKey.AutogradSparse
        hop("dispatch", f"{name} -> {what}", code_where(kernel),
            {"key": name, "runs": runs, "wrapper": redispatches}, depth=state.depth + 1)
        out = self._nested(kernel, (ks,) + args)
        hop("result", describe(out), frame_where(1))
        return out

    def _nested(self, kernel, args):
        state.depth += 1
        state.masks.append(local_keys.snapshot())
        try:
            return kernel(*args)
        finally:
            state.masks.pop()
            state.depth -= 1


def _chosen(reg, args):
    """The name of the candidate a registry runs for `args` (for the profiler)."""
    first = reg.candidates[0]
    if first.dtypes is None and not first.contiguous and first.shape is None \
            and first.layout is None:
        return first.name              # unconstrained: every call's choice
    plan = reg.plan(args)
    return plan.candidates[0].name if plan.candidates else plan.note


def _bump_code():
    from tensorplay.dispatch import kernel_selection
    return kernel_selection.bump_written


watch = _Watch()


# ---- backward, node by node -------------------------------------------------------------
def _is_leaf_node(node):
    """AccumulateGrad (read by its attribute: autograd sits above this module)."""
    return getattr(node, "variable", None) is not None


def _edge_text(child, nr):
    if child is None:
        return "nowhere (that input does not require grad)"
    if _is_leaf_node(child):
        return f"AccumulateGrad of {leaf_phrase(child.variable._impl)}"
    return f"{child.name()} input {nr}"


def backward_node(task, node, grads):
    """Run one node of the engine (`task.evaluate`): profilers time it as a `backward`
    event; explain() gets its hops (the node, its formula, the gradients in, then out
    with the edge each travels)."""
    name = node.name()
    profilers = list(state.profilers)
    for p in profilers:
        p.begin(name, "backward")
    try:
        if not state.active:
            return task.evaluate(node, grads)
        return _explained_node(task, node, grads, name)
    finally:
        for p in profilers:
            p.end()


def _explained_node(task, node, grads, name):
    hop("node", f"{name}" + (f" (backward of {node.OP})" if node.OP else ""),
        code_where(type(node)), {"node": name})
    if node.OP:
        doc = (type(node).__doc__ or "").split("\n\n", 1)
        formula = "; ".join(line.strip() for line in doc[1].strip().splitlines()) \
            if len(doc) > 1 else ""
        hop("formula", formula, formula_where(node.OP))
    for i, g in enumerate(grads or ()):
        hop("grad in", f"[{i}] {describe(g) if g is not None else 'None'}",
            frame_where(2), _grad_data(g))
    if _is_leaf_node(node):
        outs = _accumulate_in_one_line(task, node, grads)
    else:
        state.depth += 1
        try:
            outs = _with_helper_calls(task.evaluate, node, grads)
        finally:
            state.depth -= 1
    if outs is not None:
        for i, (g, (child, nr)) in enumerate(zip(outs, node.next_functions)):
            data = _grad_data(g)
            data["edge"] = _edge_text(child, nr)
            hop("grad out", f"[{i}] {describe(g) if g is not None else 'None'} -> "
                f"{data['edge']}", frame_where(2), data)
    elif grads is not None:
        hop("skip", "not run: no gradient arrives or nothing it leads to is needed",
            frame_where(2))
    return outs


# ---- formula helpers (sum_to, ...) as hops ------------------------------------------------
class _HelperCalls:
    """The profile function (`sys.setprofile`) set while a backward node runs under
    explain(): a call of a formula helper becomes a `helper` hop, `sum_to(grad=float32[2,
    3], sizes=(3,))`, that opens a block as an op call does (the ops it runs nest under
    it, its `result` closes it). It observes only; the helpers are called as always."""

    def __init__(self):
        self.running = []       # the frames of the helpers entered and not yet returned

    def __call__(self, frame, event, arg):
        if event == "call" and is_formula_helper(frame.f_code):
            code = frame.f_code
            where = f"{repo_path(code.co_filename)}:{code.co_firstlineno} {code.co_qualname}"
            names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
            given = ", ".join(f"{n}={describe(frame.f_locals.get(n))}" for n in names)
            hop("helper", f"{code.co_name}({given})", where,
                {"helper": code.co_name, "compact": f"{code.co_name}({given})"})
            state.depth += 1
            self.running.append((frame, where))
        elif event == "return" and self.running and self.running[-1][0] is frame:
            where = self.running.pop()[1]
            state.depth -= 1
            hop("result", describe(arg), where)     # (None when the helper raised)


def _with_helper_calls(run, *args):
    """`run(*args)` with the formula helpers it calls reported as hops. Not while another
    profile function is set (a profiler, a debugger): that one is left alone."""
    if sys.getprofile() is not None:
        return run(*args)
    calls = _HelperCalls()
    sys.setprofile(calls)
    try:
        return run(*args)
    finally:
        sys.setprofile(None)
        while calls.running:                 # (a return the profile did not see)
            calls.running.pop()
            state.depth -= 1


# ---- AccumulateGrad in one line ------------------------------------------------------------
# The ops `AccumulateGrad._accumulate` runs on `.grad` (autograd/node.py), by what they mean
_ACCUMULATIONS = {"clone": "first gradient: cloned",
                  "add_.Tensor": "added to the .grad there",
                  "add.Tensor": "added: .grad becomes .grad + gradient, a tensor with a "
                                "history (create_graph)"}


def _accumulate_in_one_line(task, node, grads):
    """Run a leaf's AccumulateGrad with its hops held back, then report the accumulation
    as one `accum` hop, `into .grad of leaf w (first gradient: cloned)`, in place of the
    op it ran on `.grad` (its call, key set, kernel, in both forms; the full form keeps
    the route, `clone: CPU -> cpu_kernels.copy.clone`). Other ops it ran (a tensor hook's)
    are reported as they came. If it raises, every hop held back is reported."""
    outer = state.folded
    held = state.folded = []
    state.depth += 1
    try:
        outs = task.evaluate(node, grads)
    except BaseException:
        state.folded = outer
        state.depth -= 1
        for h in held:
            _report(h)
        raise
    state.folded = outer
    state.depth -= 1
    blocks = _blocks(held, state.depth + 1)
    found = next((i for i, b in enumerate(blocks)
                  if b[0].kind == "call" and b[0].data.get("op") in _ACCUMULATIONS), None)
    phrase = leaf_phrase(node.variable._impl)
    if found is None:
        what, route = "nothing accumulated: the leaf was detached after the graph was " \
            "built", None
    else:
        what = _ACCUMULATIONS[blocks[found][0].data["op"]]
        route = first_route(blocks[found])
    text = f"into .grad of {phrase} ({what})"
    full = f"into .grad of {phrase} ({what}; {route})" if route else text
    before = blocks[:found] if found is not None else blocks
    after = blocks[found + 1:] if found is not None else []
    for h in [h for b in before for h in b]:
        _report(h)
    _report(Hop(state.depth, "accum", full, code_where(type(node)), {"compact": text}))
    for h in [h for b in after for h in b]:
        _report(h)
    return outs


def _blocks(hops, depth):
    """`hops` cut where a hop at `depth` opens a block (a call at the node's own level)."""
    blocks = []
    for h in hops:
        if not blocks or (h.depth == depth and h.kind in ("call", "helper")):
            blocks.append([])
        blocks[-1].append(h)
    return blocks


def _grad_data(g):
    impl = getattr(g, "_impl", None)
    if impl is None:
        return {"shape": None, "dtype": None}
    return {"shape": tuple(impl.sizes), "dtype": impl.dtype.name}


# ---- listeners --------------------------------------------------------------------------
def _update():
    state.active = bool(state.sinks)
    state.watch = watch if state.sinks or state.profilers else None
    # The front doors' one test: while anything listens they take the full path (no
    # skipped autograd hop; gen_functional.py), so every hop is seen.
    observers.active = bool(state.sinks or state.profilers)
    # Hop texts are made once for every sink: the innermost block names the leaves.
    state.names = next((s.names for s in reversed(state.sinks)
                        if getattr(s, "names", None) is not None), None)


def listen(sink):
    """Report every hop to `sink` (an explain block: `emit(hop)`)."""
    if not state.sinks:
        state.masks = [local_keys.snapshot()]    # TLS changes are reported from here on
    state.sinks.append(sink)
    _update()


def unlisten(sink):
    state.sinks.remove(sink)
    _update()


def listen_profiler(profiler):
    """Report what ran to `profiler`: `note(key, kernel)` per dispatch step, and
    `begin(name, "backward")` / `end()` around each backward node."""
    state.profilers.append(profiler)
    _update()


def unlisten_profiler(profiler):
    state.profilers.remove(profiler)
    _update()


class explain:
    """Context manager: log every hop of every op call inside it, forward and backward.

    Two forms of the same log:

    - full (the default): every hop, printed to `file` (stdout by default) as it
      happens: the call with its arguments, the key set, each slot fallen through or
      run, the registry's candidates and cache, the kernel, the result; backward node by
      node with its formula, the gradients in and out and the edges they travel.
    - compact (`explain(compact=True)`, or `.compact()` of any block): one line per op
      call, `add.Tensor(a, b, 1)  AutogradCPU -> autograd_wrappers.add_Tensor  |  CPU ->
      cpu_kernels.pointwise.add`, calls made inside a wrapper or kernel indented below
      (tensorplay/dispatch/explain_compact.py). Printed a top-level call (or backward
      node) at a time, once it has ended.

    In both, leaves are named after the variables they are bound to in the code that
    opened the block (or called the op): `mul.Tensor(w: float32[3] requires_grad, 2)`,
    `AccumulateGrad of leaf w`, `model.fc1.weight` for a module's parameter; unnamed
    ones are `leaf 0`, `leaf 1`... (tensorplay/dispatch/leaf_names.py). In backward, a
    formula helper's call (`helper sum_to(grad=float32[2, 3], sizes=(3,))`) opens a
    block with the ops it runs, and AccumulateGrad is one `accum` line, `into .grad of
    leaf w (first gradient: cloned)`: the clone (or add) it runs on `.grad` is folded
    into that line (the full form keeps its route: `clone: CPU -> cpu_kernels.copy.clone`).

    `.lines` (`.text`) keep the full form's lines, `.records` the hops as `Hop`s: each
    unpacks as `(depth, kind, text)` and has `.where` (`file:line function`) and `.data`.
    `file=False` collects without printing; so does `records=True`, and `.rows()` gives
    the records as dicts, one per hop, for a table (`.table()` as text)."""

    def __init__(self, file=None, records=False, compact=False):
        self.file = False if records and file is None else file
        self.form = "compact" if compact else "full"
        self.lines = []
        self.records = []
        self.names = None
        self._unprinted = 0          # compact form: records not printed yet

    def emit(self, h):
        line = h.line
        self.lines.append(line)
        if self.form == "compact" and h.depth == 0 and h.kind in ("call", "node"):
            self._print_compact()    # a top-level block starts: the ones before it ended
        self.records.append(h)
        if self.file is not False and self.form == "full":
            print(line, file=self.file or sys.stdout)

    def compact(self):
        """The compact form of what the block recorded, as text (one line per call)."""
        return "\n".join(map(str, compact_lines(self.records)))

    def _print_compact(self):
        if self.file is False or self._unprinted == len(self.records):
            return
        for line in compact_lines(self.records[self._unprinted:]):
            print(line, file=self.file or sys.stdout)
        self._unprinted = len(self.records)

    def rows(self):
        return [h.as_row() for h in self.records]

    def table(self, kinds=None, width=60):
        """The records as a text table: kind, text (indented by depth), where."""
        out = [f"{'kind':<11}{'what':<{width}}  where"]
        for h in self.records:
            if kinds is not None and h.kind not in kinds:
                continue
            text = "  " * h.depth + h.text
            if len(text) > width:
                text = text[:width - 3] + "..."
            out.append(f"{h.kind:<11}{text:<{width}}  {h.where or ''}")
        return "\n".join(out)

    def __enter__(self):
        self.names = LeafNames(sys._getframe(1))    # the frame of the `with` statement
        listen(self)
        return self

    def __exit__(self, *exc):
        unlisten(self)
        self.names.close()           # (keeps the names given, drops the frame)
        if self.form == "compact":
            self._print_compact()

    @property
    def text(self):
        return "\n".join(self.lines)
