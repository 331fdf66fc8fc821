"""`tp.utils.data`: datasets, samplers and the DataLoader (PyTorch's API).

    from tensorplay.utils.data import DataLoader, TensorDataset
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
"""
from tensorplay.utils.data.collate import default_collate, default_convert
from tensorplay.utils.data.dataloader import DataLoader, WorkerInfo, get_worker_info
from tensorplay.utils.data.dataset import (
    ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset, TensorDataset,
    random_split,
)
from tensorplay.utils.data.distributed import DistributedSampler
from tensorplay.utils.data.sampler import (
    BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = [
    "BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset",
    "DistributedSampler", "IterableDataset",
    "RandomSampler", "Sampler", "SequentialSampler", "StackDataset", "Subset",
    "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler", "WorkerInfo",
    "default_collate", "default_convert", "get_worker_info", "random_split",
]
