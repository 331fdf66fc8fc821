"""The errors of tp.distributed. Both are TensorPlayErrors that name the op.

    NotInitializedError   a collective (or get_rank, DDP...) before init_process_group
    CollectiveError       a collective failed (a peer process died or stopped answering
                          within the group's timeout), or init_process_group's ranks did
                          not all meet within it
    RankError             a rank outside 0 .. world_size - 1 (broadcast's src)

A tensor on a device the group's backend cannot serve raises tensorplay.errors.DeviceError.
"""
from __future__ import annotations

from tensorplay.errors import TensorPlayError

__all__ = ["DistributedError", "NotInitializedError", "CollectiveError", "RankError"]


class DistributedError(TensorPlayError):
    """Base of the errors of tp.distributed."""


class NotInitializedError(DistributedError):
    """No process group yet: call tp.distributed.init_process_group() first."""


class CollectiveError(DistributedError):
    """A collective could not complete; the message says which, on which rank, and why
    (torch.distributed's own message is kept as the cause)."""


class RankError(DistributedError, ValueError):
    """A rank that is not in the group."""
