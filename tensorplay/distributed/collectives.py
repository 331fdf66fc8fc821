"""Collectives on TensorPlay tensors: every rank of the group calls the same one, in
the same order. With n ranks, rank r's `t`:

    all_reduce(t, op)                   t = op(t of every rank), on every rank
    reduce(t, dst, op)                  the same, on rank dst only
    broadcast(t, src)                   t = t of rank src, on every rank
    all_gather(list, t)                 list[r] = t of rank r, on every rank
    all_gather_into_tensor(out, t)      out = cat(t of rank 0, t of rank 1, ...)
    gather(t, list, dst)                list[r] = t of rank r, on rank dst only
    scatter(t, list, src)               t = list[r] of rank src
    reduce_scatter(out, list, op)       out = op(list[r] of every rank)
    reduce_scatter_tensor(out, t, op)   out = chunk r of op(t of every rank)
    all_to_all(outs, ins)               outs[q] = ins[r] of rank q: a transpose of the
                                        n x n blocks the ranks hold
    all_to_all_single(out, t, ...)      the same on the dim-0 slices of one tensor each,
                                        of equal or given sizes

Each one checks its arguments (a typed error naming the op and the argument), hands the
tensors' memory to torch.distributed (handover.py: no copy for a contiguous tensor) and
writes the result in place. With `async_op=True` it returns a Work at once: the
communication runs in the background (gloo's threads) and `wait()` blocks until it is
done and the result is in the tensors; DistributedDataParallel uses that to reduce
gradients while backward computes the next ones. `src`/`dst` are global ranks,
`group_src`/`group_dst` ranks within `group` (process_group.py).
"""
from __future__ import annotations

import torch.distributed as tdist

import tensorplay as tp

from tensorplay.distributed.process_group import not_a_member, peer_rank
from tensorplay.distributed.work import (
    ReduceOp, Work, check_like, check_list, check_numel, check_reduce_op, check_tensor,
    hand_over, launch,
)
from tensorplay.errors import ArgumentError, ShapeError, fmt_shape

__all__ = ["ReduceOp", "Work", "all_reduce", "reduce", "broadcast", "all_gather",
           "all_gather_into_tensor", "gather", "scatter", "reduce_scatter",
           "reduce_scatter_tensor", "all_to_all", "all_to_all_single"]

# torch 2.13 renamed these two (the old names warn); older versions have only the old ones.
_all_gather_single = getattr(tdist, "all_gather_single", None) or tdist.all_gather_into_tensor
_reduce_scatter_single = (getattr(tdist, "reduce_scatter_single", None)
                          or tdist.reduce_scatter_tensor)


# ---- reductions -------------------------------------------------------------------------
def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce `tensor` over every rank with `op`, in place on each."""
    name = "all_reduce"
    if not_a_member(name, group):
        return None
    check_tensor(name, "tensor", tensor)
    check_reduce_op(name, op, tensor._impl.dtype)
    shared = hand_over(name, [(tensor, "tensor", True)])
    return launch(name, shared, async_op, lambda: tdist.all_reduce(
        shared[0].torch, op=op, group=group, async_op=True), group)


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Reduce `tensor` over every rank with `op` into rank `dst`'s `tensor`. (The other
    ranks' tensors serve as gloo's scratch space: do not rely on their contents.)"""
    name = "reduce"
    if not_a_member(name, group):
        return None
    dst = peer_rank(name, group, "dst", dst, "group_dst", group_dst)
    check_tensor(name, "tensor", tensor)
    check_reduce_op(name, op, tensor._impl.dtype)
    shared = hand_over(name, [(tensor, "tensor", True)])
    return launch(name, shared, async_op, lambda: tdist.reduce(
        shared[0].torch, dst=dst, op=op, group=group, async_op=True), group)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Rank r's `output` = `op` over the ranks of their `input_list[r]`."""
    name = "reduce_scatter"
    if not_a_member(name, group):
        return None
    check_tensor(name, "output", output)
    check_list(name, "input_list", input_list, tdist.get_world_size(group))
    for r, t in enumerate(input_list):
        check_like(name, f"input_list[{r}]", t, output, output._impl.sizes)
    check_reduce_op(name, op, output._impl.dtype)
    shared = hand_over(name, [(output, "output", True)]
                       + [(t, f"input_list[{r}]", False) for r, t in enumerate(input_list)])
    return launch(name, shared, async_op, lambda: tdist.reduce_scatter(
        shared[0].torch, [s.torch for s in shared[1:]], op=op, group=group,
        async_op=True), group)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce `input` over the ranks with `op`, then give rank r the r-th of world_size
    equal chunks (along dim 0) in `output`."""
    name = "reduce_scatter_tensor"
    if not_a_member(name, group):
        return None
    world = tdist.get_world_size(group)
    check_tensor(name, "input", input)
    check_like(name, "output", output, input, None)
    check_numel(name, "input", input, world * output._impl.numel(),
                f"world_size ({world}) times the output's {output._impl.numel()}")
    check_reduce_op(name, op, input._impl.dtype)
    shared = hand_over(name, [(output, "output", True), (input, "input", False)])
    return launch(name, shared, async_op, lambda: _reduce_scatter_single(
        shared[0].torch, shared[1].torch, op=op, group=group, async_op=True), group)


# ---- one rank to all, all to one --------------------------------------------------------
def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Copy rank `src`'s `tensor` into `tensor` on every other rank."""
    name = "broadcast"
    if not_a_member(name, group):
        return None
    src = peer_rank(name, group, "src", src, "group_src", group_src)
    shared = hand_over(name, [(tensor, "tensor", True)])
    return launch(name, shared, async_op, lambda: tdist.broadcast(
        shared[0].torch, src=src, group=group, async_op=True), group)


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """On rank `dst` (default 0): `gather_list[r]` = rank r's `tensor`. The other ranks
    pass no gather_list."""
    name = "gather"
    if not_a_member(name, group):
        return None
    dst = peer_rank(name, group, "dst", dst, "group_dst", group_dst, default=0)
    check_tensor(name, "tensor", tensor)
    outputs = _root_list(name, "gather_list", gather_list, dst, "dst", tensor, group)
    shared = hand_over(name, [(tensor, "tensor", False)]
                       + [(t, f"gather_list[{r}]", True) for r, t in enumerate(outputs)])
    return launch(name, shared, async_op, lambda: tdist.gather(
        shared[0].torch, [s.torch for s in shared[1:]] or None, dst=dst, group=group,
        async_op=True), group)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """`tensor` = rank `src`'s `scatter_list[r]` on rank r. Only rank src (default 0)
    passes a scatter_list."""
    name = "scatter"
    if not_a_member(name, group):
        return None
    src = peer_rank(name, group, "src", src, "group_src", group_src, default=0)
    check_tensor(name, "tensor", tensor)
    inputs = _root_list(name, "scatter_list", scatter_list, src, "src", tensor, group)
    shared = hand_over(name, [(tensor, "tensor", True)]
                       + [(t, f"scatter_list[{r}]", False) for r, t in enumerate(inputs)])
    return launch(name, shared, async_op, lambda: tdist.scatter(
        shared[0].torch, [s.torch for s in shared[1:]] or None, src=src, group=group,
        async_op=True), group)


def _root_list(op, arg, tensors, root, root_arg, like, group):
    """gather's and scatter's list: group-size tensors like `like` on the root, nothing
    (None or []) elsewhere."""
    if tdist.get_rank() != root:
        if tensors:
            raise ArgumentError(f"{op}(): argument '{arg}' must not be given on a rank "
                                f"other than {root_arg}={root} (this is rank "
                                f"{tdist.get_rank()})", op=op, arg=arg)
        return []
    check_list(op, arg, tensors, tdist.get_world_size(group))
    for r, t in enumerate(tensors):
        check_like(op, f"{arg}[{r}]", t, like, like._impl.sizes)
    return list(tensors)


# ---- everyone to everyone ----------------------------------------------------------------
def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Fill `tensor_list[r]` with rank r's `tensor` (group-size tensors of its shape)."""
    name = "all_gather"
    if not_a_member(name, group):
        return None
    check_tensor(name, "tensor", tensor)
    check_list(name, "tensor_list", tensor_list, tdist.get_world_size(group))
    for r, out in enumerate(tensor_list):
        check_like(name, f"tensor_list[{r}]", out, tensor, tensor._impl.sizes)
    shared = hand_over(name, [(tensor, "tensor", False)]
                       + [(out, f"tensor_list[{r}]", True) for r, out in enumerate(tensor_list)])
    return launch(name, shared, async_op, lambda: tdist.all_gather(
        [s.torch for s in shared[1:]], shared[0].torch, group=group, async_op=True), group)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """`output_tensor` = the ranks' `input_tensor`s, concatenated along dim 0 (or
    stacked: output may also have shape (world_size, *input.shape))."""
    name = "all_gather_into_tensor"
    if not_a_member(name, group):
        return None
    world = tdist.get_world_size(group)
    check_tensor(name, "input_tensor", input_tensor)
    check_like(name, "output_tensor", output_tensor, input_tensor, None)
    check_numel(name, "output_tensor", output_tensor, world * input_tensor._impl.numel(),
                f"world_size ({world}) times the input's {input_tensor._impl.numel()}")
    shared = hand_over(name, [(output_tensor, "output_tensor", True),
                              (input_tensor, "input_tensor", False)])
    return launch(name, shared, async_op, lambda: _all_gather_single(
        shared[0].torch, shared[1].torch, group=group, async_op=True), group)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """Rank r sends `input_tensor_list[q]` to rank q, which receives it in its
    `output_tensor_list[r]`. The blocks may have different shapes (as with NCCL): gloo's
    own alltoall wants equal ones, so the blocks travel flattened, one after the other,
    through all_to_all_single with their element counts as the split sizes, and are
    copied into the outputs when the Work completes."""
    name = "all_to_all"
    if not_a_member(name, group):
        return None
    world = tdist.get_world_size(group)
    check_list(name, "input_tensor_list", input_tensor_list, world)
    check_list(name, "output_tensor_list", output_tensor_list, world)
    first = input_tensor_list[0]
    for arg, tensors in (("input_tensor_list", input_tensor_list),
                         ("output_tensor_list", output_tensor_list)):
        for r, t in enumerate(tensors):
            check_like(name, f"{arg}[{r}]", t, first, None)
    with tp.no_grad():
        sent = tp.cat([t.reshape(-1) for t in input_tensor_list])
        received = tp.empty(sum(t.numel() for t in output_tensor_list), dtype=first.dtype,
                            device=first.device)
    sent_sizes = [t.numel() for t in input_tensor_list]
    received_sizes = [t.numel() for t in output_tensor_list]

    def unpack():
        with tp.no_grad():
            for out, block in zip(output_tensor_list, received.split(received_sizes)):
                out.copy_(block.reshape(out.shape))

    shared = hand_over(name, [(received, "output_tensor_list", True),
                              (sent, "input_tensor_list", False)])
    return launch(name, shared, async_op, lambda: tdist.all_to_all_single(
        shared[0].torch, shared[1].torch, received_sizes, sent_sizes, group=group,
        async_op=True), group, after=unpack, outputs=output_tensor_list)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group=None, async_op=False):
    """all_to_all on the dim-0 slices of one tensor: rank r sends its `input`'s q-th slice
    to rank q, which stores it as the r-th slice of its `output`. The slices are equal
    (dim 0 divisible by the group's size) unless `input_split_sizes` /
    `output_split_sizes` give their lengths (one per rank)."""
    name = "all_to_all_single"
    if not_a_member(name, group):
        return None
    world = tdist.get_world_size(group)
    check_tensor(name, "input", input)
    check_like(name, "output", output, input, None)
    for arg, tensor in (("input", input), ("output", output)):
        if len(tensor._impl.sizes) == 0:
            raise ShapeError(f"{name}(): argument '{arg}' must have a dim 0 to split, got a "
                             f"0-dim tensor", op=name, arg=arg)
    if input._impl.sizes[1:] != output._impl.sizes[1:]:
        raise ShapeError(f"{name}(): argument 'output' must have the input's sizes after "
                         f"dim 0, {fmt_shape(input._impl.sizes[1:])}, got "
                         f"{fmt_shape(output._impl.sizes[1:])}", op=name, arg="output")
    input_split_sizes = _split_sizes(name, "input_split_sizes", input_split_sizes, input,
                                     "input", world)
    output_split_sizes = _split_sizes(name, "output_split_sizes", output_split_sizes, output,
                                      "output", world)
    shared = hand_over(name, [(output, "output", True), (input, "input", False)])
    return launch(name, shared, async_op, lambda: tdist.all_to_all_single(
        shared[0].torch, shared[1].torch, output_split_sizes, input_split_sizes, group=group,
        async_op=True), group)


def _split_sizes(op, arg, sizes, tensor, tensor_arg, world):
    """The slice lengths along dim 0: `sizes` checked (one per rank, adding up to dim 0),
    or None for equal slices, when dim 0 divides into them."""
    rows = tensor._impl.sizes[0]
    if sizes is None or len(sizes) == 0:
        if rows % world:
            raise ShapeError(f"{op}(): argument '{tensor_arg}' must have a dim 0 divisible by "
                             f"the group's size {world} when '{arg}' is not given, got "
                             f"shape {fmt_shape(tensor._impl.sizes)}", op=op, arg=tensor_arg)
        return None
    if not isinstance(sizes, (list, tuple)) or len(sizes) != world or not all(
            isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in sizes):
        raise ArgumentError(f"{op}(): argument '{arg}' must be a list of {world} lengths "
                            f"(one per rank, >= 0), got {sizes!r}", op=op, arg=arg)
    if sum(sizes) != rows:
        raise ShapeError(f"{op}(): argument '{arg}' must add up to the {tensor_arg}'s dim 0 "
                         f"({rows}), got {list(sizes)} (sum {sum(sizes)})", op=op, arg=arg)
    return list(sizes)
