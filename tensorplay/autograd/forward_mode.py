"""Forward-mode AD: tangents carried on tensors, dual levels, and the ForwardAD kernel.

Reverse mode records a graph and runs it backwards; forward mode pushes a *tangent*
(a direction `v`, the same shape as its tensor) through each op as the op runs, so that
every result carries J v alongside its value. Three pieces:

- **Tangents live on the tensor** (`TensorImpl.tangents`: level -> tangent), as PyTorch
  keeps a forward gradient per level. A tensor that has one carries the ForwardAD
  dispatch key in its key set, so only a call with such a tensor visits the key: every
  other call is untouched.
- **Levels** (`dual_level()` in forward_ad.py) keep nested forward passes apart: a
  tangent belongs to one level and is dropped when its level exits. Inner and outer
  levels compose (`jvp` of `jvp`) because a tangent formula runs with its own level
  hidden and the other levels live, so its ops carry the other levels' tangents.
- **The kernel at the ForwardAD key** (one function serving every op, registered as a
  boxed fallback like the Python key's): it runs the op below the key for the value,
  then the op's tangent function (tensorplay/_generated/forward_formulas.py, generated
  from derivatives.yaml's `result:` formulas) for each level, and attaches the tangent.
  It sits above the autograd keys, so both the value and the tangent computation are
  recorded by autograd when something requires grad (reverse over forward), and below
  Vmap, so a batched tensor's tangent lives on its physical tensor.
"""
from __future__ import annotations

import weakref

from tensorplay.dispatch import trace
from tensorplay.dispatch.dispatcher import FALLTHROUGH, dispatcher
from tensorplay.dispatch.keys import DispatchKey
from tensorplay.dispatch.tls import ExcludeKeys
from tensorplay.errors import AutogradError

FORWARD_AD = 1 << DispatchKey.ForwardAD

levels = []         # the dual levels entered and not yet exited, innermost last
_hidden = []        # levels whose tangent formulas are running (their tangents unseen)
_holders = {}       # level -> weak references to the impls holding a tangent at it


# ---- tangents on tensors ---------------------------------------------------------------
def tangent_of(tensor, level):
    """`tensor`'s tangent at `level`, or None."""
    tangents = getattr(tensor._impl, "tangents", None)
    return None if tangents is None else tangents.get(level)


def set_tangent(tensor, level, tangent):
    impl = tensor._impl
    tangents = getattr(impl, "tangents", None)
    if tangents is None:
        impl.tangents = tangents = {}
    if level not in tangents:
        _holders.setdefault(level, []).append(weakref.ref(impl))
    tangents[level] = tangent
    impl.keys |= FORWARD_AD


def drop_tangent(tensor, level):
    impl = tensor._impl
    tangents = getattr(impl, "tangents", None)
    if tangents:
        tangents.pop(level, None)


def detach_keeping_tangents(tensor):
    """`tensor.detach()` that keeps its tangents: how a reverse-mode transform (tp.func's
    grad, jacrev) cuts its inputs and results off its caller's graph without cutting them
    off the forward levels around it (forward over reverse)."""
    out = tensor.detach()
    tangents = getattr(tensor._impl, "tangents", None)
    if tangents:
        for level, t in tangents.items():
            set_tangent(out, level, t)
    return out


def tangent_holder(impl):
    """The dict an op's output will keep its tangents in, made now: a saved output is
    rebuilt as a new impl in backward (autograd/saved.py), and sharing this dict gives it
    the tangent the ForwardAD kernel attaches after the save (forward over reverse)."""
    tangents = getattr(impl, "tangents", None)
    if tangents is None:
        impl.tangents = tangents = {}
    return tangents


# ---- levels ----------------------------------------------------------------------------
def enter_level():
    level = levels[-1] + 1 if levels else 0
    levels.append(level)
    return level


def exit_level(level=None):
    if not levels:
        raise AutogradError("exit_dual_level(): no dual level is active")
    if level is None:
        level = levels[-1]
    if level != levels[-1]:
        raise AutogradError(f"exit_dual_level(level={level}): only the innermost level "
                            f"({levels[-1]}) can be exited")
    levels.pop()
    # Every tangent of the level goes with it (PyTorch clears them the same way).
    for ref in _holders.pop(level, ()):
        impl = ref()
        if impl is not None and impl.tangents:
            impl.tangents.pop(level, None)
            if not impl.tangents:
                impl.keys &= ~FORWARD_AD


class hidden_level:
    """`with hidden_level(level):` ops see no tangent of `level` (its tangent formulas
    run in here). With every level hidden, the ForwardAD key is excluded outright, so a
    one-level forward pass pays nothing extra for the ops its formulas call."""

    __slots__ = ("level", "exclude")

    def __init__(self, level):
        self.level = level
        self.exclude = None

    def __enter__(self):
        _hidden.append(self.level)
        if len(_hidden) >= len(levels) and all(lv in _hidden for lv in levels):
            self.exclude = ExcludeKeys(FORWARD_AD)
            self.exclude.__enter__()
        return self

    def __exit__(self, *exc):
        if self.exclude is not None:
            self.exclude.__exit__(*exc)
        _hidden.pop()


def visible_levels(tensors):
    """The levels at which some of `tensors` has a tangent, less the hidden ones."""
    found = []
    for t in tensors:
        tangents = getattr(t._impl, "tangents", None) if t is not None else None
        if tangents:
            for level in tangents:
                if level not in found and level not in _hidden:
                    found.append(level)
    found.sort()
    return found


# ---- the kernel at the ForwardAD key ---------------------------------------------------
def _inputs(args, tangent):
    """The differentiable tensor inputs of a call (the elements of a Tensor[] one)."""
    out = []
    for i in tangent.inputs:
        a = args[i]
        if i in tangent.lists:
            out.extend(t for t in a if t is not None)
        elif a is not None:
            out.append(a)
    return out


def _tangent_args(args, tangent, level):
    """Each differentiable input's tangent at `level`, None where it has none: the
    tangent function keeps only the terms of the tangents given, as PyTorch's zero
    tensors make the others vanish (a real zero times an infinite primal is NaN)."""
    out = []
    for i in tangent.inputs:
        a = args[i]
        if i in tangent.lists:
            out.append([None if t is None else tangent_of(t, level) for t in a])
        else:
            out.append(None if a is None else tangent_of(a, level))
    return out


def _fit(t, like):
    """A formula's tangent in the output's shape (a formula may give a broadcastable one).
    Its dtype is the formula's, as PyTorch sets it: the tangent of `norm(x_float32,
    dtype=float64)` is float32 there (its formula divides in place by the float64 norm).
    A complex tangent of a real output is its real part (the output was cast back from
    complex, which keeps the real part). Three cases take the output's dtype: a tangent
    that is not floating (integer zeros); a real tangent of a complex output
    (`x_float64 + 1j`), which PyTorch makes complex through the zero tangent of the
    complex number, a term left out here; and a tangent wider than the output (float64
    for float32, complex128 for complex64), which comes from a number a composite made a
    tensor of (`pow(2.0, x)`, `where(c, 2 - 1j, x)`), where PyTorch's own formula
    computes in the output's dtype."""
    if t.shape != like.shape:
        t = t.expand(like.shape)
    if t.dtype.is_complex and not like.dtype.is_complex:
        # a real output computed through complex numbers and cast back (rms_norm of a real
        # input with a complex weight): the cast keeps the real part, so does its tangent
        t = t.real
    if not t.dtype.is_differentiable or (like.dtype.is_complex and not t.dtype.is_complex) \
            or (t.dtype.is_complex == like.dtype.is_complex
                and t.dtype.itemsize > like.dtype.itemsize):
        t = t.to(like.dtype)
    return t


def _attach(result, tangents, level, num_returns):
    outs = (result,) if num_returns == 1 else tuple(result)
    ts = (tangents,) if num_returns == 1 else tuple(tangents)
    for out, t in zip(outs, ts):
        if t is None or out is None:
            continue
        if isinstance(out, (list, tuple)):      # a Tensor[] output (unbind, split)
            for o, ti in zip(out, t):
                if ti is not None and o.dtype.is_differentiable:
                    set_tangent(o, level, _fit(ti, o))
        elif out.dtype.is_differentiable:
            set_tangent(out, level, _fit(t, out))


def _attach_inplace(self, t, level):
    """An in-place op's new tangent for `self`: written into the tangent it has (which
    may be a view of its base's tangent), or, for a view without one, into a zero
    tangent given to its base, so the base sees the change as PyTorch's does."""
    t = _fit(t, self)
    existing = tangent_of(self, level)
    if existing is not None:
        existing.copy_(t)
        return
    impl = self._impl
    base = impl.base
    if base is not None and base.dtype.is_differentiable:
        from tensorplay import zeros_like
        from tensorplay._tensor_factory import wrap
        base = wrap(base)     # (a view's `base` is its base's impl)
        base_t = tangent_of(base, level)
        if base_t is None:
            base_t = zeros_like(base)
            set_tangent(base, level, base_t)
        view_t = base_t.as_strided(impl.sizes, impl.strides, impl.offset)
        view_t.copy_(t)
        set_tangent(self, level, view_t)
        return
    set_tangent(self, level, t)


FORWARD = {}        # op name -> Tangent (tensorplay/_generated/forward_formulas.py), by register()


def make_kernel(handle):
    """The kernel at the ForwardAD key for `handle`'s op (a boxed fallback: one function,
    made per op). An op with no backward formula falls through: a Composite decomposition
    carries tangents through the ops it calls, and an op with no derivative at all
    (argmax, a comparison) has outputs no tangent belongs to."""
    tangent = FORWARD.get(handle.name)
    if tangent is None:
        return FALLTHROUGH if _decomposes(handle) else _without_formula(handle)
    name = handle.name
    inplace = name.split(".")[0].endswith("_") and not name.startswith("_")
    num_returns = handle.schema.num_returns

    def forward_ad(ks, *args):
        below = ks & ~FORWARD_AD
        inputs = _inputs(args, tangent)
        active = visible_levels(inputs)
        if not active:
            return handle.redispatch(below, *args)
        if tangent.fn is None:
            raise NotImplementedError(
                f"Trying to use forward AD with {name} that does not support it because "
                f"it has not been implemented yet (derivatives.yaml has no tangent formula "
                f"for it: {tangent.where})")
        primal_args = args
        if inplace:
            # the formula reads `self` as it was before the op wrote it
            with ExcludeKeys(FORWARD_AD):
                primal_args = (args[0].clone(),) + args[1:]
        with ExcludeKeys(FORWARD_AD):
            result = handle.redispatch(below, *args)
        for level in active:
            if trace.state.active:
                trace.hop("tangent", f"level {level}: {tangent.formula}",
                          f"{tangent.where} {name}")
            with hidden_level(level):
                t = tangent.fn(*primal_args, result, *_tangent_args(args, tangent, level))
                if inplace:
                    # (None: the formula reads no tangent given, eq_'s self_t when only
                    # other has one; self keeps what it has, as in PyTorch)
                    if t is not None:
                        _attach_inplace(args[0], t, level)
                else:
                    _attach(result, t, level, num_returns)
        return result

    return _named(forward_ad, name, tangent)


def _named(kernel, name, tangent):
    """The kernel as explain() names it, with the op's Tangent (None: no formula)."""
    kernel.__qualname__ = f"forward_ad[{name}]"
    kernel.fallback_name = "tensorplay.autograd.forward_mode.forward_ad"
    kernel.tangent = tangent
    return kernel


def _decomposes(handle):
    """Whether a call of `handle`'s op on a CPU tensor runs a Composite decomposition above
    autograd (whose ops carry the tangents), not a kernel."""
    composite = handle.kernels[DispatchKey.Composite]
    return (composite is not None and handle.kernels[DispatchKey.AutogradCPU] is None
            and not handle._has_backend_kernel(DispatchKey.CPU))


def _without_formula(handle):
    """The kernel of an op with no derivatives.yaml entry that does not decompose (a custom
    op, an op with no derivative): a floating result from a dual input would silently
    lose the tangent, so that raises as PyTorch's does; integer results (argmax) pass."""
    name = handle.name

    def forward_ad(ks, *args):
        result = handle.redispatch(ks & ~FORWARD_AD, *args)
        outs = result if isinstance(result, (tuple, list)) else (result,)
        if any(getattr(o, "_impl", None) is not None and o.dtype.is_differentiable
               for o in outs):
            tensors = [a for a in args if getattr(a, "_impl", None) is not None]
            for a in args:
                if isinstance(a, (list, tuple)):
                    tensors += [t for t in a if getattr(t, "_impl", None) is not None]
            if visible_levels(tensors):
                raise NotImplementedError(
                    f"Trying to use forward AD with {name} that does not support it because "
                    f"it has not been implemented yet (it has no derivatives.yaml entry)")
        return result

    return _named(forward_ad, name, None)


def register(tangents):
    """Put the kernel at the ForwardAD key of every op, defined now or later. tensorplay's
    import calls it once the generated ops exist, with their tangent functions (the
    generated FORWARD table, which sits above autograd)."""
    FORWARD.update(tangents)
    dispatcher.register_fallback(DispatchKey.ForwardAD, make_kernel)
