"""tp.utils.safetensors against the format's specification (8-byte little-endian header
length, JSON header, raw little-endian bytes) and against the `safetensors` package when
it is installed: every dtype, 0-dim, empty and non-contiguous tensors, metadata, bad files."""
import json
import struct

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.utils import safetensors as st

NAMES = {tp.bool: "BOOL", tp.uint8: "U8", tp.int8: "I8", tp.int16: "I16", tp.int32: "I32",
         tp.int64: "I64", tp.float16: "F16", tp.bfloat16: "BF16", tp.float32: "F32",
         tp.float64: "F64", tp.complex64: "C64"}


def sample(dtype, seed):
    rng = np.random.default_rng(seed)
    if dtype is tp.bool:
        return tp.from_numpy(rng.random((2, 3)) < 0.5)
    if dtype.is_complex:
        return tp.tensor(rng.normal(size=(2, 3)) + 1j * rng.normal(size=(2, 3)), dtype=dtype)
    return tp.tensor(rng.normal(size=(2, 3)) * 50, dtype=dtype)


def parse(data):
    """The specification, read by hand."""
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    return n, header, data[8 + n:]


def test_written_file_follows_the_specification():
    tensors = {d.name: sample(d, i) for i, d in enumerate(NAMES)}
    tensors["noncontig"] = tp.arange(12.0).reshape(3, 4)[:, ::2]
    tensors["zero_d"] = tp.tensor(7, dtype=tp.int32)
    tensors["empty"] = tp.empty(0, 2)
    data = st.save(tensors, metadata={"format": "pt"})
    n, header, body = parse(data)
    assert n % 8 == 0 and header["__metadata__"] == {"format": "pt"}
    for name, t in tensors.items():
        entry = header[name]
        assert entry["dtype"] == NAMES[t.dtype] and entry["shape"] == list(t.shape)
        begin, end = entry["data_offsets"]
        expected = np.ascontiguousarray(t.numpy()).reshape(-1).view(np.uint8).tobytes()
        assert body[begin:end] == expected, name
        assert begin % t.dtype.itemsize == 0      # aligned for its dtype
    assert max(e["data_offsets"][1] for k, e in header.items() if k != "__metadata__") \
        == len(body)


def test_round_trip_and_a_hand_written_file(tmp_path):
    tensors = {d.name: sample(d, i) for i, d in enumerate(NAMES)}
    st.save_file(tensors, tmp_path / "m.safetensors")
    for got in (st.load_file(tmp_path / "m.safetensors"),
                st.load((tmp_path / "m.safetensors").read_bytes())):
        assert sorted(got) == sorted(tensors)
        for name, t in tensors.items():
            assert got[name].dtype is t.dtype and got[name].shape == t.shape
            np.testing.assert_array_equal(got[name].numpy().view(np.uint8),
                                          t.numpy().view(np.uint8))
    # a file written by hand from the specification, with torch's bytes
    w = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    header = json.dumps({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
                         "__metadata__": {"k": "v"}}).encode()
    data = struct.pack("<Q", len(header)) + header + w.numpy().tobytes()
    assert st.load(data)["w"].tolist() == w.tolist()


def test_load_file_maps_copy_on_write(tmp_path):
    st.save_file({"w": tp.ones(4)}, tmp_path / "w.safetensors")
    got = st.load_file(tmp_path / "w.safetensors")
    got["w"].add_(1)
    assert st.load_file(tmp_path / "w.safetensors")["w"].tolist() == [1.0] * 4


def test_refusals():
    base = tp.ones(4)
    with pytest.raises(st.SafetensorError, match="share memory"):
        st.save({"a": base, "b": base[1:]})
    with pytest.raises(st.SafetensorError, match="complex128"):
        st.save({"c": tp.zeros(1, dtype=tp.complex128)})
    header = json.dumps({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 8]}}).encode()
    with pytest.raises(st.SafetensorError, match="do not fit"):
        st.load(struct.pack("<Q", len(header)) + header + bytes(8))
    with pytest.raises(st.SafetensorError, match="does not fit the file"):
        st.load(struct.pack("<Q", 1 << 40) + b"{}")
    header = json.dumps({"w": {"dtype": "F8_E4M3", "shape": [1], "data_offsets": [0, 1]}})
    with pytest.raises(st.SafetensorError, match="F8_E4M3"):
        st.load(struct.pack("<Q", len(header)) + header.encode() + bytes(1))


def test_against_the_safetensors_package(tmp_path):
    safetensors_torch = pytest.importorskip("safetensors.torch")
    tensors = {d.name: sample(d, i) for i, d in enumerate(NAMES) if d is not tp.complex64}
    st.save_file(tensors, tmp_path / "tp.safetensors")
    got = safetensors_torch.load_file(tmp_path / "tp.safetensors")
    for name, t in tensors.items():
        np.testing.assert_array_equal(got[name].view(torch.uint8).numpy(),
                                      t.numpy().reshape(-1).view(np.uint8).reshape(
                                          got[name].view(torch.uint8).shape))
    safetensors_torch.save_file({"w": torch.arange(6.0)}, tmp_path / "torch.safetensors")
    assert st.load_file(tmp_path / "torch.safetensors")["w"].tolist() == list(range(6))
