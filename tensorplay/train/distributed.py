"""The training command under torchrun: one process per rank, each on its own shard of
the training set, gradients averaged by DistributedDataParallel.

    torchrun --nproc-per-node 2 -m tensorplay train --model mlp

torchrun sets WORLD_SIZE (and RANK, MASTER_ADDR, ...); with WORLD_SIZE above 1 the
command joins the process group, wraps the model, shards the data with a
DistributedSampler, sums the epoch statistics over the ranks and lets rank 0 alone print,
plot and save. --batch-size is per process, as in PyTorch: 2 processes with
--batch-size 32 step on 64 examples at a time.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import tensorplay as tp
from tensorplay.utils.data import DataLoader


@dataclass
class Cluster:
    """This process's place in the job."""
    rank: int
    world_size: int
    joined_here: bool          # the command joined the group, so it leaves it at the end

    @property
    def is_main(self):
        return self.rank == 0


def join_if_launched():
    """The Cluster when torchrun started several processes (the group is joined, unless
    the caller already did), else None (a plain single-process run: nothing changes)."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return None
    dist = tp.distributed
    joined_here = not dist.is_initialized()
    if joined_here:
        dist.init_process_group()
    return Cluster(dist.get_rank(), dist.get_world_size(), joined_here)


def leave(cluster):
    if cluster is not None and cluster.joined_here:
        tp.distributed.destroy_process_group()


def wrap(model):
    return tp.nn.parallel.DistributedDataParallel(model)


def shard_loader(dataset, batch_size, seed, epoch):
    """This rank's batches of epoch `epoch`: every rank draws the same permutation
    (seed + epoch) and takes its own share of it."""
    sampler = tp.utils.data.DistributedSampler(dataset, shuffle=True, seed=seed)
    sampler.set_epoch(epoch)
    return DataLoader(dataset, batch_size=batch_size, sampler=sampler)


def sum_over_ranks(*numbers):
    """The sums, over the ranks, of a few per-rank numbers (loss sums, counts)."""
    totals = tp.tensor([float(n) for n in numbers], dtype=tp.float64)
    tp.distributed.all_reduce(totals)
    return totals.tolist()
