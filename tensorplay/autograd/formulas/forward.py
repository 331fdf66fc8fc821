"""Helpers of the tangent formulas (forward mode) that no op family owns.

`call_op` is how a derived `auto_linear` formula applies its op to the tangents: through
the op's dispatcher handle with the arguments in schema order, as a front door would
after binding them (the tangents take the inputs' places).
"""
from tensorplay import _dtype as dt
from tensorplay import _creation
from tensorplay.autograd.formulas.core import zeros_like
from tensorplay.dispatch.python_key import key_set_of

from tensorplay.errors import DerivativeNotImplementedError

__all__ = ["call_op", "or_zeros", "add_terms", "refuse_tangent"]


def call_op(handle, *args):
    """Run `handle`'s op on `args` (schema order), keyed by its tensors' key sets."""
    return handle.call(key_set_of(args), *args)


def or_zeros(tangent, primal):
    """A tangent the call did not give (None) as zeros shaped like its primal (of a
    Tensor[] input, element by element)."""
    if isinstance(primal, (list, tuple)):
        return [or_zeros(t, p) for t, p in zip(tangent, primal)]
    if tangent is not None or primal is None:       # (an optional input not given)
        return tangent
    if primal.dtype is dt.bool:
        # a bool input has no tangent: its zeros only take part in the formula's
        # arithmetic (`self_t - other_t` of minimum(float, bool)), where bool zeros are
        # refused (sub) and PyTorch's zero tensor is not; uint8 promotes as bool does
        return _creation.zeros_like(primal, dtype=dt.uint8)
    return zeros_like(primal)


def add_terms(terms):
    """The sum of a formula's terms kept for the tangents given (at least one)."""
    total = terms[0]
    for t in terms[1:]:
        total = total + t
    return total


def refuse_tangent(tangent, name):
    """The term of an input with no derivative (igamma's shape parameter): a tangent given
    for it raises, as PyTorch's forward mode does; none given, the term is left out."""
    if tangent is not None:
        raise DerivativeNotImplementedError(f"the derivative of {name} is not implemented")
