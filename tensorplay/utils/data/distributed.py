"""DistributedSampler: each rank reads its own share of the dataset, all shares of one
size, so every rank runs the same number of steps (a rank with one step more would wait
forever in its gradient all-reduce).

    indices   shuffled by a generator seeded with seed + epoch: the same order on every
              rank (they never talk about it), a new one each epoch (set_epoch)
    padding   the first indices repeated until the length is a multiple of num_replicas
              (or, with drop_last, the tail cut off)
    share     rank r takes indices r, r + num_replicas, r + 2 * num_replicas, ...

    dataset of 10, 3 replicas, shuffled order [6 2 9 0 4 8 1 7 5 3] + padding [6 2]
        rank 0: 6 0 1 2     rank 1: 2 4 7 6 ... (every third, starting at the rank)

The index lists are PyTorch's, exactly: tp.randperm draws what torch.randperm draws from
the same seed (tensorplay/_random.py reproduces torch's mt19937).
"""
from __future__ import annotations

import math

from tensorplay._creation import randperm
from tensorplay._random import Generator
from tensorplay.utils.data.sampler import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    """The indices of `dataset` that rank `rank` of `num_replicas` reads this epoch.

    Args:
        dataset: anything with a length.
        num_replicas, rank: default to the process group's world size and rank.
        shuffle: a new permutation per epoch (seeded by seed + epoch) or the plain order.
        seed: the same on every rank.
        drop_last: cut the tail so the shares divide evenly, instead of padding.
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        if num_replicas is None or rank is None:
            from tensorplay import distributed as dist   # (imports torch: only when asked)
            if num_replicas is None:
                num_replicas = dist.get_world_size()
            if rank is None:
                rank = dist.get_rank()
        if num_replicas < 1:
            raise ValueError(f"DistributedSampler(): num_replicas must be at least 1, got "
                             f"{num_replicas}")
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.shuffle = shuffle
        self.seed = seed
        self.drop_last = drop_last
        if drop_last and len(dataset) % num_replicas != 0:
            self.num_samples = math.ceil((len(dataset) - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(len(dataset) / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            generator = Generator().manual_seed(self.seed + self.epoch)
            indices = randperm(n, generator=generator).tolist()
        else:
            indices = list(range(n))
        if self.drop_last:
            indices = indices[:self.total_size]
        else:
            padding = self.total_size - len(indices)
            repeats = math.ceil(padding / len(indices)) if indices else 0
            indices += (indices * repeats)[:padding]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """The epoch whose permutation the next iteration draws (call it every epoch,
        before iterating, on every rank)."""
        self.epoch = epoch
