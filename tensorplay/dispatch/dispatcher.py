"""The dispatcher: one table per operator, one slot per dispatch key.

Everything that runs an op by its handle enters here, in one of two ways:

    handle.call(ks, *args)        a front door (or code calling an op by its handle);
                                  `ks` is the union of the tensor arguments' key sets
    handle.redispatch(ks, *args)  a wrapper (autograd, autocast, vmap) running the op
                                  below itself; `ks` is its key set less its own key

`call` applies the thread's masks (`ks = (ks | included) & ~excluded`, and no
REQUIRES_GRAD flag while grad mode is off); a redispatch's key set already has them. Both
run what the dispatch loop (`walk`) ends at for that key set:

    key  = highest set bit of ks
    slot = table[key]       -> backend key: the second-level KernelRegistry
                               (or the Composite kernel when the backend has none)
                            -> wrapper key (Autograd*, Autocast*, Vmap*): a Python
                               wrapper that gets `ks` first so it can redispatch
                            -> nothing registered, or an autograd wrapper with
                               nothing to record (no REQUIRES_GRAD flag): fall
                               through to the next key

The table is *resolved* once per registration (fallbacks computed ahead), and the
loop's answer for each key set is memoized in `OperatorHandle.routes`, so a call is
one dict lookup, then the kernel with the arguments as written. While explain() or a
profiler listens, calls take `dispatch` instead: the same loop, reporting each step.
"""
from __future__ import annotations

import inspect
import os
import sys
import traceback
from functools import partial

from tensorplay.dispatch.keys import (
    AUTOGRAD_MASK, AUTOGRAD_OFFSET, KEYS_MASK, REQUIRES_GRAD, DispatchKey, NUM_KEYS, NUM_BACKENDS,
    backend_mask, is_autograd_key, is_backend_key, format_keys,
)
from tensorplay.dispatch.tls import local_keys
from tensorplay.dispatch import trace
from tensorplay.dispatch.kernel_selection import KernelRegistry, bump_version, registry_version
from tensorplay.dispatch.stats import stats
from tensorplay.errors import ArgumentError, NoKernelError

trace_state = trace.state      # `watch` is set while explain() or a profiler listens
observers = trace.observers    # `active`: the same, as tested by `call`

# Why `walk` skips an autograd wrapper: the key set has no REQUIRES_GRAD flag.
RECORDS_NOTHING = "nothing to record"


class _Fallthrough:
    """Marker in a resolved slot: this wrapper key has nothing to do for this op."""

    def __repr__(self):
        return "<fallthrough>"


FALLTHROUGH = _Fallthrough()


class Routes(dict):
    """The memo of an op's dispatch loop: key set (the thread's masks applied) -> what
    `OperatorHandle.walk` ends at for it, as a callable taking the op's arguments as
    written (`OperatorHandle.route`): the backend slot itself, or a wrapper with the key
    set it is handed (`partial(kernel, ks)`).

    Exact because the loop reads nothing but the key set and `resolved`: the thread's
    masks are in the key, and a registration (the only thing that changes `resolved`)
    gives the handle a new, empty `Routes`. A key set the loop cannot end at (a miss)
    is never stored, so each such call raises the same `NoKernelError`. Observed calls
    do not use it: they take `dispatch`, which reports each step."""

    __slots__ = ("handle",)

    def __init__(self, handle):
        super().__init__()
        self.handle = handle

    def __missing__(self, ks):
        route = self.handle.route(ks)
        self[ks] = route
        return route


class OpSchema:
    """What the runtime needs to know of an op's schema (the generated registration
    code fills it in from ops.yaml, so nothing is parsed at import time)."""

    __slots__ = ("name", "text", "arg_names", "tensor_positions", "list_positions",
                 "mutable_positions", "dtype_position", "num_returns")

    def __init__(self, name, text, arg_names, tensor_positions=(), list_positions=(),
                 mutable_positions=(), num_returns=1):
        self.name = name
        self.text = text
        self.arg_names = tuple(arg_names)
        self.tensor_positions = tuple(tensor_positions)
        self.list_positions = tuple(list_positions)
        self.mutable_positions = tuple(mutable_positions)
        self.num_returns = num_returns
        # The tensor whose dtype picks the kernel: `self`/`input` when the op has one.
        dtype_position = self.tensor_positions[0] if self.tensor_positions else None
        for i in self.tensor_positions:
            if self.arg_names[i] in ("self", "input"):
                dtype_position = i
                break
        self.dtype_position = dtype_position


class OperatorHandle:
    """An op's dispatch table plus the bookkeeping to explain it."""

    __slots__ = ("name", "schema", "kernels", "kernel_names", "signatures", "registries",
                 "resolved", "meta_rule", "routes")

    def __init__(self, schema):
        self.name = schema.name
        self.schema = schema
        self.kernels = [None] * NUM_KEYS       # what was registered, per key
        self.kernel_names = [None] * NUM_KEYS  # "module.function" for messages
        self.signatures = [None] * NUM_KEYS    # the checked inspect.Signature per slot
        self.registries = {}                   # backend key -> KernelRegistry
        self.resolved = [None] * NUM_KEYS      # what a call at that key runs
        self.meta_rule = None                  # shape/dtype rule; validates bad input
        self._resolve()

    # ---- registration -------------------------------------------------------------
    def register(self, key, fn, *, name=None, priority=0, dtypes=None, contiguous=False,
                 shape=None, layout=None, takes_complex=False, check_signature=True,
                 replace=False):
        """Put `fn` in the slot for `key`. At a backend key it becomes a candidate of the
        second-level registry (`replace`: the only one); elsewhere it replaces the slot
        (override, no unregister)."""
        key = DispatchKey(key)
        name = name or f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', fn)}"
        if check_signature:
            self.signatures[key] = self._check_signature(key, fn, name)
        if is_backend_key(key):
            reg = self.registries.get(key)
            if reg is None:
                reg = self.registries[key] = KernelRegistry(self, key)
            reg.add(fn, name=name, priority=priority, dtypes=dtypes, contiguous=contiguous,
                    shape=shape, layout=layout, takes_complex=takes_complex, replace=replace)
        else:
            self.kernels[key] = fn
            self.kernel_names[key] = name
        self._resolve()
        bump_version()

    def _check_signature(self, key, fn, name):
        expected = self.schema.arg_names
        if not is_backend_key(key) and key != DispatchKey.Composite:
            expected = ("ks",) + expected     # wrapper kernels receive the key set first
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            return None
        got = tuple(p.name for p in sig.parameters.values()
                    if p.kind is not inspect.Parameter.VAR_POSITIONAL)
        if len(got) < len(sig.parameters):
            # a family kernel's `*params` take the trailing arguments its overloads differ in
            matches = got == expected[:len(got)]
        else:
            matches = got == expected
        if not matches:
            raise ArgumentError(
                f"cannot register {name} for {self.name} at {key.name}: the kernel takes "
                f"({', '.join(got)}) but the schema `{self.schema.text}` needs "
                f"({', '.join(expected)})", op=self.name)
        return sig

    def _resolve(self):
        """Precompute what each key runs, with the fallbacks applied: a backend key with
        no kernel runs Composite; an autograd key with nothing registered runs the
        Composite decomposition above autograd, unless the backend has a kernel; then
        (or with no decomposition) the key's boxed fallback: at the dense autograd keys,
        the not-implemented one (a grad_fn that raises in backward, never a detach).

        The new table is built aside and swapped in by one assignment: a call on another
        thread reads `self.resolved` once, so it runs wholly the old table or wholly the
        new one, never a table half rewritten."""
        resolved = [None] * NUM_KEYS
        composite = self.kernels[DispatchKey.Composite]
        # AutogradSparse holds the sparse decompositions (tensorplay/sparse), not formulas.
        has_autograd = any(self.kernels[k] is not None
                           for k in range(AUTOGRAD_OFFSET, AUTOGRAD_OFFSET + NUM_BACKENDS)
                           if k != DispatchKey.AutogradSparse)
        for k in range(NUM_KEYS):
            if k < NUM_BACKENDS:
                reg = self.registries.get(k)
                if reg is not None and reg.candidates:
                    # (which bumps the version of what an in-place kernel wrote)
                    resolved[k] = reg.entry()
                elif k == DispatchKey.Sparse:
                    # Composite code reads strides and storage, which a sparse tensor has
                    # not: an op with no sparse kernel misses (see `miss`).
                    resolved[k] = None
                else:
                    # A backend with no kernel of its own falls back to Composite (whose
                    # inner in-place ops bump for themselves).
                    resolved[k] = composite
            elif k == DispatchKey.Composite:
                resolved[k] = composite
            elif k == DispatchKey.AutogradSparse and not self._has_backend_kernel(
                    DispatchKey.Sparse):
                # No sparse kernel: nothing to record, the call misses at Sparse.
                resolved[k] = FALLTHROUGH
            elif self.kernels[k] is not None:
                resolved[k] = self.kernels[k]
            elif is_autograd_key(k) and composite is not None and not has_autograd \
                    and not self._has_backend_kernel(k - AUTOGRAD_OFFSET):
                # Composite-implicit autograd: the decomposition runs *above* autograd,
                # so the ops it calls record the graph and no formula is needed. A backend
                # with a kernel of its own overrides the decomposition.
                resolved[k] = _drop_keyset(composite)
            elif _boxed_fallbacks[k] is not None:
                # One kernel for every op at this key, made for this handle: the Python
                # key's handler of tensor subclasses and dispatch modes; at the autograd
                # keys, the fallback of an op with no derivative (a grad_fn that raises in
                # backward, tensorplay/autograd/not_implemented.py), never a silent detach.
                resolved[k] = _boxed_fallbacks[k](self)
            else:
                resolved[k] = FALLTHROUGH
        self.resolved = resolved
        # After `resolved`: a call that finds the new (empty) routes fills them from it.
        self.routes = Routes(self)

    def slot_registry(self, key):
        """The KernelRegistry behind backend `key`'s slot, or None (no kernel there)."""
        reg = self.registries.get(key)
        return reg if reg is not None and reg.candidates else None

    def _has_backend_kernel(self, backend):
        reg = self.registries.get(backend)
        return reg is not None and bool(reg.candidates)

    # ---- calling ------------------------------------------------------------------
    def call(self, ks, *args):
        """Run the op on `args`: the entry of the front doors. `ks` is the union of the
        tensor arguments' key sets (with the REQUIRES_GRAD flag when one of them requires
        grad); the thread's masks apply (dispatch/tls.py: grad mode off removes the flag,
        so nothing is recorded then).

        While explain() or a profiler listens the call is observed (`trace.observed`: the
        profiler's op event around `dispatch`, which reports every step). A kernel that
        fails with a plain Python error has its arguments checked by the op's shape rule,
        which names the bad one (`explain_bad_input`)."""
        if observers.active:
            return trace.observed(self, ks, args)
        masks = local_keys.masks        # this thread's [included, excluded, grad mode off]
        try:
            return self.routes[(ks | masks[0]) & ~(masks[1] | masks[2])](*args)
        except (ValueError, TypeError, IndexError) as e:
            self.explain_bad_input(args, e)
            raise

    def redispatch(self, ks, *args):
        """Run the op below a wrapper: `ks` is the wrapper's key set without its own key.
        The thread's masks were applied when the call entered (`call`), so `ks` is the
        route's key as it is (PyTorch's redispatch does not look at them again either)."""
        if trace_state.watch is not None:
            return self.dispatch(ks, *args)
        return self.routes[ks](*args)

    def dispatch(self, ks, *args):
        """`walk`, reporting each step to `trace_state.watch` (explain(), a profiler):
        the call, the key set and any change of the thread's masks, the keys it falls
        through, the slot it runs and the result."""
        # (applying the masks again to a key set they made, a redispatch's, changes nothing)
        masks = local_keys.masks
        effective = (ks | masks[0]) & ~(masks[1] | masks[2])
        watch = trace_state.watch
        if watch is None:               # (the listener left meanwhile)
            return self.routes[effective](*args)
        watch.enter(self, ks, args)
        key, kernel, ks = self.walk(effective, watch)
        if key < NUM_BACKENDS:
            return watch.run_backend(self, key, kernel, args)
        return watch.run_wrapper(self, key, kernel, ks, args)

    def walk(self, ks, watch=None):
        """The dispatch loop: from the highest key of `ks` down to the slot that runs the
        call. Returns (key, kernel, ks): `ks` less the keys it fell through, which a
        wrapper is handed. A slot with nothing registered falls through, and so does an
        autograd slot that would only record a graph (`records_only`: a generated
        wrapper) when no tensor requires grad (no REQUIRES_GRAD flag). Raises
        `NoKernelError` where no slot can run the call."""
        resolved = self.resolved
        while True:
            key = (ks & KEYS_MASK).bit_length() - 1
            kernel = resolved[key] if key >= 0 else None
            if key < NUM_BACKENDS:
                if kernel is None:
                    if watch is not None:
                        watch.miss(self, key)
                    self.miss(key)
                return key, kernel, ks
            if kernel is FALLTHROUGH:
                if watch is not None:
                    watch.skip(self, key)
            elif not ks & REQUIRES_GRAD and getattr(kernel, "records_only", False):
                if watch is not None:
                    watch.skip(self, key, RECORDS_NOTHING)
            else:
                return key, kernel, ks
            ks &= ~(1 << key)

    def route(self, ks):
        """What `walk` ends at for `ks` (the thread's masks already applied), as a callable
        of the op's arguments: the memo `routes` keeps it."""
        key, kernel, ks = self.walk(ks)
        if key < NUM_BACKENDS:
            return kernel
        composite = getattr(kernel, "drops_keyset", None)
        if composite is not None:
            # A Composite decomposition run above autograd ignores the key set it is
            # handed (`_drop_keyset`): its route is the decomposition itself.
            return composite
        return partial(kernel, ks)

    def explain_bad_input(self, args, error):
        """A kernel failed with a plain Python error (NumPy's, mostly): let the op's shape
        rule look at the arguments. Bad input makes it raise the typed error that names
        the op and the argument (the rules are the single source of input checks); good
        input, an error from deeper down, leaves the original error to propagate."""
        from tensorplay.errors import TensorPlayError
        if isinstance(error, TensorPlayError) or self.meta_rule is None:
            return
        self.meta_rule(*args)

    def registered_keys(self):
        """Names of the keys something was registered at, on the backends shown."""
        shown = dispatcher.shown_keys()
        return [DispatchKey(k).name for k in range(NUM_KEYS)
                if (self.kernels[k] is not None or k in self.registries) and shown >> k & 1]

    def miss(self, key):
        have = self.registered_keys()
        key_name = DispatchKey(key).name if key >= 0 else "<no key>"
        msg = (f"{self.name}: no kernel for dispatch key {key_name}; kernels are registered "
               f"for: {', '.join(have) if have else 'no key at all'}")
        if key == DispatchKey.Sparse:
            msg = (f"{self.name}: not supported for sparse tensors (layout sparse_coo); "
                   f"convert with .to_dense() first")
        if os.environ.get("TP_TRACE_KERNEL_MISS"):
            sys.stderr.write(f"[TP_TRACE_KERNEL_MISS] op={self.name} key={key_name}\n")
            sys.stderr.write("".join(traceback.format_stack(limit=32)))
        raise NoKernelError(msg, op=self.name)

    def __repr__(self):
        keys = [name for name, _ in self.table()]
        return f"<OperatorHandle {self.name} runs at {', '.join(keys) or 'no key'}>"

    def table(self):
        """(key name, what a call there runs) for each key that has something to run, on a
        backend some op has a kernel for (not the keys numbered ahead of their use): the
        rows of `dump()`, whose keys `repr` lists."""
        rows = []
        shown = dispatcher.shown_keys()
        for k in range(NUM_KEYS):
            r = self.resolved[k]
            if r is None or r is FALLTHROUGH or not shown >> k & 1:
                continue
            if self.kernels[k] is None and getattr(r, "fallback_name", None) is not None:
                continue        # a boxed fallback: the same for every op
            reg = self.slot_registry(k)
            if reg is not None:
                what = "registry: " + ", ".join(f"{c.name} (priority {c.priority})"
                                                for c in reg.candidates)
            elif self.kernels[k] is not None:
                what = self.kernel_names[k]
            else:
                what = f"Composite fallback -> {self.kernel_names[DispatchKey.Composite]}"
            rows.append((DispatchKey(k).name, what))
        return rows

    def dump(self):
        """The dispatch table as text (`table()`), one line per key."""
        lines = [f"{self.name}: {self.schema.text}"]
        lines += [f"  {name:<14} {what}" for name, what in self.table()]
        return "\n".join(lines)


def below_autograd(handle, ks, *args):
    """Run `handle`'s op below autograd (what a generated autograd wrapper does to compute
    its result): on its key set less the autograd keys, with those keys excluded on this
    thread meanwhile, so the ops a kernel calls record nothing (the wrapper's node is the
    gradient of the whole op). It is `with ExcludeKeys(AUTOGRAD_MASK):` around
    `handle.redispatch(ks & ~AUTOGRAD_MASK, *args)`, in one frame: every recorded op
    runs it. Like the guard, it restores only the excluded half of the thread's masks,
    also when the op raises."""
    masks = local_keys.masks        # this thread's [included, excluded, grad mode off]
    excluded = masks[1]
    masks[1] = excluded | AUTOGRAD_MASK
    try:
        if trace_state.watch is not None:
            return handle.dispatch(ks & ~AUTOGRAD_MASK, *args)
        return handle.routes[ks & ~AUTOGRAD_MASK](*args)      # (see `redispatch`)
    finally:
        masks[1] = excluded


# key -> `make(handle)`, which returns the kernel of that handle's slot (see register_fallback)
_boxed_fallbacks = [None] * NUM_KEYS


def _drop_keyset(fn):
    def composite_implicit(ks, *args):
        return fn(*args)
    composite_implicit.__wrapped__ = fn
    composite_implicit.drops_keyset = fn     # what `route` calls in its place
    return composite_implicit


class Dispatcher:
    """The registry of operator handles, by full name (`add.Tensor`)."""

    def __init__(self):
        self.ops = {}
        self._shown = (-1, 0)          # (registry version, mask) of shown_keys()

    def define(self, schema):
        handle = self.ops.get(schema.name)
        if handle is None:
            handle = self.ops[schema.name] = OperatorHandle(schema)
        return handle

    def find(self, name):
        try:
            return self.ops[name]
        except KeyError:
            import difflib
            close = difflib.get_close_matches(name, self.ops, n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise KeyError(f"no operator named '{name}'{hint}") from None

    def enable_stats(self, enabled=True):
        """Start (or stop) counting kernel choices (dispatch/stats.py). Every op's table is
        re-resolved so that its backend slots call the registry itself rather than a
        direct kernel, which is where the counts are kept."""
        stats.on = bool(enabled)
        for handle in self.ops.values():
            handle._resolve()

    def register_fallback(self, keys, make):
        """Fill the slot of each of `keys` (one key or several) in every op, defined now or
        later, that registers nothing there itself: `make(handle)` returns the kernel
        `(ks, *args)` for that op (a *boxed* fallback: one function that serves every op,
        as PyTorch's Python key fallback and its autograd-not-implemented one). The
        kernel's `fallback_name` is what explain() prints."""
        for key in (keys if isinstance(keys, (tuple, list)) else (keys,)):
            _boxed_fallbacks[key] = make
        for handle in self.ops.values():
            handle._resolve()
        bump_version()

    def shown_keys(self):
        """The bitmask of keys worth printing: every key, except a backend that no op
        has a kernel for (Vulkan, Sparse) and the keys derived from it. Recomputed when a
        registration bumps the registry version."""
        version = registry_version()
        if self._shown[0] != version:
            mask = -1
            for backend in range(NUM_BACKENDS):
                if not any(h._has_backend_kernel(backend) for h in self.ops.values()):
                    mask &= ~backend_mask(backend)
            self._shown = (version, mask)
        return self._shown[1]


dispatcher = Dispatcher()


__all__ = ["dispatcher", "Dispatcher", "OperatorHandle", "OpSchema", "FALLTHROUGH",
           "format_keys"]
