"""The two ways an optimizer walks its parameters: one at a time, or all at once over flat
buffers ("foreach", PyTorch's multi-tensor path).

Every optimizer writes its update once, as a function of tensors (`grad`, the state buffers,
the parameter values when weight decay needs them) that returns the amount to add to the
parameters. `batches()` hands it either

    the loop:     one Batch per parameter; its tensors are the parameter's own
    foreach:      Batches over one group's parameters of one device and dtype, laid end to
                  end in flat 1-D tensors:

        grad             = cat([p0.grad.reshape(-1), p1.grad.reshape(-1), ...])  one copy
                           (a view where a batch lies within one parameter's gradient)
        state["exp_avg"] = [ p0's exp_avg | p1's exp_avg | ... ]                 one buffer
        self.state[p_i]["exp_avg"] = that buffer[off_i : off_i + n_i].view(p_i.shape)

The state stays per parameter for everyone who looks (state_dict(), load_state_dict(),
the loop): it is views into the flat buffers, so updating a buffer in place updates them.
A step costs the update's dozen ops once per batch, plus one `add_` per parameter to
scatter the result, instead of a dozen ops per parameter: for a model of many small
tensors (the digits CNN: 10 tensors, 10k numbers) the per-op overhead was the whole cost.

On the CPU a batch covers at most CHUNK_BYTES of each flat tensor (64k float32 numbers):
the update's dozen passes and their temporaries then stay in the L2 cache instead of
streaming 2.7 MB arrays from memory a dozen times (for a 670k-parameter MLP this is 3x
faster), and NumPy's temporaries are small enough that malloc reuses them instead of
mapping fresh pages each time. A batch may start or end inside a parameter: its
`segments` say which part of which parameter each stretch of the flat tensors is.

Both paths run the same elementwise ops in the same order, so they give the same numbers
bit for bit, and either can continue the other's state.

The flat buffers are built on the first foreach step and kept while they stay valid: the
same parameters have gradients and every state entry is still the view this module made.
Anything else (a loaded state_dict, a parameter that got no gradient this time) rebuilds
them, copying the current state in.
"""
from __future__ import annotations

from dataclasses import dataclass

import tensorplay as tp
from tensorplay._tensor import Tensor
from tensorplay.optim.optimizer import new_step_counter

__all__ = ["Batch", "batches", "CHUNK_BYTES"]

# How much of each flat tensor one CPU batch covers: 256 KiB, so the eight or so arrays an
# update touches (grad, state, temporaries) fit in a 2 MiB L2 cache together.
CHUNK_BYTES = 256 * 1024


@dataclass(frozen=True)
class Segment:
    """Flat elements [start, start + length) of a batch are elements
    [param_start, param_start + length) of `param` (in its row-major order)."""
    param: Tensor
    param_start: int
    length: int
    start: int
    whole: bool    # the segment is the whole parameter


@dataclass
class Batch:
    """The tensors one update call works on (see the module doc).

    Attributes:
        grad: the gradient (a parameter's own in the loop, flat in foreach: a view of one
            parameter's gradient, or a cat of several).
        state: state name -> buffer (the parameter's own, or a stretch of the flat buffer).
        fresh: per segment, whether its state was created for this step (zeros, or the
            optimizer's initial value): SGD starts its momentum from the gradient.
        step: the step count this update is (1 on the first step), None without a counter.
        segments: which parameter each stretch is (foreach); None in the loop, where the
            tensors are the parameter's own shape.
        param: the loop's parameter.
    """
    grad: Tensor
    state: dict
    fresh: list
    step: float | None = None
    segments: list | None = None
    param: Tensor | None = None
    _values: Tensor | None = None

    def values(self):
        """The parameters' values, as `grad` is laid out (weight decay adds them to it).
        A view of the parameters when the batch is one contiguous parameter's stretch (or
        the loop's parameter), else a copy: see store()."""
        if self._values is None:
            if self.segments is None:
                self._values = self.param
            else:
                parts = [_slice(_flat(s.param), s.param_start, s.length) for s in self.segments]
                self._values = parts[0] if len(parts) == 1 else tp.cat(parts)
        return self._values

    def store(self, values):
        """Write `values` (laid out as `grad`, updated in place by a fused step) into the
        parameters, unless values() was a view of them already."""
        if self.segments is None:
            return
        if len(self.segments) == 1 and self.segments[0].param.is_contiguous():
            return
        for piece, target in self._targets(values):
            target.copy_(piece)

    def _targets(self, flat):
        """Pairs (stretch of `flat`, the parameter part it belongs to), shaped alike."""
        for s in self.segments:
            if s.whole:
                shape = s.param.shape
                piece = flat.as_strided(shape, _contiguous_strides(shape),
                                        flat.storage_offset() + s.start)
                yield piece, s.param
            else:   # only contiguous parameters are split (see _FlatState.batches)
                yield _slice(flat, s.start, s.length), _slice(_flat(s.param), s.param_start,
                                                              s.length)

    def apply(self, update, scale=None):
        """param = param * scale (decoupled weight decay), then param += update."""
        if self.segments is None:
            if scale is not None:
                self.param.mul_(scale)
            self.param.add_(update)
            return
        for piece, target in self._targets(update):
            if scale is not None:
                target.mul_(scale)
            target.add_(piece)

    def copy_where_fresh(self, dst, src):
        """dst = src for the segments whose state is fresh (SGD's first momentum)."""
        for s, is_fresh in zip(self.segments or [None], self.fresh):
            if not is_fresh:
                continue
            if s is None:
                dst.copy_(src)
            else:
                _slice(dst, s.start, s.length).copy_(_slice(src, s.start, s.length))


def _contiguous_strides(shape):
    strides = []
    acc = 1
    for size in reversed(tuple(shape)):
        strides.append(acc)
        acc *= max(size, 1)
    return tuple(reversed(strides))


def _flat(t):
    """t as 1-D: a view when contiguous (as_strided is the cheapest view op), else a copy."""
    if t.is_contiguous():
        return t.as_strided((t.numel(),), (1,), t.storage_offset())
    return t.reshape(-1)


def _slice(flat, start, length):
    """flat[start : start + length] of a contiguous 1-D tensor, as one view op."""
    if start == 0 and length == flat.numel():
        return flat
    return flat.as_strided((length,), (1,), flat.storage_offset() + start)


def use_foreach(group):
    """foreach=None picks the flat path: on the CPU it runs the same elementwise passes,
    in cache-sized chunks, plus one copy of the gradients, and it saves the per-parameter
    overhead; on cuda it is PyTorch's default too. (A fused update on the CPU is one op per
    parameter already: batches(fused=True) gives it the loop for None.)"""
    foreach = group.get("foreach")
    return True if foreach is None else bool(foreach)


def batches(optimizer, group, names, *, has_step, initial=0.0, fused=False):
    """The Batches of one group's parameters that have gradients (see the module doc).

    Args:
        optimizer: its `state` holds (and receives) the per-parameter buffers.
        group: the parameter group; its "foreach" option picks the path.
        names: the state buffers this update uses, e.g. ("exp_avg", "exp_avg_sq").
        has_step: keep PyTorch's per-parameter `step` counter (a 0-d float tensor) and pass
            its new value as Batch.step.
        initial: the value a new buffer starts at (Adagrad's initial_accumulator_value), or
            a dict name -> value for buffers that start differently (Rprop's step sizes
            start at lr, its previous gradients at 0; a name not in it starts at 0).
        fused: the update is one op per batch that blocks for the cache itself
            (cpu_kernels/optim.py). Then foreach=None takes the loop for CPU parameters
            (the flat path would add only its gradient copies), and the flat path never
            splits a parameter between batches: one of CHUNK_BYTES or more is a batch of
            its own (views of its own tensors, no copy), smaller ones go together.
    """
    params = [p for p in group["params"] if p.grad is not None]
    if not params:
        return []
    if not use_foreach(group):
        return [_single(optimizer, p, names, has_step, initial) for p in params]
    single = []
    if fused and group.get("foreach") is None:
        cpu = [p for p in params if p.device.type == "cpu"]
        steps = _advanced_steps(optimizer, group, cpu) if has_step else [None] * len(cpu)
        single = [_single(optimizer, p, names, has_step, initial, step)
                  for p, step in zip(cpu, steps)]
        params = [p for p in params if p.device.type != "cpu"]
    by_kind = {}
    for p in params:
        by_kind.setdefault((str(p.device), p.dtype), []).append(p)
    out = single
    cache = optimizer.__dict__.setdefault("_flat_buffers", {})
    for kind, members in by_kind.items():
        key = (id(group), kind)
        flat = cache.get(key)
        if flat is None or not flat.valid(optimizer.state, members, names, has_step):
            flat = cache[key] = _FlatState(optimizer.state, members, names, has_step, initial)
        found = flat.batches(has_step, whole_params=fused)
        if found is None:   # step counts that differ: the loop handles each on its own
            out.extend(_single(optimizer, p, names, has_step, initial) for p in members)
        else:
            out.extend(found)
    return out


def _single(optimizer, p, names, has_step, initial, step=None):
    """The loop's Batch for one parameter, creating its state on its first step. `step`:
    its count for this step, already advanced (_advanced_steps), else advanced here."""
    if not names and not has_step:   # plain SGD keeps no state at all, as PyTorch's
        return Batch(grad=p.grad, state={}, fresh=[False], param=p)
    state = optimizer.state[p]
    if has_step and step is None:
        if "step" not in state:
            state["step"] = new_step_counter()
        step = state["step"].item() + 1
        state["step"].fill_(step)
    fresh = False
    for name in names:
        if name not in state:
            value = _initial(initial, name)
            state[name] = tp.full_like(p, value) if value else tp.zeros_like(p)
            fresh = True
    return Batch(grad=p.grad, state={n: state[n] for n in names}, fresh=[fresh], step=step,
                 param=p)


def _advanced_steps(optimizer, group, params):
    """The step counts of `params` (the fused loop's) after this step, advanced together,
    or None for each where they are counted one by one (_single). Counters made here are
    the 0-d views of one tensor of the group, as the flat path keeps them
    (_FlatState.steps), so that one add_ and one tolist() serve the whole group in place of
    an item() and a fill_ per parameter (10 of each a step for the digits CNN, about 30
    us). They are made on the group's first step only: a counter that exists is never
    replaced (a loaded or swapped-in state keeps its own tensors, which each step advances
    in place, as PyTorch's), so another set of parameters, or counters from elsewhere,
    take the one-by-one path."""
    state = optimizer.state
    cache = optimizer.__dict__.setdefault("_step_counters", {})
    counters = cache.get(id(group))
    if counters is None or not counters.valid(state, params):
        if any("step" in state.get(p, ()) for p in params):
            return [None] * len(params)
        counters = cache[id(group)] = _StepCounters(state, params)
    counters.steps.add_(1)
    return counters.steps.tolist()


class _StepCounters:
    """One group's new step counters as one 1-D tensor of zeros, each parameter's
    state["step"] a 0-d view of its element."""

    def __init__(self, state, params):
        self.ids = [id(p) for p in params]
        self.steps = tp.zeros((len(params),), dtype=new_step_counter().dtype)
        self.views = [self.steps[i] for i in range(len(params))]
        for p, view in zip(params, self.views):
            state[p]["step"] = view

    def valid(self, state, params):
        """The same parameters, each still counting with the view made here."""
        if [id(p) for p in params] != self.ids:
            return False
        for p, view in zip(params, self.views):
            entry = state.get(p)
            if entry is None or entry.get("step") is not view:
                return False
        return True


def _initial(initial, name):
    """The value buffer `name` starts at (see batches())."""
    return initial.get(name, 0.0) if isinstance(initial, dict) else initial


class _FlatState:
    """One group's state for one device and dtype as flat buffers, each parameter's entries
    being views into them (see the module doc)."""

    def __init__(self, state, params, names, has_step, initial):
        self.params = params
        self.ids = [id(p) for p in params]
        sizes = [p.numel() for p in params]
        self.offsets = [sum(sizes[:i]) for i in range(len(sizes))]
        self.total = sum(sizes)
        like = params[0]
        self.fresh = [p not in state or any(n not in state[p] for n in names) for p in params]
        self.buffers = {name: tp.full((self.total,), _initial(initial, name),
                                      dtype=like.dtype, device=like.device) for name in names}
        self.steps = None
        if has_step:
            old = [state[p]["step"] for p in params if p in state and "step" in state[p]]
            dtype = old[0].dtype if old else new_step_counter().dtype
            self.steps = tp.zeros((len(params),), dtype=dtype)
        self.views = []
        for i, (p, off) in enumerate(zip(params, self.offsets)):
            entry = state[p]
            views = {}
            if has_step:
                views["step"] = self.steps[i]
                if "step" in entry:
                    views["step"].copy_(entry["step"])
            for name in names:
                views[name] = self.buffers[name].as_strided(p.shape, _contiguous_strides(p.shape),
                                                            off)
                if name in entry:
                    views[name].copy_(entry[name])
            entry.update(views)
            self.views.append(views)
        self.empty = not names and not has_step
        if self.empty:   # plain SGD: nothing to keep, the dicts made above go again
            for p in params:
                if not state[p]:
                    del state[p]
        self._handed_fresh = False
        self._plans = {}

    def valid(self, state, params, names, has_step):
        """Still the same parameters, and every state entry still the view made here."""
        if [id(p) for p in params] != self.ids or set(names) != set(self.buffers):
            return False
        if has_step != (self.steps is not None):
            return False
        if self.empty:
            return True
        for p, views in zip(params, self.views):
            entry = state.get(p)
            if entry is None:
                return False
            for name, view in views.items():
                if entry.get(name) is not view:
                    return False
        return True

    def _plan(self, chunk):
        """[(start, stop, segments, per-name buffer stretches)] for chunks of `chunk`
        elements (cached: the state stretches are the same tensors every step)."""
        plan = self._plans.get(chunk)
        if plan is not None:
            return plan
        plan = []
        for start in range(0, self.total, chunk):
            stop = min(start + chunk, self.total)
            segments = []
            for p, off in zip(self.params, self.offsets):
                n = p.numel()
                lo, hi = max(start, off), min(stop, off + n)
                if lo < hi or (n == 0 and start <= off < stop):
                    segments.append(Segment(param=p, param_start=lo - off, length=hi - lo,
                                            start=lo - start, whole=(lo == off and hi == off + n)))
            stretches = {name: _slice(buf, start, stop - start)
                         for name, buf in self.buffers.items()}
            plan.append((start, stop, segments, stretches))
        self._plans[chunk] = plan
        return plan

    def _plan_whole(self, chunk):
        """Like _plan, but every batch holds whole parameters: one of at least `chunk`
        elements alone, smaller neighbours together until they reach `chunk`."""
        key = ("whole", chunk)
        plan = self._plans.get(key)
        if plan is not None:
            return plan
        groups, current = [], []
        for i, p in enumerate(self.params):
            if p.numel() >= chunk:
                if current:
                    groups.append(current)
                groups.append([i])
                current = []
                continue
            current.append(i)
            if sum(self.params[j].numel() for j in current) >= chunk:
                groups.append(current)
                current = []
        if current:
            groups.append(current)
        plan = []
        for members in groups:
            start = self.offsets[members[0]]
            stop = self.offsets[members[-1]] + self.params[members[-1]].numel()
            segments = [Segment(param=self.params[j], param_start=0,
                                length=self.params[j].numel(),
                                start=self.offsets[j] - start, whole=True) for j in members]
            stretches = {name: _slice(buf, start, stop - start)
                         for name, buf in self.buffers.items()}
            plan.append((start, stop, segments, stretches))
        self._plans[key] = plan
        return plan

    def batches(self, has_step, whole_params=False):
        """This step's Batches (counters advanced), or None when the counters differ."""
        step = None
        if has_step:
            counts = self.steps.tolist()
            if any(c != counts[0] for c in counts):
                return None
            step = counts[0] + 1
            self.steps.fill_(step)
        # Fresh only once: later steps continue from the state this one leaves.
        fresh = self.fresh if not self._handed_fresh else [False] * len(self.params)
        self._handed_fresh = True
        fresh_of = {id(p): f for p, f in zip(self.params, fresh)}
        grads = {id(p): _flat(p.grad) for p in self.params}
        chunk = self.total or 1
        like = self.params[0]
        if like.device.type == "cpu" and all(p.is_contiguous() for p in self.params):
            chunk = max(CHUNK_BYTES // like.element_size(), 1)
        out = []
        plan = self._plan_whole(chunk) if whole_params else self._plan(chunk)
        for start, stop, segments, stretches in plan:
            # The gradient stretch: a view when it lies in one parameter, else one cat.
            pieces = [_slice(grads[id(s.param)], s.param_start, s.length) for s in segments]
            grad = pieces[0] if len(pieces) == 1 else tp.cat(pieces)
            out.append(Batch(grad=grad, state=stretches,
                             fresh=[fresh_of[id(s.param)] for s in segments], step=step,
                             segments=segments))
        return out
