"""The second level of dispatch: choosing a kernel *inside* one backend key.

A backend slot holds a `KernelRegistry`: the op's candidate kernels for that
backend, each with constraints and a priority (specialised above generic):

    dtypes      the dtypes of the op's main tensor it accepts (None = any)
    contiguous  whether every tensor argument must be contiguous
    shape       a ShapeRule such as "last dim multiple of 4"

Selection filters by the constraints, orders by priority and caches the
result under (dtypes, layout, shape signature); a global version number bumps
on every registration and empties the caches. A candidate that raises
KernelConstraintError hands the call to the next one. When nothing matches,
the fallbacks are tried in order, each logged:

    1. dtype promotion   compute in a wider dtype, cast back (float16 -> float32)
    2. layout            make the tensor arguments contiguous
    3. device            compute on the CPU, only when the user enabled it (warns)

and otherwise an error lists every candidate and why it was rejected.
"""
from __future__ import annotations

import logging
import warnings

from tensorplay.dispatch import trace
from tensorplay.errors import KernelConstraintError, NoKernelError

log = logging.getLogger("tensorplay.dispatch")

_version = [0]


def bump_version():
    """Called on every registration: cached choices may now be stale."""
    _version[0] += 1


def registry_version():
    return _version[0]


class _Options:
    device_fallback = False


options = _Options()


def enable_device_fallback(enabled=True):
    """Let ops with no kernel on their device run on the CPU (with a warning)."""
    options.device_fallback = bool(enabled)
    bump_version()


class ShapeRule:
    """A named predicate on the call's arguments, e.g.
    `ShapeRule("last dim multiple of 4", lambda x: x.shape[-1] % 4 == 0)`.
    It receives the op's arguments; its result becomes part of the cache key."""

    __slots__ = ("description", "check")

    def __init__(self, description, check):
        self.description = description
        self.check = check

    def __repr__(self):
        return f"ShapeRule({self.description!r})"


class Candidate:
    __slots__ = ("name", "fn", "priority", "dtypes", "contiguous", "shape")

    def __init__(self, name, fn, priority, dtypes, contiguous, shape):
        self.name = name
        self.fn = fn
        self.priority = priority
        self.dtypes = frozenset(dtypes) if dtypes is not None else None
        self.contiguous = contiguous
        self.shape = shape

    def rejection(self, dtype, contiguous, shape_ok):
        """Why this candidate cannot take the call, or None if it can."""
        if self.dtypes is not None and dtype is not None and dtype not in self.dtypes:
            names = ", ".join(sorted(d.name for d in self.dtypes))
            return f"dtype {dtype.name} not in {{{names}}}"
        if self.contiguous and not contiguous:
            return "needs contiguous inputs"
        if self.shape is not None and not shape_ok.get(self.shape, True):
            return f"shape rule '{self.shape.description}' not met"
        return None


# Wider dtypes to try, in order, when no candidate takes a dtype.
def _promotion_chain(dtype):
    from tensorplay import _dtype as d
    chains = {
        d.float16: (d.float32, d.float64), d.bfloat16: (d.float32, d.float64),
        d.float32: (d.float64,), d.bool: (d.uint8, d.int64), d.uint8: (d.int16, d.int64),
        d.int8: (d.int16, d.int64), d.int16: (d.int32, d.int64), d.int32: (d.int64,),
    }
    return chains.get(dtype, ())


class Plan:
    """What the registry decided for one cache key."""

    __slots__ = ("candidates", "promote_to", "make_contiguous", "to_cpu", "note", "is_direct")

    def __init__(self, candidates, promote_to=None, make_contiguous=False, to_cpu=False,
                 note=""):
        self.candidates = candidates
        self.promote_to = promote_to
        self.make_contiguous = make_contiguous
        self.to_cpu = to_cpu
        self.note = note
        self.is_direct = promote_to is None and not make_contiguous and not to_cpu


class KernelRegistry:
    """Candidates for one (op, backend key); callable like a kernel."""

    def __init__(self, handle, key):
        self.handle = handle
        self.key = key
        self.candidates = []
        self.cache = {}
        self.cache_version = -1
        self.shape_rules = ()
        self.needs_layout = False

    def add(self, fn, *, name, priority=0, dtypes=None, contiguous=False, shape=None):
        # Same name again replaces the old candidate (override without unregistering).
        candidates = [c for c in self.candidates if c.name != name]
        candidates.append(Candidate(name, fn, priority, dtypes, contiguous, shape))
        # Sorted before it is published: a list being sorted reads as empty to other
        # threads, which would find no kernel at all.
        candidates.sort(key=lambda c: -c.priority)
        self.shape_rules = tuple(dict.fromkeys(c.shape for c in candidates if c.shape))
        self.needs_layout = any(c.contiguous for c in candidates)
        self.candidates = candidates

    # ---- the hot path -------------------------------------------------------------
    def __call__(self, *args):
        key = self.cache_key(args)
        cache = self.cache
        version = _version[0]
        if self.cache_version != version:
            # A fresh dict, not clear(): a plan that another thread is still choosing from
            # the old candidates then lands in the old dict, not in this version's.
            cache = self.cache = {}
            self.cache_version = version
        plan = cache.get(key)
        if plan is None:
            plan = cache[key] = self.select(args, key)
            if trace.state.active:
                trace.hop("cache", f"miss {self.describe_key(key)} -> {_plan_text(plan)}")
        elif trace.state.active:
            trace.hop("cache", f"hit {self.describe_key(key)} -> {_plan_text(plan)}")
        if not plan.is_direct:
            return self.run_fallback(plan, args)
        if trace.state.active:
            return self.run_candidates(plan.candidates, args)
        try:   # the common case: the first candidate takes the call
            return plan.candidates[0].fn(*args)
        except KernelConstraintError:
            return self.run_candidates(plan.candidates, args)
        except (ValueError, TypeError, IndexError) as e:
            self.explain_bad_input(args, e)
            raise

    def cache_key(self, args):
        """(dtypes of the tensor arguments, contiguity if a candidate cares, shape rules)."""
        schema = self.handle.schema
        if schema.list_positions:
            dtypes, contiguous = _list_aware_dtypes(schema, args)
        else:
            dtypes = tuple([None if args[i] is None else args[i]._impl.dtype
                            for i in schema.tensor_positions])
            contiguous = None
            if self.needs_layout:
                contiguous = all(args[i]._impl.is_contiguous for i in schema.tensor_positions
                                 if args[i] is not None)
        if self.shape_rules:
            return (dtypes, contiguous, tuple(bool(r.check(*args)) for r in self.shape_rules))
        return (dtypes, contiguous, ())

    def run_candidates(self, candidates, args):
        for i, cand in enumerate(candidates):
            try:
                if trace.state.active:
                    trace.hop("kernel", f"{cand.name}")
                return cand.fn(*args)
            except KernelConstraintError as e:
                rest = candidates[i + 1:]
                log.info("%s: %s rejected its input (%s); handing over to %s", self.handle.name,
                         cand.name, e, rest[0].name if rest else "nobody")
                if trace.state.active:
                    trace.hop("hand-over", f"{cand.name} raised KernelConstraintError ({e})")
                if not rest:
                    raise
            except (ValueError, TypeError, IndexError) as e:
                self.explain_bad_input(args, e)
                raise

    def explain_bad_input(self, args, error):
        """A kernel failed on bad input: let the op's shape rule raise the typed error
        that names the op and the argument (it is the single source of input checks)."""
        from tensorplay.errors import TensorPlayError
        if isinstance(error, TensorPlayError) or self.handle.meta_rule is None:
            return
        self.handle.meta_rule(*args)

    # ---- selection ----------------------------------------------------------------
    def dtype_of_key(self, key):
        """The dtype that candidates' `dtypes=` constraints are checked against: the op's
        main tensor (`self`/`input`, else its first tensor argument)."""
        schema = self.handle.schema
        if schema.dtype_position is None or not key[0]:
            return None
        if schema.list_positions:     # cat(tensors): the first tensor of the list
            return key[0][0]
        return key[0][schema.tensor_positions.index(schema.dtype_position)]

    def shape_results(self, key):
        return dict(zip(self.shape_rules, key[2]))

    def viable(self, dtype, contiguous, shape_ok):
        return [c for c in self.candidates if c.rejection(dtype, contiguous, shape_ok) is None]

    def select(self, args, key):
        dtype = self.dtype_of_key(key)
        contiguous = key[1] if key[1] is not None else True
        shape_ok = self.shape_results(key)
        if trace.state.active:
            for c in self.candidates:
                why = c.rejection(dtype, contiguous, shape_ok)
                trace.hop("candidate", f"{c.name} (priority {c.priority}): "
                          + ("accepted" if why is None else f"rejected, {why}"))
        found = self.viable(dtype, contiguous, shape_ok)
        if found:
            return Plan(found)
        # 1. dtype promotion: a wider dtype that some candidate takes as the inputs are
        for wider in _promotion_chain(dtype):
            found = self.viable(wider, contiguous, shape_ok)
            if found:
                return Plan(found, promote_to=(dtype, wider),
                            note=f"dtype promotion {dtype.name} -> {wider.name}")
        # 2. layout conversion, then layout conversion with promotion
        if not contiguous:
            found = self.viable(dtype, True, shape_ok)
            if found:
                return Plan(found, make_contiguous=True, note="layout conversion: contiguous()")
            for wider in _promotion_chain(dtype):
                found = self.viable(wider, True, shape_ok)
                if found:
                    return Plan(found, promote_to=(dtype, wider), make_contiguous=True,
                                note=f"dtype promotion {dtype.name} -> {wider.name} and "
                                     f"layout conversion: contiguous()")
        # 3. device fallback, opt-in
        if options.device_fallback and self.key != 0:
            return Plan([], to_cpu=True, note="device fallback: computing on the CPU")
        reasons = "\n".join(f"  {c.name} (priority {c.priority}): "
                            f"{c.rejection(dtype, contiguous, shape_ok)}"
                            for c in self.candidates)
        raise NoKernelError(
            f"{self.handle.name}: no {self._key_name()} kernel accepts "
            f"{self.describe_key(key)}; candidates:\n{reasons}", op=self.handle.name)

    def _key_name(self):
        from tensorplay.dispatch.keys import DispatchKey
        return DispatchKey(self.key).name

    def describe_key(self, key):
        dtypes = ", ".join(d.name if d is not None else "None" for d in key[0])
        layout = {True: "; contiguous", False: "; non-contiguous", None: ""}[key[1]]
        shape = f"; shape rules {list(key[2])}" if key[2] else ""
        return f"({dtypes}{layout}{shape})"

    # ---- fallbacks ----------------------------------------------------------------
    def run_fallback(self, plan, args):
        log.info("%s on %s: %s", self.handle.name, self._key_name(), plan.note)
        if trace.state.active:
            trace.hop("fallback", plan.note)
        if plan.to_cpu:
            return self.run_on_cpu(args)
        schema = self.handle.schema
        new_args = list(args)
        originals = {}
        for i in schema.tensor_positions:
            a = args[i]
            if a is None or i in schema.list_positions:
                if a is not None:
                    new_args[i] = [self._convert(t, plan) for t in a]
                continue
            converted = self._convert(a, plan)
            if converted is not a:
                new_args[i] = converted
                originals[i] = a
        out = self.run_candidates(plan.candidates, new_args)
        # Mutated arguments: write the result back into the caller's tensor.
        for i in schema.mutable_positions:
            if i in originals:
                originals[i].copy_(new_args[i])
                if out is new_args[i]:
                    out = originals[i]
        if plan.promote_to is not None:
            narrow, wide = plan.promote_to
            out = _map_tensors(out, lambda t: t.to(narrow) if t.dtype is wide else t)
        return out

    @staticmethod
    def _convert(t, plan):
        if plan.promote_to is not None and t.dtype is plan.promote_to[0]:
            t = t.to(plan.promote_to[1])
        if plan.make_contiguous and not t._impl.is_contiguous:
            t = t.contiguous()
        return t

    def run_on_cpu(self, args):
        warnings.warn(f"{self.handle.name}: no {self._key_name()} kernel, computing on the "
                      f"CPU (device fallback enabled)", stacklevel=4)
        device = None
        moved = []
        for a in args:
            if hasattr(a, "_impl"):
                device = a.device
                moved.append(a.to("cpu"))
            elif isinstance(a, (list, tuple)) and a and hasattr(a[0], "_impl"):
                device = a[0].device
                moved.append([t.to("cpu") for t in a])
            else:
                moved.append(a)
        from tensorplay.dispatch.keys import DispatchKey
        out = self.handle.call(1 << DispatchKey.CPU, *moved)
        return _map_tensors(out, lambda t: t.to(device))


def _list_aware_dtypes(schema, args):
    dtypes = []
    contiguous = True
    for i in schema.tensor_positions:
        a = args[i]
        items = a if i in schema.list_positions else (a,)
        for t in items:
            if t is None:
                dtypes.append(None)
            else:
                dtypes.append(t._impl.dtype)
                contiguous = contiguous and t._impl.is_contiguous
    return tuple(dtypes), contiguous


def _map_tensors(out, fn):
    if isinstance(out, tuple):
        return tuple(_map_tensors(o, fn) for o in out)
    if isinstance(out, list):
        return [_map_tensors(o, fn) for o in out]
    if hasattr(out, "_impl"):
        return fn(out)
    return out


def _plan_text(plan):
    names = ", ".join(c.name for c in plan.candidates) or "CPU"
    return names + (f" [{plan.note}]" if plan.note else "")
