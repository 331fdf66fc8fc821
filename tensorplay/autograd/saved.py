"""`SavedVariable`: a tensor a backward formula needs, kept from the forward pass.

Two things can go wrong with a saved tensor, and both are caught here:

- it is modified in place after being saved (`y = x * w; w.add_(1)`): the formula
  would silently use the new values. Every TensorImpl shares a version counter with
  its views and in-place ops bump it; we record the version at save time and compare
  on unpack.
- the graph was already run and its saved tensors freed (a second `backward()`
  without `retain_graph=True`).

An op's own *output* is saved without a strong reference to its Tensor: the output's
impl points at its `grad_fn`, which is the node that saves it, so holding the tensor
would make a reference cycle (node -> tensor -> node) that only the garbage collector
could free. We keep the raw memory description instead and rebuild a Tensor on
unpack, with the unpacking node as its `grad_fn`, so a formula that reads `result`
is itself differentiable (create_graph=True works through `tanh`'s `1 - result**2`).

Saved-tensor hooks (`tp.autograd.graph.saved_tensors_hooks(pack, unpack)`, the thread's
stack below) replace the keeping: `pack(tensor)` runs when the tensor is saved and
whatever it returns is kept instead; `unpack(packed)` runs when backward needs the
tensor and must give it back (or an equal one: activation checkpointing recomputes it,
save_on_cpu copies it to the host and back). The version check is then the hooks'
business, as in PyTorch: the saved tensor itself is no longer held.
"""
from __future__ import annotations

import threading

from tensorplay import _subclass as subclass
from tensorplay import _tensor_factory as factory
from tensorplay._impl import TensorImpl
from tensorplay.autograd import forward_mode
from tensorplay.autograd.anomaly_mode import anomaly_state
from tensorplay.autograd.einsum_saves import einsum_saves
from tensorplay.autograd.grad_mode import no_grad
from tensorplay.autograd.view_impl import DEFAULT, ViewImpl
from tensorplay.errors import AutogradError, fmt_shape

__all__ = ["NOT_SAVED", "SavedVariable", "SavedVariableList", "tensor_type_name"]

_LEGACY_NAMES = {
    "float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
    "bfloat16": "BFloat16Tensor", "int64": "LongTensor", "int32": "IntTensor",
    "int16": "ShortTensor", "int8": "CharTensor", "uint8": "ByteTensor", "bool": "BoolTensor",
}

FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward.")

INFERENCE_MESSAGE = (
    "Inference tensors cannot be saved for backward. To work around you can make a clone "
    "to get a normal tensor and use it in autograd.")


class _SavedHooks(threading.local):
    """This thread's saved-tensor hooks: `stack` of (pack, unpack) pairs, the innermost
    last; `disabled`, the error message while disable_saved_tensors_hooks is active."""

    def __init__(self):
        self.stack = []
        self.disabled = None


saved_hooks = _SavedHooks()


def tensor_type_name(dtype, device):
    """`tensorplay.FloatTensor`, as PyTorch names tensors in its error messages."""
    prefix = "" if device.type == "cpu" else f"{device.type}."
    return f"tensorplay.{prefix}{_LEGACY_NAMES.get(dtype.name, dtype.name)}"


class SavedVariable:
    """A tensor (or None) saved for backward, checked against in-place changes."""

    __slots__ = ("_tensor", "_memory", "_subclass", "_output_nr", "_version",
                 "_saved_version", "_released", "_hooked", "sizes", "dtype")

    def __init__(self, tensor, is_output):
        self._released = False
        self._tensor = None
        self._memory = None
        self._subclass = None
        self._hooked = None
        if tensor is None:
            self.sizes = self.dtype = None
            return
        impl = tensor._impl
        if impl._inference:     # the `inference` property's field: no call per saved tensor
            raise AutogradError(INFERENCE_MESSAGE)
        self.sizes = impl.sizes
        self.dtype = impl.dtype
        self._version = impl.version
        self._saved_version = impl.version.value
        self._output_nr = impl.output_nr
        if saved_hooks.stack:
            self._pack_with_hooks(tensor, is_output and impl.grad_fn is not None)
            return
        if is_output and impl.grad_fn is not None:
            # (and, while a forward-mode level is active, the dict the output's tangents
            # will be kept in, so the rebuilt output carries them: forward over reverse)
            self._memory = (impl.storage, impl.sizes, impl.strides, impl.offset, impl.dtype,
                            impl.device, impl.base,
                            forward_mode.tangent_holder(impl) if forward_mode.levels else None)
            if isinstance(impl, subclass.PythonTensorImpl):
                # A tensor subclass comes back as its class, with its attributes (a
                # LoggingTensor's `elem`), so its handler sees the formula's ops.
                self._subclass = (type(tensor), dict(getattr(tensor, "__dict__", {})))
        else:
            # An input (or a leaf): pointing at it makes no cycle, the graph only
            # points backwards in time.
            self._tensor = tensor

    def _pack_with_hooks(self, tensor, is_output):
        """Keep what the innermost pack hook returns, not the tensor. The hook runs with
        grad mode off (what it computes is no part of the graph) and without the hooks
        (so that a tensor it saves is not packed by itself)."""
        pack, unpack = saved_hooks.stack[-1]
        stack, saved_hooks.stack = saved_hooks.stack, []
        try:
            with no_grad():
                packed = pack(tensor)
        finally:
            saved_hooks.stack = stack
        self._hooked = (unpack, packed, is_output)

    def _unpack_with_hooks(self, node):
        unpack, packed, is_output = self._hooked
        tensor = unpack(packed)
        if getattr(tensor, "_impl", None) is None:
            raise AutogradError(f"unpack_hook should return a Tensor, but got "
                                f"{type(tensor).__name__} instead")
        if not is_output or node is None:
            return tensor
        # An output comes back with its node as grad_fn, as the kept one would (a formula
        # reading `result` stays differentiable): a new tensor on the hook's memory.
        impl = tensor._impl
        rebuilt = TensorImpl(impl.storage, impl.sizes, impl.strides, impl.offset, impl.dtype,
                             impl.device, version=impl.version)
        rebuilt.set_requires_grad(True)
        rebuilt.grad_fn = node
        rebuilt.output_nr = self._output_nr
        return factory.wrap(rebuilt)

    def unpack(self, node=None):
        """The saved tensor; `node` is the node doing the unpacking (an output's grad_fn)."""
        if self._released:
            raise AutogradError(FREED_MESSAGE)
        if self._hooked is not None:
            return self._unpack_with_hooks(node)
        if self._tensor is None and self._memory is None:
            return None
        current = self._version.value
        if current != self._saved_version:
            raise AutogradError(self._version_message(node, current))
        if self._tensor is not None:
            return self._tensor
        return self._rebuild(node)

    def _rebuild(self, node):
        storage, sizes, strides, offset, dtype, device, base, tangents = self._memory
        if base is not None and self._subclass is None:
            impl = ViewImpl(base, storage, sizes, strides, offset, dtype, device, self._version)
            impl.creation = DEFAULT
        else:
            impl_class = TensorImpl if self._subclass is None else subclass.PythonTensorImpl
            impl = impl_class(storage, sizes, strides, offset, dtype, device,
                              version=self._version)
            impl.base = base
        if node is not None:
            impl.set_requires_grad(True)
            impl.grad_fn = node
            impl.output_nr = self._output_nr
        if tangents:
            impl.tangents = tangents
            impl.keys |= forward_mode.FORWARD_AD
        if self._subclass is None:
            return factory.wrap(impl)
        cls, attributes = self._subclass
        return subclass.rebuild(cls, attributes, impl)

    def _version_message(self, node, current):
        if self._tensor is not None:
            impl = self._tensor._impl
            fn, output_nr, device = impl.grad_fn, impl.output_nr, impl.device
        else:
            fn, output_nr, device = node, self._output_nr, self._memory[5]
        described = f"[{tensor_type_name(self.dtype, device)} {fmt_shape(self.sizes)}]"
        producer = f", which is output {output_nr} of {fn.name()}," if fn is not None else ""
        if anomaly_state.enabled:
            hint = ("Hint: the backtrace further above shows the operation that failed to "
                    "compute its gradient. The variable in question was changed in there or "
                    "anywhere later. Good luck!")
        else:
            hint = ("Hint: enable anomaly detection to find the operation that failed to "
                    "compute its gradient, with tensorplay.autograd.set_detect_anomaly(True).")
        return ("one of the variables needed for gradient computation has been modified by "
                f"an inplace operation: {described}{producer} is at version {current}; "
                f"expected version {self._saved_version} instead. {hint}")

    def release(self):
        self._tensor = None
        self._memory = None
        self._subclass = None
        self._hooked = None
        self._released = True

    def __repr__(self):
        if self._hooked is not None:
            return f"<SavedVariable {fmt_shape(self.sizes)} {self.dtype.name} (packed by a hook)>"
        if self._tensor is None and self._memory is None:
            return "<SavedVariable released>" if self._released else "<SavedVariable None>"
        return f"<SavedVariable {fmt_shape(self.sizes)} {self.dtype.name}>"


class _NotSaved(SavedVariable):
    """What a node keeps for an input none of its formulas will read in this call (mul's
    `self` when `other` needs no gradient). Like PyTorch's empty SavedVariable it unpacks
    as None, before and after backward frees the node's saved tensors; having nothing,
    it needs no object of its own: every node shares `NOT_SAVED`."""

    __slots__ = ()

    def unpack(self, node=None):
        return None

    def release(self):
        pass


NOT_SAVED = _NotSaved(None, is_output=False)


class SavedVariableList:
    """A Tensor[] / Tensor?[] argument saved for backward (the `indices` of `x[idx]`):
    one SavedVariable per element, so each is checked and freed like a single tensor."""

    __slots__ = ("_items", "sizes", "dtype")

    def __init__(self, tensors, is_output, saves=None):
        # saves[i]: what is saved for element i (the element, a copy of it, or None: it
        # unpacks as None), see list_saves.
        self._items = None if tensors is None else [
            SavedVariable(t if saves is None else saves[i], is_output)
            for i, t in enumerate(tensors)]
        self.sizes = self.dtype = None   # not one tensor: graph drawings skip it

    def unpack(self, node=None):
        if self._items is None:
            return None
        return [s.unpack(node) for s in self._items]

    def release(self):
        for s in self._items or ():
            s.release()

    def __repr__(self):
        return f"<SavedVariableList of {len(self._items or ())}>"


def list_saves(op, tensors, args):
    """What a differentiable Tensor[] argument saves, per element. einsum has its own rule
    (autograd/einsum_saves.py: what PyTorch's composition of it from bmm keeps); any other
    op saves an element only for the other elements' gradients."""
    if op == "einsum":
        return einsum_saves(tensors, *args, needed=others_require_grad(tensors))
    return [t if other else None for t, other in zip(tensors, others_require_grad(tensors))]


def others_require_grad(tensors):
    """For each element of a Tensor[] argument: does another element require grad? A
    multilinear op reads operand i's values only for the other operands' gradients."""
    flags = [t is not None and t._impl.requires_grad for t in tensors]
    count = sum(flags)
    return [count - flag > 0 for flag in flags]
