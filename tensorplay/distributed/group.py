"""The process group: this process's rank among `world_size` processes, and the
backend (gloo for CPU memory, NCCL for GPU memory) the collectives run on.

TensorPlay writes no networking: the group is torch.distributed's default group, set
up from the variables `torchrun` exports:

    RANK, WORLD_SIZE          this process's number and how many there are
    MASTER_ADDR, MASTER_PORT  where rank 0 listens, for the others to find it
    LOCAL_RANK                this process's number on its machine (its GPU with NCCL)

    torchrun --nproc-per-node 2 -m tensorplay train --model mlp
"""
from __future__ import annotations

import datetime
import os

import torch
import torch.distributed as tdist

from tensorplay.distributed.errors import CollectiveError, NotInitializedError, RankError
from tensorplay.errors import ArgumentError, DeviceError

__all__ = ["is_available", "is_initialized", "init_process_group", "destroy_process_group",
           "get_rank", "get_world_size", "get_backend", "barrier"]

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


_state = _GroupState()


def is_available():
    """True when this torch build has torch.distributed."""
    return tdist.is_available()


def is_initialized():
    return tdist.is_initialized()


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None):
    """Join the default process group (every process of the job calls it).

    Args:
        backend: "gloo" (CPU tensors), "nccl" (cuda tensors) or both as
            "cpu:gloo,cuda:nccl"; None picks gloo, and adds NCCL when a GPU is there.
        init_method: "env://" (the default: the variables torchrun sets) or a URL such as
            "tcp://127.0.0.1:29500" (then give rank and world_size).
        timeout: a datetime.timedelta; a collective that waits longer for a peer fails
            with CollectiveError instead of hanging.
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
    timeout = timeout or DEFAULT_TIMEOUT
    if "cuda" in served:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
    try:
        tdist.init_process_group(backend, init_method=init_method, timeout=timeout,
                                 world_size=world_size, rank=rank, store=store)
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
    require_group("get_rank")
    return tdist.get_rank(group)


def get_world_size(group=None):
    require_group("get_world_size")
    return tdist.get_world_size(group)


def get_backend(group=None):
    require_group("get_backend")
    return tdist.get_backend(group)


def barrier(group=None):
    """Wait until every rank of the group has reached its barrier."""
    require_group("barrier")
    try:
        tdist.barrier(group)
    except RuntimeError as error:
        raise collective_failure("barrier", error) from error


def destroy_process_group(group=None):
    """Leave the process group (the default one when `group` is None)."""
    require_group("destroy_process_group")
    tdist.destroy_process_group(group)
    if group is None:
        _state.__init__()


def check_served(op, arg, tensor, memory):
    """DeviceError unless the group has a backend for the device `memory` (the torch
    tensor handed over for `tensor`) is on."""
    if memory.device.type not in _state.served:
        served = ", ".join(f"{name} for {device}" for device, name in _state.served.items())
        raise DeviceError(f"{op}(): argument '{arg}' is a '{tensor._impl.device}' tensor, "
                          f"whose memory is on torch device '{memory.device.type}'; the "
                          f"process group's backend '{_state.backend}' serves only {served} "
                          f"memory", op=op, arg=arg)


def check_rank(op, arg, rank, group=None):
    world = tdist.get_world_size(group)
    if not isinstance(rank, int) or isinstance(rank, bool) or not 0 <= rank < world:
        raise RankError(f"{op}(): argument '{arg}' must be a rank in 0..{world - 1}, got "
                        f"{rank!r}", op=op, arg=arg)


def collective_failure(op, error):
    """The CollectiveError for torch.distributed's `error` in `op` on this rank."""
    return CollectiveError(
        f"{op}(): rank {tdist.get_rank()} of {tdist.get_world_size()}: the collective failed, "
        f"most likely because another rank exited or did not answer within the group's "
        f"timeout ({_state.timeout}). torch.distributed says: {_first_line(error)}", op=op)


def _first_line(error):
    text = str(error).strip()
    return text.splitlines()[0] if text else repr(error)
