"""Registering kernels: `tp.library.Library(key, name)` blocks and the `kernel` decorator.

The Python form of PyTorch's `TORCH_LIBRARY_IMPL(aten, CPU, m)` blocks:

    lib = tp.library.Library("CPU", "PointwiseCPU")
    lib.impl("add.Tensor", add_cpu)                     # plain registration

    @lib.impl("relu", priority=10, dtypes={tp.float32}, contiguous=True)
    def relu_fast(self): ...                            # a specialised candidate

At a backend key each registration adds a candidate to the op's second-level
registry (constraints + priority); at any other key it fills the slot,
replacing what was there. A block remembers what it registered, for `dump()`.

A *family kernel* serves several overloads with one algorithm (JAX's
`defbroadcasting`): marked `@kernel(family=True)`, it takes the op's name first and
ops.yaml names it for every overload it serves,

    @kernel(family=True)
    def masked_fill(op, self, mask, value): ...   # masked_fill{,_}.{Scalar,Tensor}

so `masked_fill_.Tensor` runs `masked_fill("masked_fill_", self, mask, value)`: the
name tells the in-place forms apart and goes into error messages. A family whose
overloads differ in their trailing arguments takes them as `*params`.
"""
from __future__ import annotations

import functools

from tensorplay.dispatch.dispatcher import dispatcher
from tensorplay.dispatch.keys import DispatchKey
from tensorplay.dispatch.kernel_selection import ShapeRule

__all__ = ["Library", "kernel", "ShapeRule"]


def kernel(*, priority=0, dtypes=None, contiguous=False, shape=None, layout=None,
           takes_complex=False, family=False):
    """Attach selection constraints to a kernel function; `Library.impl` reads them.
    Backends use it on kernels that ops.yaml names, e.g. a float-only fast path, or
    `layout="contiguous_format"` on an NCHW-only kernel (channels_last calls then reach
    it through the layout-conversion fallback, dispatch/kernel_selection.py).
    `family=True` marks a family kernel (above): it receives the op's name first.
    `takes_complex=True`: a `cuda` kernel that computes complex tensors (Triton has no
    complex type, so most do not; a complex call of the others runs the CPU kernel on host
    copies, dispatch/kernel_selection.py)."""
    def mark(fn):
        fn.__tp_kernel__ = dict(priority=priority, dtypes=dtypes, contiguous=contiguous,
                                shape=shape, layout=layout, takes_complex=takes_complex,
                                family=family)
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
        kernel_fn = fn
        if options.pop("family", False):
            # `masked_fill_.Tensor` -> masked_fill("masked_fill_", ...), as meta rules get it
            kernel_fn = functools.partial(fn, op.split(".")[0])
        dispatcher.find(op).register(self.key, kernel_fn, name=name, **options)
        self.registered.append((op, name))
        return fn

    def __repr__(self):
        return f"<Library {self.key.name}:{self.name} with {len(self.registered)} kernels>"
