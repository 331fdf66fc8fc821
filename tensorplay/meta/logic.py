"""Meta kernels of the ops whose output is decided by the input's values: nonzero,
masked_select, unique and equal.

A meta tensor has sizes and a dtype but no values, so these ops cannot say what they
return. Their rules still check what can be checked without data (devices, the mask's
dtype and broadcasting, `dim`), then return `DataDependent`, which the Meta kernel turns
into a DataDependentError naming the op and the argument whose values decide. PyTorch
refuses the same calls on meta (NotImplementedError: "no fake impl or Meta kernel").

As validators (a CPU kernel that failed asks its op's rule why), they only check: the
`DataDependent` they return is not an error there.
"""
from __future__ import annotations

from tensorplay.meta import indexing
from tensorplay.meta.rules import DataDependent, check_devices, wrap_dim


def nonzero(op, args):
    return DataDependent("self", "the number of rows (one per non-zero element)")


def masked_select(op, args):
    indexing.masked_select(op, args)
    return DataDependent("mask", "the output's length (the number of True elements)")


def unique2(op, args):
    return DataDependent("self", "the number of distinct values")


def unique_dim(op, args):
    self, dim = args[0], args[1]
    wrap_dim(op, dim, max(len(self._impl.sizes), 1))
    return DataDependent("self", f"the number of distinct slices along dim {dim}")


def equal(op, args):
    check_devices(op, [("self", args[0]), ("other", args[1])])
    return DataDependent("self", "the answer (a Python bool)")
