"""Helpers of the tangent formulas (forward mode) that no op family owns.

`call_op` is how a derived `auto_linear` formula applies its op to the tangents: through
the op's dispatcher handle with the arguments in schema order, as a front door would
after binding them (the tangents take the inputs' places).
"""
__all__ = ["call_op"]


def call_op(handle, *args):
    """Run `handle`'s op on `args` (schema order), keyed by its tensors' key sets."""
    ks = 0
    for a in args:
        impl = getattr(a, "_impl", None)
        if impl is not None:
            ks |= impl.keys
        elif isinstance(a, (list, tuple)):
            for t in a:
                if t is not None and hasattr(t, "_impl"):
                    ks |= t._impl.keys
    return handle.call(ks, *args)
