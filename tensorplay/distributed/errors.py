"""The errors of tp.distributed. Both are TensorPlayErrors that name the op.

    NotInitializedError   a collective (or get_rank, DDP...) before init_process_group
    CollectiveError       a collective failed (a peer process died or stopped answering
                          within the group's timeout), or init_process_group's ranks did
                          not all meet within it
    RankError             a rank that is not in the group (a collective's src or dst,
                          group_src or group_dst, new_group's ranks)

A tensor on a device the group's backend cannot serve raises tensorplay.errors.DeviceError;
a misused argument (a list of the wrong length, split sizes that do not add up, a
reduction the dtype lacks) raises ArgumentError, ShapeError or DTypeError, naming the op
and the argument, before any rank sends anything.
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
