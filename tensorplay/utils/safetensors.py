"""`tp.utils.safetensors`: the safetensors format (Hugging Face's, for the weights people
download), read and written without the `safetensors` package.

A file is

    8 bytes          N, the header's length (unsigned, little-endian)
    N bytes          a JSON object: {"name": {"dtype": "F32", "shape": [2, 3],
                     "data_offsets": [begin, end]}, ..., "__metadata__": {str: str}}
                     (padded with spaces to a multiple of 8)
    the rest         the tensors' bytes, little-endian, C order; offsets count from here

No pickle: loading a safetensors file never runs code. A tensor is saved contiguous and
alone (two names over one storage are refused, as the `safetensors` package refuses
them, because the format cannot say that they share memory).

API as `safetensors.torch`: save_file(tensors, filename, metadata=None),
load_file(filename, device="cpu"), save(tensors, metadata=None) -> bytes, load(data).
"""
from __future__ import annotations

import json
import os
import struct
import sys

import numpy as np

from tensorplay import _dtype as dt
from tensorplay._tensor import Tensor

__all__ = ["save_file", "load_file", "save", "load"]

DTYPES = {dt.bool: "BOOL", dt.uint8: "U8", dt.int8: "I8", dt.int16: "I16", dt.int32: "I32",
          dt.int64: "I64", dt.float16: "F16", dt.bfloat16: "BF16", dt.float32: "F32",
          dt.float64: "F64", dt.complex64: "C64"}
FROM_NAME = {name: dtype for dtype, name in DTYPES.items()}
MAX_HEADER = 100_000_000   # the safetensors package's limit: a larger header is corrupt


class SafetensorError(ValueError):
    """A malformed safetensors file, or tensors the format cannot hold."""


# ---- writing --------------------------------------------------------------------------
def save(tensors, metadata=None):
    """The bytes of a safetensors file holding `tensors` ({name: Tensor})."""
    header, arrays = _layout(tensors, metadata)
    out = bytearray(_header_bytes(header))
    for arr in arrays:
        out += arr.tobytes()
    return bytes(out)


def save_file(tensors, filename, metadata=None):
    header, arrays = _layout(tensors, metadata)
    with open(filename, "wb") as f:
        f.write(_header_bytes(header))
        for arr in arrays:
            f.write(memoryview(arr.reshape(-1).view(np.uint8)))


def _layout(tensors, metadata):
    if not isinstance(tensors, dict):
        raise TypeError(f"save(): argument 'tensors' must be a dict of name to Tensor, but "
                        f"got {type(tensors).__name__}")
    storages = {}
    for name, t in tensors.items():
        if not isinstance(name, str) or not isinstance(t, Tensor):
            raise TypeError(f"save(): expected str names and Tensors, got {name!r}: "
                            f"{type(t).__name__}")
        if t.dtype not in DTYPES:
            raise SafetensorError(f"save(): tensor '{name}' has dtype {t.dtype.name}, which "
                                  f"safetensors cannot hold")
        other = storages.setdefault(id(t.untyped_storage()), name)
        if other != name and t.numel() and tensors[other].numel():
            raise SafetensorError(f"save(): tensors '{other}' and '{name}' share memory, "
                                  f"which safetensors cannot say; save a clone of one")
    header = {}
    if metadata is not None:
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise TypeError("save(): metadata must map str to str")
        header["__metadata__"] = dict(metadata)
    # larger elements first, so that every tensor's bytes start aligned; then by name
    order = sorted(tensors, key=lambda n: (-tensors[n].dtype.itemsize, n))
    arrays, offset = [], 0
    for name in order:
        t = tensors[name]
        arr = np.ascontiguousarray(t.detach().cpu().numpy())
        if sys.byteorder != "little" and arr.dtype.itemsize > 1:
            arr = arr.byteswap()
        nbytes = arr.nbytes
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + nbytes]}
        arrays.append(arr.reshape(-1).view(np.uint8))
        offset += nbytes
    return header, arrays


def _header_bytes(header):
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text


# ---- reading --------------------------------------------------------------------------
def load(data, device="cpu"):
    """{name: Tensor} from the bytes of a safetensors file."""
    return _tensors(memoryview(data), device, copy=True)


def load_file(filename, device="cpu"):
    """{name: Tensor} from a safetensors file; on the CPU the tensors map the file
    copy-on-write (nothing is read until used, writes stay in memory)."""
    size = os.path.getsize(filename)
    if size == 0:
        raise SafetensorError(f"load_file(): {os.fspath(filename)!r} is empty")
    buf = np.memmap(filename, np.uint8, mode="c")
    return _tensors(buf, device, copy=False, name=os.fspath(filename))


def _tensors(buf, device, copy, name="<bytes>"):
    from tensorplay import from_numpy
    header, data = _parse(buf, name)
    out = {}
    for key, entry in header.items():
        if key == "__metadata__":
            continue
        dtype = FROM_NAME.get(entry.get("dtype"))
        if dtype is None:
            raise SafetensorError(f"load(): {name}: tensor '{key}' has dtype "
                                  f"{entry.get('dtype')!r}, which TensorPlay does not have")
        shape = [int(s) for s in entry["shape"]]
        begin, end = (int(v) for v in entry["data_offsets"])
        if not 0 <= begin <= end <= len(data) or \
                end - begin != int(np.prod(shape, dtype=np.int64)) * dtype.itemsize:
            raise SafetensorError(f"load(): {name}: tensor '{key}' has data_offsets "
                                  f"[{begin}, {end}], which do not fit shape {shape} of "
                                  f"{dtype.name} in {len(data)} bytes of data")
        raw = np.asarray(data[begin:end])
        arr = raw.view(dtype.np).reshape(shape) if raw.size else np.empty(shape, dtype.np)
        if sys.byteorder != "little" and dtype.itemsize > 1:
            arr = arr.byteswap()
        t = from_numpy(arr.copy() if copy else arr)
        out[key] = t if str(device) == "cpu" else t.to(device)
    return out


def _parse(buf, name):
    if len(buf) < 8:
        raise SafetensorError(f"load(): {name} is too short to be a safetensors file")
    (n,) = struct.unpack("<Q", bytes(buf[:8]))
    if n > MAX_HEADER or 8 + n > len(buf):
        raise SafetensorError(f"load(): {name}: a header of {n} bytes does not fit the file "
                              f"({len(buf)} bytes)")
    try:
        header = json.loads(bytes(buf[8:8 + n]).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise SafetensorError(f"load(): {name}: the header is not JSON ({e})") from None
    if not isinstance(header, dict):
        raise SafetensorError(f"load(): {name}: the header is not a JSON object")
    return header, buf[8 + n:]
