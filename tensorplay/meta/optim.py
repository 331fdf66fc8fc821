"""Shape and dtype rules of the fused optimizer steps: _fused_adam_, _fused_sgd_.

Same contract as rules.py: `rule(op, args) -> SELF` (the op updates the parameters, `self`,
in place and returns them) or a typed error that names the op and the argument. Every
tensor is one stretch of parameters: the same shape and the same floating dtype as `self`.
"""
from __future__ import annotations

from tensorplay.errors import DTypeError
from tensorplay.kernel_support.checks import SELF, check_devices
from tensorplay.meta._nn import check_floating, check_size


def fused_adam_(op, args):
    self, grad, exp_avg, exp_avg_sq, max_exp_avg_sq = args[:5]
    return _same_stretch(op, self, [("grad", grad), ("exp_avg", exp_avg),
                                    ("exp_avg_sq", exp_avg_sq),
                                    ("max_exp_avg_sq", max_exp_avg_sq)])


def fused_sgd_(op, args):
    self, grad, momentum_buffer = args[:3]
    return _same_stretch(op, self, [("grad", grad), ("momentum_buffer", momentum_buffer)])


def _same_stretch(op, self, others):
    """`self` floating; every other tensor given (not None) of its shape and dtype."""
    impl = self._impl
    if impl.dtype.is_floating_point:
        # what every optimizer step passes: one test per tensor, where the checks below
        # (each naming its argument) cost 2 us a call, a fifth of a small parameter's step
        for _, t in others:
            if t is not None:
                other = t._impl
                # (dtypes and devices are interned: `is`; anything else gets the checks)
                if (other.dtype is not impl.dtype or other.sizes != impl.sizes
                        or other._device is not impl._device):
                    break
        else:
            return SELF
    named = [("self", self)] + [(name, t) for name, t in others if t is not None]
    check_devices(op, named)
    check_floating(op, self, "self")
    sizes = tuple(self._impl.sizes)
    for name, t in named[1:]:
        check_size(op, t, name, sizes, "the shape of 'self'")
        if t._impl.dtype is not self._impl.dtype:
            raise DTypeError(f"{op}(): argument '{name}' ({t._impl.dtype.name}) must have the "
                             f"dtype of 'self' ({self._impl.dtype.name})", op=op, arg=name)
    return SELF
