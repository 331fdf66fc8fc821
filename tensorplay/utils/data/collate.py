"""Collation: turning a list of samples into one batch (`default_collate`), and turning
one unbatched sample's NumPy data into tensors (`default_convert`, used when
`batch_size=None`).

The rules follow PyTorch's, type by type (checked against torch in tests/test_data.py):

    sample element          batch
    --------------          -----
    Tensor                  tp.stack(batch)             (shapes must match)
    np.ndarray              stacked tensor              (string/object arrays: TypeError)
    NumPy scalar            1-d tensor of its dtype
    float                   float64 tensor
    int / bool              int64 / bool tensor
    str, bytes              the list itself
    Mapping                 same keys, each value collated (type kept when possible)
    namedtuple              same namedtuple type, fields collated
    tuple / list            a list (tuple) or the same sequence type, collated position-wise
"""
from __future__ import annotations

import collections.abc
import copy
import re

import numpy as np

from tensorplay import _dtype as dt
from tensorplay._creation import as_tensor, from_numpy, tensor
from tensorplay._generated.functional import stack
from tensorplay._tensor import Tensor

__all__ = ["default_collate", "default_convert"]

_NP_STR_OBJ = re.compile(r"[SaUO]")

_ERR = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
        "found {}")


def default_collate(batch):
    """Collate a list of samples into a batch (see the module docstring for the rules)."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        return _collate_tensors(batch)
    if isinstance(elem, (np.ndarray, np.memmap)) and type(elem).__module__ == "numpy":
        if _NP_STR_OBJ.search(elem.dtype.str) is not None:
            raise TypeError(_ERR.format(elem.dtype))
        return _collate_tensors([as_tensor(b) for b in batch])
    if isinstance(elem, (np.bool_, np.number, np.object_)):
        if _NP_STR_OBJ.search(np.asarray(elem).dtype.str) is not None:
            raise TypeError(_ERR.format(np.asarray(elem).dtype))
        return from_numpy(np.array(batch))
    if isinstance(elem, float):
        return tensor(batch, dtype=dt.float64)
    if isinstance(elem, int):   # bool too: tp.tensor([True, False]) is a bool tensor
        return tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        collated = {key: default_collate([d[key] for d in batch]) for key in elem}
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                out = copy.copy(elem)   # keeps OrderedDict/defaultdict and their extras
                out.update(collated)
                return out
            return type(elem)(collated)
        except TypeError:   # a Mapping type that cannot be built from a dict
            return collated
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):   # namedtuple
        return type(elem)(*(default_collate(s) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(b) != size for b in batch):
            raise RuntimeError("default_collate: each element in list of batch should be of "
                               f"equal size (the first has {size} elements)")
        transposed = list(zip(*batch))   # tuples: strings inside come back as tuples
        if isinstance(elem, tuple):
            return [default_collate(s) for s in transposed]   # a list, as PyTorch returns
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                out = copy.copy(elem)
                for i, samples in enumerate(transposed):
                    out[i] = default_collate(samples)
                return out
            return type(elem)([default_collate(s) for s in transposed])
        except TypeError:
            return [default_collate(s) for s in transposed]
    raise TypeError(_ERR.format(type(elem)))


def _collate_tensors(batch):
    first = batch[0].shape
    for i, t in enumerate(batch):
        if t.shape != first:
            raise RuntimeError(f"default_collate: stack expects each tensor to be equal size, "
                               f"but got {list(first)} at entry 0 and {list(t.shape)} at "
                               f"entry {i}")
    return stack(batch, 0)


def default_convert(data):
    """NumPy arrays and scalars (also inside mappings and sequences) become tensors;
    everything else is returned as it is. The `collate_fn` of `batch_size=None`."""
    if isinstance(data, Tensor):
        return data
    if isinstance(data, np.ndarray) and type(data).__module__ == "numpy":
        if _NP_STR_OBJ.search(data.dtype.str) is not None:
            return data
        return as_tensor(data)
    if isinstance(data, (np.bool_, np.number)):
        return as_tensor(data)
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        converted = {key: default_convert(v) for key, v in data.items()}
        try:
            if isinstance(data, collections.abc.MutableMapping):
                out = copy.copy(data)
                out.update(converted)
                return out
            return type(data)(converted)
        except TypeError:
            return converted
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                out = copy.copy(data)
                for i, d in enumerate(data):
                    out[i] = default_convert(d)
                return out
            return type(data)([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data
