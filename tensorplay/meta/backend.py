"""The Meta backend: each op's kernel at the Meta key is its shape rule, turned
into empty tensors that have sizes and a dtype but no memory."""
from __future__ import annotations

import inspect

from tensorplay import _tensor_factory as factory
from tensorplay._impl import contiguous_strides
from tensorplay.errors import DataDependentError
from tensorplay.kernel_support.checks import DataDependent, OutSpec, SELF
from tensorplay.kernel_support.complex_refusals import MESSAGES, reject_complex
from tensorplay.kernel_support.einsum import einsum_strides, parse_einsum
from tensorplay.kernel_support.layout import (
    clone_strides, copy_strides, index_strides, pointwise_strides,
)


def empty_meta(sizes, dtype, strides=None):
    if strides is None or tuple(strides) == contiguous_strides(sizes):
        return factory.empty(sizes, dtype=dtype, device="meta")
    return factory.empty_strided(sizes, strides, dtype=dtype, device="meta")


def _flip_layout(sizes, args):
    impl = args[0]._impl            # flip copies into empty_like(self)
    return clone_strides(impl.sizes, impl.strides)


def _threshold_backward_layout(sizes, args):
    grad, self = args[0]._impl, args[1]._impl      # self first, as PyTorch's iterator
    return pointwise_strides(tuple(sizes), [(self.sizes, self.strides),
                                            (grad.sizes, grad.strides)])


def _index_layout(sizes, args):
    self, indices = args[0]._impl, args[1]        # (a mask never gets here: its result's
    return index_strides(tuple(sizes), self.sizes, self.strides,   # size needs values)
                         [None if t is None else (t._impl.sizes, t._impl.strides)
                          for t in indices])


def _angle_layout(sizes, args):
    impl = args[0]._impl            # complex angle is row-major (cpu_kernels/pointwise.py)
    if impl.dtype.is_complex or impl.is_contiguous:
        return None
    return pointwise_strides(tuple(sizes), [(impl.sizes, impl.strides)])


def _einsum_layout(sizes, args):
    equation, tensors = args
    layouts = [(t._impl.sizes, t._impl.strides) for t in tensors]
    return einsum_strides(parse_einsum("einsum", equation, [s for s, _ in layouts]), layouts)


# Ops that are not pointwise but whose result is not row-major either (their CPU kernels
# use the same rules of kernel_support/layout.py).
LAYOUTS = {"flip": _flip_layout, "threshold_backward": _threshold_backward_layout,
           "index.Tensor": _index_layout, "einsum": _einsum_layout, "angle": _angle_layout}


def pointwise_layout(handle):
    """strides(sizes, args) of a pointwise op's result; clone's from its memory_format,
    _to_copy's as clone's with preserve_format (a conversion keeps a dense layout); the
    ops of LAYOUTS by their own rule."""
    positions = handle.schema.tensor_positions
    if handle.name in LAYOUTS:
        return LAYOUTS[handle.name]
    if handle.name in ("clone", "_to_copy"):
        def clone_layout(sizes, args):
            impl = args[0]._impl
            memory_format = args[1] if handle.name == "clone" else None
            return copy_strides(handle.name, impl.sizes, impl.strides, memory_format)
        return clone_layout

    def layout(sizes, args):
        impls = [args[i]._impl for i in positions if args[i] is not None]
        if all(i.is_contiguous for i in impls):
            return None
        return pointwise_strides(tuple(sizes), [(i.sizes, i.strides) for i in impls])
    return layout


def _materialize(spec, args, op, layout=None):
    if spec is SELF:
        return args[0]
    if spec is None:   # an output the op does not compute (convolution_backward's mask)
        return None
    if isinstance(spec, OutSpec):
        strides = layout(spec.sizes, args) if layout is not None else spec.strides
        return empty_meta(spec.sizes, spec.dtype, strides)
    if isinstance(spec, DataDependent):
        raise DataDependentError(
            f"{op}(): {spec.what} depends on the values of argument '{spec.arg}', and a meta "
            f"tensor has no values (run it on a device with data)", op=op, arg=spec.arg)
    return tuple(_materialize(s, args, op) for s in spec)


def refusing_complex(handle, rule):
    """`rule`, first refusing a complex tensor argument when PyTorch has no complex kernel
    for the op (kernel_support/complex_refusals.py): one check in front of every rule, so
    a meta tensor is refused as the CPU kernel refuses it. Other ops keep the rule as it
    is."""
    op = handle.name.split(".")[0]
    # an overload with a message of its own (`round.decimals`: round_decimals)
    overload = handle.name.replace("_.", ".").replace(".", "_")
    kind = overload if overload in MESSAGES else None
    if kind is None and op not in MESSAGES and op.rstrip("_") not in MESSAGES:
        return rule
    named = [(handle.schema.arg_names[i], i) for i in handle.schema.tensor_positions]

    def rule_refusing_complex(op, args):
        for name, i in named:
            if i < len(args):
                reject_complex(op, args[i], name, kind)
        return rule(op, args)
    rule_refusing_complex.__name__ = rule.__name__
    return rule_refusing_complex


def make_meta_kernel(handle, rule, layout=None, overlap_check=None):
    """A Meta kernel for `handle` from `rule`, with the op's own parameter names so the
    dispatcher's signature check applies to it like to any other kernel. `layout`:
    strides(sizes, args) of the result (default: row-major). `overlap_check`: for an in-place
    op that refuses overlapping memory as the CPU and CUDA kernels do, the check of
    kernel_support/overlap.py it makes, called as check(op, self, (name, tensor), ...)."""
    op = handle.name.split(".")[0]
    names = handle.schema.arg_names
    others = [i for i in handle.schema.tensor_positions if i != 0]

    def meta_kernel(*args):
        spec = rule(op, args)
        if overlap_check is not None:
            overlap_check(op, args[0], *[(names[i], args[i]) for i in others])
        return _materialize(spec, args, op, layout)

    meta_kernel.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD)
         for n in handle.schema.arg_names])
    meta_kernel.__name__ = meta_kernel.__qualname__ = f"meta_{rule.__name__}"
    return meta_kernel


def make_validator(handle, rule):
    """`handle.meta_rule`: the rule on real arguments. It raises the op's error on bad
    input; it returns the result's spec, which tp.compile's capture reads (a
    DataDependent result size is a graph break)."""
    op = handle.name.split(".")[0]

    def validate(*args):
        return rule(op, args)
    return validate
