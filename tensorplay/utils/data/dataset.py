"""Datasets: the objects a DataLoader reads samples from.

Two kinds, as in PyTorch:

- *map-style* (`Dataset`): `dataset[i]` for `i in range(len(dataset))`;
- *iterable-style* (`IterableDataset`): `iter(dataset)` yields the samples.

`TensorDataset` is the common case (rows of a few tensors that share their first
dimension); the DataLoader recognises it and gathers a whole batch with one
`index_select` per tensor instead of stacking `batch_size` single rows.
"""
from __future__ import annotations

import bisect
import math
import warnings

from tensorplay.errors import ShapeError

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset",
           "ChainDataset", "StackDataset", "random_split"]


class Dataset:
    """A map-style dataset: subclasses define `__getitem__(index)` (and usually `__len__`,
    which the default samplers need). `a + b` concatenates two datasets."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """An iterable-style dataset: subclasses define `__iter__`. `a + b` chains them."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Sample `i` is `tuple(t[i] for t in tensors)`; every tensor has the same first size."""

    def __init__(self, *tensors):
        if tensors:
            first = _first_size("TensorDataset", 0, tensors[0])
            for i, t in enumerate(tensors[1:], start=1):
                size = _first_size("TensorDataset", i, t)
                if size != first:
                    raise ShapeError(f"TensorDataset(): Size mismatch between tensors: tensor 0 "
                                     f"has {first} rows but tensor {i} has {size}",
                                     op="TensorDataset", arg="tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].size(0) if self.tensors else 0


def _first_size(op, i, t):
    if not hasattr(t, "size") or not callable(t.size):
        raise TypeError(f"{op}(): argument 'tensors' must hold tensors, but item {i} is "
                        f"{type(t).__name__}")
    if t.dim() == 0:
        raise ShapeError(f"{op}(): tensor {i} is 0-d; every tensor needs a first dimension "
                         f"to index samples by", op=op, arg="tensors")
    return t.size(0)


class StackDataset(Dataset):
    """Sample `i` gathers sample `i` of each dataset: a tuple (positional) or a dict
    (keywords); every dataset has the same length."""

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("StackDataset(): supported either ``tuple``- (via ``args``) or "
                             "``dict``- (via ``kwargs``) like input/output, but both were given")
        datasets = args or tuple(kwargs.values())
        if not datasets:
            raise ValueError("StackDataset(): at least one dataset should be passed")
        self._length = len(datasets[0])
        if any(len(d) != self._length for d in datasets):
            raise ValueError("StackDataset(): Size mismatch between datasets")
        self.datasets = args if args else kwargs

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __len__(self):
        return self._length


class ConcatDataset(Dataset):
    """Map-style datasets one after the other; index `i` is found by bisecting the running
    lengths (`cumulative_sizes`)."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset(): datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset(): does not support IterableDataset "
                                f"(got {type(d).__name__}); use ChainDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    @staticmethod
    def cumsum(sequence):
        out, total = [], 0
        for d in sequence:
            total += len(d)
            out.append(total)
        return out

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        n = len(self)
        if idx < 0:
            if -idx > n:
                raise ValueError(f"ConcatDataset: absolute value of index {idx} should not "
                                 f"exceed dataset length {n}")
            idx += n
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        if which == len(self.datasets):
            raise IndexError(f"ConcatDataset: index {idx} is out of range for a dataset of "
                             f"length {n}")
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][idx - start]


class ChainDataset(IterableDataset):
    """Iterable datasets chained one after the other."""

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise TypeError(f"ChainDataset only supports IterableDataset, got "
                                f"{type(d).__name__}")
            yield from d

    def __len__(self):
        return sum(len(d) for d in self.datasets)


class Subset(Dataset):
    """The samples of `dataset` at `indices`, in that order."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        inner = getattr(self.dataset, "__getitems__", None)
        if callable(inner):
            return inner([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self):
        return len(self.indices)


def random_split(dataset, lengths, generator=None):
    """Split `dataset` into non-overlapping `Subset`s of the given `lengths`: counts that
    sum to `len(dataset)`, or fractions that sum to 1 (the remainder of `floor(f * n)` is
    handed out round-robin, as PyTorch does). The permutation is drawn from `generator`
    (default: the global one, so `tp.manual_seed` makes it reproducible)."""
    n = len(dataset)
    lengths = list(lengths)
    if lengths and math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        counts = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"random_split(): fraction at index {i} is not between 0 "
                                 f"and 1 (got {frac})")
            counts.append(int(math.floor(n * frac)))
        remainder = n - sum(counts)
        for i in range(remainder):
            counts[i % len(counts)] += 1
        for i, c in enumerate(counts):
            if c == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an "
                              f"empty dataset.", stacklevel=2)
        lengths = counts
    if any(not isinstance(x, int) or x < 0 for x in lengths):
        raise ValueError(f"random_split(): argument 'lengths' must be non-negative ints or "
                         f"fractions that sum to 1, got {lengths}")
    if sum(lengths) != n:
        raise ValueError(f"random_split(): Sum of input lengths ({sum(lengths)}) does not "
                         f"equal the length of the input dataset ({n})!")
    from tensorplay._creation import randperm
    perm = randperm(n, generator=generator).tolist()
    out, start = [], 0
    for length in lengths:
        out.append(Subset(dataset, perm[start:start + length]))
        start += length
    return out
