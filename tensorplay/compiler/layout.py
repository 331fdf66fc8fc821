"""Where a fused group's results lie in memory: eager's layout rule, replayed.

Eager lays each pointwise result out like its inputs (`out_like` in
cpu_kernels/_common.py, `new_tensor_like` in triton_kernels/_launch.py: row-major when
the inputs all are, else `pointwise_strides`, TensorIterator's rule), so `x.t().exp()`
is transposed, and a chain passes its layout along from op to op. A fused group
computes its results without making the intermediate tensors, but the tensors it does
make must have the strides eager's would have (a later `view` depends on them, and a
reduction adds up in memory order). `LayoutPlan` replays the rule over the group's
nodes, from its inputs' sizes and strides, and keeps the answer per input layout: a
compiled loop asks again and again with the same layouts.
"""
from __future__ import annotations

from tensorplay._impl import contiguous_strides, is_contiguous_layout
from tensorplay.export.values import Value
from tensorplay.kernel_support.layout import pointwise_strides

CACHE_LIMIT = 256


class LayoutPlan:
    """For a group: the strides eager would give each of `wanted` (value names)."""

    def __init__(self, group, wanted):
        position = {v.name: ("input", i) for i, v in enumerate(group.inputs)}
        self.steps = []             # (result shape, [where each tensor argument is])
        nodes = group.nodes[:-1] if group.tail else group.nodes
        for k, node in enumerate(nodes):
            refs = [position[a.name] for a in node.args if isinstance(a, Value)]
            self.steps.append((tuple(node.outputs[0].shape), refs))
            position[node.outputs[0].name] = ("node", k)
        self.wanted = [position[name] for name in wanted]
        self.cache = {}

    def strides(self, inputs):
        """The strides of each wanted value, for these input tensors."""
        key = tuple((t._impl.sizes, t._impl.strides) for t in inputs)
        got = self.cache.get(key)
        if got is None:
            got = self._replay(key)
            if len(self.cache) >= CACHE_LIMIT:
                self.cache.clear()
            self.cache[key] = got
        return got

    def _replay(self, inputs):
        made = []
        for shape, refs in self.steps:
            args = [inputs[i] if kind == "input" else made[i] for kind, i in refs]
            made.append((shape, eager_rule(shape, args)))
        return [(inputs[i] if kind == "input" else made[i])[1] for kind, i in self.wanted]


def eager_rule(shape, args):
    """The strides eager gives a pointwise result of `shape` from its tensor arguments'
    (sizes, strides): out_like's shortcuts, then pointwise_strides."""
    if all(is_contiguous_layout(s, st) for s, st in args) or len(shape) < 2:
        return contiguous_strides(shape)
    if all(not x for _, st in args for x in st) and all(shape):
        return contiguous_strides(shape)
    return tuple(pointwise_strides(shape, args))
