"""LoggingTensor: a tensor subclass that logs every op it takes part in.

    x = LoggingTensor(tp.randn(2, 3), requires_grad=True)
    with capture_logs() as logs:
        y = (x * 2).sum()
        y.backward()
    print("\\n".join(logs))
    # $1: float32[2, 3] = tp.ops.mul.Tensor($0, $2)   ... then the backward's ops

It is PyTorch's testing LoggingTensor, written for `__tensorplay_dispatch__`: a *wrapper*
subclass (no memory of its own) around a plain tensor `elem`. Autograd runs on the
LoggingTensor; below it, each op reaches `__tensorplay_dispatch__`, which unwraps the
arguments to their `elem`s, runs the op on them, wraps the results again and logs the
call. What the log shows is therefore exactly what ran below autograd, in order.
"""
from __future__ import annotations

import contextlib

from tensorplay._tensor import Tensor
from tensorplay.func.trees import tree_map
from tensorplay.utils.dispatch_mode import OpLog

__all__ = ["LoggingTensor", "capture_logs"]

_captures = []      # the OpLogs of the active capture_logs() blocks


@contextlib.contextmanager
def capture_logs():
    """Collect the lines LoggingTensors log inside the block; yields the list of lines."""
    log = OpLog()
    _captures.append(log)
    try:
        yield log.lines
    finally:
        _captures.remove(log)


class LoggingTensor(Tensor):
    """A tensor that logs its ops (see the module docstring). `elem` is the wrapped one."""

    def __new__(cls, elem, *, requires_grad=False):
        impl = elem._impl
        r = Tensor._make_wrapper_subclass(
            cls, impl.sizes, strides=impl.strides, storage_offset=impl.offset,
            dtype=impl.dtype, device=impl.device, requires_grad=requires_grad)
        # The graph is recorded on the wrapper; the inner tensor is plain data.
        r.elem = elem.detach() if impl.requires_grad else elem
        return r

    def __repr__(self):
        return f"LoggingTensor({self.elem!r})"

    @classmethod
    def __tensorplay_dispatch__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}

        def unwrap(value):
            return value.elem if isinstance(value, cls) else value

        def wrap(value):
            if getattr(value, "_impl", None) is not None and not isinstance(value, cls):
                return cls(value)
            return value

        out = tree_map(wrap, func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs)))
        for i in func.schema.mutable_positions:
            if isinstance(args[i], cls):
                _sync_metadata(args[i])
        if func.aliased_return:
            out = args[func.schema.mutable_positions[0]]     # `x.add_(1)` is x
        for log in _captures:
            log.record(func, args, kwargs, out)
        return out


def _sync_metadata(t):
    """An in-place op may change its tensor's sizes or strides (`t_`, `resize_`): the
    wrapper keeps describing its inner tensor."""
    inner, outer = t.elem._impl, t._impl
    outer.sizes, outer.strides, outer.offset = inner.sizes, inner.strides, inner.offset
    outer.is_contiguous = inner.is_contiguous
