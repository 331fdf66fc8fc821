"""Batching rule of the full reductions (sum, mean, max... with no dim argument). The
reductions that take a `dim` share `dim_rule` (batching_rules/__init__.py), which their
`reduction` tag implies."""
from __future__ import annotations

from tensorplay.dispatch.dispatcher import dispatcher
from tensorplay.func.batching_rules import NeedsFallback, call, to_front


# Full reductions (no dim argument): reduce the flattened example along dim 1 with the
# op's dim overload.
FULL_REDUCTIONS = {
    "sum": ("sum.dim_IntList", lambda x, a: (x, [1], False) + tuple(a[1:])),
    "mean": ("mean.dim", lambda x, a: (x, [1], False) + tuple(a[1:])),
    "prod": ("prod.dim_int", lambda x, a: (x, 1, False) + tuple(a[1:])),
    "max": ("max.dim", lambda x, a: (x, 1, False)),
    "min": ("min.dim", lambda x, a: (x, 1, False)),
    "median": ("median.dim", lambda x, a: (x, 1, False)),
    "nanmedian": ("nanmedian.dim", lambda x, a: (x, 1, False)),
    "all": ("all.dim", lambda x, a: (x, 1, False)),
    "any": ("any.dim", lambda x, a: (x, 1, False)),
}


def full_reduction_rule(op, args, bdims):
    dim_op_name, build = FULL_REDUCTIONS[op.name]
    x = to_front(args[0], bdims[0])
    flat = x.reshape((x.shape[0], -1))
    if flat.shape[1] == 0 and op.name in ("median", "nanmedian"):
        raise NeedsFallback(op.name)    # the median of nothing is NaN: no dim to reduce
    out = call(dispatcher.find(dim_op_name), *build(flat, args))
    if isinstance(out, tuple):
        out = out[0]
    return out, 0

