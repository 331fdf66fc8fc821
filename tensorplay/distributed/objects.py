"""Collectives on Python objects, built on the tensor collectives as PyTorch builds its
own: an object is pickled into a uint8 tensor, the lengths travel first (so each rank
can make room), then the bytes, padded to the longest where the collective needs equal
sizes; the receivers unpickle.

    broadcast_object_list(objs, src)      objs[i] = rank src's objs[i], in place
    all_gather_object(out, obj)           out[r] = rank r's obj
    gather_object(obj, out, dst)          the same, on rank dst only
    scatter_object_list(out, objs, src)   out[0] = rank src's objs[r], on rank r
    send_object_list / recv_object_list   a list from one rank to another

Unpickling runs code the sender chose: use these only between processes you trust
(PyTorch's warning too). A TensorPlay tensor inside an object travels as its pickle.
"""
from __future__ import annotations

import io
import pickle

import numpy as np
import torch.distributed as tdist

import tensorplay as tp
from tensorplay.distributed import collectives, point_to_point
from tensorplay.distributed.process_group import _state, not_a_member, peer_rank
from tensorplay.errors import ArgumentError

__all__ = ["broadcast_object_list", "all_gather_object", "gather_object",
           "scatter_object_list", "send_object_list", "recv_object_list"]


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """Replace each object of `object_list` (the same length on every rank) by rank
    `src`'s (default 0)."""
    name = "broadcast_object_list"
    if not_a_member(name, group):
        return None
    src = peer_rank(name, group, "src", src, "group_src", group_src, default=0)
    _check_list(name, "object_list", object_list)
    if tdist.get_rank() == src:
        payloads = [_pickle(name, "object_list", obj) for obj in object_list]
        lengths = _lengths([len(p) for p in payloads])
        data = _bytes(b"".join(payloads))
    else:
        lengths = _lengths([0] * len(object_list))
    collectives.broadcast(lengths, src, group)
    if tdist.get_rank() != src:
        data = _zeros(int(lengths.sum().item()))
    if data.numel():                   # (an empty list: nothing more to send)
        collectives.broadcast(data, src, group)
    if tdist.get_rank() != src:
        object_list[:] = _unpickle_all(data, lengths.tolist())
    return None


def all_gather_object(object_list, obj, group=None):
    """`object_list[r]` = rank r's `obj` (object_list: the group's size long)."""
    name = "all_gather_object"
    if not_a_member(name, group):
        return None
    world = tdist.get_world_size(group)
    _check_list(name, "object_list", object_list, world)
    blocks, lengths = _exchange_padded(_pickle(name, "obj", obj), group, world)
    gathered = [_zeros(blocks.shape[0]) for _ in range(world)]
    collectives.all_gather(gathered, blocks, group)
    object_list[:] = [_unpickle(g, n) for g, n in zip(gathered, lengths)]
    return None


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None):
    """On rank `dst` (default 0): `object_gather_list[r]` = rank r's `obj`; the other
    ranks pass no list."""
    name = "gather_object"
    if not_a_member(name, group):
        return None
    dst = peer_rank(name, group, "dst", dst, "group_dst", group_dst, default=0)
    world = tdist.get_world_size(group)
    root = tdist.get_rank() == dst
    if root:
        _check_list(name, "object_gather_list", object_gather_list, world)
    elif object_gather_list is not None:
        raise ArgumentError(f"{name}(): argument 'object_gather_list' must be None on a rank "
                            f"other than dst={dst} (this is rank {tdist.get_rank()})",
                            op=name, arg="object_gather_list")
    blocks, lengths = _exchange_padded(_pickle(name, "obj", obj), group, world)
    gathered = [_zeros(blocks.shape[0]) for _ in range(world)] if root else None
    collectives.gather(blocks, gathered, dst, group)
    if root:
        object_gather_list[:] = [_unpickle(g, n) for g, n in zip(gathered, lengths)]
    return None


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=None,
                        group=None, group_src=None):
    """Rank r gets rank `src`'s `scatter_object_input_list[r]` as
    `scatter_object_output_list[0]`."""
    name = "scatter_object_list"
    if not_a_member(name, group):
        return None
    src = peer_rank(name, group, "src", src, "group_src", group_src, default=0)
    world = tdist.get_world_size(group)
    if not isinstance(scatter_object_output_list, list) or not scatter_object_output_list:
        raise ArgumentError(f"{name}(): argument 'scatter_object_output_list' must be a "
                            f"non-empty list (its first element receives the object), got "
                            f"{scatter_object_output_list!r}", op=name,
                            arg="scatter_object_output_list")
    root = tdist.get_rank() == src
    if root:
        _check_list(name, "scatter_object_input_list", scatter_object_input_list, world)
        payloads = [_pickle(name, "scatter_object_input_list", obj)
                    for obj in scatter_object_input_list]
        width = _lengths([max(len(p) for p in payloads)])
    else:
        width = _lengths([0])
    # Every rank needs the block size before the scatter: the longest pickle.
    collectives.broadcast(width, src, group)
    width = int(width.item())
    mine_length = _lengths([0])
    collectives.scatter(mine_length, [_lengths([len(p)]) for p in payloads] if root else None,
                        src, group)
    mine = _zeros(width)
    collectives.scatter(mine, [_bytes(p, width) for p in payloads] if root else None,
                        src, group)
    scatter_object_output_list[0] = _unpickle(mine, int(mine_length.item()))
    return None


def send_object_list(object_list, dst=None, group=None, device=None, group_dst=None,
                     use_batch=False):
    """Send the objects of `object_list` to rank `dst` (which calls recv_object_list with
    a list of the same length)."""
    name = "send_object_list"
    if not_a_member(name, group):
        return None
    _check_list(name, "object_list", object_list)
    payloads = [_pickle(name, "object_list", obj) for obj in object_list]
    point_to_point.send(_lengths([len(p) for p in payloads]), dst, group, group_dst=group_dst)
    if payloads:
        point_to_point.send(_bytes(b"".join(payloads)), dst, group, group_dst=group_dst)
    return None


def recv_object_list(object_list, src=None, group=None, device=None, group_src=None,
                     use_batch=False):
    """Fill `object_list` with the objects rank `src` (None: any rank) sent; returns the
    sender's rank."""
    name = "recv_object_list"
    if not_a_member(name, group):
        return -1
    _check_list(name, "object_list", object_list)
    lengths = _lengths([0] * len(object_list))
    sender = point_to_point.recv(lengths, src, group, group_src=group_src)
    data = _zeros(int(lengths.sum().item()))
    if object_list:
        point_to_point.recv(data, sender, group)     # the rest from the same rank
    object_list[:] = _unpickle_all(data, lengths.tolist())
    return sender


# ---- bytes ------------------------------------------------------------------------------
def _pickle(op, arg, obj):
    """The bytes of `obj`; an object pickle refuses (a lambda, a lock, ...) is this
    rank's ArgumentError before anything is sent."""
    buffer = io.BytesIO()
    try:
        pickle.Pickler(buffer).dump(obj)
    except (pickle.PicklingError, TypeError, AttributeError) as error:
        raise ArgumentError(f"{op}(): argument '{arg}' holds an object pickle cannot "
                            f"serialize: {error}", op=op, arg=arg) from error
    return buffer.getvalue()


def _device():
    """Where the bytes travel from: CPU memory, unless the group is NCCL alone (which
    moves only GPU memory; PyTorch moves the bytes to the current GPU then too)."""
    return "cpu" if "cpu" in _state.served else "cuda"


def _bytes(data, width=None):
    """A uint8 tensor of `data`, padded with zeros to `width` bytes."""
    array = np.zeros(width if width is not None else len(data), dtype=np.uint8)
    array[:len(data)] = np.frombuffer(data, dtype=np.uint8)
    return tp.tensor(array, device=_device())


def _zeros(count):
    return tp.zeros(count, dtype=tp.uint8, device=_device())


def _lengths(values):
    return tp.tensor(np.array(values, dtype=np.int64), device=_device())


def _unpickle(block, length):
    return pickle.loads(block.cpu().numpy()[:length].tobytes())


def _unpickle_all(data, lengths):
    """The objects pickled one after the other in `data`, `lengths` bytes each."""
    raw = data.cpu().numpy().tobytes()
    bounds = np.cumsum([0] + lengths)
    return [pickle.loads(raw[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]


def _exchange_padded(payload, group, world):
    """This rank's pickle `payload` padded to the group's longest, and every rank's
    length (an all_gather of the lengths first)."""
    lengths = [_lengths([0]) for _ in range(world)]
    collectives.all_gather(lengths, _lengths([len(payload)]), group)
    lengths = [int(n.item()) for n in lengths]
    return _bytes(payload, max(lengths)), lengths


def _check_list(op, arg, objects, length=None):
    if not isinstance(objects, list) or (length is not None and len(objects) != length):
        given = f"a list of {len(objects)}" if isinstance(objects, list) else \
            type(objects).__name__
        wants = f"a list of the group's size = {length}" if length is not None else "a list"
        raise ArgumentError(f"{op}(): argument '{arg}' must be {wants}, got {given}",
                            op=op, arg=arg)
