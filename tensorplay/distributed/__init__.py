"""`tp.distributed`: collectives between processes, for data-parallel training.

TensorPlay writes no networking of its own: the process groups are PyTorch's
(torch.distributed: gloo for CPU tensors, NCCL for cuda tensors), and a TensorPlay
tensor's memory is handed to them without a copy.

    import tensorplay.distributed as dist
    dist.init_process_group("gloo")           # RANK, WORLD_SIZE, ... from torchrun
    t = tp.ones(3) * dist.get_rank()
    dist.all_reduce(t)                        # in place: the sum over the ranks
    work = dist.all_reduce(t, async_op=True)  # in the background ...
    work.wait()                               # ... until here

    group.py        init_process_group, rank and world size, barrier, the device checks
    handover.py     a tensor's memory as a torch tensor (no copy when contiguous)
    collectives.py  all_reduce, broadcast, all_gather, ..., and the Work handle
    errors.py       NotInitializedError, CollectiveError, RankError

tp.nn.parallel.DistributedDataParallel and tp.utils.data.DistributedSampler build on it.
"""
from tensorplay.distributed.collectives import (  # noqa: F401
    ReduceOp, Work, all_gather, all_gather_into_tensor, all_reduce, broadcast,
    reduce_scatter_tensor,
)
from tensorplay.distributed.errors import (  # noqa: F401
    CollectiveError, DistributedError, NotInitializedError, RankError,
)
from tensorplay.distributed.group import (  # noqa: F401
    barrier, destroy_process_group, get_backend, get_rank, get_world_size,
    init_process_group, is_available, is_initialized,
)
