"""The Meta backend: each op's kernel at the Meta key is its shape rule, turned
into empty tensors that have sizes and a dtype but no memory."""
from __future__ import annotations

import inspect

from tensorplay import _tensor_factory as factory
from tensorplay.errors import DataDependentError
from tensorplay.meta.rules import SELF, DataDependent, OutSpec


def empty_meta(sizes, dtype):
    return factory.empty(sizes, dtype=dtype, device="meta")


def _materialize(spec, args, op):
    if spec is SELF:
        return args[0]
    if spec is None:   # an output the op does not compute (convolution_backward's mask)
        return None
    if isinstance(spec, OutSpec):
        return empty_meta(spec.sizes, spec.dtype)
    if isinstance(spec, DataDependent):
        raise DataDependentError(
            f"{op}(): {spec.what} depends on the values of argument '{spec.arg}', and a meta "
            f"tensor has no values (run it on a device with data)", op=op, arg=spec.arg)
    return tuple(_materialize(s, args, op) for s in spec)


def make_meta_kernel(handle, rule):
    """A Meta kernel for `handle` from `rule`, with the op's own parameter names so the
    dispatcher's signature check applies to it like to any other kernel."""
    op = handle.name.split(".")[0]

    def meta_kernel(*args):
        return _materialize(rule(op, args), args, op)

    meta_kernel.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD)
         for n in handle.schema.arg_names])
    meta_kernel.__name__ = meta_kernel.__qualname__ = f"meta_{rule.__name__}"
    return meta_kernel


def make_validator(handle, rule):
    op = handle.name.split(".")[0]

    def validate(*args):
        rule(op, args)
    return validate
