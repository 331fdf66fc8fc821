"""`CompiledFunction`: the object tp.compile returns for a function; its call is the
whole frontend.

A call builds its *guard key*, a tuple of everything a captured graph assumed:

    the thread's dispatch masks (grad mode, inference mode, autocast keys, vmap/modes),
    the default dtype (and autocast's dtypes while autocast is on), then per argument:
    a tensor's sizes, dtype, key set (its device type), requires_grad and layout
    (contiguous, or its strides), the structure of lists / tuples / dicts, and every
    other value itself (an int, a float, a flag, an object by identity)

and looks it up in a dict, one per compiled function: a hit runs that guard set's entry
(runtime.py) once its generated state guard has checked the state the graph reads
(parameters still in their slots, same requires_grad, modules in the same train/eval
mode). About a microsecond per tensor argument, and less per lifted parameter. A miss captures (tracing.py),
lowers (backends.py) and stores a new entry. The first call of a guard set returns the
capture run's own result, which is eager's (the capture runs the function for real).

Graph breaks (tracing.py lists them): the guard set runs eagerly from then on. This is
the design chosen for correctness: a capture records one path through the function, and
a break means the path or the values may differ on the next call; splitting the function
around the break (torch's resumable frames) needs bytecode rewriting, which a reader of
this package would have to learn first. `fullgraph=True` raises `Unsupported` instead.

After `config.cache_size_limit` compiles (8, as torch._dynamo's), a further new guard
set runs eagerly, with one logged warning.
"""
from __future__ import annotations

import copy
import functools
import logging
import time
import weakref

from tensorplay import _dtype as dt
from tensorplay._impl import TensorImpl
from tensorplay._tensor import Tensor
from tensorplay.amp.state import state as autocast_state
from tensorplay.autograd import forward_mode
from tensorplay.autograd.view_impl import ViewImpl
from tensorplay.compiler import backends, runtime
from tensorplay.compiler.reachable import reachable_state
from tensorplay.compiler.tracing import _compiling, run_disabled, trace
from tensorplay.dispatch.tls import grad_state, local_keys
from tensorplay.errors import ArgumentError

log = logging.getLogger("tensorplay.compiler")

PLAIN_IMPLS = (TensorImpl, ViewImpl)   # dense tensors; a subclass, sparse, batched: eager
VALUE_TYPES = (int, float, bool, str, type(None), complex)
MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


class config:
    """torch._dynamo.config's knobs that apply here."""
    cache_size_limit = 8          # compiles per function before new guard sets run eagerly


_all_compiled = weakref.WeakSet()     # reset() clears the caches of these


class _NotPlain(Exception):
    pass


def _modes_key():
    masks = local_keys.masks
    included = masks[0]
    if included:
        return (included, masks[1], masks[2], dt._default_dtype[0],
                autocast_state.dtype["cpu"], autocast_state.dtype["cuda"])
    return (0, masks[1], masks[2], dt._default_dtype[0])


def _collect(a, key, tensors):
    """Append `a`'s guards to `key` and its tensors to `tensors` (the hot path)."""
    if isinstance(a, Tensor):
        impl = a._impl
        if type(impl) not in PLAIN_IMPLS:
            raise _NotPlain(type(impl).__name__)
        tensors.append(a)
        # `keys` names the backend (the device type), as `requires_grad` its flag; a
        # device object hashes in Python, ten times slower
        key.append((impl.sizes, impl.dtype, impl.keys, impl.requires_grad,
                    impl.is_contiguous or impl.strides))
    elif type(a) in VALUE_TYPES:
        key.append(type(a))
        key.append(a)
    elif type(a) is tuple or type(a) is list:
        key.append(len(a))
        for b in a:
            _collect(b, key, tensors)
    elif type(a) is dict:
        key.append(tuple(a))
        for b in a.values():
            _collect(b, key, tensors)
    else:
        try:
            hash(a)
            key.append(a)               # a dtype, a device, a module: by equality / identity
        except TypeError:
            key.append(("id", id(a)))


class CompiledFunction:
    """`tp.compile(fn)`: call it like fn. `explain()`, `source()`, `cache_entries()`."""

    def __init__(self, fn, *, fullgraph=False, dynamic=None, backend="default", mode=None,
                 options=None):
        self.fn = fn
        self.fullgraph = fullgraph
        self.dynamic = dynamic
        self.backend = backends.check_backend(backend)
        self.mode = mode
        self.options = dict(options or {})
        self.cache = {}
        self.entries = []          # in compile order (explain)
        self.compiles = 0
        self.warned_limit = False
        self.eager_reasons = []    # why calls ran eagerly without a compile
        functools.update_wrapper(self, fn, updated=())
        _all_compiled.add(self)

    def __deepcopy__(self, memo):
        """A copy compiles afresh (its graphs would read the original's state)."""
        return CompiledFunction(copy.deepcopy(self.fn, memo), fullgraph=self.fullgraph,
                                dynamic=self.dynamic, backend=self.backend, mode=self.mode,
                                options=self.options or None)

    def __get__(self, instance, owner=None):
        """A compiled method: bound to its instance like a function."""
        if instance is None:
            return self
        return functools.partial(self, instance)

    # ---- the call ------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if _compiling[0]:
            # inside another function's capture: inline (its ops go to that graph)
            return self.fn(*args, **kwargs)
        key = [_modes_key()]
        tensors = []
        try:
            for a in args:
                if isinstance(a, Tensor):      # _collect's first case, written out
                    impl = a._impl
                    if type(impl) not in PLAIN_IMPLS:
                        raise _NotPlain(type(impl).__name__)
                    tensors.append(a)
                    key.append((impl.sizes, impl.dtype, impl.keys, impl.requires_grad,
                                impl.is_contiguous or impl.strides))
                else:
                    _collect(a, key, tensors)
            if kwargs:
                for name, v in kwargs.items():
                    key.append(name)
                    _collect(v, key, tensors)
        except _NotPlain as e:
            return self._eager(f"an input is not a dense tensor ({e})", args, kwargs)
        if forward_mode.levels:
            return self._eager("forward-mode AD is active", args, kwargs)
        key = tuple(key)
        entry = self.cache.get(key)
        if entry is not None and entry.valid():
            return entry.run(self.fn, args, kwargs, tensors)
        return self._compile_and_run(key, entry, args, kwargs, tensors)

    def _eager(self, reason, args, kwargs):
        if reason not in self.eager_reasons:
            self.eager_reasons.append(reason)
            log.info("%s runs eagerly: %s", _name(self.fn), reason)
        return self.fn(*args, **kwargs)

    def _compile_and_run(self, key, stale, args, kwargs, tensors):
        if self.compiles >= config.cache_size_limit:
            if not self.warned_limit:
                self.warned_limit = True
                log.warning("%s: recompile limit reached (config.cache_size_limit = %d); "
                            "new guard sets run eagerly", _name(self.fn),
                            config.cache_size_limit)
            return self.fn(*args, **kwargs)
        names = _input_names(args, kwargs)
        guards = _describe_guards(names, tensors, args, kwargs)
        if self.entries:
            why = _first_difference(self.entries[-1].guards, guards) if stale is None else \
                "the state it reads changed (a parameter replaced, requires_grad, train/eval)"
            log.info("recompiling %s: %s", _name(self.fn), why)
        self.compiles += 1
        state = reachable_state(self.fn, (args, kwargs))
        started = time.perf_counter()
        tr = trace(self.fn, args, kwargs, tensors, names, state, fullgraph=self.fullgraph,
                   want_backward=grad_state.enabled)
        guards = guards + _describe_state(tr.free, state)
        entry = self._entry(tr, guards, tensors, state)
        entry.compile_time = time.perf_counter() - started
        self.cache[key] = entry
        self.entries.append(entry)
        return tr.result

    def _entry(self, tr, guards, tensors, state):
        if tr.breaks:
            return runtime.EagerEntry(guards, list(tr.breaks))
        free_slots = []
        for t in tr.free:
            _, container, key = state.tensors[id(t._impl)]
            impl = t._impl
            free_slots.append((t, container, key, impl.requires_grad, impl.sizes, impl.dtype))
        modules = [(m, m.training) for m in state.modules]
        values = [(c, k, v) for c, k, v, _ in state.values if k != "training"]
        example = list(tensors) + list(tr.free)
        device = example[0].device if example else "cpu"
        if tr.joint is not None:
            joint = tr.joint
            forward = backends.lower_with(self.backend, joint.forward, example, device)
            backward = backends.lower_with(self.backend, joint.backward,
                                           _backward_examples(joint, device), device)
            return runtime.JointEntry(guards, free_slots, modules, values, joint, forward,
                                      backward, tr.spec, set(joint.diff_outputs))
        compiled = backends.lower_with(self.backend, tr.graph, example, device)
        return runtime.GraphEntry(guards, free_slots, modules, values, tr.graph, compiled,
                                  tr.spec)

    # ---- reading -------------------------------------------------------------------
    def explain(self):
        from tensorplay.compiler.explain import ExplainOutput
        return ExplainOutput(self)

    def source(self):
        """The generated code of the last compiled graph (forward, then backward)."""
        for entry in reversed(self.entries):
            if entry.kind != "eager":
                return "\n\n".join(getattr(cg, "source", graph.python_code())
                                   for _, graph, cg in entry.graphs())
        return None

    def reset(self):
        self.cache.clear()
        self.entries.clear()
        self.compiles = 0
        self.warned_limit = False
        self.eager_reasons.clear()

    def __repr__(self):
        return f"<compiled {_name(self.fn)} ({len(self.entries)} compiled guard sets)>"


def _backward_examples(joint, device):
    """Example inputs of the backward graph: the placeholders' (shape, dtype) only are
    known here, so a custom backend gets tensors of the right shape and dtype (zeros)."""
    import tensorplay as tp
    return [tp.zeros(tuple(v.shape), dtype=v.dtype, device=device)
            for v in joint.backward.placeholders]


# ---- readable guards ---------------------------------------------------------------------
def _name(fn):
    return getattr(fn, "__qualname__", None) or type(fn).__name__


def _input_names(args, kwargs):
    names = []

    def walk(a, path):
        if isinstance(a, Tensor):
            names.append(path)
        elif type(a) in (tuple, list):
            for i, b in enumerate(a):
                walk(b, f"{path}_{i}")
        elif type(a) is dict:
            for k, b in a.items():
                walk(b, f"{path}_{k}")

    for i, a in enumerate(args):
        walk(a, f"arg{i}")
    for k, a in kwargs.items():
        walk(a, str(k))
    return names


def _tensor_text(t):
    impl = t._impl
    layout = "contiguous" if impl.is_contiguous else f"strides {impl.strides}"
    return (f"{impl.dtype.name}{list(impl.sizes)} on {impl.device}, "
            f"requires_grad={impl.requires_grad}, {layout}")


def _describe_guards(names, tensors, args, kwargs):
    masks = local_keys.masks
    lines = [f"grad mode {'enabled' if grad_state.enabled else 'disabled'}",
             f"default dtype {dt.get_default_dtype().name}",
             f"dispatch masks: included {masks[0]:#x}, excluded {masks[1]:#x}"]
    for dev, on in autocast_state.enabled.items():
        if on:
            lines.append(f"autocast on {dev} to {autocast_state.dtype[dev].name}")
    lines += [f"{n}: {_tensor_text(t)}" for n, t in zip(names, tensors)]
    for i, a in enumerate(args):
        if not isinstance(a, (Tensor, tuple, list, dict)):
            lines.append(f"arg{i} == {a!r}")
    for k, a in kwargs.items():
        if not isinstance(a, (Tensor, tuple, list, dict)):
            lines.append(f"{k} == {a!r}")
    return lines


def _describe_state(free, state):
    lines = []
    for t in free:
        lines.append(f"{state.paths[id(t._impl)]}: the same tensor, {_tensor_text(t)}")
    for m, path in zip(state.modules, state.module_paths):
        lines.append(f"{path}.training == {m.training} ({type(m).__name__})")
    for _, key, value, path in state.values:
        if key != "training":
            lines.append(f"{path} == {value!r}")
    return lines


def _first_difference(old, new):
    for a, b in zip(old, new):
        if a != b:
            return f"{b} (was: {a})"
    return "a guard changed"


# ---- the public entry points ---------------------------------------------------------------
def compile(model=None, *, fullgraph=False, dynamic=None, backend="default", mode=None,
            options=None, disable=False):
    """Compile a function or an nn.Module (torch.compile's signature).

    Usable as `tp.compile(fn)`, `@tp.compile`, `@tp.compile(fullgraph=True)`; a module
    gives an `OptimizedModule` whose forward is compiled. `backend`: "default" (the
    lowering), "eager" (replay the captured graph), or a callable
    `backend(graph, example_inputs)`. `mode` and `options` are checked and kept (the
    lowering has no modes); `dynamic` is accepted, sizes are always specialised (a new
    size is a new guard set). `disable=True` returns the model as it is."""
    if mode is not None and options is not None:
        raise ArgumentError("compile(): either mode or options can be specified, but both "
                            "can't be specified at the same time.", op="compile", arg="mode")
    if mode not in MODES:
        raise ArgumentError(f"compile(): argument 'mode' must be one of {list(MODES[1:])}, "
                            f"got {mode!r}", op="compile", arg="mode")
    backends.check_backend(backend)
    settings = dict(fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                    options=options)
    if model is None:
        def decorate(m):
            return compile(m, disable=disable, **settings)
        return decorate
    if not callable(model):
        raise ArgumentError(f"compile(): argument 'model' must be a function or a Module, "
                            f"got {type(model).__name__}", op="compile", arg="model")
    if disable:
        return model
    from tensorplay.nn.modules.module import Module
    if isinstance(model, Module):
        from tensorplay.compiler.module import OptimizedModule
        return OptimizedModule(model, CompiledFunction(model, **settings))
    return CompiledFunction(model, **settings)


def disable(fn=None, recursive=True):
    """Never compile `fn` (torch.compiler.disable): called inside a compiled function it
    is a graph break, and that guard set runs eagerly."""
    if fn is None:
        return lambda f: disable(f, recursive)

    @functools.wraps(fn)
    def disabled(*args, **kwargs):
        return run_disabled(fn, args, kwargs)
    disabled._tp_compiler_disabled = True
    return disabled


def reset():
    """Forget every compiled graph (torch.compiler.reset): the next calls compile again."""
    for compiled in _all_compiled:
        compiled.reset()
