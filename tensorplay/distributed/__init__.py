"""`tp.distributed`: collectives between processes, for data-parallel training.

TensorPlay writes no networking of its own: the process groups are PyTorch's
(torch.distributed: gloo for CPU tensors, NCCL for cuda tensors), and a TensorPlay
tensor's memory is handed to them without a copy. The names and signatures are
torch.distributed's.

    import tensorplay.distributed as dist
    dist.init_process_group("gloo")           # RANK, WORLD_SIZE, ... from torchrun
    t = tp.ones(3) * dist.get_rank()
    dist.all_reduce(t)                        # in place: the sum over the ranks
    work = dist.all_reduce(t, async_op=True)  # in the background ...
    work.wait()                               # ... until here
    pair = dist.new_group([0, 1])             # a subgroup: collectives take group=pair

    process_group.py  init_process_group, ranks and world size, new_group, barrier,
                      the rank and group checks
    handover.py       a tensor's memory as a torch tensor (no copy when contiguous)
    work.py           the Work handle, the argument checks, ReduceOp
    collectives.py    all_reduce, reduce, broadcast, (all_)gather, scatter,
                      reduce_scatter, all_to_all, ... on tensors
    point_to_point.py send, recv, isend, irecv, batch_isend_irecv
    objects.py        the same for picklable Python objects (broadcast_object_list, ...)
    errors.py         NotInitializedError, CollectiveError, RankError

tp.nn.parallel.DistributedDataParallel and tp.utils.data.DistributedSampler build on it.
"""
import torch.distributed as _tdist

from tensorplay.distributed.collectives import (  # noqa: F401
    all_gather, all_gather_into_tensor, all_reduce, all_to_all, all_to_all_single, broadcast,
    gather, reduce, reduce_scatter, reduce_scatter_tensor, scatter,
)
from tensorplay.distributed.errors import (  # noqa: F401
    CollectiveError, DistributedError, NotInitializedError, RankError,
)
from tensorplay.distributed.objects import (  # noqa: F401
    all_gather_object, broadcast_object_list, gather_object, recv_object_list,
    scatter_object_list, send_object_list,
)
from tensorplay.distributed.point_to_point import (  # noqa: F401
    P2POp, batch_isend_irecv, irecv, isend, recv, send,
)
from tensorplay.distributed.process_group import (  # noqa: F401
    Backend, GroupMember, ProcessGroup, barrier, destroy_process_group, get_backend,
    get_global_rank, get_group_rank, get_process_group_ranks, get_rank, get_world_size,
    group, init_process_group, is_available, is_initialized, monitored_barrier, new_group,
)
from tensorplay.distributed.work import ReduceOp, Work  # noqa: F401

# Which backends this torch build has, and whether torchrun started this process.
is_gloo_available = _tdist.is_gloo_available
is_nccl_available = _tdist.is_nccl_available
is_mpi_available = _tdist.is_mpi_available
is_backend_available = _tdist.is_backend_available
is_torchelastic_launched = _tdist.is_torchelastic_launched
get_node_local_rank = _tdist.get_node_local_rank

# The stores the ranks meet at (init_process_group(store=...)): torch's own.
Store, TCPStore, FileStore, HashStore, PrefixStore = (
    _tdist.Store, _tdist.TCPStore, _tdist.FileStore, _tdist.HashStore, _tdist.PrefixStore)
