"""`x[...]` and `x[...] = v` for basic indices: ints, slices, None and Ellipsis.

Basic indexing is a chain of view ops (select, slice, unsqueeze) called through
the dispatcher, so it works on every backend and autograd records it like any
other view. Writing goes through the same view and `copy_`/`fill_`.
"""
from __future__ import annotations

import builtins

import numpy as np

from tensorplay.errors import ArgumentError, DimError


def _normalize(index):
    if not isinstance(index, tuple):
        index = (index,)
    return index


def _is_int(i):
    return type(i) is int or isinstance(i, np.integer) or (
        getattr(i, "_impl", None) is not None and not i._impl.sizes
        and not i._impl.dtype.is_floating_point and i._impl.dtype.name != "bool")


def getitem(self, index):
    index = _normalize(index)
    for i in index:
        if not (i is None or i is Ellipsis or isinstance(i, builtins.slice) or _is_int(i)):
            raise ArgumentError(f"__getitem__(): argument 'index' of type {type(i).__name__} "
                                f"is not supported yet (basic indexing: ints, slices, None, "
                                f"...)", op="__getitem__", arg="index")
    consumed = builtins.sum(1 for i in index if i is not None and i is not Ellipsis)
    ndim = self.dim()
    if consumed > ndim:
        raise DimError(f"__getitem__(): too many indices in argument 'index' for tensor of "
                       f"dimension {ndim}", op="__getitem__", arg="index")
    if builtins.sum(1 for i in index if i is Ellipsis) > 1:
        raise DimError("__getitem__(): an index can only have a single ellipsis ('...'), "
                       "argument 'index' has more", op="__getitem__", arg="index")
    out = self
    dim = 0
    for i in index:
        if i is None:
            out = out.unsqueeze(dim)
            dim += 1
        elif i is Ellipsis:
            dim += ndim - consumed
        elif isinstance(i, builtins.slice):
            step = 1 if i.step is None else int(i.step)
            if step <= 0:
                raise ValueError("step must be greater than zero")
            start = None if i.start is None else int(i.start)
            stop = None if i.stop is None else int(i.stop)
            out = out.slice(dim, start, stop, step)
            dim += 1
        else:
            out = out.select(dim, int(i))
    if out is self:   # x[...] or x[()]: still a new view, as in PyTorch
        out = self.view(tuple(self.shape))
    return out


def setitem(self, index, value):
    target = getitem(self, index)
    if getattr(value, "_impl", None) is not None:
        target.copy_(value)
    else:
        target.fill_(value)
