"""What every collective does around torch.distributed's call: check the arguments,
hand the tensors' memory over, start the call, and give back a Work (or wait for it).

    Work          the handle of a collective in flight: wait(), is_completed(), result()
    hand_over     the checks every tensor argument passes, then its memory as a torch tensor
    launch        start the torch call; return its Work when async_op, else wait for it
    check_*       the argument checks, each raising a typed error naming op and argument
"""
from __future__ import annotations

import datetime

import torch.distributed as tdist

from tensorplay.distributed.process_group import (
    _state, check_served, collective_failure, require_group,
)
from tensorplay.distributed.handover import Shared
from tensorplay import _dtype as dt
from tensorplay.errors import ArgumentError, DTypeError, ShapeError, fmt_shape

__all__ = ["ReduceOp", "Work", "hand_over", "launch", "check_tensor", "check_like",
           "check_numel", "check_list", "check_reduce_op"]

# torch's own enum: SUM, AVG, PRODUCT, MIN, MAX, the bitwise BAND, BOR, BXOR (and
# PREMUL_SUM, which only NCCL has).
ReduceOp = tdist.ReduceOp

_BITWISE = (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR)
_ORDERED = (ReduceOp.PRODUCT, ReduceOp.MIN, ReduceOp.MAX)   # not defined on complex numbers


class Work:
    """The handle of a collective in flight.

    `wait()` blocks until the result is in the tensors (copied back into non-contiguous
    ones, and whatever the op still has to do afterwards: unpacking, unpickling) and
    returns True; a failure raises CollectiveError. `is_completed()` asks without
    blocking; `result()` waits and returns the tensors the op wrote."""

    def __init__(self, op, torch_work, shared, group=None, after=None, outputs=None):
        self.op = op
        self._work = torch_work
        self._shared = shared
        self._group = group
        self._after = after           # called once, after the memory is back
        self._outputs = outputs       # what result() returns, when not the written memory
        self._done = False
        self._error = None
        self.peer = None              # irecv: the sender's global rank, when named

    def wait(self, timeout=None):
        """Block until done. `timeout` (a timedelta) overrides the group's for this wait."""
        if self._done:
            return True
        if timeout is not None and not isinstance(timeout, datetime.timedelta):
            raise ArgumentError(f"Work.wait(): argument 'timeout' must be a "
                                f"datetime.timedelta, got {type(timeout).__name__}",
                                op="Work.wait", arg="timeout")
        try:
            if self._work is not None:
                if timeout is None:
                    self._work.wait()
                else:
                    self._work.wait(timeout)
        except RuntimeError as error:
            self._error = collective_failure(self.op, error, self._group)
            raise self._error from error
        for s in self._shared:
            s.finish()
        if self._after is not None:
            self._after()
        self._done = True
        return True

    def is_completed(self):
        """True once the communication has finished (wait() then returns at once)."""
        return self._done or self._work is None or self._work.is_completed()

    def is_success(self):
        return self._done and self._error is None

    def exception(self):
        return self._error

    def result(self):
        """Wait, then return the tensors the collective wrote."""
        self.wait()
        if self._outputs is not None:
            return list(self._outputs)
        return [s.tensor for s in self._shared if s.written]

    def source_rank(self):
        """irecv from any source: the global rank the tensor came from (gloo reports
        the rank within the group)."""
        self.wait()
        if self.peer is not None:
            return self.peer
        # (torch 2.13 deprecates the public name with a warning; its recv uses this one)
        rank = getattr(self._work, "_source_rank", self._work.source_rank)()
        return rank if self._group is None else tdist.get_global_rank(self._group, rank)


def hand_over(op, tensors, group=None):
    """Shared memory for each (tensor, argument name, written) after the checks."""
    require_group(op)
    shared = []
    for tensor, arg, written in tensors:
        check_tensor(op, arg, tensor)
        if tensor._impl.dtype is dt.int16 and _state.served.get("cpu") == "gloo":
            raise DTypeError(f"{op}(): argument '{arg}' has dtype int16, which the gloo "
                             f"backend cannot move (use int32)", op=op, arg=arg)
        s = Shared(tensor, op, arg, written)
        check_served(op, arg, tensor, s.torch)
        shared.append(s)
    devices = {s.torch.device for s in shared}
    if len(devices) > 1:
        raise ArgumentError(f"{op}(): all tensors must be on one device, got "
                            f"{sorted(str(d) for d in devices)}", op=op)
    return shared


def launch(op, shared, async_op, start, group=None, after=None, outputs=None):
    """Start the collective (`start()` returns torch's Work); return our Work, or wait
    for it when not async."""
    try:
        work = Work(op, start(), shared, group, after, outputs)
    except RuntimeError as error:
        raise collective_failure(op, error, group) from error
    if async_op:
        return work
    work.wait()
    return None


# ---- argument checks ------------------------------------------------------------------
def check_tensor(op, arg, tensor):
    if getattr(tensor, "_impl", None) is None:
        raise ArgumentError(f"{op}(): argument '{arg}' must be a Tensor, got "
                            f"{type(tensor).__name__}", op=op, arg=arg)


def check_like(op, arg, tensor, like, sizes):
    """`tensor` is a Tensor of `like`'s dtype (and of `sizes`, unless None)."""
    check_tensor(op, arg, tensor)
    if tensor._impl.dtype is not like._impl.dtype:
        raise DTypeError(f"{op}(): argument '{arg}' must have dtype {like._impl.dtype.name} "
                         f"like the input, got {tensor._impl.dtype.name}", op=op, arg=arg)
    if sizes is not None and tensor._impl.sizes != sizes:
        raise ShapeError(f"{op}(): argument '{arg}' must have the input's shape "
                         f"{fmt_shape(sizes)}, got {fmt_shape(tensor._impl.sizes)}",
                         op=op, arg=arg)


def check_numel(op, arg, tensor, expected, why):
    if tensor._impl.numel() != expected:
        raise ShapeError(f"{op}(): argument '{arg}' must hold {expected} elements ({why}), "
                         f"got shape {fmt_shape(tensor._impl.sizes)}", op=op, arg=arg)


def check_list(op, arg, tensors, length):
    """`tensors` is a list (or tuple) of `length` Tensors."""
    if not isinstance(tensors, (list, tuple)) or len(tensors) != length:
        given = (f"{len(tensors)} tensors" if isinstance(tensors, (list, tuple))
                 else type(tensors).__name__)
        raise ArgumentError(f"{op}(): argument '{arg}' must be a list of the group's size "
                            f"= {length} tensors, got {given}", op=op, arg=arg)
    for i, t in enumerate(tensors):
        check_tensor(op, f"{arg}[{i}]", t)


def check_reduce_op(op, reduce_op, dtype):
    """The reductions gloo (and PyTorch) define for `dtype`: AVG needs a floating or
    complex dtype (an integer mean would not be an integer), the bitwise ones an integer
    or bool dtype, PRODUCT/MIN/MAX a real one."""
    if not isinstance(reduce_op, ReduceOp.RedOpType) and not isinstance(reduce_op, ReduceOp):
        raise ArgumentError(f"{op}(): argument 'op' must be a tp.distributed.ReduceOp "
                            f"(SUM, PRODUCT, MIN, MAX, AVG, BAND, BOR, BXOR), got "
                            f"{reduce_op!r}", op=op, arg="op")
    name = str(reduce_op).rpartition(".")[2]
    if reduce_op == ReduceOp.PREMUL_SUM and "cuda" not in _state.served:
        raise ArgumentError(f"{op}(): argument 'op' is ReduceOp.PREMUL_SUM, which NCCL "
                            f"has and gloo does not", op=op, arg="op")
    exact = not (dtype.is_floating_point or dtype.is_complex)
    if (reduce_op == ReduceOp.AVG and exact) \
            or (reduce_op in _BITWISE and not exact) \
            or (reduce_op in _ORDERED and dtype.is_complex):
        wants = {"AVG": "a floating or complex", "PRODUCT": "a real", "MIN": "a real",
                 "MAX": "a real"}.get(name, "an integer or bool")
        raise DTypeError(f"{op}(): argument 'op' is ReduceOp.{name}, which needs {wants} "
                         f"dtype, got {dtype.name}", op=op, arg="op")
