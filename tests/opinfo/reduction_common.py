"""Sample helpers shared by the reduction family's database files (db_reduction*.py)."""
from __future__ import annotations

import numpy as np

import tensorplay as tp
from opinfo.core import SampleInput, make_tensor, rng_for


def grad_for(dtype, requires_grad):
    return requires_grad and dtype.is_differentiable


def t_(shape, dtype=tp.float32, device="cpu", **kw):
    """A tensor for error inputs (its values never matter)."""
    return make_tensor(shape, dtype, device, rng=rng_for("errors", shape, dtype), **kw)


def distinct(shape, dtype, device, rng, layout="contiguous", requires_grad=False, scale=0.37):
    """Distinct values in random order (no ties: the index a sort or a median returns is
    then unique, and max-like gradients are smooth). Layouts as make_tensor's."""
    shape = tuple(shape)
    n = int(np.prod(shape)) if shape else 1
    alloc = shape
    if layout == "transposed" and len(shape) >= 2:
        alloc = shape[:-2] + (shape[-1], shape[-2])
    values = rng.permutation(n) + (0 if dtype in (tp.uint8, tp.bool) else -(n // 2))
    if dtype.is_floating_point:
        values = values * scale
    t = tp.tensor(np.asarray(values).reshape(alloc), dtype=dtype, device=device)
    if layout == "transposed" and len(shape) >= 2:
        t = t.transpose(-1, -2)
    if requires_grad:
        # A leaf, not a view of the layout's buffer (as make_tensor's): the PyTorch twin
        # (to_torch) is no view, and a view's history is rebuilt from its base's after an
        # in-place write, so the two would differ
        t = t.detach().requires_grad_(True)
    return t


def samples_dim(op, device, dtype, requires_grad, cases, make=None, kwargs=None):
    """`op(x, *args, **kwargs)` for each (shape, layout, args) in `cases`."""
    rng = rng_for(op.full_name, dtype)
    grad = grad_for(dtype, requires_grad)
    for shape, layout, args in cases:
        if make is None:
            x = make_tensor(shape, dtype, device, rng=rng, layout=layout, requires_grad=grad)
        else:
            x = make(shape, dtype, device, rng, layout, grad)
        yield SampleInput(x, tuple(args), dict(kwargs or {}),
                          name=f"{list(shape)} {layout} {args} {kwargs or ''}")
