"""`result_type` over tensors and Python scalars, PyTorch's three priority classes.

    dimensioned tensors  >  0-dim tensors  >  Python numbers (and wrapped numbers)

Within a class, dtypes promote through `promote_types`. Across classes, a lower
class only counts when its *category* (bool < int < float < complex) is higher: so
`int32_tensor + 2.5 -> float32` but `float16_tensor + 2.5 -> float16` and
`uint8_tensor + tensor(1000)` stays uint8.
"""
from __future__ import annotations

import builtins

import numpy as np

from tensorplay import _dtype as dt


def _class_of(value):
    """(class index, dtype): 0 = dimensioned tensor, 1 = 0-dim tensor, 2 = number."""
    impl = getattr(value, "_impl", None)
    if impl is not None:
        if impl.wrapped_number:
            d = impl.dtype     # a float or complex number promotes as the default dtype
            if d.category >= 2:
                d = dt.get_default_dtype() if d.is_floating_point \
                    else dt.get_default_dtype().to_complex()
            return 2, d
        return (0 if impl.sizes else 1), impl.dtype
    if isinstance(value, dt.dtype):
        return 0, value
    if isinstance(value, (builtins.bool, int, float, complex, np.generic)):
        return 2, dt.scalar_dtype(value)
    raise TypeError(f"result_type(): expected tensors or numbers, got {type(value).__name__}")


def result_type(*values):
    """The dtype an op on `values` computes in (like torch.result_type)."""
    best = [None, None, None]
    for v in values:
        if v is None:
            continue
        cls, d = _class_of(v)
        best[cls] = d if best[cls] is None else dt.promote_types(best[cls], d)
    out = dt.combine_categories(best[0], dt.combine_categories(best[1], best[2]))
    if out is None:
        raise TypeError("result_type(): needs at least one tensor or number")
    return out


def result_type2(a, b):
    """Fast path of result_type for two tensors (the binary-op hot path)."""
    ia, ib = a._impl, b._impl
    da, db = ia.dtype, ib.dtype
    if da is db:
        return da
    if bool(ia.sizes) == bool(ib.sizes) and not (ia.wrapped_number or ib.wrapped_number):
        return dt._PROMOTE[(da, db)]
    # A float or complex tensor with a Python number (`x * 2`): the number's class is
    # lower, so the tensor's dtype wins unless the number's category is higher (x * 1j).
    if ib.wrapped_number and not ia.wrapped_number and da.category >= 2 \
            and da.category >= db.category:
        return da
    if ia.wrapped_number and not ib.wrapped_number and db.category >= 2 \
            and db.category >= da.category:
        return db
    return result_type(a, b)
