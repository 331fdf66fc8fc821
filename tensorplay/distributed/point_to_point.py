"""Point to point: one rank sends a tensor, one other rank receives it.

    send(t, dst)          blocks until t is sent (gloo: handed to the network)
    recv(t, src)          blocks until t holds what rank src sent; src=None takes the
                          first sender, and recv returns its rank
    isend / irecv         the same, returning a Work at once
    batch_isend_irecv     a list of P2POp(isend or irecv, tensor, peer) started together

Sends and receives pair up in order per (sender, receiver, tag): the k-th send from rank
a to rank b with tag t lands in b's k-th recv from a with tag t. Only the two ranks take
part, so unlike a collective the others need not call anything.
"""
from __future__ import annotations

import torch.distributed as tdist

from tensorplay.distributed.process_group import not_a_member, peer_rank
from tensorplay.distributed.work import hand_over, launch
from tensorplay.errors import ArgumentError

__all__ = ["send", "recv", "isend", "irecv", "P2POp", "batch_isend_irecv"]


def isend(tensor, dst=None, group=None, tag=0, group_dst=None, name="isend"):
    """Start sending `tensor` to rank `dst`; returns a Work (wait before changing it)."""
    if not_a_member(name, group):
        return None
    dst = _peer(name, group, "dst", dst, "group_dst", group_dst, tag)
    shared = hand_over(name, [(tensor, "tensor", False)])
    return launch(name, shared, True, lambda: tdist.isend(
        shared[0].torch, dst=dst, group=group, tag=tag), group)


def irecv(tensor, src=None, group=None, tag=0, group_src=None, name="irecv"):
    """Start receiving into `tensor` from rank `src` (None: from whichever rank sends
    first; the Work's source_rank() tells which); returns a Work."""
    if not_a_member(name, group):
        return None
    if src is not None or group_src is not None:
        src = _peer(name, group, "src", src, "group_src", group_src, tag)
    else:
        _check_tag(name, tag)
    shared = hand_over(name, [(tensor, "tensor", True)])
    work = launch(name, shared, True, lambda: tdist.irecv(
        shared[0].torch, src=src, group=group, tag=tag), group)
    work.peer = src               # (None: gloo tells the sender once it is known)
    return work


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Send `tensor` to rank `dst`."""
    work = isend(tensor, dst, group, tag, group_dst, name="send")
    if work is not None:
        work.wait()


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receive into `tensor` from rank `src` (None: any rank); returns the sender's
    global rank (-1 when this rank is not in `group`)."""
    work = irecv(tensor, src, group, tag, group_src, name="recv")
    return -1 if work is None else work.source_rank()


class P2POp:
    """One send or receive for batch_isend_irecv: `op` is isend or irecv (TensorPlay's
    or torch.distributed's), `peer` the other rank (global; or `group_peer` within
    `group`)."""

    def __init__(self, op, tensor, peer=None, group=None, tag=0, group_peer=None):
        if op in (isend, tdist.isend):
            op = isend
        elif op in (irecv, tdist.irecv):
            op = irecv
        else:
            raise ArgumentError(f"P2POp(): argument 'op' must be isend or irecv, got "
                                f"{getattr(op, '__name__', op)!r}", op="P2POp", arg="op")
        if peer is None and group_peer is None:
            raise ArgumentError("P2POp(): missing argument 'peer' (or 'group_peer')",
                                op="P2POp", arg="peer")
        self.op, self.tensor, self.peer, self.group = op, tensor, peer, group
        self.tag, self.group_peer = tag, group_peer


def batch_isend_irecv(p2p_op_list):
    """Start every P2POp of the list; returns their Works, in order. (NCCL fuses such a
    batch into one launch; gloo's sends and receives are asynchronous already, so
    starting them one after the other cannot deadlock.)"""
    name = "batch_isend_irecv"
    if not isinstance(p2p_op_list, (list, tuple)) or not p2p_op_list or not all(
            isinstance(p, P2POp) for p in p2p_op_list):
        raise ArgumentError(f"{name}(): argument 'p2p_op_list' must be a non-empty list of "
                            f"P2POp, got {p2p_op_list!r}", op=name, arg="p2p_op_list")
    works = []
    for p in p2p_op_list:
        if p.op is isend:
            works.append(isend(p.tensor, p.peer, p.group, p.tag, p.group_peer))
        else:
            works.append(irecv(p.tensor, p.peer, p.group, p.tag, p.group_peer))
    return works


def _peer(op, group, arg, rank, group_arg, group_rank, tag):
    """The other rank, checked: in the group, and not this process."""
    _check_tag(op, tag)
    rank = peer_rank(op, group, arg, rank, group_arg, group_rank)
    if rank == tdist.get_rank():
        raise ArgumentError(f"{op}(): argument '{arg}' must be another rank than this "
                            f"process's own ({rank})", op=op, arg=arg)
    return rank


def _check_tag(op, tag):
    if not isinstance(tag, int) or isinstance(tag, bool):
        raise ArgumentError(f"{op}(): argument 'tag' must be an int, got "
                            f"{type(tag).__name__}", op=op, arg="tag")
