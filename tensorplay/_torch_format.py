"""PyTorch's checkpoint format, read and written without importing torch.

What `torch.save` writes (and `tp.save` writes by default) is a zip archive, stored
uncompressed, whose members all sit under one folder (`archive/`):

    archive/data.pkl                 the object, pickled (protocol 2); each tensor in it is
                                     a call `torch._utils._rebuild_tensor_v2(storage,
                                     offset, size, stride, requires_grad, hooks)`
    archive/data/<key>               storage <key>'s raw bytes, 64-byte aligned in the file
    archive/byteorder                "little" or "big"
    archive/version, .format_version, .storage_alignment, .data/serialization_id

The storage argument is a pickle "persistent id", a tuple the pickle does not build but
hands to `persistent_load`: ('storage', torch.FloatStorage, '0', 'cpu', numel), the
element type, the key of the bytes, the device they were on, and their length. Two
tensors viewing one storage name the same key, so they share memory again after loading.

The legacy format (PyTorch before 1.6, and `_use_new_zipfile_serialization=False`) is
not a zip but five pickles one after the other (a magic number, a protocol version, a
dict of system info, the object, the list of storage keys), then each storage's bytes
preceded by its element count as an 8-byte integer.

Nothing here imports torch: the names a pickle asks for (`torch._utils._rebuild_tensor_v2`,
`torch.FloatStorage`, `torch.float16`, `torch.Size`, ...) are answered from
`TORCH_GLOBALS`, TensorPlay's counterparts. This file reads; tensorplay/_torch_pickler.py
writes (its pickler emits those names itself for TensorPlay's objects).
"""
from __future__ import annotations

import collections
import importlib
import io
import pickle
import struct
import sys
import zipfile

import numpy as np

from tensorplay import _dtype as dt
from tensorplay import _tensor_factory as factory
from tensorplay import _weights_only_unpickler
from tensorplay._device import CPU, as_device, device as Device
from tensorplay._impl import Storage, TensorImpl, VersionCounter, numel_of
from tensorplay._layout import sparse_coo, strided
from tensorplay._tensor import Size, Tensor, wrap
from tensorplay.autograd.grad_mode import grad_state
from tensorplay.errors import DeviceError, SerializationError
from tensorplay.nn.parameter import Parameter

MAGIC_NUMBER = 0x1950A86A20F9469CFC6C     # the legacy format's first pickle
PROTOCOL_VERSION = 1001                   # its second
STORAGE_ALIGNMENT = 64
ARCHIVE = "archive"

# PyTorch's legacy storage classes, one per element type: the pickles name them.
STORAGE_NAMES = {
    dt.bool: "BoolStorage", dt.uint8: "ByteStorage", dt.int8: "CharStorage",
    dt.int16: "ShortStorage", dt.int32: "IntStorage", dt.int64: "LongStorage",
    dt.float16: "HalfStorage", dt.bfloat16: "BFloat16Storage", dt.float32: "FloatStorage",
    dt.float64: "DoubleStorage", dt.complex64: "ComplexFloatStorage",
    dt.complex128: "ComplexDoubleStorage",
}
# torch dtypes TensorPlay lacks: a file holding one says so by name
MISSING_DTYPES = ("uint16", "uint32", "uint64", "complex32", "float8_e4m3fn",
                  "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu",
                  "qint8", "quint8", "qint32", "quint4x2", "quint2x4", "bits8", "bits16")


class StorageType:
    """What `torch.FloatStorage` (and the others) means in a pickle: an element type."""

    def __init__(self, dtype):
        self.dtype = dtype

    def __repr__(self):
        return f"StorageType(dtype={self.dtype!r})"


class LoadedStorage:
    """A storage as `persistent_load` returns it: TensorPlay's Storage, the element type
    the file gave it, one version counter for all its views, and (legacy files only) the
    element offset of a storage view."""

    __slots__ = ("storage", "dtype", "version", "offset")

    def __init__(self, storage, dtype, offset=0):
        self.storage = storage
        self.dtype = dtype
        self.version = VersionCounter()
        self.offset = offset


# ---- rebuilding tensors: what the pickle's torch._utils functions do here -------------
def _tensor(storage, offset, size, stride, dtype, requires_grad):
    sizes = tuple(int(s) for s in size)
    strides = tuple(int(s) for s in stride)
    offset = int(offset) + storage.offset
    check_bounds(sizes, strides, offset, dtype, storage.storage.nbytes)
    impl = TensorImpl(storage.storage, sizes, strides, offset, dtype, storage.storage.device,
                      version=storage.version, inference=grad_state.inference)
    t = wrap(impl)
    if requires_grad:
        t.requires_grad_(True)
    return t


def check_bounds(sizes, strides, offset, dtype, nbytes, what="a tensor"):
    """A tensor's elements must lie inside its storage (else the file is corrupt): a
    ValueError naming `what` otherwise (both file formats' readers check with it)."""
    if len(sizes) != len(strides) or any(s < 0 for s in sizes) or offset < 0:
        raise ValueError(f"{what} has sizes {list(sizes)}, strides {list(strides)}, "
                         f"offset {offset}")
    if numel_of(sizes) == 0:
        return
    if any(st < 0 for st in strides):
        raise ValueError(f"{what} has negative strides {list(strides)}")
    last = offset + sum((s - 1) * st for s, st in zip(sizes, strides))
    if (last + 1) * dtype.itemsize > nbytes:
        raise ValueError(f"{what} reaches element {last} of a storage of "
                         f"{nbytes // dtype.itemsize} {dtype.name} elements")


def _rebuild_tensor(storage, storage_offset, size, stride):
    return _tensor(storage, storage_offset, size, stride, storage.dtype, False)


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks,
                       metadata=None):
    return _tensor(storage, storage_offset, size, stride, storage.dtype, requires_grad)


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks,
                       dtype, metadata=None):
    """v3 names the dtype itself (PyTorch uses it for dtypes without a storage class)."""
    return _tensor(storage, storage_offset, size, stride, dtype, requires_grad)


def _rebuild_meta_tensor_no_storage(dtype, size, stride, requires_grad):
    t = factory.empty_strided(tuple(size), tuple(stride), dtype=dtype, device="meta")
    return t.requires_grad_(True) if requires_grad else t


def _rebuild_parameter(data, requires_grad, backward_hooks):
    return Parameter(data, requires_grad)


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    param = Parameter(data, requires_grad)
    _set_obj_state(param, state)
    return param


def _set_obj_state(obj, state):
    """A tensor's Python attributes, as PyTorch's `_set_obj_state` restores them."""
    if isinstance(state, tuple):
        if len(state) != 2:
            raise ValueError(f"Invalid serialized state: {state}")
        dict_state, slots_state = state
    else:
        dict_state, slots_state = state, None
    for k, v in (dict_state or {}).items():
        setattr(obj, k, v)
    for k, v in (slots_state or {}).items():
        setattr(obj, k, v)
    return obj


def _rebuild_from_type_v2(func, new_type, args, state):
    """A tensor of a subclass (or with attributes): rebuild, then re-class and set state."""
    t = func(*args)
    if type(t) is not new_type:
        if new_type is Parameter:
            t = Parameter(t, t.requires_grad)
        else:
            t = t.as_subclass(new_type)
    return _set_obj_state(t, state)


def _rebuild_sparse_tensor(layout, data):
    if layout is not sparse_coo:
        raise ValueError(f"a sparse tensor of layout {layout!r}; TensorPlay has sparse_coo "
                         f"only")
    from tensorplay.sparse.coo import sparse_coo_tensor
    indices, values, size = data[:3]
    t = sparse_coo_tensor(indices, values, tuple(size))
    return t.coalesce() if len(data) > 3 and data[3] else t


def _get_layout(name):
    layouts = {"torch.strided": strided, "torch.sparse_coo": sparse_coo}
    if name not in layouts:
        raise ValueError(f"layout {name}: TensorPlay has strided and sparse_coo only")
    return layouts[name]


def _missing(what):
    """The error for a name PyTorch allows that TensorPlay cannot build: not a refusal of
    the allow-list but a thing TensorPlay lacks, so not a pickle.UnpicklingError."""
    return SerializationError(f"load(): the file holds {what}, which TensorPlay does not "
                              f"have", op="load", arg="f")


def _torch_globals():
    """{"module.name" a pickle may name: TensorPlay's counterpart}. Exactly the names
    PyTorch's weights-only unpickler allows, where TensorPlay has the thing."""
    table = {
        "collections.OrderedDict": collections.OrderedDict,
        "collections.Counter": collections.Counter,
        "torch.nn.parameter.Parameter": Parameter,
        "torch.serialization._get_layout": _get_layout,
        "torch.Size": Size,
        "torch.Tensor": Tensor,
        "torch.device": Device,
        "_codecs.encode": _codecs_encode,      # bytes, in protocol 2
        "builtins.bytearray": bytearray,
        "builtins.set": set,
        "builtins.complex": complex,
        "torch._tensor._rebuild_from_type_v2": _rebuild_from_type_v2,
        "torch.storage.UntypedStorage": StorageType(dt.uint8),
    }
    for f in (_rebuild_tensor, _rebuild_tensor_v2, _rebuild_tensor_v3, _rebuild_parameter,
              _rebuild_parameter_with_state, _rebuild_meta_tensor_no_storage,
              _rebuild_sparse_tensor):
        table[f"torch._utils.{f.__name__}"] = f
    for name in ("_rebuild_qtensor", "_rebuild_nested_tensor", "_rebuild_wrapper_subclass",
                 "_rebuild_device_tensor_from_numpy",
                 "_rebuild_device_tensor_from_cpu_tensor"):
        table[f"torch._utils.{name}"] = _missing(f"a tensor rebuilt by torch._utils.{name} "
                                                 f"(quantized, nested, subclass or NumPy)")
    for dtype, storage_name in STORAGE_NAMES.items():
        table[f"torch.{dtype.name}"] = dtype
        # CPU and CUDA storage classes (legacy files name torch.cuda.FloatStorage)
        table[f"torch.{storage_name}"] = StorageType(dtype)
        table[f"torch.cuda.{storage_name}"] = StorageType(dtype)
    for name in MISSING_DTYPES:
        table[f"torch.{name}"] = _missing(f"a tensor of dtype torch.{name}")
    return table


def _codecs_encode(text, encoding="utf-8"):
    import codecs
    return codecs.encode(text, encoding)


TORCH_GLOBALS = _torch_globals()


# ---- loading --------------------------------------------------------------------------
class Placement:
    """Where each storage goes: `map_location` as `torch.load` takes it. None: the saved
    device; a string or device: everywhere there; a dict: {saved location: location};
    a callable `f(storage, location)`: given the storage on the CPU, it returns a storage,
    or None for the saved device (a device or string is taken as the target too)."""

    def __init__(self, map_location):
        ml = map_location
        if isinstance(ml, bytes):
            ml = ml.decode("ascii")
        if ml is not None and not isinstance(ml, (str, Device, dict)) and not callable(ml):
            raise TypeError(f"load(): argument 'map_location' must be None, a device, a "
                            f"string, a dict or a callable, but got {type(ml).__name__}")
        if isinstance(ml, dict):
            ml = {_location_key(k): v for k, v in ml.items()}
        self.map_location = ml

    def target(self, location):
        ml = self.map_location
        if isinstance(ml, dict):
            location = ml.get(_location_key(location), location)
        elif ml is not None:
            location = ml
        return _as_load_device(location)

    def place(self, location, nbytes, dtype, read_raw, corrupt):
        """A Storage of `nbytes` bytes for the storage saved on `location`; `read_raw()`
        gives its bytes (a uint8 array, or None where the file has none)."""
        ml = self.map_location
        if callable(ml) and not isinstance(ml, (str, Device, dict)):
            raw = read_raw()
            result = ml(_cpu_storage(raw, nbytes, dtype), location)
            if isinstance(result, Storage):
                return result
            target = _as_load_device(location if result is None else result)
            if target is CPU:
                return _cpu_storage(raw, nbytes, dtype)
        else:
            target = self.target(location)
            if target.type == "meta":
                return Storage(None, nbytes, target)
            raw = read_raw()
        if raw is None:
            raise corrupt(f"a storage has no data but is loaded onto '{target}'; pass "
                          f"map_location='meta'")
        if target is CPU:
            return _cpu_storage(raw, nbytes, dtype)
        return _device_storage(raw, target)


def _location_key(spec):
    try:
        return str(as_device(spec))
    except (RuntimeError, TypeError):
        return str(spec)


def _as_load_device(location):
    try:
        return as_device(location)
    except (RuntimeError, TypeError):
        raise DeviceError(f"load(): a tensor was saved on '{location}', a device TensorPlay "
                          f"does not have; pass map_location='cpu' to load it onto the CPU",
                          op="load", arg="map_location") from None


class CpuStorage(Storage):
    """A storage on the CPU as a `map_location` callable receives it (PyTorch passes its
    CPU storage): the idioms `lambda storage, loc: storage.cpu()` and
    `lambda storage, loc: storage.cuda(0)` work on it."""

    __slots__ = ()

    def cpu(self):
        return self

    def cuda(self, device=None):
        if device is None or isinstance(device, int):
            device = "cuda" if device is None else f"cuda:{device}"
        return _device_storage(self.data.reshape(-1).view(np.uint8), as_device(device))


def _cpu_storage(raw, nbytes, dtype):
    if raw is None:
        return Storage(None, nbytes, as_device("meta"))
    if nbytes % dtype.itemsize == 0:
        raw = raw.view(dtype.np)   # the CPU backend's storages hold their dtype
    return CpuStorage(raw, nbytes, CPU)


def _device_storage(raw, device):
    """A `cuda` storage holding a copy of the host bytes `raw`."""
    from tensorplay import _cuda_state
    try:
        storage = _cuda_state.allocate(raw.size, device)
    except DeviceError as e:
        raise DeviceError(f"load(): a tensor was saved on '{device}', which is not available "
                          f"here ({e}); pass map_location='cpu' to load it onto the CPU",
                          op="load", arg="map_location") from None
    if raw.size:
        import torch   # the cuda backend's memory is a torch tensor (see _cuda_state)
        storage.data.copy_(torch.from_numpy(np.ascontiguousarray(raw)))
    return storage


class FullUnpickler(pickle.Unpickler):
    """`weights_only=False`: Python's unpickler (any class the file names is imported and
    called: trusted files only), with torch's names answered by TensorPlay's objects and
    never by importing torch."""

    def __init__(self, file, persistent_load, **kwargs):
        super().__init__(file, **kwargs)
        self._persistent_load = persistent_load

    def persistent_load(self, pid):
        return self._persistent_load(pid)

    def find_class(self, module, name):
        found = TORCH_GLOBALS.get(f"{module}.{name}")
        if found is not None:
            if isinstance(found, Exception):
                raise found
            return found
        if module == "torch" or module.startswith("torch."):
            return _tensorplay_counterpart(module, name)
        return super().find_class(module, name)


def _tensorplay_counterpart(module, name):
    """torch.nn.modules.linear.Linear -> tensorplay.nn.modules.linear.Linear, when
    TensorPlay has it at the same path."""
    try:
        found = importlib.import_module("tensorplay" + module[len("torch"):])
        for part in name.split("."):
            found = getattr(found, part)
        return found
    except (ImportError, AttributeError):
        raise SerializationError(f"load(): the file needs {module}.{name}, a PyTorch object "
                                 f"TensorPlay has no counterpart for (at "
                                 f"tensorplay{module[len('torch'):]})", op="load",
                                 arg="f") from None


def unpickle(file, weights_only, persistent_load, encoding="utf-8"):
    if weights_only:
        return _weights_only_unpickler.Unpickler(
            file, TORCH_GLOBALS, persistent_load, buildable=(Tensor, Parameter),
            encoding=encoding).load()
    return FullUnpickler(file, persistent_load, encoding=encoding).load()


def _ascii(value):
    return value.decode("ascii") if isinstance(value, bytes) else value


def _storage_dtype(storage_type):
    if not isinstance(storage_type, StorageType):
        raise ValueError(f"a storage of type {storage_type!r}")
    return storage_type.dtype


def archive_prefix(zf):
    """The folder that holds `data.pkl` ("archive/", or the saved file's stem for files
    older PyTorch versions wrote), or None where there is none."""
    for name in zf.namelist():
        folder, _, rest = name.partition("/")
        if rest == "data.pkl":
            return folder + "/"
    return None


def read_zip(zf, prefix, placement, weights_only, corrupt, mmap_path=None,
             encoding="utf-8"):
    """The object in a PyTorch zip checkpoint `zf` (its records under `prefix`)."""
    names = set(zf.namelist())
    if prefix + "constants.pkl" in names or any(n.startswith(prefix + "code/") for n in names):
        raise corrupt("it is a TorchScript archive (torch.jit.save), which holds code; "
                      "TensorPlay loads checkpoints of torch.save only")
    byteorder = "little"   # PyTorch's reading of a file without the record
    if prefix + "byteorder" in names:
        byteorder = zf.read(prefix + "byteorder").decode("ascii")
        if byteorder not in ("little", "big"):
            raise corrupt(f"unknown byte order {byteorder!r}")
    loaded = {}

    def read_raw(key, nbytes):
        name = f"{prefix}data/{key}"
        try:
            info = zf.getinfo(name)
        except KeyError:
            raise corrupt(f"the member '{name}' is missing") from None
        if info.file_size != nbytes:
            raise corrupt(f"the member '{name}' holds {info.file_size} bytes, the pickle "
                          f"says {nbytes}")
        if mmap_path is not None and info.compress_type == zipfile.ZIP_STORED and nbytes:
            raw = np.memmap(mmap_path, np.uint8, mode="c", offset=_data_offset(zf, info),
                            shape=(nbytes,))
        else:
            raw = np.empty(nbytes, np.uint8)
            with zf.open(info) as src:
                _read_exactly(src, raw, name, corrupt)
        return raw

    def persistent_load(pid):
        if not isinstance(pid, tuple) or len(pid) != 5 or _ascii(pid[0]) != "storage":
            raise corrupt(f"unknown persistent id {pid!r}")
        _, storage_type, key, location, numel = pid
        key, location = _ascii(key), _ascii(location)
        found = loaded.get(key)
        if found is not None:
            return found
        dtype = _storage_dtype(storage_type)
        nbytes = int(numel) * dtype.itemsize

        def raw():
            data = read_raw(key, nbytes)
            return _to_native(data, dtype, byteorder)
        storage = placement.place(location, nbytes, dtype, raw, corrupt)
        found = loaded[key] = LoadedStorage(storage, dtype)
        return found

    try:
        pkl = zf.read(prefix + "data.pkl")
    except KeyError:
        raise corrupt(f"the member '{prefix}data.pkl' is missing") from None
    return unpickle(io.BytesIO(pkl), weights_only, persistent_load, encoding)


def _read_exactly(src, out, name, corrupt):
    view = memoryview(out)
    filled = 0
    try:
        while filled < len(view):
            n = src.readinto(view[filled:])
            if not n:
                raise EOFError("the member ends early")
            filled += n
        src.read(1)   # reach the end, where zipfile checks the CRC
    except (zipfile.BadZipFile, OSError, EOFError) as e:
        raise corrupt(f"the member '{name}' cannot be read ({e})") from None


def _data_offset(zf, info):
    """Where a stored member's bytes start in the file: after its local header, whose
    extra field can differ from the central directory's."""
    fp = zf.fp
    here = fp.tell()
    try:
        fp.seek(info.header_offset)
        header = fp.read(30)
    finally:
        fp.seek(here)
    name_len, extra_len = struct.unpack("<HH", header[26:30])
    return info.header_offset + 30 + name_len + extra_len


def _to_native(raw, dtype, byteorder):
    if byteorder == sys.byteorder or dtype.itemsize == 1:
        return raw
    count = raw.size // dtype.itemsize
    return raw[:count * dtype.itemsize].view(dtype.np).byteswap().view(np.uint8)


def is_legacy(head):
    """Whether a file starting with `head` is a legacy (pre-1.6) PyTorch checkpoint: it
    opens with the pickle of MAGIC_NUMBER (PROTO n, then the 10-byte LONG1)."""
    body = pickle.dumps(MAGIC_NUMBER, protocol=2)[2:-1]
    return head[:1] == pickle.PROTO and head[2:2 + len(body)] == body


def read_legacy(f, placement, weights_only, corrupt, encoding="utf-8"):
    """The object in a legacy checkpoint `f` (a seekable binary file)."""
    def plain():   # the header pickles: numbers and a dict, read with the safe unpickler
        return _weights_only_unpickler.Unpickler(f, TORCH_GLOBALS, _no_storage, (),
                                                 encoding=encoding).load()
    if plain() != MAGIC_NUMBER:
        raise corrupt("invalid magic number")
    version = plain()
    if version != PROTOCOL_VERSION:
        raise corrupt(f"invalid protocol version {version!r}")
    sys_info = plain()
    little = sys_info.get("little_endian", True) if isinstance(sys_info, dict) else True
    byteorder = "little" if little else "big"
    roots = {}       # key -> (LoadedStorage, dtype, numel, location)
    views = {}

    def persistent_load(pid):
        typename = _ascii(pid[0]) if isinstance(pid, tuple) and pid else None
        if typename == "module" and not weights_only:
            return pid[1]    # a whole-module save names the module's class
        if typename != "storage" or len(pid) != 6:
            raise corrupt(f"unknown persistent id {pid!r}")
        _, storage_type, root_key, location, numel, view_metadata = pid
        root_key, location = _ascii(root_key), _ascii(location)
        dtype = _storage_dtype(storage_type)
        if root_key not in roots:
            nbytes = int(numel) * dtype.itemsize
            # the bytes come after the pickle: allocate now, fill in below
            storage = placement.place(location, nbytes, dtype,
                                      lambda: np.zeros(nbytes, np.uint8), corrupt)
            roots[root_key] = (LoadedStorage(storage, dtype), dtype, int(numel))
        root = roots[root_key][0]
        if view_metadata is None:
            return root
        view_key, offset, _size = view_metadata
        if view_key not in views:
            views[view_key] = LoadedStorage(root.storage, dtype, offset=int(offset))
            views[view_key].version = root.version
        return views[view_key]

    result = unpickle(f, weights_only, persistent_load, encoding)
    keys = plain()
    for key in keys:
        key = _ascii(key)
        if key not in roots:
            raise corrupt(f"storage key {key!r} is not in the pickle")
        loaded, dtype, numel = roots[key]
        (count,) = struct.unpack("<q" if little else ">q", f.read(8))
        nbytes = count * dtype.itemsize
        if count != numel:
            raise corrupt(f"storage {key} holds {count} elements, the pickle says {numel}")
        raw = np.frombuffer(f.read(nbytes), np.uint8)
        if raw.size != nbytes:
            raise corrupt("the file ends early")
        _fill(loaded.storage, _to_native(raw, dtype, byteorder))
    return result


def _no_storage(pid):
    raise pickle.UnpicklingError("unsupported persistent id encountered")


def _fill(storage, raw):
    """Write the bytes `raw` into an already placed storage."""
    if storage.data is None or not raw.size:
        return
    if isinstance(storage.data, np.ndarray):
        storage.data.reshape(-1).view(np.uint8)[:] = raw
    else:
        import torch
        storage.data.copy_(torch.from_numpy(np.ascontiguousarray(raw)))
