"""What a backward node returned, checked before the engine passes it on.

Each gradient must fit the input its edge leads to: `validate_outputs` compares it with
that input's (sizes, dtype, device), which the node of the input recorded in the forward
pass (`Node._output_meta`). A broadcast gradient is summed down where the node allows it,
a wrong dtype is cast, anything else raises an error that names the node, the index and
the shapes. In anomaly mode `check_nan` also refuses nan gradients.
"""
from __future__ import annotations

from tensorplay.autograd.anomaly_mode import report_forward_stack
from tensorplay.dispatch.keys import AUTOGRAD_MASK
from tensorplay.dispatch.tls import ExcludeKeys
from tensorplay.errors import AutogradError, fmt_shape

__all__ = ["validate_outputs", "check_nan", "sum_to"]


def validate_outputs(node, outs):
    """Check each returned gradient against the tensor its edge leads to: the count,
    the shape (a missing sum_to is caught here), the device; cast a wrong dtype.

    A gradient that matches its input's (sizes, dtype, device), the usual case, costs
    three comparisons; `_fix_gradient` does the rest (and raises the errors)."""
    edges = node._edges     # made whole by engine._discover before any node runs
    if len(outs) != len(edges):
        raise AutogradError(f"Function {node.name()} returned an incorrect number of gradients "
                           f"(expected {len(edges)}, got {len(outs)})")
    checked = None      # a copy of `outs` only when a gradient had to change
    for i, g in enumerate(outs):
        if g is None:
            continue
        fn, nr = edges[i]
        if fn is None:
            continue
        impl = getattr(g, "_impl", None)
        if impl is None:
            raise TypeError(f"Function {node.name()} returned an invalid gradient at index {i}"
                            f" - expected a Tensor or None, got {type(g).__name__}")
        meta = fn._output_meta
        meta = meta[nr] if nr < len(meta) else None
        if meta is None:
            continue
        sizes, dtype, device = meta
        # `is`: dtypes and devices are interned (`_device`: the `device` property's field)
        if impl.sizes != sizes or impl.dtype is not dtype or impl._device is not device:
            fixed = _fix_gradient(node, i, g, sizes, dtype, device)
            if fixed is not g:
                if checked is None:
                    checked = list(outs)
                checked[i] = fixed
    return outs if checked is None else tuple(checked)


def _fix_gradient(node, i, g, sizes, dtype, device):
    """A gradient that differs from its input's metadata: sum a broadcast one down (or
    raise), cast its dtype, refuse another device."""
    impl = g._impl
    if impl.sizes != sizes:
        g = _fix_shape(node, i, g, sizes)
    if impl.dtype is not dtype:
        if impl.dtype.is_complex and not dtype.is_complex:
            # A real input of a complex computation (`x * 1j`): its gradient is the real
            # part (PyTorch's handle_r_to_c); the imaginary part would be d/d(imag x),
            # which x does not have.
            g = g.real.clone()
        g = g.to(dtype)
    if impl.device is not device and impl.device != device:
        raise AutogradError(f"Function {node.name()} returned an invalid gradient at index "
                           f"{i} - expected device {device} but got {impl.device}")
    return g


def _fix_shape(node, i, g, sizes):
    gsizes = g._impl.sizes
    what = f"Function {node.name()}" + (f" (backward of {node.OP})" if node.OP else "")
    if not _expandable(sizes, gsizes):
        raise AutogradError(f"{what} returned an invalid gradient at index {i} - got "
                           f"{fmt_shape(gsizes)} but expected shape compatible with "
                           f"{fmt_shape(sizes)}")
    if node.reduce_broadcast_grads:
        return sum_to(g, sizes)
    raise AutogradError(f"{what} returned a gradient of shape {fmt_shape(gsizes)} at index {i},"
                       f" but input {i} has shape {fmt_shape(sizes)}: the formula must reduce "
                       f"the broadcast gradient, e.g. sum_to(grad, self.sizes())")


def sum_to(grad, sizes):
    """Reduce a broadcast gradient back to `sizes`: sum the leading dims that
    broadcasting added and the dims that were 1 in the input.

        sum_to(g of shape [4, 2, 3], (2, 1)) -> g.sum([0, 2], keepdim) -> shape [2, 1]

    The formula helper of the same name (autograd/formulas/core.py) calls this one."""
    gsizes = tuple(grad.shape)
    sizes = tuple(sizes)
    if gsizes == sizes:
        return grad
    lead = len(gsizes) - len(sizes)
    if lead < 0:
        # more dims wanted than the gradient has (index_put_ of a [1, 1, 1] value through
        # a mask): nothing to sum, and validate_outputs refuses the shape, as PyTorch's
        # sum_to leaves such a gradient as it is and its engine refuses it
        return grad
    dims = list(range(lead))
    dims += [lead + i for i, s in enumerate(sizes) if s == 1 and gsizes[lead + i] != 1]
    if dims:
        grad = grad.sum(dims, keepdim=True)
    return grad.view(sizes) if tuple(grad.shape) != sizes else grad


def _expandable(sizes, target):
    if len(sizes) > len(target):
        return False
    for s, t in zip(reversed(sizes), reversed(target)):
        if s != t and s != 1:
            return False
    return True


def check_nan(node, outs):
    for i, g in enumerate(outs):
        if g is None or not g._impl.dtype.is_differentiable:
            continue
        with ExcludeKeys(AUTOGRAD_MASK):
            has_nan = (g != g).sum().item() > 0
        if has_nan:
            report_forward_stack(node)
            op = f" (backward of {node.OP})" if node.OP else ""
            raise AutogradError(f"Function '{node.name()}'{op} returned nan values in its "
                               f"{i}th output.")
