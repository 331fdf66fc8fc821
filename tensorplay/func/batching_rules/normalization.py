"""Batching rules of the normalizations: layer and RMS norm (B is one more leading dim),
batch norm, group norm."""
from __future__ import annotations

from tensorplay.dispatch.dispatcher import dispatcher
from tensorplay.func.batched import VmapError
from tensorplay.func.batching_rules import (
    NeedsFallback, batch_size, call, materialize, pointwise_rule, to_front,
)


# ---- norms -----------------------------------------------------------------------------------
def layer_norm_rule(op, args, bdims):
    """Normalising over the last dims: B is one more leading dim. A batched weight or bias
    is applied after normalising without them."""
    x = materialize(args[0], bdims[0], batch_size(args, bdims))
    if all(d is None for d in bdims[1:]):
        out = call(op, x, *args[1:])
        return out, (0,) * len(out) if isinstance(out, tuple) else 0
    weight_pos = 2
    has_bias = op.name in ("layer_norm", "native_layer_norm")
    plain = list(args)
    plain[0] = x
    plain[weight_pos] = None
    if has_bias:
        plain[3] = None
    out = call(op, *plain)
    stats = ()
    if isinstance(out, tuple):          # native_layer_norm / _fused_rms_norm: (out, stats...)
        out, stats = out[0], tuple(out[1:])
    if args[weight_pos] is not None:
        out, _ = pointwise_rule(dispatcher.find("mul.Tensor"), (out, args[weight_pos]),
                                (0, bdims[weight_pos]))
    if has_bias and args[3] is not None:
        out, _ = pointwise_rule(dispatcher.find("add.Tensor"), (out, args[3], 1),
                                (0, bdims[3], None))
    if stats:
        return (out,) + stats, (0,) * (1 + len(stats))
    return out, 0


def batch_norm_rule(op, args, bdims):
    """Batch norm mixes the rows of an example, so B cannot join N; it joins the channels
    instead (PyTorch's rule): each of the B*C channels is normalised over the rows and
    positions of its own example.

        example:  x (N, C, *)   weight, bias, running stats (C)   -> out, mean, rstd
        one call: x (N, B*C, *) weight, bias, running stats (B*C)

    Running statistics that are not batched cannot take one update per example."""
    x, weight, bias, running_mean, running_var, training = args[:6]
    for k, name in ((3, "running_mean"), (4, "running_var")):
        if training and args[k] is not None and bdims[k] is None:
            raise VmapError(
                f"vmap: batch_norm got a batched tensor as input while the {name}, which "
                f"will be updated in place, was not batched. Use track_running_stats=False "
                f"or give the module one running statistic per example",
                op="native_batch_norm", arg=name)
    size = batch_size(args, bdims)
    x = materialize(x, bdims[0], size)
    if x.dim() < 3:
        raise NeedsFallback(op.name)        # an example without a batch of rows
    n, channels = x.shape[1], x.shape[2]
    folded = x.movedim(0, 1).reshape((n, size * channels) + tuple(x.shape[3:]))
    per_channel = []
    for k in (1, 2, 3, 4):
        t = args[k]
        if t is None:
            per_channel.append(None)
            continue
        t = materialize(t, bdims[k], size)
        if k in (3, 4) and training and not t.is_contiguous():
            raise NeedsFallback(op.name)    # the update must reach the stats' memory
        per_channel.append(t.reshape((size * channels,)))
    out, mean, rstd = call(op, folded, *per_channel, *args[5:])
    out = out.view((n, size, channels) + tuple(out.shape[2:]))
    return (out, mean.view((size, -1)), rstd.view((size, -1))), (1, 0, 0)


def group_norm_rule(op, args, bdims):
    """Group norm normalises each sample on its own: the batch folds into N."""
    if bdims[1] is not None or bdims[2] is not None:
        raise NeedsFallback(op.name)
    x = to_front(args[0], bdims[0])
    size, n = x.shape[0], args[3]
    folded = x.reshape((size * n,) + tuple(x.shape[2:]))
    outs = call(op, folded, args[1], args[2], size * n, *args[4:])
    return tuple(o.view((size, n) + tuple(o.shape[1:])) for o in outs), (0, 0, 0)
