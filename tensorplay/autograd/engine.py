"""The backward engine: run the graph from the outputs back to the leaves.

    loss.backward()  ==  backward((loss,), (ones_like(loss),))

1. *Discover*: walk the graph from the roots and count, for every node, how many
   edges point at it (its dependencies).
2. *Execute*: a node is ready when all its dependencies have delivered their
   gradients (summed in its input buffer). Ready nodes wait in a heap, newest first.
   Running a node (`_Task.evaluate`) = tensor hooks, pre-hooks, `apply`, post-hooks, a
   check of what it returned (`grad_validation.py`); then each returned gradient goes
   into the buffer of the node its edge points at. The loop is iterative: a 10,000-op
   chain needs no recursion.
3. `grad(outputs, inputs)` runs only the part of the graph that leads to `inputs`
   (the *needed* nodes) and *captures* the gradient arriving at each input instead of
   accumulating it into `.grad`.

Grad mode is on during the pass only with `create_graph=True`: the formulas are
TensorPlay ops, so then they record a graph of their own (higher-order gradients).
"""
from __future__ import annotations

import heapq

import numpy as np

from tensorplay import _tensor_factory as factory
from tensorplay._device import CPU
from tensorplay._impl import TensorImpl, impl_from_array
from tensorplay.autograd.anomaly_mode import anomaly_state, report_forward_stack
from tensorplay.autograd.api import retain_grad
from tensorplay.autograd.grad_mode import grad_state
from tensorplay.autograd.grad_validation import check_nan, validate_outputs
from tensorplay.autograd.node import (
    AccumulateGrad, count_restricted_pass, exec_state, grad_accumulator, gradient_edge,
    materialize_edges,
)
from tensorplay.dispatch import trace
from tensorplay.dispatch.keys import AUTOGRAD_MASK, DispatchKey
from tensorplay.dispatch.tls import ExcludeKeys, set_grad_mode
from tensorplay.errors import AutogradError

__all__ = ["backward", "grad"]

trace_state = trace.state

UNUSED_MESSAGE = ("One of the differentiated Tensors appears to not have been used in the "
                  "graph. Set allow_unused=True if this is the desired behavior.")

# `grad` of vmap's batched tensors: per-example gradients. vmap sits above the engine (its
# rules record graphs the engine runs), so the engine does not import it: the function is
# installed here by tensorplay/func/__init__.py (batched_grad.py), as the func package
# loads, which is before any batched tensor can exist.
batched_grad = None
grads_batched = None        # is_grads_batched=True: the backward run under vmap


# ---- public entry points ---------------------------------------------------------------
def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate d(tensors)/d(leaf) into `.grad` of every leaf (or of `inputs` only)."""
    tensors = _as_tuple(tensors)
    grads = _make_grads(tensors, grad_tensors)
    if retain_graph is None:
        retain_graph = create_graph
    targets = None
    if inputs is not None:
        inputs = _as_tuple(inputs)
        if not inputs:
            raise AutogradError("'inputs' argument to backward() cannot be empty.")
        targets = []
        for t in inputs:
            if t._impl.grad_fn is not None:
                retain_grad(t)    # a non-leaf input gets its .grad like a retained one
            edge = gradient_edge(t)
            if edge[0] is None:
                raise AutogradError("One of the differentiated Tensors does not require grad")
            targets.append(edge)
    run_backward(_root_edges(tensors), grads, retain_graph, create_graph, targets,
                 accumulate=True)


def tensor_backward(tensor, gradient, retain_graph, create_graph, inputs):
    """`tensor.backward(gradient, retain_graph, create_graph, inputs)`.

    Every training step calls it as `loss.backward()`: no argument, a 0-dim CPU loss
    with a history. That call starts the pass here, with the seed `_ones_like` makes for
    it and the one root edge `_root_edges` finds (its grad_fn and output_nr), without
    the tuples and the checks of the general arguments. Anything else takes `backward`."""
    impl = tensor._impl
    if (gradient is None and retain_graph is None and create_graph is False and inputs is None
            and type(impl) is TensorImpl and not impl.sizes and impl._device is CPU
            and impl.requires_grad and impl.grad_fn is not None):
        run_backward([(impl.grad_fn, impl.output_nr)], [_ones_like(tensor)], False, False,
                     None, True)
        return
    backward((tensor,), None if gradient is None else (gradient,), retain_graph, create_graph,
             inputs=inputs)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """d(outputs)/d(inputs), returned (not accumulated into .grad): one per input.

    is_grads_batched: the first dim of every grad_output is a batch of them; the result
    is a batch of vector-Jacobian products, from one backward pass run under vmap."""
    outputs = _as_tuple(outputs)
    inputs = _as_tuple(inputs)
    if is_grads_batched:
        grad_outputs = _check_batched_grads(outputs, grad_outputs)
        if retain_graph is None:
            retain_graph = create_graph
        return grads_batched(grad, outputs, inputs, grad_outputs, retain_graph, create_graph,
                             allow_unused, materialize_grads)
    if any(hasattr(t._impl, "bdim") for t in outputs + inputs):
        # Batched tensors of vmap: per-example gradients from their physical tensors.
        return batched_grad(grad, outputs, inputs, grad_outputs, retain_graph, create_graph,
                            allow_unused, materialize_grads)
    if allow_unused is None:
        allow_unused = materialize_grads
    grads = _make_grads(outputs, grad_outputs)
    if retain_graph is None:
        retain_graph = create_graph
    targets = []
    for t in inputs:
        if not t._impl.requires_grad:
            raise AutogradError("One of the differentiated Tensors does not require grad")
        targets.append(gradient_edge(t))
    results = run_backward(_root_edges(outputs), grads, retain_graph, create_graph, targets,
                           accumulate=False)
    for i, r in enumerate(results):
        if r is None:
            if materialize_grads:
                results[i] = factory.zeros_like(inputs[i])
            elif not allow_unused:
                raise AutogradError(UNUSED_MESSAGE)
    return tuple(results)


def _check_batched_grads(outputs, grad_outputs):
    """is_grads_batched: each grad_output is (batch, *output.shape) (PyTorch's message)."""
    grads = _as_tuple(grad_outputs) if grad_outputs is not None else (None,) * len(outputs)
    if len(grads) != len(outputs):
        raise AutogradError(f"got {len(outputs)} tensors and {len(grads)} gradients")
    for k, (out, g) in enumerate(zip(outputs, grads)):
        if g is None:
            continue
        if g.dim() == 0 or tuple(g.shape[1:]) != tuple(out.shape):
            raise AutogradError(
                f"If `is_grads_batched=True`, we interpret the first dimension of each "
                f"grad_output as the batch dimension. The sizes of the remaining dimensions "
                f"are expected to match the shape of corresponding output, but a mismatch "
                f"was detected: grad_output[{k}] has a shape of "
                f"tp.Size({list(g.shape[1:])}) and output[{k}] has a shape of "
                f"tp.Size({list(out.shape)}). If you only want some tensors in "
                f"`grad_output` to be considered batched, consider using vmap.")
    return grads


def _as_tuple(x):
    if isinstance(x, (tuple, list)):
        return tuple(x)
    return (x,)


def _make_grads(outputs, grads):
    """The gradient each output starts with: given, or 1 for a scalar output."""
    if grads is None:
        grads = (None,) * len(outputs)
    else:
        grads = _as_tuple(grads)
    if len(grads) != len(outputs):
        raise AutogradError(f"got {len(outputs)} tensors and {len(grads)} gradients")
    if len(outputs) == 1 and grads[0] is None:
        # `loss.backward()`: one output, no gradient given. The loop below for it: the
        # seed when the output requires grad (a scalar only), else None.
        impl = outputs[0]._impl
        if not impl.requires_grad:
            return [None]
        if impl.numel() != 1:
            raise AutogradError("grad can be implicitly created only for scalar outputs")
        return [_ones_like(outputs[0])]
    out = []
    for i, (t, g) in enumerate(zip(outputs, grads)):
        if g is None:
            if t._impl.requires_grad:
                if t._impl.numel() != 1:
                    raise AutogradError("grad can be implicitly created only for scalar outputs")
                g = _ones_like(t)
        elif getattr(g, "_impl", None) is None:
            raise TypeError(f"gradients can be either Tensors or None, but got "
                            f"{type(g).__name__}")
        elif g._impl.sizes != t._impl.sizes:
            raise AutogradError(f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} "
                               f"and output[{i}] has a shape of {t.shape}.")
        out.append(g)
    return out


def _ones_like(t):
    """The implicit gradient of a scalar output. A tensor subclass (the Python key) gets
    one of its own class, from ops its handler sees: creation functions are not ops."""
    impl = t._impl
    if type(impl) is TensorImpl and impl.device is CPU:
        # Every `loss.backward()` makes this seed: straight from NumPy it is the tensor
        # `ones_like` makes, without its argument parsing and checks (a one-element
        # tensor needs no allocation limit). A 0-dim loss, the usual one, skips np.ones's
        # Python wrapper too.
        sizes, dtype = impl.sizes, impl.dtype
        array = np.array(1, dtype.np) if not sizes else np.ones(sizes, dtype.np)
        return factory.wrap(impl_from_array(array, dtype, CPU, grad_state.inference))
    if impl.keys >> DispatchKey.Python & 1:
        with ExcludeKeys(AUTOGRAD_MASK):
            return t.clone().fill_(1)
    return factory.ones_like(t)


def _root_edges(tensors):
    edges = []
    for i, t in enumerate(tensors):
        edge = gradient_edge(t)
        if edge[0] is None:
            raise AutogradError(f"element {i} of tensors does not require grad and does not "
                               f"have a grad_fn")
        edges.append(edge)
    return edges


# ---- the pass --------------------------------------------------------------------------
def run_backward(roots, root_grads, retain_graph, create_graph, targets, accumulate):
    """Run the graph from `roots` (edges) seeded with `root_grads`.

    `targets` (edges, or None for "every leaf") restricts the pass to what leads to
    them; with `accumulate=False` the gradients arriving there are returned."""
    root_nodes = list(dict.fromkeys(fn for fn, _ in roots))     # once each, in order
    deps, parents = _discover(root_nodes, with_parents=targets is not None)
    needed = None
    captures = None     # grad(): node -> [(index in the result, input_nr)]
    if targets is not None:
        needed = _needed_nodes(targets, parents, deps, root_nodes)
        if not accumulate:
            captures = {}
            for i, (fn, nr) in enumerate(targets):
                captures.setdefault(fn, []).append((i, nr))
    if targets is None and accumulate and not retain_graph:
        task = _PLAIN_TASK      # `loss.backward()`: nothing per pass to keep
    else:
        task = _Task(retain_graph, needed, captures, accumulate, len(targets or ()))
    buffers = {}
    for (fn, nr), g in zip(roots, root_grads):
        _add_to_buffer(buffers, fn, nr, g)
    # The nodes whose gradients are complete, newest first (PyTorch's order: the most
    # recent activations are freed first).
    ready = [(-fn._seq, fn) for fn in root_nodes if fn not in deps]
    heapq.heapify(ready)

    enabled = set_grad_mode(create_graph)
    # Almost always None on both sides (a grad() pass restricts it): thread-local
    # writes only when it changes.
    outer_needed = exec_state.needed
    if needed is not None:
        count_restricted_pass(1)     # before `needed` is set (node.restricted_passes)
    if outer_needed is not needed:
        exec_state.needed = needed
    try:
        while ready:
            node = heapq.heappop(ready)[1]
            grads = buffers.pop(node, None)
            if trace_state.watch is None:
                outs = task.evaluate(node, grads)
            else:                                       # explain() or a profiler
                outs = trace.backward_node(task, node, grads)
            for i, (child, nr) in enumerate(node._edges):  # (made whole by _discover)
                if child is None or (needed is not None and child not in needed):
                    continue
                if outs is not None and outs[i] is not None:
                    _add_to_buffer(buffers, child, nr, outs[i])
                left = deps[child] - 1
                deps[child] = left
                if left == 0:
                    heapq.heappush(ready, (-child._seq, child))
            # Drop this loop's references to the gradients: a leaf's gradient held only
            # by its buffer may become its .grad uncopied (AccumulateGrad.apply_owned).
            outs = grads = None
    finally:
        set_grad_mode(enabled)
        if outer_needed is not needed:
            exec_state.needed = outer_needed
        if needed is not None:
            count_restricted_pass(-1)    # after `needed` is restored
    return task.captured


def _discover(root_nodes, with_parents):
    """Dependency counts of every node reachable from the roots (and, for a restricted
    pass, each node's parents, to search backwards from the targets)."""
    deps = {}
    parents = {} if with_parents else None
    # (one root, the usual case: `in` a one-element list is one comparison, no set)
    roots = root_nodes if len(root_nodes) == 1 else set(root_nodes)
    stack = list(root_nodes)
    while stack:
        node = stack.pop()
        for child, _ in node._edges:
            if child is None:
                continue
            if type(child) is TensorImpl:
                # A leaf in the edge (node.input_edge): the node gets its
                # AccumulateGrad now, before anything reads its edges (every node of the
                # pass is walked here first), and the walk goes on with it.
                materialize_edges(node)
                child = grad_accumulator(child)     # the one just made (or kept) alive
            if with_parents:
                parents.setdefault(child, []).append(node)
            if child in deps:
                deps[child] += 1        # reached before: already on the stack or walked
            else:
                # First reached now: the nodes seen so far are the roots and the keys of
                # deps, so this is the `seen` set's test without a set of its own.
                deps[child] = 1
                if child not in roots:
                    stack.append(child)
    return deps, parents


def _needed_nodes(targets, parents, deps, root_nodes):
    """The targets that are reachable, and every node with a path to one of them."""
    reachable = [fn for fn, _ in targets if fn in deps or fn in root_nodes]
    needed = set(reachable)
    stack = list(needed)
    while stack:
        for parent in parents.get(stack.pop(), ()):
            if parent not in needed:
                needed.add(parent)
                stack.append(parent)
    return needed


def _add_to_buffer(buffers, node, nr, g):
    """Sum `g` into input `nr` of `node`'s buffer (one slot per forward output)."""
    buf = buffers.get(node)
    if buf is None:
        buf = buffers[node] = [None] * max(len(node._output_meta), nr + 1)
    elif nr >= len(buf):
        buf.extend([None] * (nr + 1 - len(buf)))
    old = buf[nr]
    buf[nr] = g if old is None else old + g


class _Task:
    """What one backward pass needs while it runs its nodes."""

    __slots__ = ("retain_graph", "needed", "captures", "accumulate", "captured")

    def __init__(self, retain_graph, needed, captures, accumulate, num_targets):
        self.retain_graph = retain_graph
        self.needed = needed
        self.captures = captures
        self.accumulate = accumulate
        self.captured = [None] * num_targets

    def should_execute(self, node):
        needed = self.needed
        if needed is None:
            return True
        if self.accumulate and type(node) is AccumulateGrad and node in needed:
            return True
        for child, _ in node._edges:
            if child is not None and child in needed:
                return True
        return False

    def evaluate(self, node, grads):
        """Run one node; returns its gradients (one per edge) or None if it did not run.

        In order: the tensor hooks (and retained .grad) of its outputs, the gradients a
        grad() call captures here, whether the pass needs it at all, its pre-hooks, zeros
        for outputs that got no gradient, `apply`, its post-hooks, the check of what it
        returned, and the release of what it saved. Each feature costs one test when not
        in use; its work is in a helper below."""
        if grads is None:
            grads = [None] * max(len(node._output_meta), 1)
        hooks = node._hooks
        # (a leaf's tensor hooks live on the leaf: AccumulateGrad.tensor_hooks)
        if hooks is not None or (type(node) is AccumulateGrad and node.leaf.hooks):
            _call_tensor_hooks(node, grads)
            if hooks is not None and hooks.retains_grad:
                _retain_grads(node, grads)
        if self.captures:
            for i, nr in self.captures.get(node, ()):
                self.captured[i] = grads[nr] if nr < len(grads) else None
        if self.needed is not None and not self.should_execute(node):
            return None
        missing = False     # one pass: no gradient at all skips the node, a missing
        present = False     # one is materialized below (a plain loop: no generator)
        for g in grads:
            if g is None:
                missing = True
            else:
                present = True
        if not present:
            return None
        if hooks is not None and hooks.pre:
            grads = _call_pre_hooks(node, grads)
            missing = True      # a hook may have returned None for a gradient
        if missing and node.materialize_grads:
            _materialize(node, grads)
        try:
            if type(node) is AccumulateGrad and (hooks is None or not hooks.post) \
                    and not trace_state.active:
                # The buffer is handed over (no post-hook reads it after): a leaf's
                # first gradient may become its .grad without a copy (_stealable). Not
                # inside explain(), whose hops keep the gradient to show it: it reports
                # the copy the full path makes. A profiler keeps none, so it times the
                # step an unobserved one runs (no clone events of its own making).
                g = None        # (this frame keeps no reference to the gradient)
                # It returns no gradient and saves nothing: nothing below applies.
                return node.apply_owned(grads)
            else:
                outs = node.apply(tuple(grads))
        except Exception:
            if anomaly_state.enabled:
                report_forward_stack(node)
            raise
        if type(outs) is not tuple:
            outs = tuple(outs)
        if hooks is not None and hooks.post:
            outs = _call_post_hooks(node, outs, grads)
        outs = validate_outputs(node, outs)
        if anomaly_state.enabled and anomaly_state.check_nan:
            check_nan(node, outs)
        if not self.retain_graph and node.releases_saved:
            node.release_saved()
        return outs


# The task of a pass with no targets, no retained graph, accumulating into `.grad` (every
# `loss.backward()`): it holds nothing that changes during a pass (captures and targets
# are None, so `captured` stays empty), so one is shared by all such passes, on any thread.
_PLAIN_TASK = _Task(False, None, None, True, 0)


def _call_pre_hooks(node, grads):
    for hook in list(node._hooks.pre.values()):
        new = hook(tuple(grads))
        if new is not None:
            grads = list(new)
    return grads


def _call_post_hooks(node, outs, grads):
    for hook in list(node._hooks.post.values()):
        new = hook(outs, tuple(grads))
        if new is not None:
            outs = tuple(new)
    return outs


def _call_tensor_hooks(node, grads):
    """Hooks registered on tensors (`t.register_hook`); a hook may replace the grad."""
    for nr in range(len(grads)):
        hooks = node.tensor_hooks(nr)
        if not hooks or grads[nr] is None:
            continue
        g = grads[nr]
        for hook in list(hooks.values()):
            new = hook(g)
            if new is not None:
                g = new
        grads[nr] = g


def _retain_grads(node, grads):
    for nr, ref in list(node._hooks.retains_grad.items()):
        impl = ref()
        g = grads[nr] if nr < len(grads) else None
        if impl is None or g is None:
            continue
        impl.grad = g.clone() if impl.grad is None else impl.grad + g


def _materialize(node, grads):
    """Zeros for outputs that got no gradient (a formula reads every grad it is given),
    or only for those its formulas read (`materialize_outputs`, set by the codegen)."""
    meta = node._output_meta
    positions = node.materialize_outputs
    for i in range(len(grads)) if positions is None else positions:
        if i < len(grads) and grads[i] is None and i < len(meta) and meta[i] is not None:
            sizes, dtype, device = meta[i]
            grads[i] = factory.zeros(sizes, dtype=dtype, device=device)
