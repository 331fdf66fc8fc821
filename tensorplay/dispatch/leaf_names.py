"""The names an explain() block gives the leaves it meets (tensors that require grad and
were made by no op: the tensors `.grad` is filled on).

    w = tp.randn(3, requires_grad=True)
    with tp.dispatch.explain():
        (w * 2).sum().backward()
    ...  mul.Tensor(w: float32[3] requires_grad, 2)
    ...  grad out  [0] float32[3] -> AccumulateGrad of leaf w

A leaf is named after the variable it is bound to, looked up by identity of the tensor's
impl (the Tensor a backward node holds is another wrapper of the same impl):

    1. in the frame that opened the explain() block (its locals: a notebook cell's or a
       script's are its globals);
    2. in the user code between the op's caller and that frame (frames outside the
       tensorplay, cpu_kernels and triton_kernels folders): a leaf made and used inside
       a function called from the block is found there;
    3. a module's parameter under the variable holding the module: `model.fc1.weight`.

A leaf found nowhere is `leaf 0`, `leaf 1`... in order of appearance. A name, once
given, is kept for the whole block. Names starting with `_` (IPython's `_`, `_3`) are
passed over.
"""
from __future__ import annotations

import os
import sys
import weakref

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Frames from these folders are the framework's, not the user's: their locals say `self`
_LIBRARY = tuple(os.path.join(_ROOT, d) + os.sep
                 for d in ("tensorplay", "cpu_kernels", "triton_kernels"))


def is_leaf(impl):
    """A tensor `.grad` is filled on: it requires grad and no op made it."""
    return getattr(impl, "requires_grad", False) and getattr(impl, "grad_fn", None) is None


class LeafNames:
    """The leaf names of one explain() block (`name(impl)`); `close()` drops the frame."""

    def __init__(self, frame):
        self.frame = frame          # the frame that opened the block
        self.given = {}             # id(impl) -> (weak reference to the impl, name)
        self.numbered = 0

    def name(self, impl):
        """`w`, `model.fc1.weight`, or `leaf 0` for an unnamed one."""
        known = self.given.get(id(impl))
        if known is not None and known[0]() is impl:
            return known[1]
        name = impl.name or self._look_up(impl)
        if name is None:
            name = f"leaf {self.numbered}"
            self.numbered += 1
        try:
            ref = weakref.ref(impl)
        except TypeError:           # an impl without weak references: held while named
            def ref(impl=impl):
                return impl
        self.given[id(impl)] = (ref, name)
        return name

    def phrase(self, impl):
        """`leaf w`, or `leaf 0` for an unnamed one (never `leaf leaf 0`)."""
        name = self.name(impl)
        return name if name.startswith("leaf ") else f"leaf {name}"

    def close(self):
        self.frame = None

    def _look_up(self, impl):
        for frame in self._frames():
            name = _bound_name(frame, impl)
            if name is not None:
                return name
        return None

    def _frames(self):
        """The opening frame first, then the user frames from the innermost call out to
        it (the op's caller and whatever called that)."""
        if self.frame is not None:
            yield self.frame
        f = sys._getframe(1)
        while f is not None and f is not self.frame:
            if not f.f_code.co_filename.startswith(_LIBRARY):
                yield f
            f = f.f_back


def _bound_name(frame, impl):
    """The local (or global, at module level) of `frame` bound to the tensor of `impl`,
    or `model.fc1.weight` for a parameter of a module bound to `model`."""
    try:
        items = list(frame.f_locals.items())
    except Exception:               # a frame whose locals cannot be read
        return None
    modules = []
    for key, value in items:
        if key.startswith("_") or isinstance(value, type):
            continue
        try:
            if getattr(value, "_impl", None) is impl:
                return key
        except Exception:           # an object whose __getattr__ fails oddly
            continue
        if callable(getattr(type(value), "named_parameters", None)):
            modules.append((key, value))
    for key, module in modules:
        try:
            for pname, p in module.named_parameters():
                if p._impl is impl:
                    return f"{key}.{pname}"
        except Exception:           # not a module after all
            continue
    return None
