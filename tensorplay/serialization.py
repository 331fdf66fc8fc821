"""`tp.save` / `tp.load`: checkpoints in PyTorch's format (both ways) and in TensorPlay's
pickle-free one, and the allow-list that keeps loading safe.

Three formats are read, told apart by their first bytes and members:

- PyTorch's zip format (`torch.save` since 1.6, and `tp.save`'s default): a pickle of
  the object with each tensor's bytes in a member beside it (tensorplay/_torch_format.py
  describes it). `torch.load` reads what `tp.save` writes and `tp.load` reads what
  `torch.save` writes; neither needs the other library installed.
- PyTorch's legacy format (before 1.6): pickles one after the other, then the bytes.
- TensorPlay's JSON format (`tp.save(obj, f, format="tensorplay")`), below.

Loading a pickle can run code: a pickle names functions and the unpickler calls them.
So `load` builds, by default (`weights_only=True`, as PyTorch 2.6+), only what an
allow-list names (tensors, containers, numbers, dtypes, devices, sizes; see
tensorplay/_weights_only_unpickler.py) plus what the user adds with `add_safe_globals`
or `with safe_globals([...])`, and refuses the rest with PyTorch's message.
`weights_only=False` unpickles anything: modules, optimizers, your classes.

Why PyTorch's format is the default: one format then holds every object (a whole model
needs a pickle anyway), a checkpoint crosses to PyTorch and back unchanged, and it is
as safe to load as the JSON format under both readers' weights-only unpicklers. The
JSON format stays readable and writable for files that must hold no pickle at all.

TensorPlay's JSON format is a zip archive (stored, not compressed) with

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

In every format tensors are saved by storage, as PyTorch does: every tensor records
which storage it views and its sizes, strides and offset, so a view and its base (or
two views of one buffer) share one storage again after loading, and the same tensor
object reached twice comes back as one object. A storage is saved whole, even when only
a slice of it is reachable. `.grad` and autograd history are not saved; a tensor that
required grad comes back as a leaf that requires grad, a Parameter as a Parameter.
"""
from __future__ import annotations

import collections
import io
import json
import math
import os
import pickle
import re
import struct
import sys
import zipfile

import numpy as np

from tensorplay import _dtype as dt
from tensorplay import _torch_format, _torch_pickler
from tensorplay._device import device as Device
from tensorplay._impl import TensorImpl, VersionCounter
from tensorplay._tensor import Size, Tensor, wrap
from tensorplay._weights_only_unpickler import (   # noqa: F401 - the public allow-list API
    add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals,
)
from tensorplay.autograd.grad_mode import grad_state
from tensorplay.errors import DeviceError, SerializationError
from tensorplay.nn.parameter import Parameter

__all__ = ["save", "load", "add_safe_globals", "safe_globals", "get_safe_globals",
           "clear_safe_globals", "WeightsOnlyError", "DEFAULT_PROTOCOL"]

DEFAULT_PROTOCOL = 2   # PyTorch's: its weights-only unpickler reads protocol 2's opcodes
FORMAT = "tensorplay"
VERSION = 1
HEADER = "tensorplay.json"


# ---- the front door -------------------------------------------------------------------
def save(obj, f, pickle_module=None, pickle_protocol=DEFAULT_PROTOCOL,
         _use_new_zipfile_serialization=True, _disable_byteorder_record=False, *,
         format="torch"):
    """Write `obj` to `f`, a path or a writable binary file object.

    format="torch" (the default): PyTorch's checkpoint format, which `torch.load` reads
    (with weights_only=True when `obj` is plain data: containers, numbers, strings,
    tensors, dtypes, devices). Any picklable object can be saved: modules, optimizers,
    your own classes (loading those needs weights_only=False or add_safe_globals).
    `_use_new_zipfile_serialization=False` writes PyTorch's legacy (pre-1.6) format.

    format="tensorplay": TensorPlay's pickle-free format (tensorplay.json + NumPy arrays,
    described at the top of this file), for plain data only."""
    if pickle_module is not None and pickle_module is not pickle:
        raise TypeError("save(): argument 'pickle_module' must be the pickle module (the "
                        "tensor storages need TensorPlay's own pickler)")
    if format not in ("torch", "tensorplay"):
        raise ValueError(f"save(): argument 'format' must be 'torch' or 'tensorplay', but "
                         f"got {format!r}")
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as out:
            _save_to(obj, out, format, pickle_protocol, _use_new_zipfile_serialization,
                     _disable_byteorder_record)
        return
    if not hasattr(f, "write"):
        raise TypeError(f"save(): argument 'f' must be a path or a binary file object, but "
                        f"got {type(f).__name__}")
    seekable = hasattr(f, "seekable") and f.seekable()
    if seekable:
        _save_to(obj, f, format, pickle_protocol, _use_new_zipfile_serialization,
                 _disable_byteorder_record)
    else:   # zipfile rewrites headers after the data: build it in memory, then copy
        buf = io.BytesIO()
        _save_to(obj, buf, format, pickle_protocol, _use_new_zipfile_serialization,
                 _disable_byteorder_record)
        f.write(buf.getvalue())


def _save_to(obj, out, format, protocol, zip_format, no_byteorder):
    if format == "tensorplay":
        _save_tensorplay(obj, out)
    elif zip_format:
        _torch_pickler.write_zip(obj, out, protocol, byteorder_record=not no_byteorder)
    else:
        _torch_pickler.write_legacy(obj, out, protocol)


def load(f, map_location=None, pickle_module=None, *, weights_only=True, mmap=None,
         **pickle_load_args):
    """Read what `save` or `torch.save` wrote: PyTorch's zip format, its legacy format,
    or TensorPlay's JSON format. `f` is a path or a readable binary file object.

    map_location: None (each tensor back on its saved device), a device or string (all
    tensors there, e.g. 'cpu'), a dict from saved device to device ({'cuda:0': 'cpu'}),
    or a callable `f(storage, location)` returning a storage or None (as torch.load).
    weights_only=True (the default, as in PyTorch 2.6+): only tensors, containers and
    the other allow-listed types are built, so no code in the file can run; anything
    else is refused with PyTorch's message (see add_safe_globals). weights_only=False
    unpickles anything: trusted files only. mmap=True maps the file's tensor bytes
    instead of reading them (a path to a zip-format file; copy-on-write, as PyTorch's
    MAP_PRIVATE). A file none of the formats can read raises SerializationError."""
    unexpected = set(pickle_load_args) - {"encoding"}
    if unexpected:
        raise TypeError(f"load(): unexpected keyword argument(s) {', '.join(unexpected)}")
    if pickle_module is not None and pickle_module is not pickle:
        raise TypeError("load(): argument 'pickle_module' must be the pickle module")
    encoding = pickle_load_args.get("encoding", "utf-8")
    weights_only = True if weights_only is None else bool(weights_only)
    placement = _torch_format.Placement(map_location)
    if isinstance(f, (str, os.PathLike)):
        name = os.fspath(f)
        with open(f, "rb") as src:
            return _read(src, name, placement, weights_only, name if mmap else None, encoding)
    if not hasattr(f, "read"):
        raise TypeError(f"load(): argument 'f' must be a path or a binary file object, but got "
                        f"{type(f).__name__}")
    if mmap:
        raise ValueError("load(): f must be a file path in order to use the mmap argument")
    name = getattr(f, "name", None)
    name = repr(name) if isinstance(name, str) else f"<{type(f).__name__}>"
    if not (hasattr(f, "seekable") and f.seekable()):
        f = io.BytesIO(f.read())
    return _read(f, name, placement, weights_only, None, encoding)


def _read(src, name, placement, weights_only, mmap_path, encoding):
    def corrupt(why):
        return SerializationError(f"load(): {name} is not a valid TensorPlay file: {why}",
                                  op="load", arg="f")
    start = src.tell()
    head = src.read(512)
    src.seek(start)
    if not zipfile.is_zipfile(src):
        src.seek(start)
        if head[257:262] == b"ustar":
            raise corrupt("it is a tar archive: PyTorch's format before 0.4, which "
                          "TensorPlay does not read (load and re-save it with PyTorch)")
        if _torch_format.is_legacy(head):
            if mmap_path is not None:
                raise RuntimeError("load(): mmap can only be used with files saved in the "
                                   "zip format (torch.save's default since PyTorch 1.6)")
            return _guard(lambda: _torch_format.read_legacy(src, placement, weights_only,
                                                            corrupt, encoding),
                          corrupt, weights_only)
    src.seek(start)
    try:
        zf = zipfile.ZipFile(src)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as e:
        raise corrupt(f"not a zip archive, or a truncated one ({e})") from None
    with zf:
        names = zf.namelist()
        if HEADER in names:
            if mmap_path is not None:
                raise RuntimeError("load(): mmap can only be used with files in PyTorch's "
                                   "format (tp.save's default), not format='tensorplay'")
            return _read_tensorplay(zf, placement, corrupt)
        prefix = _torch_format.archive_prefix(zf)
        if prefix is None:
            raise corrupt(f"it has neither '{HEADER}' nor a PyTorch 'data.pkl' (a file from "
                          f"another program?)")
        return _guard(lambda: _torch_format.read_zip(zf, prefix, placement, weights_only,
                                                     corrupt, mmap_path, encoding),
                      corrupt, weights_only)


def _guard(read, corrupt, weights_only):
    """Run a PyTorch-format reader: a refusal of the weights-only unpickler becomes
    PyTorch's message, a malformed file a SerializationError naming it. Without
    weights_only, what the file's own classes raise (a class that no longer exists, a
    __setstate__ that fails) passes through unchanged, as from torch.load."""
    structural = (EOFError, zipfile.BadZipFile, struct.error, UnicodeDecodeError)
    if weights_only:
        structural += (KeyError, IndexError, TypeError, ValueError, AttributeError)
    try:
        return read()
    except (SerializationError, DeviceError):
        raise
    except pickle.UnpicklingError as e:
        if weights_only:
            raise WeightsOnlyError(_weights_only_message(str(e))) from None
        raise corrupt(f"malformed pickle ({e})") from None
    except structural as e:
        raise corrupt(f"malformed PyTorch checkpoint ({type(e).__name__}: {e})") from None


class WeightsOnlyError(SerializationError, pickle.UnpicklingError):
    """`load(weights_only=True)` met something outside the allow-list (PyTorch raises
    pickle.UnpicklingError with this message; catching either works)."""


UNSAFE_MESSAGE = (
    "In PyTorch 2.6, the default value of the `weights_only` argument in `torch.load` "
    "changed from `False` to `True`, and `tensorplay.load` follows it. Re-running "
    "`tensorplay.load` with `weights_only` set to `False` will likely succeed, but it can "
    "result in arbitrary code execution. Do it only if you got the file from a trusted "
    "source.")


DOCS_MESSAGE = ("\n\nCheck the documentation of tensorplay.load (tensorplay/serialization.py) to "
                "learn more about types accepted by default with weights_only.")


def _weights_only_message(message):
    """PyTorch's wording (torch.serialization._get_wo_message) around the unpickler's."""
    if re.search(r"GLOBAL (\S+) was not an allowed global by default.", message):
        return ("Weights only load failed. This file can still be loaded, to do so you have "
                "two options, do those steps only if you trust the source of the checkpoint. "
                f"\n\t(1) {UNSAFE_MESSAGE}\n\t(2) Alternatively, to load with "
                "`weights_only=True` please check the recommended steps in the following "
                "error message.\n\tWeightsUnpickler error: " + message + DOCS_MESSAGE)
    updated = f"Weights only load failed. {UNSAFE_MESSAGE}\n"
    if not re.search(r"whose module (\S+) is blocked", message):
        updated += ("Please file an issue with the following so that we can make "
                    "`weights_only=True` compatible with your use case: WeightsUnpickler "
                    "error: ")
    return updated + "\n\n" + message + DOCS_MESSAGE


# ---- TensorPlay's JSON format: saving -----------------------------------------------------
def _save_tensorplay(obj, out):
    """Write `obj` (nested dicts, OrderedDicts, lists, tuples, str, int, float, bool, None,
    dtypes, devices, tensors, Parameters, NumPy arrays) to `out`. Any other type raises
    TypeError naming it and where it is, e.g. "obj['state'][0]"."""
    writer = _Writer()
    root = writer.node(obj, "obj")
    header = {"format": FORMAT, "version": VERSION, "byteorder": sys.byteorder,
              "storages": writer.storage_entries, "tensors": writer.tensor_entries,
              "arrays": writer.array_entries, "root": root}
    text = json.dumps(header, allow_nan=False)
    _write_zip(out, text, writer)


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


# ---- TensorPlay's JSON format: loading ----------------------------------------------------
def _read_tensorplay(zf, placement, corrupt):
    try:
        header = json.loads(zf.read(HEADER).decode("utf-8"))
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, UnicodeDecodeError) as e:
        raise corrupt(f"its '{HEADER}' cannot be read ({e})") from None
    reader = _Reader(zf, header, placement, corrupt)
    try:
        return reader.node(header["root"])
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as e:
        if isinstance(e, SerializationError):
            raise
        raise corrupt(f"malformed object tree ({type(e).__name__}: {e})") from None


class _Reader:
    def __init__(self, zf, header, placement, corrupt):
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
        self.placement = placement
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

        def read_raw():
            if not entry["data"]:
                return None
            raw = self.member(f"storages/{index}.npy")
            if raw.dtype != np.uint8 or raw.shape != (nbytes,):
                raise self.corrupt(f"storage {index} holds {raw.size} bytes of {raw.dtype}, "
                                   f"the header says {nbytes} bytes")
            return raw
        storage = self.placement.place(entry["device"], nbytes, dtype, read_raw, self.corrupt)
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
        try:
            _torch_format.check_bounds(sizes, strides, offset, dtype, storage.nbytes,
                                       what=f"tensor {index}")
        except ValueError as e:
            raise self.corrupt(str(e)) from None
        impl = TensorImpl(storage, sizes, strides, offset, dtype, storage.device,
                          version=version, inference=grad_state.inference)
        t = wrap(impl)
        if entry["parameter"]:
            t = Parameter(t, requires_grad=bool(entry["requires_grad"]))
        elif entry["requires_grad"]:
            t.requires_grad_(True)
        self.tensors[index] = t
        return t
