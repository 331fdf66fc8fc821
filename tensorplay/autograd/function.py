"""Custom differentiable functions, written by the user in Python:

    class Exp(tp.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * y

    y = Exp.apply(x)        # y.grad_fn is an ExpBackward node; ctx *is* that node

`forward` runs with grad mode off (its ops record nothing); `apply` then attaches one
node for the whole function. `backward` gets one gradient per output and returns one
per forward argument (None for non-tensors and for inputs that need none).
"""
from __future__ import annotations

import functools

from tensorplay.autograd.grad_mode import grad_state, no_grad
from tensorplay.autograd.node import collect_next_edges
from tensorplay.autograd.recording import check_inplace, set_history
from tensorplay.autograd.node import Node
from tensorplay.autograd.saved import SavedVariable
from tensorplay.autograd import forward_mode
from tensorplay.dispatch.keys import AUTOGRAD_MASK
from tensorplay.dispatch.tls import ExcludeKeys
from tensorplay.errors import AutogradError

__all__ = ["Function", "FunctionCtx", "BackwardCFunction", "once_differentiable"]

# A Function called with BatchedTensors (under vmap) runs on their physical tensors, where
# the graph lives: `apply_under_vmap` of tensorplay/func/autograd_function.py, which sits
# above autograd; tensorplay/func/__init__.py installs it here as it loads (as it gives
# the engine `batched_grad`). It returns None when no argument is batched.
vmap_apply = None


def _is_tensor(x):
    return getattr(x, "_impl", None) is not None


class FunctionCtx:
    """What `ctx` offers inside forward/backward."""

    def save_for_backward(self, *tensors):
        self.to_save = tensors

    def save_for_forward(self, *tensors):
        """Tensors `jvp` reads (forward mode), through `saved_tensors` as in PyTorch."""
        self.to_save_forward = tensors

    @property
    def saved_tensors(self):
        if getattr(self, "in_jvp", False):
            return tuple(getattr(self, "to_save_forward", ()))
        if self._saved is None:
            return tuple(self.to_save)
        return tuple(saved.unpack(self) for saved in self._saved)

    def mark_non_differentiable(self, *tensors):
        self.non_differentiable.update(id(t._impl) for t in tensors)

    def mark_dirty(self, *tensors):
        """Tell autograd that forward modified these inputs in place."""
        self.dirty.update(id(t._impl) for t in tensors)

    def set_materialize_grads(self, value):
        """False: backward may receive None for outputs that got no gradient."""
        self.materialize_grads = bool(value)


class BackwardCFunction(Node, FunctionCtx):
    """The node of one call of a custom Function (subclassed per Function, so that
    `y.grad_fn.name()` is `ExpBackward`). No __slots__: ctx takes any attribute."""

    _forward_cls = None
    # PyTorch sums a custom backward's broadcast gradient down to the input's shape.
    reduce_broadcast_grads = True

    def __init__(self):
        super().__init__()
        self.to_save = ()
        self._saved = None
        self.non_differentiable = set()
        self.dirty = set()
        self.needs_input_grad = ()
        self._tensor_positions = ()

    def apply(self, grads):
        result = self._forward_cls.backward(self, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        n = len(self.needs_input_grad)
        if len(result) > n and all(r is None for r in result[n:]):
            result = result[:n]
        if len(result) != n:
            raise AutogradError(f"function {self.name()} returned an incorrect number of "
                               f"gradients (expected {n}, got {len(result)})")
        positions = self._tensor_positions
        for i, r in enumerate(result):
            if r is not None and i not in positions:
                raise AutogradError(f"function {self.name()} returned a gradient different than "
                                   f"None at position {i + 1}, but the corresponding forward "
                                   f"input was not a Variable")
        return tuple(result[i] for i in positions)

    def release_saved(self):
        for saved in self._saved or ():
            saved.release()


class Function:
    """Base class of custom functions: define static `forward(ctx, ...)` and
    `backward(ctx, ...)`, call `MyFunction.apply(...)`.

    (The PyTorch 2 style, a ctx-free `forward` plus `setup_context(ctx, inputs,
    output)`, works too.)"""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._backward_cls = type(f"{cls.__name__}Backward", (BackwardCFunction,),
                                 {"_forward_cls": cls, "__module__": cls.__module__})

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement the backward function for custom "
                                  "autograd.Function.")

    setup_context = None

    # Under tp.vmap (as torch.func): run forward and backward on the BatchedTensors...
    generate_vmap_rule = False

    @staticmethod
    def jvp(ctx, *tangents):
        """Forward mode: the outputs' tangents from the inputs' (one per forward input,
        None where there is none); tensors saved with `ctx.save_for_forward` are in
        `ctx.saved_tensors`."""
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")

    @staticmethod
    def vmap(info, in_dims, *args):
        """...or say how to batch the function: `info` has `batch_size` and `randomness`,
        `in_dims` the batch dim of each argument (None: not batched); return
        `(outputs, out_dims)` with the batch dim of each output."""
        raise NotImplementedError("To use autograd.Function with vmap, you must either "
                                  "override the vmap staticmethod or set "
                                  "generate_vmap_rule=True.")

    @classmethod
    def apply(cls, *args, **kwargs):
        if vmap_apply is not None:
            out = vmap_apply(cls, args, kwargs)
            if out is not None:
                return out
        ctx = cls._backward_cls()
        positions = tuple(i for i, a in enumerate(args) if _is_tensor(a))
        requires = tuple(_is_tensor(a) and a._impl.requires_grad for a in args)
        recording = grad_state.enabled and any(requires)
        ctx.needs_input_grad = requires if recording else (False,) * len(args)
        ctx._tensor_positions = positions
        if recording:
            # Before forward runs: an input it modifies in place (mark_dirty) must
            # send its gradient to its *old* history.
            ctx.set_next_edges(collect_next_edges(*(args[i] for i in positions)))
        # Forward mode: the tangents come from `jvp`, so forward runs without them.
        tangent_levels = forward_mode.visible_levels([args[i] for i in positions]) \
            if forward_mode.levels else ()
        if tangent_levels:
            with ExcludeKeys(forward_mode.FORWARD_AD):
                outputs = _run_forward(cls, ctx, args, kwargs)
        else:
            outputs = _run_forward(cls, ctx, args, kwargs)
        if recording:
            is_tuple = isinstance(outputs, tuple)
            outs = _attach(ctx, args, outputs if is_tuple else (outputs,))
            ctx._saved = tuple(SavedVariable(t, _is_output(t, outs)) for t in ctx.to_save)
            ctx.to_save = ()
            outputs = outs if is_tuple else outs[0]
        for level in tangent_levels:
            _push_tangents(cls, ctx, args, outputs, level)
        return outputs


def _run_forward(cls, ctx, args, kwargs):
    """The user's forward (and setup_context), recording nothing."""
    with no_grad():
        if cls.setup_context is not None:
            outputs = cls.forward(*args, **kwargs)
            cls.setup_context(ctx, args, outputs)
            return outputs
        return cls.forward(ctx, *args, **kwargs)


def _push_tangents(cls, ctx, args, outputs, level):
    """The outputs' tangents at `level`: `cls.jvp` on the inputs' (PyTorch's rule: a
    custom Function carries tangents only through its own jvp)."""
    if cls.jvp is Function.jvp:
        Function.jvp(ctx)       # raises PyTorch's "You must implement the jvp function"
    tangents = [forward_mode.tangent_of(a, level) if _is_tensor(a) else None for a in args]
    ctx.in_jvp = True
    try:
        with forward_mode.hidden_level(level):
            result = cls.jvp(ctx, *tangents)
    finally:
        ctx.in_jvp = False
    outs = outputs if isinstance(outputs, tuple) else (outputs,)
    result = result if isinstance(result, tuple) else (result,)
    if len(result) != len(outs):
        raise AutogradError(f"function {cls.__name__}.jvp returned an incorrect number of "
                            f"tangents (expected {len(outs)}, got {len(result)})")
    for o, t in zip(outs, result):
        if t is not None and _is_tensor(o) and o.dtype.is_differentiable:
            forward_mode.set_tangent(o, level, t)


def _is_output(t, outs):
    return t is not None and any(o is t for o in outs)


def _attach(ctx, args, outputs):
    """Give the outputs their history: ctx is their grad_fn."""
    input_impls = {id(a._impl) for a in args if _is_tensor(a)}
    outs, meta = [], []
    for i, o in enumerate(outputs):
        if not _is_tensor(o):
            outs.append(o)
            meta.append(None)
            continue
        key = id(o._impl)
        if key in ctx.dirty:
            check_inplace(o, f"{ctx._forward_cls.__name__}.forward")
            if o._impl.base is not None:
                # Its base would need a CopySlices node, which wraps one-output nodes only.
                raise AutogradError(f"{ctx._forward_cls.__name__}: mark_dirty() on a view is "
                                   f"not supported; modify and mark the base tensor instead")
        elif key in input_impls:
            # An input returned as it is: the output must be a new tensor, or the
            # input would lose its own history.
            with ExcludeKeys(AUTOGRAD_MASK):
                o = o.detach()
        impl = o._impl
        if not impl.dtype.is_differentiable:
            meta.append(None)
        else:
            meta.append((impl.sizes, impl.dtype, impl.device))
            if key not in ctx.non_differentiable:
                impl.grad_fn = ctx
                impl.output_nr = i
                impl.set_requires_grad(True)
        outs.append(o)
    ctx._output_meta = tuple(meta)
    return tuple(outs)


class DelayedError(Node):
    """Stands in the graph of a once_differentiable backward: reaching it raises."""

    __slots__ = ("message",)

    def __init__(self, message):
        super().__init__()
        self.message = message

    def apply(self, grads):
        raise AutogradError(self.message)


def once_differentiable(backward):
    """For a backward written with non-differentiable steps (NumPy, say): run it without
    recording, and make a later attempt to differentiate through it an error."""
    @functools.wraps(backward)
    def wrapper(ctx, *grads):
        with no_grad():
            outputs = backward(ctx, *grads)
        if not grad_state.enabled:
            return outputs
        grad_inputs = [g for g in grads if _is_tensor(g)]
        if not any(g._impl.requires_grad for g in grad_inputs):
            return outputs
        is_tuple = isinstance(outputs, tuple)
        outs = outputs if is_tuple else (outputs,)
        err = DelayedError("trying to differentiate twice a function that was marked with "
                           "@once_differentiable")
        err.set_next_edges(collect_next_edges(*grad_inputs))
        with ExcludeKeys(AUTOGRAD_MASK):
            outs = [o.detach() if _is_tensor(o) else o for o in outs]
        set_history([o if _is_tensor(o) else None for o in outs], err)
        return tuple(outs) if is_tuple else outs[0]
    return wrapper
