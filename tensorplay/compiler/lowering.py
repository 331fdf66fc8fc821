"""Lowering: a captured Graph -> a Python function that computes it fast.

    cg = lower(graph, device="cpu")
    outputs = cg(*tensors)          # the placeholders' tensors, in order
    print(cg.source)                # the generated code
    cg.kernels                      # [(fused kernel name, [ops it fuses])]

The steps, each in a module of its own:

1. the graph passes (passes/: decompose Composite ops, fold constants, CSE, DCE);
2. pointwise fusion (passes/fusion.py), with the code generator of the device saying
   which ops it can fuse: NumPy for the CPU (codegen_cpu.py), Triton for cuda
   (codegen_triton.py);
3. the program: one line per node that calls the op's *kernel* directly. Eager runs a
   call through a front door (argument checks), the dispatcher (the key set, the
   autograd wrapper), and the kernel registry before the kernel; a captured graph's
   arguments are already checked and its tensors are plain, so the generated code
   looks the kernel up once, here (`OperatorHandle.route` for the device's backend
   key, what the dispatch loop ends at below autograd) and calls it by name. A fused
   group is one call of the function or Triton kernel its generator wrote.

The code runs with the autograd keys excluded, as the kernels under an autograd wrapper
do (`below_autograd`): the graph computes values; gradients are the frontend's joint
graph's business. A call whose tensors are not what the code was written for (another
device, a tensor subclass, sparse, another dtype or shape) takes the reference path
instead: every node's op called through the dispatcher, as `run_graph` does.
"""
from __future__ import annotations

import keyword
import linecache
import math
import re
from itertools import count

import tensorplay as tp
from tensorplay.compiler import passes
from tensorplay.compiler.passes.fusion import FusedGroup, fuse_pointwise
from tensorplay.compiler.passes.rewrite import graph_has_symints, tags, values_in
from tensorplay.dispatch.kernel_selection import registry_version
from tensorplay.dispatch.keys import AUTOGRAD_MASK, REQUIRES_GRAD, DispatchKey
from tensorplay.dispatch.tls import local_keys
from tensorplay.errors import NoKernelError
from tensorplay.export.program import run_graph
from tensorplay.export.values import SymInt, Value

_generated = count()


class CompiledGraph:
    """The lowered graph: call it with the placeholders' tensors; `.source` is the
    generated code, `.kernels` the fused kernels and the ops each one fuses, `.graph`
    the graph after the passes, `.schedule` its nodes and fused groups in run order."""

    def __init__(self, graph, optimized, schedule, fn, source, kernels, device):
        # The code calls the kernels registered when it was written: a registration
        # since (registry_version() moved on) is the frontend's cue to lower again.
        self.registry_version = registry_version()
        self.original = graph
        self.graph = optimized
        self.schedule = schedule
        self.source = source
        self.kernels = kernels
        self.device = device
        self._fn = fn
        self._expected = [(p.dtype, tuple(p.shape)) for p in graph.placeholders]
        self._dynamic = _dynamic_shapes(graph)
        self._keys = 1 << _backend_key(device)

    def fits(self, tensors):
        """Are these the tensors the code was written for? (Plain dense tensors on the
        device, the dtypes and, for a static graph, the shapes of the capture.)"""
        if len(tensors) != len(self._expected):
            return False
        plain = ~(AUTOGRAD_MASK | REQUIRES_GRAD)
        for t, (dtype, shape) in zip(tensors, self._expected):
            impl = getattr(t, "_impl", None)
            if impl is None or impl.keys & plain != self._keys or impl.dtype is not dtype:
                return False
            if not self._dynamic and impl.sizes != shape:
                return False
        return True

    def __call__(self, *tensors):
        if not self.fits(tensors):
            return _reference(self.original, tensors)
        return self._fn(*tensors)

    def __repr__(self):
        return (f"CompiledGraph({len(self.graph.nodes)} ops, {len(self.kernels)} fused "
                f"kernels, {self.device})")


def _reference(graph, tensors):
    masks = local_keys.masks
    saved = masks[1]
    masks[1] = saved | AUTOGRAD_MASK
    try:
        return run_graph(graph, list(tensors))
    finally:
        masks[1] = saved


def _backend_key(device):
    return DispatchKey.CUDA if tp.device(device).type == "cuda" else DispatchKey.CPU


def lower(graph, *, device="cpu", optimize=True, fuse=True):
    """`graph` (a captured Graph) as a CompiledGraph for `device` ('cpu' or 'cuda').
    `optimize=False` skips the graph passes, `fuse=False` the fusion (both for study)."""
    device = tp.device(device)
    if device.type == "cuda":
        from tensorplay.compiler import codegen_triton as backend
    else:
        from tensorplay.compiler import codegen_cpu as backend

    def fusible_parts(parts):
        # a decomposition is worth taking when its parts fuse (views cost nothing)
        return all(n.func.is_view or "view" in tags(n) or backend.fusible(n, parts.constants)
                   for n in parts.nodes)
    optimized = passes.optimize(graph, device.type, fusible_parts) if optimize else graph
    if fuse and not _dynamic_shapes(optimized):
        constants = optimized.constants
        schedule = fuse_pointwise(optimized, lambda node: backend.fusible(node, constants),
                                  lambda node: backend.compute_dtype(node, constants),
                                  backend.takes_tail)
    else:
        schedule = list(optimized.nodes)
    writer = ProgramWriter(optimized, device, backend)
    source, namespace = writer.write(schedule)
    filename = f"<tp.compile generated {next(_generated)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), namespace)
    kernels = [(item.name, item.ops) for item in schedule if isinstance(item, FusedGroup)]
    # (the names after writing: equal groups share one generated kernel)
    return CompiledGraph(graph, optimized, schedule, namespace["compiled_graph"], source,
                         kernels, device)


def _constants_made_per_call(graph):
    """The constants each call must start from a copy of, as eager makes them anew on
    each call: those the graph writes in place (through a view too: `c[0].add_(x)`),
    and those a returned view shares (the caller may write `c[0:2]`, which would
    change the next call's c). A constant returned as it is gets a copy at the
    return instead."""
    roots = graph.memory_roots()
    returned = {roots[v.name] for v in values_in(list(graph.outputs)) if v.name in roots}
    return set(graph.mutated_constants()) | (returned & set(graph.constants))


def _dynamic_shapes(graph):
    if graph_has_symints(graph):
        return True
    shapes = [p.shape for p in graph.placeholders] + \
        [v.shape for n in graph.nodes for v in n.outputs if v is not None]
    return any(isinstance(s, SymInt) for shape in shapes for s in shape)


class ProgramWriter:
    """Writes the generated function: names, argument text, one line per node."""

    def __init__(self, graph, device, backend):
        self.graph = graph
        self.device = device
        self.backend = backend
        self.backend_key = _backend_key(device)
        self.namespace = {"_local_keys": local_keys, "_AUTOGRAD_MASK": AUTOGRAD_MASK}
        self.names = {}                 # Value name -> identifier in the code
        self.taken = set(self.namespace)
        self.bound = {}                 # id(object) -> its name in the namespace
        self.preamble = []              # top-level code: fused functions, kernels
        self.shared = {}                # a fused function's text -> its name
        self.placeholder_names = []

    # ---- names --------------------------------------------------------------------
    def name(self, value):
        """The identifier of Value `value` in the generated code."""
        got = self.names.get(value.name)
        if got is None:
            base = re.sub(r"\W", "_", value.name) or "v"
            if base[0].isdigit() or base.startswith("_") or keyword.iskeyword(base) \
                    or base in ("np", "tp", "tl", "triton", "compiled_graph"):
                base = "v_" + base
            got, k = base, 1
            while got in self.taken:
                got, k = f"{base}_{k}", k + 1
            self.taken.add(got)
            self.names[value.name] = got
        return got

    def bind(self, obj, hint):
        """Put `obj` in the generated code's namespace; its name there."""
        got = self.bound.get(id(obj))
        if got is None:
            got = self.fresh("_" + hint)
            self.namespace[got] = obj
            self.bound[id(obj)] = got
        return got

    def fresh(self, hint):
        """An identifier not used yet in the generated code, made from `hint`."""
        base = re.sub(r"\W", "_", hint)
        got, k = base, 1
        while got in self.taken:
            got, k = f"{base}_{k}", k + 1
        self.taken.add(got)
        return got

    def arg(self, a):
        """The source text of an argument."""
        if isinstance(a, Value):
            return self.name(a)
        if isinstance(a, SymInt):
            terms = [f"{c} * {self.placeholder_names[pos]}.shape[{dim}]" if c != 1 else
                     f"{self.placeholder_names[pos]}.shape[{dim}]"
                     for (pos, dim), c, _ in a.terms]
            if a.const or not terms:
                terms.append(str(a.const))
            return "(" + " + ".join(terms) + ")"
        if isinstance(a, list):
            return "[" + ", ".join(self.arg(b) for b in a) + "]"
        if isinstance(a, tuple):
            return "(" + ", ".join(self.arg(b) for b in a) + ("," if len(a) == 1 else "") + ")"
        if a is None or type(a) in (bool, int, str) or \
                (type(a) is float and math.isfinite(a)):
            return repr(a)
        return self.bind(a, "const")

    # ---- the program ----------------------------------------------------------------
    def write(self, schedule):
        graph = self.graph
        for p in graph.placeholders:
            self.placeholder_names.append(self.name(p))
        body = []
        fresh = _constants_made_per_call(graph)
        for cname, tensor in graph.constants.items():
            name = self.name(Value(cname, "constant", tensor.dtype, tensor.shape))
            if cname in fresh:
                body.append(f"{name} = {self.bind(tensor, name + '_captured')}.clone()")
            else:
                self.namespace[name] = tensor
        for item in schedule:
            if isinstance(item, FusedGroup):
                body += self.backend.emit_group(item, self)
            else:
                body += self.node_lines(item)
        # a constant returned as it is would be one tensor shared by every call's
        # caller (eager makes it anew each time): a copy
        outs = ", ".join(f"{self.arg(v)}.clone()" if isinstance(v, Value) and
                         v.kind == "constant" else self.arg(v) for v in graph.outputs)
        body.append(f"return [{outs}]")
        lines = [f"# Generated by tensorplay/compiler/lowering.py ({self.device.type}); "
                 f"{len(graph.nodes)} ops", ""]
        lines += self.preamble
        args = ", ".join(self.placeholder_names)
        lines.append(f"def compiled_graph({args}):")
        lines += ["    # the kernels run below autograd, as under an autograd wrapper",
                  "    _masks = _local_keys.masks",
                  "    _saved = _masks[1]",
                  "    _masks[1] = _saved | _AUTOGRAD_MASK",
                  "    try:"]
        lines += ["        " + b if b else "" for b in body]
        lines += ["    finally:", "        _masks[1] = _saved", ""]
        return "\n".join(lines), self.namespace

    def node_lines(self, node):
        """One node: its kernel called directly (or, where none can be, its op)."""
        fn, what = self.callee(node)
        call = f"{fn}({', '.join(self.arg(a) for a in node.args)})"
        outs = node.outputs
        if not node.returns_sequence and outs[0] is None:
            target = ""
        else:
            target = node.targets_text([self.name(v) if v is not None else "_"
                                        for v in outs]) + " = "
        types = ", ".join(v.type_text() for v in outs if v is not None)
        return [f"{target}{call}  # {node.func.name} -> {what}" + (f": {types}" if types else "")]

    def callee(self, node):
        """(the name of what the line calls, a comment saying what it is)."""
        slot = self.kernel_of(node)
        if slot is None:
            return self.bind(node.func, "op_" + node.func.name), "the op (dispatched)"
        return self.bind(slot, "k_" + node.func.name), _kernel_text(node.func.handle,
                                                                      self.backend_key, slot)

    def kernel_of(self, node):
        """The kernel a call of node's op on this device runs below autograd, or None
        when the line must call the op itself: an op that changes devices or makes
        tensors from nothing (no tensor argument to place it), or that has no kernel."""
        func = node.func
        if "device" in func.schema.arg_names or not values_in(list(node.args)):
            return None
        constants = self.graph.constants
        if all(v.kind == "constant" and constants[v.name].device.type != self.device.type
               for v in values_in(list(node.args))):
            return None
        try:
            return func.handle.route(1 << self.backend_key)
        except NoKernelError:
            return None


def _kernel_text(handle, key, slot):
    reg = handle.slot_registry(key)
    if reg is not None:
        return "kernel registry: " + ", ".join(c.name for c in reg.candidates)
    if slot is handle.kernels[DispatchKey.Composite]:
        return "Composite " + handle.kernel_names[DispatchKey.Composite]
    fn = getattr(slot, "__wrapped__", slot)
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', fn)}"
