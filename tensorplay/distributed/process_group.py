"""The process groups: this process's rank among `world_size` processes, the backend
(gloo for CPU memory, NCCL for GPU memory) the collectives run on, and subgroups.

TensorPlay writes no networking: the group is torch.distributed's default group, set
up from the variables `torchrun` exports:

    RANK, WORLD_SIZE          this process's number and how many there are
    MASTER_ADDR, MASTER_PORT  where rank 0 listens, for the others to find it
    LOCAL_RANK                this process's number on its machine (its GPU with NCCL)

    torchrun --nproc-per-node 2 -m tensorplay train --model mlp

A subgroup (`new_group([0, 2])`) is a torch.distributed ProcessGroup too: every
collective takes it as `group=`. Ranks stay *global* in `src=`/`dst=` (rank 2 is rank
2 in every group); `group_src=`/`group_dst=` count within the group instead (rank 2 is
group rank 1 of [0, 2]). A rank outside the group that calls a collective on it gets
None back and a warning, as in PyTorch.
"""
from __future__ import annotations

import datetime
import os
import warnings

import torch
import torch.distributed as tdist

from tensorplay.distributed.errors import CollectiveError, NotInitializedError, RankError
from tensorplay.errors import ArgumentError, DeviceError

__all__ = ["is_available", "is_initialized", "init_process_group", "destroy_process_group",
           "get_rank", "get_world_size", "get_backend", "barrier", "monitored_barrier",
           "new_group", "get_group_rank", "get_global_rank", "get_process_group_ranks",
           "group", "GroupMember", "ProcessGroup", "Backend"]

# torch's own names: `group.WORLD` is the default group, a subgroup is a ProcessGroup.
group = tdist.group
GroupMember = tdist.GroupMember
ProcessGroup = tdist.ProcessGroup
Backend = tdist.Backend

# The device type of the memory each backend moves (as torch sees it: a TensorPlay cuda
# tensor in Triton's interpreter mode lives in host memory, which gloo moves).
SERVES = {"gloo": "cpu", "nccl": "cuda"}
ENV_VARIABLES = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
DEFAULT_TIMEOUT = datetime.timedelta(minutes=30)    # torch's default for gloo


class _GroupState:
    """What init_process_group settled, for the checks and the messages of the others."""

    def __init__(self):
        self.backend = None
        self.served = {}          # memory device type -> backend name
        self.timeout = None
        self.group_timeouts = {}  # id(subgroup) -> its own timeout (new_group's)


_state = _GroupState()


def is_available():
    """True when this torch build has torch.distributed."""
    return tdist.is_available()


def is_initialized():
    return tdist.is_initialized()


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None, group_name="", pg_options=None, device_id=None):
    """Join the default process group (every process of the job calls it).

    Args:
        backend: "gloo" (CPU tensors), "nccl" (cuda tensors) or both as
            "cpu:gloo,cuda:nccl"; None picks gloo, and adds NCCL when a GPU is there.
        init_method: "env://" (the default: the variables torchrun sets) or a URL such as
            "tcp://127.0.0.1:29500" (then give rank and world_size).
        timeout: a datetime.timedelta (default 30 minutes); a collective that waits
            longer for a peer fails with CollectiveError instead of hanging. A subgroup
            may have its own (new_group's timeout).
        world_size, rank: override WORLD_SIZE and RANK.
        store: a torch.distributed Store to meet through, instead of init_method.
    """
    if tdist.is_initialized():
        raise ArgumentError("init_process_group(): the default process group is already "
                            "initialized (call destroy_process_group() first)",
                            op="init_process_group")
    if backend is None:
        backend = "cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo"
    served = _parse_backend(backend)
    if served.get("cuda") and not torch.cuda.is_available():
        raise DeviceError(f"init_process_group(): backend {backend!r} moves GPU memory with "
                          f"NCCL, but torch sees no GPU here (use 'gloo')",
                          op="init_process_group", arg="backend")
    if store is None and init_method in (None, "env://"):
        _check_environment(world_size, rank)
    if timeout is not None and not isinstance(timeout, datetime.timedelta):
        raise ArgumentError(f"init_process_group(): argument 'timeout' must be a "
                            f"datetime.timedelta, got {type(timeout).__name__}",
                            op="init_process_group", arg="timeout")
    timeout = timeout or DEFAULT_TIMEOUT
    if "cuda" in served:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
    try:
        tdist.init_process_group(backend, init_method=init_method, timeout=timeout,
                                 world_size=world_size, rank=rank, store=store,
                                 group_name=group_name, pg_options=pg_options,
                                 device_id=device_id)
    except RuntimeError as error:      # (torch's store and rendezvous errors derive from it)
        raise CollectiveError(
            f"init_process_group(): the ranks did not all meet within the timeout "
            f"({timeout}); a rank that never started or died makes the others stop here. "
            f"torch.distributed says: {_first_line(error)}", op="init_process_group") from error
    _state.backend = backend
    _state.served = served
    _state.timeout = timeout


def _parse_backend(backend):
    """{"cpu": "gloo"} from "gloo"; "cpu:gloo,cuda:nccl" names one backend per device."""
    if not isinstance(backend, str):
        raise ArgumentError(f"init_process_group(): argument 'backend' must be a str, got "
                            f"{type(backend).__name__}", op="init_process_group",
                            arg="backend")
    served = {}
    for part in backend.lower().split(","):
        device, _, name = part.rpartition(":")
        if name not in SERVES or (device and device != SERVES[name]):
            raise ArgumentError(f"init_process_group(): argument 'backend' must be 'gloo', "
                                f"'nccl' or 'cpu:gloo,cuda:nccl', got {backend!r}",
                                op="init_process_group", arg="backend")
        served[SERVES[name]] = name
    return served


def _check_environment(world_size, rank):
    """env:// reads the rendezvous from the environment: name every variable missing."""
    needed = [v for v in ENV_VARIABLES
              if not (v == "RANK" and rank >= 0) and not (v == "WORLD_SIZE" and world_size >= 0)]
    missing = [v for v in needed if v not in os.environ]
    if missing:
        raise NotInitializedError(
            f"init_process_group(): init_method 'env://' needs the environment variables "
            f"{', '.join(needed)}; {', '.join(missing)} not set (start the script with "
            f"`torchrun --nproc-per-node N script.py`, which sets them)",
            op="init_process_group", arg="init_method")


def require_group(op):
    """Raise NotInitializedError, naming `op`, when there is no process group."""
    if not tdist.is_initialized():
        raise NotInitializedError(f"{op}(): the default process group is not initialized "
                                  f"(call tp.distributed.init_process_group() first)", op=op)


def get_rank(group=None):
    """This process's rank in `group` (the default group: its global rank); -1 when it
    is not a member."""
    check_group("get_rank", group)
    return tdist.get_rank(group)


def get_world_size(group=None):
    """How many ranks `group` has; -1 when this process is not one of them."""
    check_group("get_world_size", group)
    return tdist.get_world_size(group)


def get_backend(group=None):
    check_group("get_backend", group)
    return tdist.get_backend(group)


def new_group(ranks=None, timeout=None, backend=None, pg_options=None,
              use_local_synchronization=False, group_desc=None, device_id=None):
    """A process group of `ranks` (global ranks; None: all of them).

    Every rank of the default group must call it, in the same order, members or not
    (the group's rendezvous goes through the default group's store); a non-member gets
    GroupMember.NON_GROUP_MEMBER back. `timeout` is the new group's own (default: the
    default group's)."""
    op = "new_group"
    require_group(op)
    world = tdist.get_world_size()
    if ranks is not None:
        if not isinstance(ranks, (list, tuple, range)):
            raise ArgumentError(f"{op}(): argument 'ranks' must be a list of ranks, got "
                                f"{type(ranks).__name__}", op=op, arg="ranks")
        for r in ranks:
            if not _is_rank(r) or not 0 <= r < world:
                raise RankError(f"{op}(): argument 'ranks' must hold ranks in "
                                f"0..{world - 1}, got {r!r}", op=op, arg="ranks")
        if len(set(ranks)) != len(ranks):
            raise ArgumentError(f"{op}(): argument 'ranks' must not repeat a rank, got "
                                f"{list(ranks)}", op=op, arg="ranks")
        ranks = sorted(ranks)
    if timeout is not None and not isinstance(timeout, datetime.timedelta):
        raise ArgumentError(f"{op}(): argument 'timeout' must be a datetime.timedelta, got "
                            f"{type(timeout).__name__}", op=op, arg="timeout")
    try:
        made = tdist.new_group(ranks, timeout=timeout, backend=backend, pg_options=pg_options,
                               use_local_synchronization=use_local_synchronization,
                               group_desc=group_desc, device_id=device_id)
    except RuntimeError as error:
        raise collective_failure(op, error) from error
    if not _non_member_marker(made):
        _state.group_timeouts[id(made)] = timeout or _state.timeout
    return made


def get_process_group_ranks(group):
    """The global ranks of `group`, in group-rank order."""
    check_group("get_process_group_ranks", group)
    return tdist.get_process_group_ranks(group)


def get_group_rank(group, global_rank):
    """The rank in `group` of the process whose global rank is `global_rank`."""
    op = "get_group_rank"
    ranks = get_process_group_ranks(group)
    if not _is_rank(global_rank) or global_rank not in ranks:
        raise RankError(f"{op}(): argument 'global_rank' must be a rank of the group, one of "
                        f"{ranks}, got {global_rank!r}", op=op, arg="global_rank")
    return ranks.index(global_rank)


def get_global_rank(group, group_rank):
    """The global rank of the process that has rank `group_rank` in `group`."""
    op = "get_global_rank"
    ranks = get_process_group_ranks(group)
    if not _is_rank(group_rank) or not 0 <= group_rank < len(ranks):
        raise RankError(f"{op}(): argument 'group_rank' must be in 0..{len(ranks) - 1}, got "
                        f"{group_rank!r}", op=op, arg="group_rank")
    return ranks[group_rank]


def barrier(group=None, async_op=False, device_ids=None, timeout=None):
    """Wait until every rank of the group has reached its barrier (with async_op, a
    Work to wait on)."""
    from tensorplay.distributed.work import Work
    op = "barrier"
    if not_a_member(op, group):
        return None
    try:
        work = Work(op, tdist.barrier(group, async_op=True, device_ids=device_ids,
                                      timeout=timeout), [], group)
    except RuntimeError as error:
        raise collective_failure(op, error, group) from error
    if async_op:
        return work
    work.wait()
    return None


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    """A barrier (gloo only) that names the ranks that did not arrive within `timeout`
    instead of just failing: rank 0 waits for each of the others in turn."""
    op = "monitored_barrier"
    if not_a_member(op, group):
        return None
    try:
        tdist.monitored_barrier(group, timeout=timeout, wait_all_ranks=wait_all_ranks)
    except RuntimeError as error:
        raise collective_failure(op, error, group) from error
    return None


def destroy_process_group(group=None):
    """Leave the process group (the default one when `group` is None)."""
    check_group("destroy_process_group", group)
    tdist.destroy_process_group(group)
    if group is None:
        _state.__init__()
    else:
        _state.group_timeouts.pop(id(group), None)


def check_group(op, group):
    """NotInitializedError without a default group; ArgumentError unless `group` is
    None, a ProcessGroup or the non-member marker new_group returns."""
    require_group(op)
    if group is not None and not _non_member_marker(group) \
            and not isinstance(group, ProcessGroup):
        raise ArgumentError(f"{op}(): argument 'group' must be a ProcessGroup (from "
                            f"new_group) or None, got {type(group).__name__}", op=op,
                            arg="group")


def not_a_member(op, group):
    """True (with PyTorch's warning) when this rank is not in `group`: the collective is
    then skipped and returns None."""
    check_group(op, group)
    if group is None or tdist.get_rank(group) >= 0:
        return False
    warnings.warn(f"{op}(): running a collective on a group this rank ({tdist.get_rank()}) "
                  f"is not a member of: skipped, as PyTorch does", stacklevel=3)
    return True


def peer_rank(op, group, arg, rank, group_arg, group_rank, default=None):
    """The global rank named by `arg` (a global rank) or `group_arg` (a rank within
    `group`); `default` (a global rank) when neither is given, if the op has one.
    RankError unless it belongs to the group."""
    if rank is not None and group_rank is not None:
        raise ArgumentError(f"{op}(): give argument '{arg}' or '{group_arg}', not both",
                            op=op, arg=arg)
    if rank is None and group_rank is None:
        if default is None:
            raise ArgumentError(f"{op}(): missing argument '{arg}' (or '{group_arg}')",
                                op=op, arg=arg)
        rank = default
    ranks = tdist.get_process_group_ranks(group)
    if group_rank is not None:
        if not _is_rank(group_rank) or not 0 <= group_rank < len(ranks):
            raise RankError(f"{op}(): argument '{group_arg}' must be a rank in the group, "
                            f"0..{len(ranks) - 1}, got {group_rank!r}", op=op, arg=group_arg)
        return ranks[group_rank]
    if not _is_rank(rank) or rank not in ranks:
        where = (f"a rank in 0..{len(ranks) - 1}" if ranks == list(range(len(ranks)))
                 else f"one of the group's ranks {ranks}")
        raise RankError(f"{op}(): argument '{arg}' must be {where}, got {rank!r}",
                        op=op, arg=arg)
    return rank


def _non_member_marker(group):
    """new_group's answer on a rank outside the group: the int GroupMember.NON_GROUP_MEMBER."""
    return isinstance(group, int) and group == GroupMember.NON_GROUP_MEMBER


def _is_rank(value):
    return isinstance(value, int) and not isinstance(value, bool)


def check_served(op, arg, tensor, memory):
    """DeviceError unless the group has a backend for the device `memory` (the torch
    tensor handed over for `tensor`) is on."""
    if memory.device.type not in _state.served:
        served = ", ".join(f"{name} for {device}" for device, name in _state.served.items())
        raise DeviceError(f"{op}(): argument '{arg}' is a '{tensor._impl.device}' tensor, "
                          f"whose memory is on torch device '{memory.device.type}'; the "
                          f"process group's backend '{_state.backend}' serves only {served} "
                          f"memory", op=op, arg=arg)


def collective_failure(op, error, group=None):
    """The CollectiveError for torch.distributed's `error` in `op` on this rank."""
    timeout = _state.group_timeouts.get(id(group), _state.timeout)
    return CollectiveError(
        f"{op}(): rank {tdist.get_rank()} of {tdist.get_world_size()}: the collective failed, "
        f"most likely because another rank exited or did not answer within the group's "
        f"timeout ({timeout}). torch.distributed says: {_first_line(error)}", op=op)


def _first_line(error):
    text = str(error).strip()
    return text.splitlines()[0] if text else repr(error)
