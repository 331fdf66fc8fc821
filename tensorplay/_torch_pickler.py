"""Writing PyTorch's checkpoint format (tensorplay/_torch_format.py describes it) without
torch: a pickler that writes TensorPlay's tensors as PyTorch's rebuild calls and its
dtypes, devices, sizes and layouts as torch's names, and the zip (or legacy) container
around the pickle and the storages' bytes.

Python's C pickler looks a global up by importing its module before writing its name,
so it cannot write `torch._utils._rebuild_tensor_v2` where torch is not installed. The
pure-Python pickler (`pickle._Pickler`) lets a subclass write the GLOBAL opcode itself,
which `TorchPickler.save_torch_name` does; everything else pickles as Python pickles it.
"""
from __future__ import annotations

import collections
import io
import os
import pickle
import struct
import sys
import zipfile

import numpy as np

from tensorplay import _dtype as dt
from tensorplay._device import device as Device
from tensorplay._layout import layout as Layout, sparse_coo
from tensorplay._tensor import Size, Tensor
from tensorplay._torch_format import (
    ARCHIVE, MAGIC_NUMBER, PROTOCOL_VERSION, STORAGE_ALIGNMENT, STORAGE_NAMES,
)
from tensorplay.nn.parameter import Parameter


class TorchName:
    """A global as a pickle names it ("torch._utils", "_rebuild_tensor_v2"): the pickler
    writes the name without importing the module (torch need not be installed)."""

    _interned = {}

    def __new__(cls, module, name):
        key = (module, name)
        found = cls._interned.get(key)
        if found is None:
            found = cls._interned[key] = object.__new__(cls)
            found.module, found.name = module, name
        return found

    def __call__(self, *args):
        # only a name to write (pickle wants a callable in a reduce tuple)
        raise TypeError(f"{self.module}.{self.name} is a name for the pickle, not a function")


class _StorageRef:
    """Stands for a storage inside the pickle; `persistent_id` replaces it by its id tuple."""

    __slots__ = ("pid",)

    def __init__(self, pid):
        self.pid = pid


class TorchPickler(pickle._Pickler):
    """Python's pure-Python pickler, which lets a subclass write opcodes itself: tensors
    become PyTorch's rebuild calls over persistent storage ids; dtypes, devices, sizes and
    layouts become torch's globals; anything else pickles as usual (modules, optimizers
    and other objects by their class and state)."""

    dispatch = dict(pickle._Pickler.dispatch)

    def __init__(self, file, protocol, legacy=False):
        super().__init__(file, protocol)
        self.legacy = legacy
        self.storages = {}       # id(Storage) -> [key, Storage, dtype]

    def persistent_id(self, obj):
        return obj.pid if type(obj) is _StorageRef else None

    def reducer_override(self, obj):
        if isinstance(obj, Tensor):
            return self.reduce_tensor(obj)
        kind = type(obj)
        if kind is Device:
            return (TorchName("torch", "device"), (str(obj),))
        if kind is Size:
            return (TorchName("torch", "Size"), (tuple(obj),))
        if isinstance(obj, Layout):
            return (TorchName("torch.serialization", "_get_layout"), (f"torch.{obj.name}",))
        return NotImplemented

    def save_torch_name(self, obj):
        if self.proto >= 4:
            self.save(obj.module)
            self.save(obj.name)
            self.write(pickle.STACK_GLOBAL)
        else:
            self.write(pickle.GLOBAL + obj.module.encode("utf-8") + b"\n"
                       + obj.name.encode("utf-8") + b"\n")
        self.memoize(obj)

    def save_dtype(self, obj):
        self.save_torch_name(TorchName("torch", obj.name))

    dispatch[TorchName] = save_torch_name
    dispatch[dt.dtype] = save_dtype

    def reduce_tensor(self, t):
        if type(t) is Parameter:
            return (TorchName("torch._utils", "_rebuild_parameter"),
                    (t.detach(), t.requires_grad, collections.OrderedDict()))
        rebuild = self.rebuild_args(t)
        if type(t) is not Tensor:   # a subclass: rebuilt as a Tensor, then re-classed
            return (TorchName("torch._tensor", "_rebuild_from_type_v2"),
                    (rebuild[0], type(t), rebuild[1], {}))
        return rebuild

    def rebuild_args(self, t):
        impl = t._impl
        if t.layout is sparse_coo:
            return (TorchName("torch._utils", "_rebuild_sparse_tensor"),
                    (sparse_coo, (t._indices(), t._values(), tuple(t.shape),
                                  t.is_coalesced())))
        if impl.device.type == "meta":
            return (TorchName("torch._utils", "_rebuild_meta_tensor_no_storage"),
                    (impl.dtype, tuple(impl.sizes), tuple(impl.strides),
                     bool(impl.requires_grad)))
        return (TorchName("torch._utils", "_rebuild_tensor_v2"),
                (self.storage_ref(impl.storage, impl.dtype), impl.offset, tuple(impl.sizes),
                 tuple(impl.strides), bool(impl.requires_grad), collections.OrderedDict()))

    def storage_ref(self, storage, dtype):
        entry = self.storages.get(id(storage))
        if entry is None:
            if storage.nbytes % dtype.itemsize:
                raise RuntimeError(f"save(): a storage of {storage.nbytes} bytes viewed as "
                                   f"{dtype.name}, whose elements do not divide it")
            key = str(len(self.storages))
            entry = self.storages[id(storage)] = [key, storage, dtype]
        elif entry[2] is not dtype:
            # PyTorch's loader types a storage once, by the first tensor that names it
            raise RuntimeError("Cannot save multiple tensors or storages that view the same "
                               "data as different types")
        key, storage, dtype = entry
        pid = ("storage", TorchName("torch", STORAGE_NAMES[dtype]), key, str(storage.device),
               storage.nbytes // dtype.itemsize)
        if self.legacy:
            pid = pid + (None,)
        return _StorageRef(pid)


def storage_bytes(storage):
    """A storage's bytes as a flat uint8 NumPy array (copied off the GPU)."""
    data = storage.data
    if isinstance(data, np.ndarray):
        return np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    return data.detach().cpu().numpy().reshape(-1)


def pickle_object(obj, protocol, legacy=False):
    buf = io.BytesIO()
    pickler = TorchPickler(buf, protocol, legacy=legacy)
    pickler.dump(obj)
    return buf.getvalue(), [tuple(entry) for entry in pickler.storages.values()]


def write_zip(obj, out, protocol, byteorder_record=True):
    """`obj` as torch.save writes it, into the seekable binary file `out` (without the
    byteorder record if asked: readers then take the bytes as little-endian)."""
    data, storages = pickle_object(obj, protocol)
    records = [("data.pkl", data), (".format_version", b"1"),
               (".storage_alignment", str(STORAGE_ALIGNMENT).encode())]
    if byteorder_record:
        records.append(("byteorder", sys.byteorder.encode()))
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED) as zf:
        for name, payload in records:
            _write_aligned(zf, f"{ARCHIVE}/{name}", payload)
        for key, storage, _ in storages:
            _write_aligned(zf, f"{ARCHIVE}/data/{key}", storage_bytes(storage))
        _write_aligned(zf, f"{ARCHIVE}/version", b"3\n")
        serial = str(int.from_bytes(os.urandom(17), "little")).zfill(40)[:40]
        _write_aligned(zf, f"{ARCHIVE}/.data/serialization_id", serial.encode())


def _write_aligned(zf, name, payload):
    """A stored member whose bytes start at a multiple of 64 in the file (as PyTorch's
    writer does, so that mmap and direct reads see aligned data): the local header's
    extra field is padded with an "FB" record."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    size = payload.nbytes if isinstance(payload, np.ndarray) else len(payload)
    zip64 = size > (1 << 31)
    header = 30 + len(name.encode("utf-8")) + 4 + (20 if zip64 else 0)
    pad = -(zf.start_dir + header) % STORAGE_ALIGNMENT
    info.extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
    with zf.open(info, "w", force_zip64=zip64) as member:
        member.write(memoryview(payload).cast("B") if isinstance(payload, np.ndarray)
                     else payload)


def write_legacy(obj, out, protocol):
    """`obj` in the legacy (pre-1.6) format, as `_use_new_zipfile_serialization=False`."""
    data, storages = pickle_object(obj, protocol, legacy=True)
    for header in (MAGIC_NUMBER, PROTOCOL_VERSION,
                   {"protocol_version": PROTOCOL_VERSION,
                    "little_endian": sys.byteorder == "little",
                    "type_sizes": {"short": 2, "int": 4, "long": 4}}):
        out.write(pickle.dumps(header, protocol=protocol))
    out.write(data)
    out.write(pickle.dumps([key for key, _, _ in storages], protocol=protocol))
    for key, storage, dtype in storages:
        raw = storage_bytes(storage)
        out.write(struct.pack("<q" if sys.byteorder == "little" else ">q",
                              raw.size // dtype.itemsize))
        out.write(memoryview(raw).cast("B"))
