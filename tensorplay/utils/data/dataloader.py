"""`DataLoader`: batches of samples from a dataset, in sampler order.

    loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True,
                        generator=tp.Generator().manual_seed(0))
    for xb, yb in loader:
        ...

Each batch is `collate_fn([dataset[i] for i in batch_indices])`. For a
`TensorDataset` (or a `Subset` of one, as `random_split` makes) with the default
collate, the loader skips the per-sample work: it gathers the batch with one
`index_select` per tensor, which gives the same values and dtypes as stacking the
rows (see `_tensor_dataset_fetch`).

Workers: `num_workers > 0` loads batches in a pool of that many *threads* (not
processes), `prefetch_factor` batches each ahead, and yields them in sampler order.
Threads share the dataset, so there is no pickling and no copy per worker; NumPy
and the kernels release the GIL for large arrays, so this helps I/O-bound and
large-batch datasets, not pure-Python `__getitem__`s. `get_worker_info()` and
`worker_init_fn` work per thread. Iterable-style datasets with workers are not
supported (a thread cannot get its own copy of the iterator as a worker process
does) and raise NotImplementedError. `pin_memory` is accepted and has no effect:
host memory here is NumPy's, and `cuda` copies go through PyTorch's allocator.
"""
from __future__ import annotations

import collections
import itertools
import threading
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

import numpy as np

from tensorplay._creation import from_numpy
from tensorplay._random import draw_seed
from tensorplay.utils.data.collate import default_collate, default_convert
from tensorplay.utils.data.dataset import IterableDataset, Subset, TensorDataset
from tensorplay.utils.data.sampler import (
    BatchSampler, RandomSampler, Sampler, SequentialSampler,
)

__all__ = ["DataLoader", "get_worker_info", "WorkerInfo"]


class WorkerInfo:
    """What `get_worker_info()` returns inside a worker: id, num_workers, seed, dataset."""

    def __init__(self, id, num_workers, seed, dataset):  # noqa: A002 - PyTorch's name
        self.id = id
        self.num_workers = num_workers
        self.seed = seed
        self.dataset = dataset

    def __repr__(self):
        return f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed})"


_worker_local = threading.local()


def get_worker_info():
    """The `WorkerInfo` of the calling worker thread; None in the main thread."""
    return getattr(_worker_local, "info", None)


class _InfiniteConstantSampler(Sampler):
    """The sampler of an iterable dataset: indices mean nothing there."""

    def __iter__(self):
        while True:
            yield None


# Attributes that fix what an iteration does: changing them afterwards is an error.
_FROZEN = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
           "persistent_workers")


class DataLoader:
    """Iterate over `dataset` in batches (PyTorch's signature; see the module docstring)."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 "
                             "to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in "
                             "multiprocessing.let num_workers > 0 to enable multiprocessing, "
                             "otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        iterable = isinstance(dataset, IterableDataset)
        if iterable:
            if shuffle not in (False, None):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"shuffle option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"sampler option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
            if num_workers > 0:
                raise NotImplementedError(
                    f"DataLoader(): num_workers={num_workers} with an IterableDataset is not "
                    f"supported (workers are threads, which cannot each own a copy of the "
                    f"dataset's iterator); use num_workers=0")
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")

        if sampler is None:
            if iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        if collate_fn is None:
            collate_fn = default_collate if batch_sampler is not None else default_convert

        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = num_workers
        self.collate_fn = collate_fn
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.generator = generator
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = persistent_workers
        self.in_order = in_order
        self._iterable = iterable
        self._initialized = True

    def __setattr__(self, name, value):
        if getattr(self, "_initialized", False) and name in _FROZEN:
            raise ValueError(f"{name} attribute should not be set after "
                             f"{type(self).__name__} is initialized")
        super().__setattr__(name, value)

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __len__(self):
        if self._iterable:
            n = len(self.dataset)   # TypeError when the dataset has no length, as in PyTorch
            if self.batch_size is not None:
                n = n // self.batch_size if self.drop_last else -(-n // self.batch_size)
            return n
        return len(self._index_sampler)

    def __iter__(self):
        # PyTorch draws the workers' base seed for every iterator, before the sampler
        # (which is lazy) draws anything: a seeded program shuffles as PyTorch does.
        base_seed = draw_seed(self.generator)
        if self._iterable:
            batches = self._iterable_batches()
        elif self.num_workers > 0:
            batches = self._threaded_batches(base_seed)
        else:
            fetch = self._fetcher()
            batches = (fetch(index) for index in self._index_sampler)
        return _LoaderIter(batches, self)

    # ---- fetching -------------------------------------------------------------------
    def _fetcher(self):
        """A function from one item of the index sampler to one batch (or sample)."""
        dataset = self.dataset
        collate = self.collate_fn
        if not self._auto_collation:
            return lambda index: collate(dataset[index])
        if collate is default_collate:
            found = _tensor_dataset_of(dataset)
            if found is not None:
                base, mapping = found
                return lambda indices: _tensor_dataset_fetch(base, mapping, indices)
        getitems = getattr(dataset, "__getitems__", None)
        if callable(getitems):
            return lambda indices: collate(getitems(indices))
        return lambda indices: collate([dataset[i] for i in indices])

    def _iterable_batches(self):
        it = iter(self.dataset)
        collate = self.collate_fn
        if not self._auto_collation:
            for sample in it:
                yield collate(sample)
            return
        size = self.batch_size
        while True:
            batch = list(itertools.islice(it, size))
            if not batch or (self.drop_last and len(batch) < size):
                return
            yield collate(batch)

    def _threaded_batches(self, base_seed):
        fetch = self._fetcher()
        ids = itertools.count()
        n_workers = self.num_workers

        def start_worker():
            worker_id = next(ids)
            _worker_local.info = WorkerInfo(worker_id, n_workers, base_seed + worker_id,
                                            self.dataset)
            if self.worker_init_fn is not None:
                self.worker_init_fn(worker_id)

        ahead = max(1, self.prefetch_factor * n_workers)
        timeout = self.timeout or None
        pool = ThreadPoolExecutor(n_workers, thread_name_prefix="tp-dataloader",
                                  initializer=start_worker)
        pending = collections.deque()
        try:
            indices = iter(self._index_sampler)
            for index in itertools.islice(indices, ahead):
                pending.append(pool.submit(fetch, index))
            while pending:
                try:
                    batch = pending.popleft().result(timeout=timeout)
                except FutureTimeout:
                    raise RuntimeError(f"DataLoader timed out after {self.timeout} "
                                       f"seconds") from None
                for index in itertools.islice(indices, 1):
                    pending.append(pool.submit(fetch, index))
                yield batch
        finally:
            for f in pending:
                f.cancel()
            pool.shutdown(wait=False)


class _LoaderIter:
    """The iterator `iter(loader)` returns: the batches, and `len()` like the loader's."""

    def __init__(self, batches, loader):
        self._batches = batches
        self._loader = loader

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._batches)

    def __len__(self):
        return len(self._loader)


def _tensor_dataset_of(dataset):
    """(TensorDataset, index map or None) when `dataset` is a TensorDataset seen through
    zero or more Subsets, whose `__getitem__`s are the stock ones; otherwise None."""
    mapping = None
    while isinstance(dataset, Subset) and type(dataset).__getitem__ is Subset.__getitem__:
        if type(dataset).__getitems__ is not Subset.__getitems__:
            return None
        indices = np.asarray(dataset.indices, dtype=np.int64)
        if indices.ndim != 1:
            return None
        mapping = indices if mapping is None else indices[mapping]
        dataset = dataset.dataset
    if not isinstance(dataset, TensorDataset) or \
            type(dataset).__getitem__ is not TensorDataset.__getitem__:
        return None
    return dataset, mapping


def _tensor_dataset_fetch(dataset, mapping, indices):
    """One batch of a TensorDataset: `[t.index_select(0, idx) for t in tensors]`, what
    `default_collate` of the rows gives (a list, as for any tuple sample), without making
    `len(indices)` row tensors first."""
    idx = np.asarray(indices, dtype=np.int64)
    if mapping is not None:
        idx = mapping[idx]
    n = len(dataset)
    if idx.size and (idx.min() < -n or idx.max() >= n):
        bad = idx[(idx < -n) | (idx >= n)][0]
        raise IndexError(f"DataLoader: index {int(bad)} is out of range for a TensorDataset "
                         f"of {n} samples")
    idx = np.where(idx < 0, idx + n, idx)
    index = from_numpy(idx)
    out = []
    for t in dataset.tensors:
        device = t.device
        out.append(t.index_select(0, index if device.type == "cpu" else index.to(device)))
    return out
