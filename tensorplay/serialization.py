"""`tp.save` / `tp.load`: a safe file format for tensors and the containers around them.

A file is a zip archive (stored, not compressed) with

    tensorplay.json       the object tree, as JSON (format below)
    storages/<k>.npy      storage k's bytes: a flat uint8 NumPy array

and nothing else. Loading reads the JSON with `json` and each array with
`np.lib.format.read_array(..., allow_pickle=False)`: no pickle, no code runs,
whatever the file holds.

The JSON document:

    {"format": "tensorplay", "version": 1, "byteorder": "little",
     "storages": [{"device": "cpu", "nbytes": 48}, ...],
     "tensors":  [{"storage": 0, "dtype": "float32", "shape": [2, 3], "stride": [3, 1],
                   "offset": 0, "requires_grad": false, "parameter": false}, ...],
     "arrays":   [{"dtype": "<f8"}, ...],
     "root": <node>}

A node is a JSON string, integer, boolean, null, finite float or list (a Python
list), or an object tagged by its "$" key:

    {"$": "dict" | "odict", "items": [[key node, value node], ...]}   (keys of any node type)
    {"$": "tuple" | "size", "items": [node, ...]}
    {"$": "float", "value": "nan" | "inf" | "-inf"}
    {"$": "dtype", "name": "bfloat16"}        {"$": "device", "spec": "cuda:0"}
    {"$": "tensor", "id": i}                  (an index into "tensors")
    {"$": "ndarray", "id": i}                 (a NumPy array or scalar, in arrays/<i>.npy)

Tensors are saved by storage, as PyTorch does: every tensor records which storage it
views and its sizes, strides and offset, so a view and its base (or two views of one
buffer) share one storage again after loading, and the same tensor object reached
twice comes back as one object. A storage is saved whole, even when only a slice of
it is reachable. `.grad` and autograd history are not saved; a tensor that required
grad comes back as a leaf that requires grad, a Parameter as a Parameter.
"""
from __future__ import annotations

import collections
import io
import json
import math
import os
import sys
import zipfile

import numpy as np

from tensorplay import _cuda_state
from tensorplay import _dtype as dt
from tensorplay._device import CPU, as_device, device as Device
from tensorplay._impl import Storage, TensorImpl, VersionCounter, numel_of
from tensorplay._tensor import Size, Tensor, wrap
from tensorplay.autograd.grad_mode import grad_state
from tensorplay.errors import DeviceError, SerializationError
from tensorplay.nn.parameter import Parameter

__all__ = ["save", "load"]

FORMAT = "tensorplay"
VERSION = 1
HEADER = "tensorplay.json"


# ---- saving ---------------------------------------------------------------------------
def save(obj, f):
    """Write `obj` (nested dicts, OrderedDicts, lists, tuples, str, int, float, bool, None,
    dtypes, devices, tensors, Parameters, NumPy arrays) to `f`, a path or a writable binary
    file object. Any other type raises TypeError naming it and where it is, e.g.
    "obj['state'][0]"."""
    writer = _Writer()
    root = writer.node(obj, "obj")
    header = {"format": FORMAT, "version": VERSION, "byteorder": sys.byteorder,
              "storages": writer.storage_entries, "tensors": writer.tensor_entries,
              "arrays": writer.array_entries, "root": root}
    text = json.dumps(header, allow_nan=False)
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as out:
            _write_zip(out, text, writer)
    else:
        if not hasattr(f, "write"):
            raise TypeError(f"save(): argument 'f' must be a path or a binary file object, but "
                            f"got {type(f).__name__}")
        _write_zip(f, text, writer)


def _write_zip(out, text, writer):
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED) as zf:
        zf.writestr(HEADER, text)
        for i, raw in enumerate(writer.storage_bytes):
            _write_array(zf, f"storages/{i}.npy", raw)
        for i, arr in enumerate(writer.arrays):
            _write_array(zf, f"arrays/{i}.npy", arr)


def _write_array(zf, name, arr):
    with zf.open(name, "w", force_zip64=arr.nbytes > 2 ** 30) as member:
        np.lib.format.write_array(member, arr, allow_pickle=False)


class _Writer:
    """Walks the object tree once, numbering storages, tensors and arrays as it meets them."""

    def __init__(self):
        self.storage_entries = []
        self.storage_bytes = []
        self.tensor_entries = []
        self.array_entries = []
        self.arrays = []
        self._storage_ids = {}   # id(Storage) -> index
        self._tensor_ids = {}    # id(Tensor) -> index
        self._keep = []          # the objects whose ids are keys above stay alive until done
        self._active = set()     # ids of the containers on the current path (cycle check)

    def node(self, obj, path):
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        kind = type(obj)
        if kind is int:
            return obj
        if kind is float:
            if math.isfinite(obj):
                return obj
            return {"$": "float", "value": repr(obj)}
        if isinstance(obj, Tensor):
            return {"$": "tensor", "id": self.tensor(obj, path)}
        if kind is dt.dtype:
            return {"$": "dtype", "name": obj.name}
        if kind is Device:
            return {"$": "device", "spec": str(obj)}
        if kind is np.ndarray or isinstance(obj, (np.bool_, np.number)):
            return {"$": "ndarray", "id": self.array(obj, path)}
        if kind in (dict, collections.OrderedDict, list, tuple, Size):
            return self.container(obj, path)
        raise TypeError(f"save(): cannot save an object of type '{kind.__module__}."
                        f"{kind.__qualname__}' at {path}; supported: dict, OrderedDict, list, "
                        f"tuple, str, int, float, bool, None, dtype, device, Tensor, Parameter, "
                        f"numpy.ndarray")

    def container(self, obj, path):
        if id(obj) in self._active:
            raise ValueError(f"save(): {path} contains itself (a reference cycle); such "
                             f"objects cannot be saved")
        self._active.add(id(obj))
        try:
            if isinstance(obj, dict):
                tag = "dict" if type(obj) is dict else "odict"
                items = [[self.node(k, f"{path} (key {k!r})"), self.node(v, f"{path}[{k!r}]")]
                         for k, v in obj.items()]
                return {"$": tag, "items": items}
            items = [self.node(v, f"{path}[{i}]") for i, v in enumerate(obj)]
            if type(obj) is list:
                return items
            return {"$": "size" if type(obj) is Size else "tuple", "items": items}
        finally:
            self._active.discard(id(obj))

    def tensor(self, t, path):
        index = self._tensor_ids.get(id(t))
        if index is not None:
            return index
        impl = t._impl
        entry = {"storage": self.storage(impl.storage, path), "dtype": impl.dtype.name,
                 "shape": list(impl.sizes), "stride": list(impl.strides),
                 "offset": impl.offset, "requires_grad": bool(impl.requires_grad),
                 "parameter": isinstance(t, Parameter)}
        index = self._tensor_ids[id(t)] = len(self.tensor_entries)
        self.tensor_entries.append(entry)
        self._keep.append(t)
        return index

    def storage(self, storage, path):
        index = self._storage_ids.get(id(storage))
        if index is not None:
            return index
        data = storage.data
        if storage.device.type == "meta" or data is None:
            raw = None
        elif isinstance(data, np.ndarray):
            raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        else:   # a cuda storage: a flat torch uint8 tensor (device or interpreter memory)
            raw = data.detach().cpu().numpy().reshape(-1)
        index = self._storage_ids[id(storage)] = len(self.storage_entries)
        self.storage_entries.append({"device": str(storage.device), "nbytes": storage.nbytes,
                                     "data": raw is not None})
        self.storage_bytes.append(raw if raw is not None else np.empty(0, np.uint8))
        self._keep.append(storage)
        return index

    def array(self, arr, path):
        scalar = not isinstance(arr, np.ndarray)   # a NumPy scalar: saved 0-d, loaded back
        arr = np.asarray(arr)
        if arr.dtype.kind not in "biufc" and arr.dtype != dt.bfloat16.np:
            raise TypeError(f"save(): cannot save a NumPy array of dtype {arr.dtype} at {path}; "
                            f"only numeric and bool arrays are supported")
        self.array_entries.append({"dtype": arr.dtype.str if arr.dtype != dt.bfloat16.np
                                   else "bfloat16", "scalar": scalar})
        raw = arr if arr.flags.c_contiguous else arr.copy(order="C")   # (keeps 0-d as 0-d)
        self.arrays.append(raw if arr.dtype != dt.bfloat16.np else raw.view(np.uint16))
        return len(self.arrays) - 1


# ---- loading --------------------------------------------------------------------------
def load(f, map_location=None, weights_only=True, **kwargs):
    """Read what `save` wrote. `f` is a path or a readable binary file object.
    `map_location`: None (each tensor back on its saved device), a device or string (all
    tensors there, e.g. 'cpu'), or a dict from saved device to device ({'cuda:0': 'cpu'}).
    `weights_only` is accepted for PyTorch compatibility: this format can only hold data,
    so every load is weights-only. A file that is not a TensorPlay save raises
    SerializationError naming it."""
    if kwargs:
        raise TypeError(f"load(): unexpected keyword argument(s) {', '.join(kwargs)}")
    relocate = _relocator(map_location)
    if isinstance(f, (str, os.PathLike)):
        name = os.fspath(f)
        with open(f, "rb") as src:
            return _read(src, name, relocate)
    if not hasattr(f, "read"):
        raise TypeError(f"load(): argument 'f' must be a path or a binary file object, but got "
                        f"{type(f).__name__}")
    name = getattr(f, "name", None)
    name = repr(name) if isinstance(name, str) else f"<{type(f).__name__}>"
    if not (hasattr(f, "seekable") and f.seekable()):
        f = io.BytesIO(f.read())
    return _read(f, name, relocate)


def _relocator(map_location):
    """A function from a saved device string to the device to load onto."""
    if map_location is None:
        return as_device
    if isinstance(map_location, (str, Device)):
        target = as_device(map_location)
        return lambda spec: target
    if isinstance(map_location, dict):
        table = {str(as_device(k)): as_device(v) for k, v in map_location.items()}
        return lambda spec: table.get(spec, as_device(spec))
    raise TypeError(f"load(): argument 'map_location' must be None, a device, a string or a "
                    f"dict, but got {type(map_location).__name__}")


def _read(src, name, relocate):
    def corrupt(why):
        return SerializationError(f"load(): {name} is not a valid TensorPlay file: {why}",
                                  op="load", arg="f")
    try:
        zf = zipfile.ZipFile(src)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as e:
        raise corrupt(f"not a zip archive, or a truncated one ({e})") from None
    with zf:
        try:
            header = json.loads(zf.read(HEADER).decode("utf-8"))
        except KeyError:
            raise corrupt(f"it has no '{HEADER}' (a file from another program?)") from None
        except (zipfile.BadZipFile, OSError, EOFError, ValueError, UnicodeDecodeError) as e:
            raise corrupt(f"its '{HEADER}' cannot be read ({e})") from None
        reader = _Reader(zf, header, relocate, corrupt)
        try:
            return reader.node(header["root"])
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as e:
            if isinstance(e, SerializationError):
                raise
            raise corrupt(f"malformed object tree ({type(e).__name__}: {e})") from None


class _Reader:
    def __init__(self, zf, header, relocate, corrupt):
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise corrupt(f"'{HEADER}' does not describe a TensorPlay save")
        if header.get("version") != VERSION:
            raise corrupt(f"format version {header.get('version')!r}; this TensorPlay reads "
                          f"version {VERSION}")
        if header.get("byteorder") != sys.byteorder:
            raise corrupt(f"saved on a {header.get('byteorder')}-endian machine; this one is "
                          f"{sys.byteorder}-endian")
        self.zf = zf
        self.header = header
        self.relocate = relocate
        self.corrupt = corrupt
        self.storages = {}
        self.tensors = {}

    def node(self, node):
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, list):
            return [self.node(v) for v in node]
        tag = node["$"]
        if tag in ("dict", "odict"):
            out = {} if tag == "dict" else collections.OrderedDict()
            for key, value in node["items"]:
                out[self.node(key)] = self.node(value)
            return out
        if tag == "tuple":
            return tuple(self.node(v) for v in node["items"])
        if tag == "size":
            return Size(self.node(v) for v in node["items"])
        if tag == "float":
            return float(node["value"])
        if tag == "dtype":
            return dt._by_name(node["name"])
        if tag == "device":
            return Device(node["spec"])
        if tag == "tensor":
            return self.tensor(node["id"])
        if tag == "ndarray":
            return self.array(node["id"])
        raise self.corrupt(f"unknown node tag {tag!r}")

    def member(self, path):
        try:
            with self.zf.open(path) as src:
                return np.lib.format.read_array(src, allow_pickle=False)
        except KeyError:
            raise self.corrupt(f"the member '{path}' is missing") from None
        except (zipfile.BadZipFile, OSError, EOFError, ValueError) as e:
            raise self.corrupt(f"the member '{path}' cannot be read ({e})") from None

    def array(self, index):
        entry = self.header["arrays"][index]
        arr = self.member(f"arrays/{index}.npy")
        if entry["dtype"] == "bfloat16":
            arr = arr.view(dt.bfloat16.np)
        elif arr.dtype.str != entry["dtype"]:
            raise self.corrupt(f"array {index} has dtype {arr.dtype.str}, the header says "
                               f"{entry['dtype']}")
        return arr[()] if entry["scalar"] else arr

    def storage(self, index, dtype):
        found = self.storages.get(index)
        if found is not None:
            return found
        entry = self.header["storages"][index]
        nbytes = entry["nbytes"]
        device = self.relocate(entry["device"])
        raw = self.member(f"storages/{index}.npy") if entry["data"] else None
        if raw is not None and (raw.dtype != np.uint8 or raw.shape != (nbytes,)):
            raise self.corrupt(f"storage {index} holds {raw.size} bytes of {raw.dtype}, the "
                               f"header says {nbytes} bytes")
        if device.type == "meta":
            storage = Storage(None, nbytes, device)
        elif raw is None:
            raise self.corrupt(f"storage {index} has no data but is loaded onto '{device}'; "
                               f"pass map_location='meta'")
        elif device is CPU:
            if nbytes % dtype.itemsize == 0:
                raw = raw.view(dtype.np)   # the CPU backend's storages hold their dtype
            storage = Storage(raw, nbytes, CPU)
        else:
            storage = _device_storage(raw, device, self.corrupt)
        found = self.storages[index] = (storage, VersionCounter())
        return found

    def tensor(self, index):
        t = self.tensors.get(index)
        if t is not None:
            return t
        entry = self.header["tensors"][index]
        dtype = dt._by_name(entry["dtype"])
        storage, version = self.storage(entry["storage"], dtype)
        sizes = tuple(int(s) for s in entry["shape"])
        strides = tuple(int(s) for s in entry["stride"])
        offset = int(entry["offset"])
        _check_bounds(index, sizes, strides, offset, dtype, storage.nbytes, self.corrupt)
        impl = TensorImpl(storage, sizes, strides, offset, dtype, storage.device,
                          version=version, inference=grad_state.inference)
        t = wrap(impl)
        if entry["parameter"]:
            t = Parameter(t, requires_grad=bool(entry["requires_grad"]))
        elif entry["requires_grad"]:
            t.requires_grad_(True)
        self.tensors[index] = t
        return t


def _check_bounds(index, sizes, strides, offset, dtype, nbytes, corrupt):
    """A tensor's elements must lie inside its storage (else the header is corrupt)."""
    if len(sizes) != len(strides) or any(s < 0 for s in sizes) or offset < 0:
        raise corrupt(f"tensor {index} has sizes {list(sizes)}, strides {list(strides)}, "
                      f"offset {offset}")
    if numel_of(sizes) == 0:
        return
    if any(st < 0 for st in strides):
        raise corrupt(f"tensor {index} has negative strides {list(strides)}")
    last = offset + sum((s - 1) * st for s, st in zip(sizes, strides))
    if (last + 1) * dtype.itemsize > nbytes:
        raise corrupt(f"tensor {index} reaches element {last} of a storage of "
                      f"{nbytes // dtype.itemsize} {dtype.name} elements")


def _device_storage(raw, device, corrupt):
    """A `cuda` storage holding a copy of the host bytes `raw`."""
    try:
        storage = _cuda_state.allocate(raw.size, device)
    except DeviceError as e:
        raise DeviceError(f"load(): a tensor was saved on '{device}', which is not available "
                          f"here ({e}); pass map_location='cpu' to load it onto the CPU",
                          op="load", arg="map_location") from None
    if raw.size:
        import torch
        storage.data.copy_(torch.from_numpy(raw))
    return storage
