"""The second level of dispatch: choosing a kernel *inside* one backend key.

A backend slot holds a `KernelRegistry`: the op's candidate kernels for that
backend, each with constraints and a priority (specialised above generic):

    dtypes      the dtypes of the op's main tensor it accepts (None = any)
    contiguous  whether every tensor argument must be contiguous
    shape       a ShapeRule such as "last dim multiple of 4"
    layout      the memory format it is written for: "channels_last" (NHWC kernels) or
                "contiguous_format" (NCHW kernels, which would lay their results out
                NCHW whatever the input's layout)
    takes_complex  at the CUDA key: whether it computes complex tensors. Triton has no
                complex type, so a kernel must be written for the (re, im) float pairs
                of one (the pointwise template's complex form, the sums, the matmul);
                the others reject a call with a complex tensor argument

Selection filters by the constraints, orders by priority and caches the
result under (dtypes, layout, shape signature; the shape bucket too while measured choices
are pinned, see `shape_bucket`); a global version number bumps
on every registration and empties the caches. The shape rules' results in that key are
evaluated on every call, unless the rules name a common `signature` (ShapeRule): then once
per signature, looked up after that (the convolution's rules, cpu_kernels/conv.py).
A candidate that raises KernelConstraintError hands the call to the next one. When nothing matches,
the fallbacks are tried in order, each logged:

    1. dtype promotion   compute in a wider dtype, cast back (float16 -> float32)
    2. layout            make the tensor arguments contiguous; a channels_last call
                         that only NCHW kernels take runs on NCHW copies and its 4-D
                         results are laid out channels_last again, as PyTorch's would be
    3. complex on host   a complex call at the CUDA key that no kernel has a complex
                         form for: the CPU kernel runs on host copies and the results
                         (and what an in-place op wrote) are copied back. Always on, so
                         that every op the CPU computes for complex tensors works on
                         `cuda` too; logged, and shown by explain()
    4. device            compute on the CPU, only when the user enabled it (warns)

and otherwise an error lists every candidate and why it was rejected.

Below the choice of a kernel, a Triton kernel's launch configuration (block sizes,
num_warps, num_stages) is chosen by measurement per shape bucket (`shape_bucket`'s rule)
and kept beside the launch plans: tensorplay/dispatch/autotune.py. Measured choices of a
kernel itself, per bucket too, are tp.dispatch.tune's (tuning.py).
"""
from __future__ import annotations

import logging
import warnings

from tensorplay._memory_format import channels_last, is_channels_last
from tensorplay.dispatch import trace
from tensorplay.dispatch.keys import DispatchKey
from tensorplay.dispatch.stats import stats
from tensorplay.errors import KernelConstraintError, NoKernelError

log = logging.getLogger("tensorplay.dispatch")

_version = [0]

# Choices kept per registry; the oldest goes first when full (an op called with ever new
# shape signatures must not grow memory without bound).
CACHE_LIMIT = 512


def bump_version():
    """Called on every registration: cached choices may now be stale."""
    _version[0] += 1


def registry_version():
    return _version[0]


def bumping(kernel, positions):
    """`kernel`, then `bump_written`: the backend slot of an in-place op."""
    def run_and_bump(*args):
        out = kernel(*args)
        bump_written(args, positions)
        return out
    run_and_bump.__wrapped__ = kernel
    return run_and_bump


def bump_written(args, positions):
    """After an in-place kernel ran: bump the version counter of each tensor it wrote
    (`positions`, the schema's `Tensor(a!)` arguments), as PyTorch's ADInplaceOrView does
    below autograd. Inputs autograd saved before the call now mismatch, outputs it saves
    after the call match. An inference tensor has no versions to keep."""
    for i in positions:
        written = args[i]
        if written is not None:     # an optional mutable argument (Tensor(a!)?) not given
            impl = written._impl
            if not impl._inference:     # the `inference` property's field
                impl.version.value += 1


class _Options:
    device_fallback = False
    tuning = False          # consult choices pinned by tp.dispatch.tune (tuning.py)


options = _Options()


def enable_device_fallback(enabled=True):
    """Let ops with no kernel on their device run on the CPU (with a warning)."""
    options.device_fallback = bool(enabled)
    bump_version()


def round_up_pow2(n):
    """n rounded up to the next power of two (0 and 1 stay): 3 -> 4, 5 -> 8, 8 -> 8."""
    return 1 << (n - 1).bit_length() if n > 1 else n


def shape_bucket(args):
    """The shape bucket of a call: each dim of each tensor argument rounded up to the next
    power of two (0 and 1 stay), e.g. sizes (3, 5) and (4, 8) share the bucket (4, 8).

    Measured choices are kept per bucket (tp.dispatch.tune's pins, the Triton kernels'
    autotuned configurations, dispatch/autotune.py): the fastest kernel or block size
    changes with the size of the problem, but not from one size to the next, and one
    measurement per power of two keeps the number of measurements (and of saved pins)
    logarithmic in the sizes seen."""
    buckets = []
    for a in args:
        items = a if isinstance(a, (list, tuple)) else (a,)
        for t in items:
            impl = getattr(t, "_impl", None)
            if impl is not None:
                buckets.append(tuple(round_up_pow2(s) for s in impl.sizes))
    return tuple(buckets)


class ShapeRule:
    """A named predicate on the call's arguments, e.g.
    `ShapeRule("last dim multiple of 4", lambda x: x.shape[-1] % 4 == 0)`.
    It receives the op's arguments; its result becomes part of the cache key.

    `signature` (optional): a function of the same arguments whose (hashable) result
    determines the check's, e.g. the sizes and the int arguments the check reads. When
    every shape rule of a registry names the same signature function, the registry
    evaluates the rules once per signature and looks their results up on every later
    call (`KernelRegistry.rule_results`): one cheap key in place of several predicates,
    which for a small call (a convolution of one image) are a visible part of its time."""

    __slots__ = ("description", "check", "signature")

    def __init__(self, description, check, signature=None):
        self.description = description
        self.check = check
        self.signature = signature

    def __repr__(self):
        return f"ShapeRule({self.description!r})"


LAYOUTS = (None, "contiguous_format", "channels_last")


class Candidate:
    __slots__ = ("name", "fn", "priority", "dtypes", "contiguous", "shape", "layout",
                 "takes_complex")

    def __init__(self, name, fn, priority, dtypes, contiguous, shape, layout=None,
                 takes_complex=False):
        if layout not in LAYOUTS:
            raise ValueError(f"kernel {name}: layout must be one of {LAYOUTS}, not {layout!r}")
        self.name = name
        self.fn = fn
        self.priority = priority
        self.dtypes = frozenset(dtypes) if dtypes is not None else None
        self.contiguous = contiguous
        self.shape = shape
        self.layout = layout
        self.takes_complex = takes_complex

    def rejection(self, dtype, contiguous, shape_ok, layout=None, complex_call=False):
        """Why this candidate cannot take the call, or None if it can. `complex_call`: a
        call at the CUDA key with a complex tensor argument."""
        if complex_call and not self.takes_complex:
            return "no complex form (Triton has no complex type)"
        if self.dtypes is not None and dtype is not None and dtype not in self.dtypes:
            names = ", ".join(sorted(d.name for d in self.dtypes))
            return f"dtype {dtype.name} not in {{{names}}}"
        if self.layout == "channels_last" and layout != "channels_last":
            return "needs channels_last inputs"
        if self.layout == "contiguous_format" and layout == "channels_last":
            return "an NCHW kernel: channels_last inputs"
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

    __slots__ = ("candidates", "promote_to", "make_contiguous", "to_cpu", "note", "is_direct",
                 "tuned", "channels_last_results", "complex_on_host")

    def __init__(self, candidates, promote_to=None, make_contiguous=False, to_cpu=False,
                 note="", tuned=False, channels_last_results=False, complex_on_host=False):
        self.candidates = candidates
        self.complex_on_host = complex_on_host      # to_cpu, without the opt-in's warning
        self.tuned = tuned
        self.promote_to = promote_to
        self.make_contiguous = make_contiguous
        self.to_cpu = to_cpu
        self.note = note
        self.channels_last_results = channels_last_results
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
        self.rule_signature = None  # the rules' common signature function, if they share one
        self.rule_memo = {}         # signature -> the rules' results (rule_results)
        self.needs_layout = False
        self.layout_aware = False
        self.pinned = {}        # describe_key text -> candidate name (tp.dispatch.tune)
        # Complex calls are this registry's to route (fallback 3) only at the CUDA key: the
        # CPU kernels are NumPy, which has complex types. A complex `dtype=` argument
        # makes a complex call too (cumsum of a float tensor into complex64).
        self.complex_on_host = key == DispatchKey.CUDA
        names = handle.schema.arg_names
        self.dtype_arg = names.index("dtype") if self.complex_on_host and "dtype" in names \
            else None

    def add(self, fn, *, name, priority=0, dtypes=None, contiguous=False, shape=None,
            layout=None, takes_complex=False, replace=False):
        # Same name again replaces the old candidate (override without unregistering);
        # `replace`: this kernel replaces every candidate (a custom op's register_kernel).
        candidates = [] if replace else [c for c in self.candidates if c.name != name]
        candidates.append(Candidate(name, fn, priority, dtypes, contiguous, shape, layout,
                                    takes_complex))
        # Sorted before it is published: a list being sorted reads as empty to other
        # threads, which would find no kernel at all.
        candidates.sort(key=lambda c: -c.priority)
        self.shape_rules = tuple(dict.fromkeys(c.shape for c in candidates if c.shape))
        signatures = {r.signature for r in self.shape_rules}
        self.rule_signature = signatures.pop() if len(signatures) == 1 else None
        self.rule_memo = {}
        self.needs_layout = any(c.contiguous for c in candidates)
        self.layout_aware = any(c.layout is not None for c in candidates)
        self.candidates = candidates

    def pin(self, key_text, name):
        """Run candidate `name` first for calls whose key reads `key_text` (tuning.py)."""
        self.pinned[key_text] = name
        bump_version()

    # ---- the hot path -------------------------------------------------------------
    def entry(self):
        """What the dispatcher's backend slot calls: the registry itself, or, when it has
        one candidate and that one has no constraint, the kernel (after an in-place
        kernel, `bumping` bumps the version of what it wrote).

        A lone unconstrained candidate is every call's choice whatever its dtypes, layout
        or shapes, so the cache key and the cache (which exist to choose) would only
        repeat that answer; a hand-over (KernelConstraintError) would find nobody to
        take the call. explain() reaches the registry itself (`trace.run_backend`), so
        its hops are the same either way. A CUDA kernel without a complex form is
        constrained too: a complex call must reach fallback 3."""
        first = self.candidates[0]
        if (len(self.candidates) > 1 or first.dtypes is not None or first.contiguous
                or first.shape is not None or self.layout_aware
                or (self.complex_on_host and not first.takes_complex)):
            return self
        if stats.on:       # counting: every call takes the full path (stats.py)
            return self
        if options.tuning and self.pinned:     # a measured choice may outrank `first`
            return self
        written = self.handle.schema.mutable_positions
        return bumping(first.fn, written) if written else first.fn

    def plan(self, args):
        """The cached Plan for these arguments (chosen on a miss)."""
        key = self.cache_key(args)
        cache = self.cache
        version = _version[0]
        if self.cache_version != version:
            if stats.on and cache:
                stats.row(self.handle.name).invalidations += len(cache)
            # A fresh dict, not clear(): a plan that another thread is still choosing from
            # the old candidates then lands in the old dict, not in this version's.
            cache = self.cache = {}
            self.cache_version = version
        plan = cache.get(key)
        if plan is None:
            plan = self.select(args, key)
            if len(cache) >= CACHE_LIMIT:
                cache.pop(next(iter(cache)), None)
                if stats.on:
                    stats.row(self.handle.name).evictions += 1
            cache[key] = plan
            if stats.on:
                stats.row(self.handle.name).misses += 1
            if trace.state.active:
                trace.hop("cache", f"miss {self.describe_key(key)} -> {_plan_text(plan)}")
        else:
            if stats.on:
                stats.row(self.handle.name).hits += 1
            if trace.state.active:
                trace.hop("cache", f"hit {self.describe_key(key)} -> {_plan_text(plan)}")
        return plan

    def __call__(self, *args):
        out = self.run(args)
        written = self.handle.schema.mutable_positions
        if written:
            bump_written(args, written)
        return out

    def run(self, args):
        plan = self.plan(args)
        if not plan.is_direct:
            return self.run_fallback(plan, args)
        if trace.state.active or stats.on:
            if stats.on and plan.tuned:
                stats.row(self.handle.name).tuned += 1
            return self.run_candidates(plan.candidates, args)
        try:   # the common case: the first candidate takes the call
            return plan.candidates[0].fn(*args)
        except KernelConstraintError:
            return self.run_candidates(plan.candidates, args)

    def cache_key(self, args, by_shape=None):
        """(dtypes of the tensor arguments (and a complex `dtype=` argument at the CUDA
        key), contiguity if a candidate cares, shape rules, memory layout if a candidate
        cares, the shape bucket or None). The bucket (`shape_bucket`) is part of the key
        only while measured choices are consulted (`by_shape`, by default: tuning is on
        and this registry holds pins): tp.dispatch.tune pins per bucket."""
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
        if self.dtype_arg is not None:
            wanted = args[self.dtype_arg]
            if wanted is not None and wanted.is_complex:
                dtypes += (wanted,)
        layout = self.call_layout(args) if self.layout_aware else None
        if by_shape is None:
            by_shape = options.tuning and bool(self.pinned)
        bucket = shape_bucket(args) if by_shape else None
        if self.shape_rules:
            return (dtypes, contiguous, self.rule_results(args), layout, bucket)
        return (dtypes, contiguous, (), layout, bucket)

    def rule_results(self, args):
        """The shape rules' results for `args`: evaluated on every call, or, when the rules
        share a signature function (ShapeRule's `signature`), once per signature."""
        signature = self.rule_signature
        if signature is None:
            return tuple(bool(r.check(*args)) for r in self.shape_rules)
        key = signature(*args)
        memo = self.rule_memo
        results = memo.get(key)
        if results is None:
            results = tuple(bool(r.check(*args)) for r in self.shape_rules)
            if len(memo) >= CACHE_LIMIT:
                memo.pop(next(iter(memo)), None)
            memo[key] = results
        return results

    def call_layout(self, args):
        """"channels_last" when a tensor argument is a 4-D NHWC tensor (and not also
        row-major, as a tensor with C == 1 can be): PyTorch then lays the results of
        conv, pooling and batch_norm out channels_last too. Else "contiguous_format"."""
        schema = self.handle.schema
        for i in schema.tensor_positions:
            a = args[i]
            if a is None or i in schema.list_positions:
                continue
            impl = a._impl
            if len(impl.sizes) == 4 and not impl.is_contiguous and \
                    is_channels_last(impl.sizes, impl.strides):
                return "channels_last"
        return "contiguous_format"

    def run_candidates(self, candidates, args):
        for i, cand in enumerate(candidates):
            try:
                if trace.state.active:
                    trace.hop("kernel", f"{cand.name}", trace.code_where(cand.fn),
                              {"kernel": cand.name})
                out = cand.fn(*args)
                if stats.on:
                    stats.row(self.handle.name).ran(cand.name)
                return out
            except KernelConstraintError as e:
                if stats.on:
                    stats.row(self.handle.name).reject(cand.name,
                                                       f"raised KernelConstraintError: {e}")
                rest = candidates[i + 1:]
                log.info("%s: %s rejected its input (%s); handing over to %s", self.handle.name,
                         cand.name, e, rest[0].name if rest else "nobody")
                if trace.state.active:
                    trace.hop("hand-over", f"{cand.name} raised KernelConstraintError ({e})")
                if not rest:
                    raise

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

    def _report_candidates(self, dtype, contiguous, shape_ok, layout, complex_call):
        for c in self.candidates:
            why = c.rejection(dtype, contiguous, shape_ok, layout, complex_call)
            if trace.state.active:
                trace.hop("candidate", f"{c.name} (priority {c.priority}): "
                          + ("accepted" if why is None else f"rejected, {why}"))
            if stats.on and why is not None:
                stats.row(self.handle.name).reject(c.name, why)

    def viable(self, dtype, contiguous, shape_ok, layout=None, complex_call=False):
        return [c for c in self.candidates
                if c.rejection(dtype, contiguous, shape_ok, layout, complex_call) is None]

    def select(self, args, key):
        dtype = self.dtype_of_key(key)
        contiguous = key[1] if key[1] is not None else True
        shape_ok = self.shape_results(key)
        layout = key[3]
        # Any complex tensor argument counts (a real `self` times a complex `other` too).
        complex_call = self.complex_on_host and \
            any(d is not None and d.is_complex for d in key[0])
        if trace.state.active or stats.on:
            self._report_candidates(dtype, contiguous, shape_ok, layout, complex_call)
        found = self.viable(dtype, contiguous, shape_ok, layout, complex_call)
        if found and options.tuning and self.pinned:
            # A pin of this bucket; else one saved before pins had buckets (any shape).
            name = self.pinned.get(self.describe_key(key)) or \
                self.pinned.get(self.describe_key(key[:4] + (None,)))
            pinned = [c for c in found if c.name == name]
            if pinned:
                rest = [c for c in found if c.name != name]
                return Plan(pinned + rest, tuned=True,
                            note=f"tuned: {name} measured fastest (tp.dispatch.tune)")
        if found:
            return Plan(found)
        # 1. dtype promotion: a wider dtype that some candidate takes as the inputs are
        for wider in _promotion_chain(dtype):
            found = self.viable(wider, contiguous, shape_ok, layout, complex_call)
            if found:
                return Plan(found, promote_to=(dtype, wider),
                            note=f"dtype promotion {dtype.name} -> {wider.name}")
        # 2. layout conversion (then with promotion): contiguous copies of strided inputs;
        #    for a channels_last call that only NCHW kernels take, NCHW copies, and the
        #    4-D results laid out channels_last again
        if layout == "channels_last" or not contiguous:
            back = layout == "channels_last"
            target = "contiguous_format" if back else layout
            what = "layout conversion: " + ("channels_last -> contiguous_format, results "
                                            "back to channels_last" if back else "contiguous()")
            for wider in (None,) + tuple(_promotion_chain(dtype)):
                found = self.viable(wider or dtype, True, shape_ok, target, complex_call)
                if found and wider is None:
                    return Plan(found, make_contiguous=True, channels_last_results=back,
                                note=what)
                if found:
                    return Plan(found, promote_to=(dtype, wider), make_contiguous=True,
                                channels_last_results=back,
                                note=f"dtype promotion {dtype.name} -> {wider.name} and {what}")
        # 3. complex on host: the CPU kernel on host copies
        if complex_call:
            return Plan([], to_cpu=True, complex_on_host=True,
                        note="complex on host: no Triton kernel has a complex form; the CPU "
                             "kernel on host copies, the results copied back")
        # 4. device fallback, opt-in
        if options.device_fallback and self.key != 0:
            return Plan([], to_cpu=True, note="device fallback: computing on the CPU")
        reasons = "\n".join(f"  {c.name} (priority {c.priority}): "
                            f"{c.rejection(dtype, contiguous, shape_ok, layout)}"
                            for c in self.candidates)
        raise NoKernelError(
            f"{self.handle.name}: no {self._key_name()} kernel accepts "
            f"{self.describe_key(key)}; candidates:\n{reasons}", op=self.handle.name)

    def _key_name(self):
        return DispatchKey(self.key).name

    def describe_key(self, key):
        dtypes = ", ".join(d.name if d is not None else "None" for d in key[0])
        layout = {True: "; contiguous", False: "; non-contiguous", None: ""}[key[1]]
        shape = f"; shape rules {list(key[2])}" if key[2] else ""
        memory = f"; {key[3]}" if key[3] else ""
        bucket = f"; shapes {' '.join(str(list(b)) for b in key[4])}" if key[4] is not None \
            else ""
        return f"({dtypes}{layout}{shape}{memory}{bucket})"

    # ---- fallbacks ----------------------------------------------------------------
    def run_fallback(self, plan, args):
        log.info("%s on %s: %s", self.handle.name, self._key_name(), plan.note)
        if stats.on:
            fallbacks = stats.row(self.handle.name).fallbacks
            fallbacks[plan.note] = fallbacks.get(plan.note, 0) + 1
        if trace.state.active:
            trace.hop("fallback", plan.note)
        if plan.to_cpu:
            return self.run_on_cpu(args, warn=not plan.complex_on_host)
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
        if plan.channels_last_results:
            out = _map_tensors(out, lambda t: t.contiguous(memory_format=channels_last)
                               if t.dim() == 4 else t)
        return out

    @staticmethod
    def _convert(t, plan):
        if plan.promote_to is not None and t.dtype is plan.promote_to[0]:
            t = t.to(plan.promote_to[1])
        if plan.make_contiguous and not t._impl.is_contiguous:
            t = t.contiguous()
        return t

    def run_on_cpu(self, args, warn=True):
        """The op's CPU kernel on host copies of the tensor arguments; its results copied
        to the device of the call, and what an in-place (or `out=`) op wrote on a host copy
        copied back into the caller's tensor."""
        if warn:
            warnings.warn(f"{self.handle.name}: no {self._key_name()} kernel, computing on "
                          f"the CPU (device fallback enabled)", stacklevel=4)
        device = None       # the call's device: that of a tensor not on the host
        moved = []
        for a in args:
            items = a if isinstance(a, (list, tuple)) else (a,)
            tensors = [t for t in items if hasattr(t, "_impl")]
            for t in tensors:
                if device is None and t._impl.device.type != "cpu":
                    device = t._impl.device
            if not tensors:
                moved.append(a)
            elif isinstance(a, (list, tuple)):
                moved.append([t if t is None else t.to("cpu") for t in a])
            else:
                moved.append(a.to("cpu"))
        out = self.handle.call(1 << DispatchKey.CPU, *moved)
        written = {}
        for i in self.handle.schema.mutable_positions:
            if args[i] is not None and moved[i] is not args[i]:
                args[i].copy_(moved[i])
                written[id(moved[i])] = args[i]
        return _map_tensors(out, lambda t: written[id(t)] if id(t) in written else t.to(device))


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
