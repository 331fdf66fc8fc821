"""Collectives on TensorPlay tensors: every rank calls the same one, in the same order.

    all_reduce(t, op)                    t = op(t of rank 0, t of rank 1, ...) on every rank
    broadcast(t, src)                    t = t of rank src on every rank
    all_gather(list, t)                  list[r] = t of rank r
    all_gather_into_tensor(out, t)       out = cat(t of rank 0, t of rank 1, ...)
    reduce_scatter_tensor(out, t)        out = chunk r of op(t of every rank), on rank r

Each one hands the tensors' memory to torch.distributed (handover.py: no copy for a
contiguous tensor) and writes the result in place. With `async_op=True` it returns a
Work at once: the communication runs in the background (gloo's threads) and `wait()`
blocks until it is done and the result is in the tensors; DistributedDataParallel uses
that to reduce gradients while backward computes the next ones.
"""
from __future__ import annotations

import torch.distributed as tdist

from tensorplay.distributed.group import (
    check_rank, check_served, collective_failure, require_group,
)
from tensorplay.distributed.handover import Shared
from tensorplay.errors import ArgumentError, DTypeError, ShapeError, fmt_shape

__all__ = ["ReduceOp", "Work", "all_reduce", "broadcast", "all_gather",
           "all_gather_into_tensor", "reduce_scatter_tensor"]

# torch's own enum: SUM, AVG, PRODUCT, MIN, MAX (and the bitwise BAND, BOR, BXOR).
ReduceOp = tdist.ReduceOp

# torch 2.13 renamed these two (the old names warn); older versions have only the old ones.
_all_gather_single = getattr(tdist, "all_gather_single", None) or tdist.all_gather_into_tensor
_reduce_scatter_single = (getattr(tdist, "reduce_scatter_single", None)
                          or tdist.reduce_scatter_tensor)


class Work:
    """The handle of a collective in flight. `wait()` returns once the result is in the
    tensors (copied back into non-contiguous ones); a failure raises CollectiveError."""

    def __init__(self, op, torch_work, shared):
        self.op = op
        self._work = torch_work
        self._shared = shared
        self._done = False

    def wait(self):
        if not self._done:
            try:
                self._work.wait()
            except RuntimeError as error:
                raise collective_failure(self.op, error) from error
            for s in self._shared:
                s.finish()
            self._done = True
        return True

    def is_completed(self):
        """True once the communication has finished (call wait() to see the result)."""
        return self._done or self._work.is_completed()


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce `tensor` over every rank with `op`, in place on each."""
    shared = _hand_over("all_reduce", [(tensor, "tensor", True)])
    return _launch("all_reduce", shared, async_op, lambda: tdist.all_reduce(
        shared[0].torch, op=op, group=group, async_op=True))


def broadcast(tensor, src, group=None, async_op=False):
    """Copy rank `src`'s `tensor` into `tensor` on every other rank."""
    require_group("broadcast")
    check_rank("broadcast", "src", src, group)
    shared = _hand_over("broadcast", [(tensor, "tensor", True)])
    return _launch("broadcast", shared, async_op, lambda: tdist.broadcast(
        shared[0].torch, src=src, group=group, async_op=True))


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Fill `tensor_list[r]` with rank r's `tensor` (world_size tensors of its shape)."""
    require_group("all_gather")
    world = tdist.get_world_size(group)
    if not isinstance(tensor_list, (list, tuple)) or len(tensor_list) != world:
        given = (f"{len(tensor_list)} tensors" if isinstance(tensor_list, (list, tuple))
                 else type(tensor_list).__name__)
        raise ArgumentError(f"all_gather(): argument 'tensor_list' must be a list of "
                            f"world_size = {world} tensors, got {given}", op="all_gather",
                            arg="tensor_list")
    _check_tensor("all_gather", "tensor", tensor)
    for r, out in enumerate(tensor_list):
        _check_like("all_gather", f"tensor_list[{r}]", out, tensor, tensor._impl.sizes)
    shared = _hand_over("all_gather", [(tensor, "tensor", False)]
                        + [(out, f"tensor_list[{r}]", True) for r, out in enumerate(tensor_list)])
    return _launch("all_gather", shared, async_op, lambda: tdist.all_gather(
        [s.torch for s in shared[1:]], shared[0].torch, group=group, async_op=True))


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """`output_tensor` = the ranks' `input_tensor`s, concatenated along dim 0 (or
    stacked: output may also have shape (world_size, *input.shape))."""
    op = "all_gather_into_tensor"
    require_group(op)
    world = tdist.get_world_size(group)
    _check_tensor(op, "input_tensor", input_tensor)
    _check_like(op, "output_tensor", output_tensor, input_tensor, None)
    _check_numel(op, "output_tensor", output_tensor, world * input_tensor._impl.numel(),
                 f"world_size ({world}) times the input's {input_tensor._impl.numel()}")
    shared = _hand_over(op, [(output_tensor, "output_tensor", True),
                             (input_tensor, "input_tensor", False)])
    return _launch(op, shared, async_op, lambda: _all_gather_single(
        shared[0].torch, shared[1].torch, group=group, async_op=True))


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce `input` over the ranks with `op`, then give rank r the r-th of world_size
    equal chunks (along dim 0) in `output`."""
    name = "reduce_scatter_tensor"
    require_group(name)
    world = tdist.get_world_size(group)
    _check_tensor(name, "input", input)
    _check_like(name, "output", output, input, None)
    _check_numel(name, "input", input, world * output._impl.numel(),
                 f"world_size ({world}) times the output's {output._impl.numel()}")
    shared = _hand_over(name, [(output, "output", True), (input, "input", False)])
    return _launch(name, shared, async_op, lambda: _reduce_scatter_single(
        shared[0].torch, shared[1].torch, op=op, group=group, async_op=True))


# ---- the shared path ----------------------------------------------------------------
def _hand_over(op, tensors):
    """Shared memory for each (tensor, argument name, written) after the checks."""
    require_group(op)
    shared = []
    for tensor, arg, written in tensors:
        _check_tensor(op, arg, tensor)
        s = Shared(tensor, op, arg, written)
        check_served(op, arg, tensor, s.torch)
        shared.append(s)
    devices = {s.torch.device for s in shared}
    if len(devices) > 1:
        raise ArgumentError(f"{op}(): all tensors must be on one device, got "
                            f"{sorted(str(d) for d in devices)}", op=op)
    return shared


def _launch(op, shared, async_op, start):
    """Start the collective; return its Work, or wait for it when not async."""
    try:
        work = Work(op, start(), shared)
    except RuntimeError as error:
        raise collective_failure(op, error) from error
    if async_op:
        return work
    work.wait()
    return None


def _check_tensor(op, arg, tensor):
    if getattr(tensor, "_impl", None) is None:
        raise ArgumentError(f"{op}(): argument '{arg}' must be a Tensor, got "
                            f"{type(tensor).__name__}", op=op, arg=arg)


def _check_like(op, arg, tensor, like, sizes):
    """`tensor` is a Tensor of `like`'s dtype (and of `sizes`, unless None)."""
    _check_tensor(op, arg, tensor)
    if tensor._impl.dtype is not like._impl.dtype:
        raise DTypeError(f"{op}(): argument '{arg}' must have dtype {like._impl.dtype.name} "
                         f"like the input, got {tensor._impl.dtype.name}", op=op, arg=arg)
    if sizes is not None and tensor._impl.sizes != sizes:
        raise ShapeError(f"{op}(): argument '{arg}' must have the input's shape "
                         f"{fmt_shape(sizes)}, got {fmt_shape(tensor._impl.sizes)}",
                         op=op, arg=arg)


def _check_numel(op, arg, tensor, expected, why):
    if tensor._impl.numel() != expected:
        raise ShapeError(f"{op}(): argument '{arg}' must hold {expected} elements ({why}), "
                         f"got shape {fmt_shape(tensor._impl.sizes)}", op=op, arg=arg)
