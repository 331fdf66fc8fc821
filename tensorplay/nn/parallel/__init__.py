"""`tp.nn.parallel`: data-parallel training over tp.distributed process groups.

    distributed.py   DistributedDataParallel: the module wrapper, no_sync
    buckets.py       the gradient buckets and their all-reduces during backward
"""
from tensorplay.nn.parallel.distributed import DistributedDataParallel  # noqa: F401

__all__ = ["DistributedDataParallel"]
