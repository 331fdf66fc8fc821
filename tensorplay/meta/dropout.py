"""Shape and dtype rules of dropout."""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay.errors import ArgumentError
from tensorplay.kernel_support.checks import OutSpec


def _sizes(t):
    return t._impl.sizes


# ---- dropout, embedding, one_hot ----------------------------------------------------
def check_probability(op, p, arg="p"):
    if not 0.0 <= p <= 1.0:
        raise ArgumentError(f"{op}(): dropout probability has to be between 0 and 1, but got "
                            f"{p} (argument '{arg}')", op=op, arg=arg)


def native_dropout(op, args):
    input, p, train, generator = args
    check_probability(op, p)
    return OutSpec(_sizes(input), input._impl.dtype), OutSpec(_sizes(input), dt.bool)
