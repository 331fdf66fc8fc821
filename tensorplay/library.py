"""Registering kernels: `tp.library.Library(key, name)` blocks and the `kernel` decorator.

The Python form of PyTorch's `TORCH_LIBRARY_IMPL(aten, CPU, m)` blocks:

    lib = tp.library.Library("CPU", "PointwiseCPU")
    lib.impl("add.Tensor", add_cpu)                     # plain registration

    @lib.impl("relu", priority=10, dtypes={tp.float32}, contiguous=True)
    def relu_fast(self): ...                            # a specialised candidate

At a backend key each registration adds a candidate to the op's second-level
registry (constraints + priority); at any other key it fills the slot,
replacing what was there. A block remembers what it registered, for `dump()`.
"""
from __future__ import annotations

from tensorplay.dispatch.dispatcher import dispatcher
from tensorplay.dispatch.keys import DispatchKey
from tensorplay.dispatch.registry import ShapeRule

__all__ = ["Library", "kernel", "ShapeRule"]


def kernel(*, priority=0, dtypes=None, contiguous=False, shape=None):
    """Attach selection constraints to a kernel function; `Library.impl` reads them.
    Backends use it on kernels that ops.yaml names, e.g. a float-only fast path."""
    def mark(fn):
        fn.__tp_kernel__ = dict(priority=priority, dtypes=dtypes, contiguous=contiguous,
                                shape=shape)
        return fn
    return mark


class Library:
    def __init__(self, key, name):
        self.key = DispatchKey[key] if isinstance(key, str) else DispatchKey(key)
        self.name = name
        self.registered = []

    def impl(self, op, fn=None, **constraints):
        """Register `fn` for `op` at this block's key (or use as a decorator)."""
        if fn is None:
            return lambda f: self.impl(op, f, **constraints) or f
        options = dict(getattr(fn, "__tp_kernel__", {}))
        options.update(constraints)
        name = options.pop("name", None) or \
            f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', fn)}"
        dispatcher.find(op).register(self.key, fn, name=name, **options)
        self.registered.append((op, name))
        return fn

    def __repr__(self):
        return f"<Library {self.key.name}:{self.name} with {len(self.registered)} kernels>"
