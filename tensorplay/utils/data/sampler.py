"""Samplers: which dataset indices a DataLoader reads, and in what order.

A sampler yields indices (`SequentialSampler`, `RandomSampler`, ...); a
`BatchSampler` groups another sampler's indices into lists, one per batch.
Random samplers draw from their `generator`, or from the global generator when
none is given, so `tp.manual_seed(s)` fixes the order of an unseeded shuffle.
"""
from __future__ import annotations

import itertools
import numbers

import numpy as np

from tensorplay import _random
from tensorplay._creation import randint, randperm, tensor

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler"]


class Sampler:
    """Base class: subclasses define `__iter__` (indices) and, when they can, `__len__`."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation of the indices, or `num_samples` indices drawn with
    replacement. Without replacement and with `num_samples > len(data_source)`, whole
    permutations follow one another (PyTorch's behaviour)."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(replacement, bool):
            raise TypeError(f"RandomSampler(): replacement should be a boolean value, but "
                            f"got replacement={replacement!r}")
        if not _is_positive_int(self.num_samples):
            raise ValueError(f"RandomSampler(): num_samples should be a positive integer "
                             f"value, but got num_samples={self.num_samples!r}")

    @property
    def num_samples(self):
        if self._num_samples is None:
            return len(self.data_source)
        return self._num_samples

    def __iter__(self):
        """As PyTorch draws: without a generator, a fresh one seeded from the default
        generator; indices with replacement in chunks of 32, else randperm."""
        n = len(self.data_source)
        gen = self.generator
        if gen is None:
            gen = _random.Generator().manual_seed(_random.draw_seed())
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from randint(0, n, (32,), generator=gen).tolist()
            yield from randint(0, n, (self.num_samples % 32,), generator=gen).tolist()
            return
        for _ in range(self.num_samples // n):
            yield from randperm(n, generator=gen).tolist()
        yield from randperm(n, generator=gen).tolist()[:self.num_samples % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given `indices` in a random order (a fresh permutation every epoch)."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """`num_samples` indices in `[0, len(weights))`, index `i` drawn with probability
    proportional to `weights[i]` (the weights need not sum to 1)."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not _is_positive_int(num_samples):
            raise ValueError(f"WeightedRandomSampler(): num_samples should be a positive "
                             f"integer value, but got num_samples={num_samples!r}")
        if not isinstance(replacement, bool):
            raise ValueError(f"WeightedRandomSampler(): replacement should be a boolean "
                             f"value, but got replacement={replacement!r}")
        w = np.asarray(weights, dtype=np.float64)
        if w.ndim != 1:
            raise ValueError(f"WeightedRandomSampler(): weights should be a 1d sequence but "
                             f"given weights have shape {tuple(w.shape)}")
        if w.size == 0 or (w < 0).any() or not np.isfinite(w).all() or w.sum() <= 0:
            raise ValueError("WeightedRandomSampler(): weights must be finite, non-negative "
                             "and not all zero")
        if not replacement and num_samples > np.count_nonzero(w):
            raise ValueError(f"WeightedRandomSampler(): cannot draw {num_samples} samples "
                             f"without replacement from {np.count_nonzero(w)} non-zero weights")
        self.weights = w
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        from tensorplay._generated.functional import multinomial
        picks = multinomial(tensor(self.weights), self.num_samples, self.replacement,
                            generator=self.generator)
        yield from picks.tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of `batch_size` indices from `sampler`; the last one is shorter unless
    `drop_last`, which drops it."""

    def __init__(self, sampler, batch_size, drop_last):
        if not _is_positive_int(batch_size):
            raise ValueError(f"BatchSampler(): batch_size should be a positive integer value, "
                             f"but got batch_size={batch_size!r}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"BatchSampler(): drop_last should be a boolean value, but got "
                             f"drop_last={drop_last!r}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        it = iter(self.sampler)
        while True:
            batch = list(itertools.islice(it, self.batch_size))
            if not batch or (self.drop_last and len(batch) < self.batch_size):
                return
            yield batch

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size


def _is_positive_int(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and value > 0
