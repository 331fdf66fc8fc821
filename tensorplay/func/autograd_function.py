"""A custom `tp.autograd.Function` under vmap, as torch.func runs one.

A Function attaches one node to its outputs. Under vmap its arguments are BatchedTensors,
whose history is their physical tensor's (batched.py): the node belongs on the
*physical* outputs, where the graph of the whole batch is recorded. So `apply` with
batched arguments runs a second Function one level down, on the physical tensors:

    MyFn.apply(x)               x: BatchedTensor(level L, physical xp, bdim 0)
      -> VmappedMyFn.apply(call, xp)         its node sits on the physical outputs
           forward:  MyFn's forward on the batch, by one of
                     generate_vmap_rule = True   MyFn.forward(x) on the BatchedTensors
                     a `vmap` staticmethod       MyFn.vmap(info, in_dims, xp)
                                                 -> (physical outputs, out_dims)
           setup_context: MyFn.setup_context on the BatchedTensors, through a ctx that
                     saves the physical tensors (and remembers their batch dims)
           backward: MyFn.backward on the gradients seen as BatchedTensors again; a
                     gradient for an argument that was not batched is summed over the
                     batch (every example's contribution reaches the one tensor)
      <- the physical outputs, wrapped as BatchedTensors of level L

The physical arguments may still be batched at an outer level (nested vmaps): the second
Function is applied like any other, so it is vmapped again one level out.

As in PyTorch, only Functions written with `setup_context` (a ctx-free forward) run under
vmap, and they need `generate_vmap_rule = True` or a `vmap` staticmethod.
"""
from __future__ import annotations

import contextlib
from typing import NamedTuple

from tensorplay.autograd.function import Function
from tensorplay.dispatch import trace
from tensorplay.errors import AutogradError
from tensorplay.func.batched import batched_impl, unwrap_level, wrap_batched
from tensorplay.func.batching_rules import materialize
from tensorplay.func.trees import flatten, unflatten
from tensorplay.func.vmap import _unwrap
from tensorplay.func.vmap_levels import _Level, _levels, current_level

LINK = "For more details, please see https://pytorch.org/docs/main/notes/extending.func.html"


class VmapInfo(NamedTuple):
    """The `info` a Function's `vmap` staticmethod gets."""
    batch_size: int
    randomness: str


def _is_tensor(x):
    return getattr(x, "_impl", None) is not None


def _innermost_level(args):
    impls = [batched_impl(a) for a in args]
    return max((impl.level for impl in impls if impl is not None), default=0)


def apply_under_vmap(cls, args, kwargs):
    """`cls.apply(*args, **kwargs)` when some argument is a BatchedTensor; None when none
    is (Function.apply then runs as usual)."""
    level = _innermost_level(args)
    if level == 0:
        return None
    if cls.setup_context is None:
        raise AutogradError("In order to use an autograd.Function with functorch transforms "
                            "(vmap, grad, jvp, jacrev, ...), it must override the "
                            "setup_context staticmethod. " + LINK)
    if any(_is_tensor(v) for v in flatten(kwargs)[0]):
        raise NotImplementedError(f"Run vmap on autograd.Function with kwarg-only Tensor args. "
                                  f"Please do not pass kwarg-only Tensors to autograd.Function. "
                                  f"Got: {kwargs}")
    _check_vmap_rule(cls)
    entry = current_level(level)
    physical, in_dims = [], []
    for a in args:
        if batched_impl(a) is not None and batched_impl(a).level == level:
            p, d = _unwrap(a, level, keep_expanded=False)
        else:
            p, d = a, None
        physical.append(p)
        in_dims.append(d)
    call = _VmapCall(cls, level, entry.batch_size, entry.randomness, tuple(in_dims), args,
                     kwargs)
    if trace.state.active:
        # explain(): which of the two ways batches the Function
        if cls.generate_vmap_rule:
            how, code = "generate_vmap_rule: its forward on the batched tensors", cls.forward
        else:
            how, code = f"its vmap staticmethod, in_dims={call.in_dims}", cls.vmap
        trace.hop("vmap", f"level {level}: autograd.Function {cls.__name__} by {how}; its "
                          f"node on the physical outputs", trace.code_where(code))
    out = _vmapped_class(cls).apply(call, *physical)
    flat, spec = flatten(out)
    wrapped = [o if d is None or not _is_tensor(o) else wrap_batched(o, d, level)
               for o, d in zip(flat, call.out_dims)]
    return unflatten(wrapped, spec)


def _check_vmap_rule(cls):
    """One of generate_vmap_rule and a vmap staticmethod (PyTorch's messages)."""
    has_rule = cls.vmap is not Function.vmap
    if cls.generate_vmap_rule and has_rule:
        raise AutogradError(f"You tried to vmap over {cls.__name__}, but it has both "
                            f"generate_vmap_rule=True and an overridden vmap staticmethod. "
                            f"Please set generate_vmap_rule=False or delete the overridden "
                            f"vmap staticmethod to avoid ambiguity. " + LINK)
    if not cls.generate_vmap_rule and not has_rule:
        raise AutogradError(f"You tried to vmap over {cls.__name__}, but it does not have vmap "
                            f"support. Please override and implement the vmap staticmethod "
                            f"or set generate_vmap_rule=True. " + LINK)


@contextlib.contextmanager
def _at_level(call):
    """Level `call.level` live while the Function's code runs on its BatchedTensors: it
    is, inside the vmap; a backward run after vmap returned brings it back for the call."""
    if any(entry.level == call.level for entry in _levels.stack):
        yield
        return
    _levels.stack.append(_Level(call.level, call.batch_size, call.randomness))
    try:
        yield
    finally:
        _levels.stack.pop()


class _VmapCall:
    """One call of a Function under vmap: what its physical Function's forward, setup_context
    and backward need to see the batch as the user's Function does."""

    def __init__(self, cls, level, batch_size, randomness, in_dims, args, kwargs):
        self.cls = cls
        self.level = level
        self.batch_size = batch_size
        self.randomness = randomness
        self.in_dims = in_dims
        self.args = args            # as the user passed them (BatchedTensors at `level`)
        self.kwargs = kwargs
        self.out_dims = None        # one per flattened output, set by forward
        self.out_spec = None

    def wrap(self, x, bdim):
        return x if bdim is None or not _is_tensor(x) else wrap_batched(x, bdim, self.level)

    def forward(self, physical):
        cls = self.cls
        with _at_level(self):
            if cls.generate_vmap_rule:
                out = cls.forward(*self.args, **self.kwargs)
                flat, spec = flatten(out)
                pairs = [unwrap_level(o, self.level) if _is_tensor(o) else (o, None)
                         for o in flat]
                # An input returned as it is must come back as a new tensor (as
                # Function.apply does for one), or its physical tensor would get this
                # node as its history: compare with every input's physical tensor.
                inputs = {id(unwrap_level(a, self.level)[0]._impl) for a in self.args
                          if _is_tensor(a)}
                flat = [p.detach() if _is_tensor(p) and id(p._impl) in inputs else p
                        for p, _ in pairs]
                dims = [d for _, d in pairs]
            else:
                result = cls.vmap(VmapInfo(self.batch_size, self.randomness), self.in_dims,
                                  *physical, **self.kwargs)
                out, dims = _check_vmap_returns(cls, result)
                flat, spec = flatten(out)
        # Every tensor output batched: an output the same for every example is expanded,
        # so that each example's gradient reaches backward (and is summed there for an
        # argument that was not batched).
        flat = [o if d is not None or not _is_tensor(o)
                else o.unsqueeze(0).expand((self.batch_size,) + tuple(o.shape))
                for o, d in zip(flat, dims)]
        self.out_dims = [d if d is not None or not _is_tensor(o) else 0
                         for o, d in zip(flat, dims)]
        self.out_spec = spec
        return unflatten(flat, spec)

    def setup_context(self, ctx, outputs):
        flat = flatten(outputs)[0]
        wrapped = unflatten([self.wrap(o, d) for o, d in zip(flat, self.out_dims)],
                            self.out_spec)
        batched_ctx = _BatchedCtx(ctx, self)
        ctx._vmap_ctx = batched_ctx
        with _at_level(self):
            self.cls.setup_context(batched_ctx, tuple(self.args), wrapped)
        # backward needs only what setup_context saved: let the inputs go with the graph
        self.args = self.kwargs = None

    def backward(self, ctx, grads):
        dims = self.out_dims
        with _at_level(self):
            grads = [None if g is None else self.wrap(g, d) for g, d in zip(grads, dims)]
            result = self.cls.backward(ctx._vmap_ctx, *grads)
            if not isinstance(result, tuple):
                result = (result,)
            return tuple(self._to_physical(g, i) for i, g in enumerate(result))

    def _to_physical(self, grad, i):
        """The gradient of argument i for its physical tensor: batched as the argument was,
        or summed over the batch for an argument that was not batched."""
        if grad is None or i >= len(self.in_dims):
            return grad
        physical, bdim = unwrap_level(grad, self.level)
        in_dim = self.in_dims[i]
        if in_dim is None:
            return materialize(physical, bdim, self.batch_size).sum(0)
        return materialize(physical, bdim, self.batch_size).movedim(0, in_dim)


def _check_vmap_returns(cls, result):
    base = ("Expected the vmap staticmethod to have two returns, an output and out_dims with "
            "pytree structure compatible with the output. ")
    if not isinstance(result, tuple):
        raise AutogradError(base + f"Got a {type(result)} instead")
    if len(result) != 2:
        raise AutogradError(base + f"Got {len(result)} returns instead")
    out, out_dims = result
    flat, spec = flatten(out)
    if out_dims is None or isinstance(out_dims, int):
        return out, [out_dims] * len(flat)
    dims, dims_spec = flatten(out_dims)
    if dims_spec != spec:
        raise AutogradError(f"The autograd.Function's vmap staticmethod returned an "
                            f"incompatible (output, out_dims) tuple. Expected out_dims="
                            f"{out_dims} to be compatible with the structure of `output`. "
                            + LINK)
    return out, [None if d is None else d % (o.dim() if _is_tensor(o) else 1)
                 for o, d in zip(flat, dims)]


class _BatchedCtx:
    """The ctx the user's setup_context and backward see: the physical node's, except that
    the tensors it saves and marks are BatchedTensors, kept as their physical tensors."""

    # Kept on this ctx, not the node: under nested vmaps the node is shared by one ctx per
    # level, each of which hands `_vmap_ctx` (the next level's ctx) its own value.
    _own = ("_node", "_call", "_saved_dims", "_vmap_ctx")

    def __init__(self, node, call):
        object.__setattr__(self, "_node", node)
        object.__setattr__(self, "_call", call)
        object.__setattr__(self, "_saved_dims", ())

    def __getattr__(self, name):
        return getattr(self._node, name)

    def __setattr__(self, name, value):
        if name in self._own:
            object.__setattr__(self, name, value)
        else:
            setattr(self._node, name, value)

    def _physical(self, t):
        return unwrap_level(t, self._call.level) if _is_tensor(t) else (t, None)

    def save_for_backward(self, *tensors):
        pairs = [self._physical(t) for t in tensors]
        self._saved_dims = tuple(d for _, d in pairs)
        self._node.save_for_backward(*(p for p, _ in pairs))

    @property
    def saved_tensors(self):
        return tuple(self._call.wrap(t, d)
                     for t, d in zip(self._node.saved_tensors, self._saved_dims))

    @property
    def needs_input_grad(self):
        return self._node.needs_input_grad[1:]      # (the node's first argument is the call)

    def mark_non_differentiable(self, *tensors):
        self._node.mark_non_differentiable(*(self._physical(t)[0] for t in tensors))

    def mark_dirty(self, *tensors):
        self._node.mark_dirty(*(self._physical(t)[0] for t in tensors))

    def set_materialize_grads(self, value):
        self._node.set_materialize_grads(value)


_classes = {}       # user Function -> its physical Function


def _vmapped_class(cls):
    """The Function that runs `cls` one level down, on the physical tensors (its node is
    named after `cls`: `Vmapped<Name>Backward`)."""
    found = _classes.get(cls)
    if found is not None:
        return found

    def forward(call, *physical):
        return call.forward(physical)

    def setup_context(ctx, inputs, output):
        inputs[0].setup_context(ctx, output)

    def backward(ctx, *grads):
        call = ctx._vmap_ctx._call
        return (None,) + call.backward(ctx, grads)

    vmapped = type(f"Vmapped{cls.__name__}", (Function,), {
        "forward": staticmethod(forward), "setup_context": staticmethod(setup_context),
        "backward": staticmethod(backward), "generate_vmap_rule": True,
        "__module__": cls.__module__, "__doc__": f"{cls.__name__} on a vmapped batch."})
    _classes[cls] = vmapped
    return vmapped

