"""Running a compiled guard set: one cache entry per guard set.

    GraphEntry   no gradient to compute: the lowered graph called on the tensors
    JointEntry   something requires grad: the lowered forward and backward graphs
                 (joint.py) inside one tp.autograd.Function, so `loss.backward()` runs
                 the compiled backward
    EagerEntry   a graph break in this guard set: the function runs eagerly

Each entry keeps the state tensors its graph takes (`free`) and checks, before a call,
that they are still where the function finds them and as they were (`valid`): a
parameter replaced, its requires_grad flipped, a module switched between train and
eval makes the entry stale and the function recompiles.
"""
from __future__ import annotations

import types

import tensorplay as tp
from tensorplay.autograd.function import Function
from tensorplay.compiler.outputs import output_builder
from tensorplay.compiler.reachable import slot_holds


class Entry:
    kind = "graph"

    def __init__(self, guards, free_slots, modules, values=()):
        self.guards = guards            # readable lines, for explain()
        self.free_slots = free_slots    # [(tensor, container, key, requires_grad, sizes, dtype)]
        self.free = [s[0] for s in free_slots]
        self.modules = modules          # [(module, training)]
        self.values = values            # [(container, key, value)] Python values read
        self.guard_source, self.valid = state_guard(free_slots, modules, values)


def state_guard(free_slots, modules, values=()):
    """The check of the state an entry reads, as one generated function (torch._dynamo
    writes its guards as code too): a loop over the slots, unpacking each, costs several
    times more than the same tests written out. Returns (source, function)."""
    names = {"slot_holds": slot_holds, "CellType": types.CellType}
    tests = []
    for i, (t, container, key, requires_grad, sizes, dtype) in enumerate(free_slots):
        names[f"t{i}"], names[f"d{i}"] = t, dtype
        tests.append(f"t{i}._impl.requires_grad is {requires_grad!r}")
        tests.append(f"t{i}._impl.sizes == {sizes!r}")
        tests.append(f"t{i}._impl.dtype is d{i}")
        if container is None:
            continue
        names[f"c{i}"] = container
        if type(container) is types.CellType:
            tests.append(f"c{i}.cell_contents is t{i}")
        elif isinstance(container, dict) and isinstance(key, str):
            tests.append(f"c{i}.get({key!r}) is t{i}")
        else:
            names[f"k{i}"] = key
            tests.append(f"slot_holds(c{i}, k{i}, t{i})")
    for i, (m, training) in enumerate(modules):
        names[f"m{i}"] = m
        tests.append(f"m{i}.training is {training!r}")
    for i, (container, key, value) in enumerate(values):
        names[f"v{i}"], names[f"vk{i}"], names[f"vt{i}"] = container, key, type(value)
        names[f"vv{i}"] = value           # by name: repr(inf) is not Python
        read = f"v{i}.cell_contents" if type(container) is types.CellType else \
            f"v{i}.get(vk{i})"
        same = f"{read} != {read}" if value != value else f"{read} == vv{i}"   # nan
        tests.append(f"type({read}) is vt{i} and {same}")
    body = " and\n            ".join(tests) or "True"
    source = f"def valid():\n    return ({body})\n"
    exec(compile(source, "<tp.compile state guard>", "exec"), names)
    return source, names["valid"]


class EagerEntry(Entry):
    """A guard set with a graph break: eager from then on (see frontend.py's docstring)."""
    kind = "eager"

    def __init__(self, guards, reasons):
        super().__init__(guards, [], [])
        self.reasons = reasons
        self.valid = _always

    def run(self, fn, args, kwargs, tensors):
        return fn(*args, **kwargs)


def _always():
    return True


class GraphEntry(Entry):
    def __init__(self, guards, free_slots, modules, values, graph, compiled, spec):
        super().__init__(guards, free_slots, modules, values)
        self.graph = graph
        self.compiled = compiled
        self.build = output_builder(spec)
        placeholders = {p.name for p in graph.placeholders}
        self.returns_input = any(getattr(o, "name", None) in placeholders
                                 for o in graph.outputs)

    def graphs(self):
        return [("forward", self.graph, self.compiled)]

    def run(self, fn, args, kwargs, tensors):
        outs = self.compiled(*tensors, *self.free)
        if self.returns_input:
            # Nothing this graph returns requires grad (else it would be a JointEntry),
            # but an alias lowers to its input (`x.detach()` is `x`): hand back a detached
            # alias instead, as eager does.
            outs = [o.detach() if o.requires_grad else o for o in outs]
        return self.build(outs)


class JointEntry(Entry):
    kind = "joint"

    def __init__(self, guards, free_slots, modules, values, joint, forward, backward, spec,
                 differentiable):
        super().__init__(guards, free_slots, modules, values)
        self.joint = joint
        self.forward = forward                  # lowered joint.forward
        self.backward = backward                # lowered joint.backward
        self.build = output_builder(spec)
        self.non_differentiable = [j for j in range(joint.num_outputs)
                                   if j not in differentiable]

    def graphs(self):
        return [("forward", self.joint.forward, self.forward),
                ("backward", self.joint.backward, self.backward)]

    def run(self, fn, args, kwargs, tensors):
        return self.build(CompiledGraphFunction.apply(self, *tensors, *self.free))


class CompiledGraphFunction(Function):
    """The forward graph and the backward graph as one autograd node."""

    @staticmethod
    def forward(ctx, entry, *inputs):
        outs = entry.forward(*inputs)
        n = entry.joint.num_outputs
        ctx.entry = entry
        ctx.set_materialize_grads(False)       # None: that output got no gradient
        ctx.save_for_backward(*outs[n:])
        user = list(outs[:n])
        if entry.non_differentiable:
            # Each non-differentiable output as a tensor of its own: the lowered graph may
            # hand back one tensor for several outputs, or an input itself (detach lowers
            # to an alias: `y, y.detach()`, `x.detach()`), and marking that shared tensor
            # would take requires_grad from the differentiable output or give it to the
            # detached one.
            for j in entry.non_differentiable:
                user[j] = user[j].detach()
            ctx.mark_non_differentiable(*[user[j] for j in entry.non_differentiable])
        return tuple(user)

    @staticmethod
    def backward(ctx, *grads):
        entry = ctx.entry
        joint = entry.joint
        out = [None] * (len(ctx.needs_input_grad) - 1)
        got = [grads[j] is not None for j in joint.diff_outputs]
        if not any(got):
            return (None, *out)
        tangents = []
        for j, (sizes, dtype, device) in zip(joint.diff_outputs, joint.output_meta):
            g = grads[j]
            tangents.append(g if g is not None else
                            tp.zeros(sizes, dtype=dtype, device=device))
        result = entry.backward(*ctx.saved_tensors, *tangents)
        for position, reaches, g in zip(joint.grad_inputs, joint.reaches, result):
            if any(got[k] for k in reaches):   # else no gradient reached it: None
                out[position] = g
        return (None, *out)
